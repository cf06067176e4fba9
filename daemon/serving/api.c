/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-internal.h"
#include "api-props.h"
#include "util.h"

static int method_subscribe(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;

        c->subscribed = streq(sd_bus_message_get_member(msg), "Subscribe");
        return sd_bus_reply_method_return(msg, NULL);
}

/* What a broker would answer, so that bus clients (busctl) that say Hello first work here too. */
static int method_hello(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        char name[32];

        snprintf(name, sizeof(name), ":1.%llu", (unsigned long long) c->id);
        return sd_bus_reply_method_return(msg, "s", name);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_NAMES("GetStatus", "", , "a{sv}", SD_BUS_PARAM(status),
                                 method_get_status, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListCgroups", "", , "aa{sv}", SD_BUS_PARAM(cgroups),
                                 method_list_cgroups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListCgroupsJSON", "s", SD_BUS_PARAM(order), "as", SD_BUS_PARAM(json),
                                 method_list_cgroups_json, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetCgroup", "s", SD_BUS_PARAM(unit_or_path), "a{sv}", SD_BUS_PARAM(cgroup),
                                 method_get_cgroup, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Explain", "s", SD_BUS_PARAM(unit_or_path), "a{sv}", SD_BUS_PARAM(explanation),
                                 method_explain, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListPolicies", "", , "aa{sv}", SD_BUS_PARAM(policies),
                                 method_list_policies, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetPolicy", "s", SD_BUS_PARAM(name), "a{sv}", SD_BUS_PARAM(policy),
                                 method_get_policy, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListEvents", "t", SD_BUS_PARAM(since_seq), "a(ttissss)", SD_BUS_PARAM(events),
                                 method_list_events, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListEventsWithFields", "t", SD_BUS_PARAM(since_seq), "a(ttissssa{sv})",
                                 SD_BUS_PARAM(events), method_list_events_with_fields, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetMetrics", "", , "s", SD_BUS_PARAM(metrics), method_get_metrics,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetHistory", "st", SD_BUS_PARAM(unit_or_path) SD_BUS_PARAM(since_realtime_usec),
                                 "sba(ttttttttttt)", SD_BUS_PARAM(path) SD_BUS_PARAM(truncated) SD_BUS_PARAM(samples),
                                 method_get_history, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListThrottles", "", , "aa{sv}", SD_BUS_PARAM(throttles),
                                 method_list_throttles, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Subscribe", "", "", method_subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Unsubscribe", "", "", method_subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("SetPolicy", "sas", SD_BUS_PARAM(name) SD_BUS_PARAM(assignments),
                                 "sa{sv}", SD_BUS_PARAM(file) SD_BUS_PARAM(outcome), method_set_policy,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("UnsetPolicy", "sas", SD_BUS_PARAM(name) SD_BUS_PARAM(keys),
                                 "sa{sv}", SD_BUS_PARAM(file) SD_BUS_PARAM(outcome), method_unset_policy,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Reload", "", "", method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Reclaim", "stb", SD_BUS_PARAM(unit_or_path) SD_BUS_PARAM(bytes)
                                 SD_BUS_PARAM(cache_only), "st", SD_BUS_PARAM(result) SD_BUS_PARAM(id),
                                 method_reclaim, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Writeback", "sb", SD_BUS_PARAM(unit_or_path) SD_BUS_PARAM(wait),
                                 "st", SD_BUS_PARAM(result) SD_BUS_PARAM(id), method_writeback,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetAction", "t", SD_BUS_PARAM(id), "a{sv}", SD_BUS_PARAM(action),
                                 method_get_action, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListActions", "", , "aa{sv}", SD_BUS_PARAM(actions),
                                 method_list_actions, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Release", "st", SD_BUS_PARAM(unit_or_path) SD_BUS_PARAM(usec),
                                 "s", SD_BUS_PARAM(result), method_release, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("EndRelease", "s", SD_BUS_PARAM(unit_or_path), "s", SD_BUS_PARAM(result),
                                 method_end_release, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_NAMES("Event", "ttissssa{sv}",
                                 SD_BUS_PARAM(seq) SD_BUS_PARAM(realtime_usec) SD_BUS_PARAM(priority)
                                 SD_BUS_PARAM(action) SD_BUS_PARAM(cgroup) SD_BUS_PARAM(unit)
                                 SD_BUS_PARAM(message) SD_BUS_PARAM(fields), 0),
        SD_BUS_SIGNAL("ThrottlesChanged", "", 0),
        SD_BUS_SIGNAL_WITH_NAMES("ActionFinished", "tssa{sv}",
                                 SD_BUS_PARAM(id) SD_BUS_PARAM(kind) SD_BUS_PARAM(state) SD_BUS_PARAM(action), 0),
        API_PROPERTIES,
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable hello_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_NAMES("Hello", "", , "s", SD_BUS_PARAM(unique_name), method_hello,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

static int attach(BusConnection *c, void *userdata) {
        int r;

        r = sd_bus_add_object_vtable(c->bus, NULL, BUS_OBJECT_PATH, BUS_INTERFACE, manager_vtable, c);
        if (r < 0)
                return r;
        return sd_bus_add_object_vtable(c->bus, NULL, "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        hello_vtable, c);
}

/* The Event signal: the seven arguments it always had, then the event's fields. */
static int send_event(sd_bus *bus, const void *data) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        const Event *e = data;
        int r;

        r = sd_bus_message_new_signal(bus, &s, BUS_OBJECT_PATH, BUS_INTERFACE, "Event");
        if (r >= 0)
                r = sd_bus_message_append(s, "ttissss", e->seq, e->realtime_usec, (int32_t) e->level, e->action,
                                          e->cgroup, e->unit, e->message);
        if (r >= 0)
                r = api_append_event_fields(s, e);
        return r < 0 ? r : sd_bus_send(bus, s, NULL);
}

static int send_throttles_changed(sd_bus *bus, const void *data) {
        return sd_bus_emit_signal(bus, BUS_OBJECT_PATH, BUS_INTERFACE, "ThrottlesChanged", "");
}

static int on_throttles_source(sd_event_source *src, void *userdata) {
        Api *a = userdata;

        transport_broadcast(a->transport, send_throttles_changed, NULL);
        return 0;
}

/* The throttles changed: one ThrottlesChanged for all the changes of this loop iteration. */
static void on_throttles_changed(void *userdata) {
        Api *a = userdata;

        (void) sd_event_source_set_enabled(a->throttles_source, SD_EVENT_ONESHOT);
        api_props_touch(a);
}

static int throttles_signal_init(Api *a) {
        int r = sd_event_add_defer(a->manager->event, &a->throttles_source, on_throttles_source, a);

        if (r < 0)
                return r;
        (void) sd_event_source_set_description(a->throttles_source, "throttles-changed");
        r = sd_event_source_set_enabled(a->throttles_source, SD_EVENT_OFF);
        if (r < 0)
                return r;
        a->manager->throttles_hook = on_throttles_changed;
        a->manager->throttles_hook_userdata = a;
        return 0;
}

/* Every event the daemon records: to every subscriber. */
static void on_event(const Event *e, void *userdata) {
        Api *a = userdata;

        transport_broadcast(a->transport, send_event, e);
        api_props_touch(a);
}

int api_new(Manager *m, const char *path, Api **ret) {
        _cleanup_(api_freep) Api *a = calloc(1, sizeof(Api));
        int r;

        if (!a)
                return -ENOMEM;
        a->manager = m;
        a->started_realtime_usec = now_usec(CLOCK_REALTIME);
        r = transport_new(m->event, path, attach, a, &a->transport);
        if (r < 0)
                return r;
        r = api_changes_init(a);
        if (r >= 0)
                r = throttles_signal_init(a);
        if (r >= 0)
                r = api_props_init(a);
        if (r < 0)
                return log_error_errno(r, "Cannot serve the control API: %m");
        m->events->hook = on_event;
        m->events->hook_userdata = a;
        m->events->socket = a->transport->path;
        *ret = TAKE_PTR(a);
        return 0;
}

Api *api_free(Api *a) {
        if (!a)
                return NULL;
        if (a->manager->events->hook_userdata == a) {
                a->manager->events->hook = NULL;
                a->manager->events->hook_userdata = NULL;
                a->manager->events->socket = NULL;
        }
        if (a->manager->throttles_hook_userdata == a) {
                a->manager->throttles_hook = NULL;
                a->manager->throttles_hook_userdata = NULL;
        }
        a->throttles_source = sd_event_source_disable_unref(a->throttles_source);
        api_props_done(a);
        api_changes_done(a);
        transport_free(a->transport);
        free(a->admin_group);
        free(a);
        return NULL;
}
