/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "api-props.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-internal.h"
#include "build-config.h"
#include "name-escape.h"
#include "util.h"

/* Changes a subscriber does not hear of at once (a cgroup came or went without an event) are
 * found this often. */
#define PROPS_CHECK_USEC (2 * USEC_PER_SEC)

typedef enum Prop {
        PROP_POLICIES,
        PROP_PROTECTED,
        PROP_THROTTLES_HELD,
        PROP_THROTTLED,
        PROP_RELEASED,
        _PROP_MAX,
} Prop;

static const char *const prop_names[_PROP_MAX] = {
        [PROP_POLICIES] = "Policies",
        [PROP_PROTECTED] = "ProtectedUnits",
        [PROP_THROTTLES_HELD] = "ThrottlesHeld",
        [PROP_THROTTLED] = "ThrottledUnits",
        [PROP_RELEASED] = "ReleasedUnits",
};

typedef struct ApiProps {
        sd_event_source *timer;
        sd_event_source *check;         /* a defer, on after api_props_touch() */
        char *last[_PROP_MAX];          /* each property's value as last announced, as text */
} ApiProps;

/* A property's items: names owned by the manager, sorted, each once. */
typedef struct Items {
        const char **v;
        size_t n, allocated;
} Items;

static void items_clear(Items *it) {
        free(it->v);
        *it = (Items) {};
}

static int items_add(Items *it, const char *s) {
        if (it->n == it->allocated) {
                size_t n = it->allocated ? it->allocated * 2 : 16;
                const char **v = reallocarray(it->v, n, sizeof(*v));

                if (!v)
                        return -ENOMEM;
                it->v = v;
                it->allocated = n;
        }
        it->v[it->n++] = s;
        return 0;
}

static int compare_str(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static void items_sort_unique(Items *it) {
        size_t n = 0;

        if (it->n == 0)
                return;
        qsort(it->v, it->n, sizeof(*it->v), compare_str);
        for (size_t i = 1; i < it->n; i++)
                if (!streq(it->v[i], it->v[n]))
                        it->v[++n] = it->v[i];
        it->n = n + 1;
}

/* The unit of the cgroup `id` at `path` when it is still watched there, else its path. */
static const char *unit_or_path(const Manager *m, uint64_t id, const char *path) {
        const CgEntry *e = id ? cgtable_find((CgTable *) &m->observer->cgroups, id) : NULL;

        return e && e->unit && streq(e->cg->path, path) ? e->unit : path;
}

static int collect_protected(const Manager *m, Items *it) {
        const CgEntry *e;
        int r = 0;

        /* Governed cgroups only (Mode=off protects nothing): the hot ones, no look at the others. */
        for (size_t i = 0; r >= 0 && (e = observer_next_hot(m->observer, &i));)
                if (e->policy && e->policy->protect && e->policy->mode != POLICY_MODE_OFF)
                        r = items_add(it, e->unit ?: e->cg->path);
        return r;
}

/* The throttles held, as `mdctl throttles` lists them (the device queues' included). */
static size_t throttles_held(const Manager *m) {
        return actuator_ledger(m->actuator)->n + (m->queues ? queue_depth_ledger(m->queues)->n : 0);
}

static int collect(const Manager *m, Prop p, Items *it) {
        const Ledger *l = actuator_ledger(m->actuator);
        uint64_t now = now_usec(CLOCK_REALTIME);
        int r = 0;

        switch (p) {
        case PROP_POLICIES:
                for (size_t i = 0; r >= 0 && i < m->config->n_policies; i++)
                        r = items_add(it, m->config->policies[i]->name);
                break;
        case PROP_PROTECTED:
                r = collect_protected(m, it);
                break;
        case PROP_THROTTLED:
                for (size_t i = 0; r >= 0 && i < l->n; i++)
                        r = items_add(it, unit_or_path(m, l->entries[i].cgroup_id, l->entries[i].path));
                break;
        case PROP_RELEASED:
                for (size_t i = 0; r >= 0 && i < l->n_holds; i++)
                        if (l->holds[i].until_usec > now)
                                r = items_add(it, unit_or_path(m, l->holds[i].cgroup_id, l->holds[i].path));
                break;
        default:
                return -EINVAL;
        }
        if (r >= 0)
                items_sort_unique(it);
        return r;
}

static int prop_of(const char *property) {
        for (int p = 0; p < _PROP_MAX; p++)
                if (streq(prop_names[p], property))
                        return p;
        return -EINVAL;
}

int api_prop_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", PACKAGE_VERSION);
}

int api_prop_started(sd_bus *bus, const char *path, const char *interface, const char *property,
                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "t", api_of(userdata)->started_realtime_usec);
}

/* Names as every output gives them: escaped when not plain (name-escape.h). */
static int append_names(sd_bus_message *reply, const Items *it) {
        int r = sd_bus_message_open_container(reply, 'a', "s");

        for (size_t i = 0; r >= 0 && i < it->n; i++) {
                _cleanup_free_ char *e = name_is_plain(it->v[i]) ? NULL : name_escape(it->v[i]);

                if (!name_is_plain(it->v[i]) && !e)
                        return -ENOMEM;
                r = sd_bus_message_append(reply, "s", e ?: it->v[i]);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

int api_prop_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = api_of(userdata)->manager;
        _cleanup_(items_clear) Items it = {};
        int p = prop_of(property), r;

        if (p < 0)
                return p;
        if (p == PROP_THROTTLES_HELD)
                return sd_bus_message_append(reply, "u", (uint32_t) MIN(throttles_held(m), UINT32_MAX));
        r = collect(m, (Prop) p, &it);
        return r < 0 ? r : append_names(reply, &it);
}

/* A property's value as text, to compare with the one last announced; NULL: out of memory. */
static char *snapshot(const Manager *m, Prop p) {
        _cleanup_(items_clear) Items it = {};
        char *text = NULL;
        size_t size = 0;
        FILE *f;

        if (p == PROP_THROTTLES_HELD)
                return asprintf(&text, "%zu", throttles_held(m)) < 0 ? NULL : text;
        if (collect(m, p, &it) < 0)
                return NULL;
        f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < it.n; i++)
                fprintf(f, "%s\n", it.v[i]);
        if (fclose(f) != 0) {
                free(text);
                return NULL;
        }
        return text;
}

static int send_changed(sd_bus *bus, const void *data) {
        return sd_bus_emit_properties_changed_strv(bus, BUS_OBJECT_PATH, BUS_INTERFACE, (char **) data);
}

/* Each property compared with what was last announced; the ones that differ, announced. */
static int on_check(sd_event_source *s, void *userdata) {
        Api *a = userdata;
        ApiProps *ps = a->props;
        const char *changed[_PROP_MAX + 1];
        size_t n = 0;

        for (int p = 0; p < _PROP_MAX; p++) {
                char *now = snapshot(a->manager, (Prop) p);

                if (!now)
                        continue;       /* out of memory: compared again next time */
                if (ps->last[p] && streq(ps->last[p], now)) {
                        free(now);
                        continue;
                }
                /* The first value is not a change: nobody could have read another. */
                if (ps->last[p])
                        changed[n++] = prop_names[p];
                free(ps->last[p]);
                ps->last[p] = now;
        }
        changed[n] = NULL;
        if (n > 0)
                transport_broadcast(a->transport, send_changed, changed);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Api *a = userdata;

        (void) sd_event_source_set_time(s, usec + PROPS_CHECK_USEC);
        return on_check(NULL, a);
}

void api_props_touch(Api *a) {
        if (a->props)
                (void) sd_event_source_set_enabled(a->props->check, SD_EVENT_ONESHOT);
}

int api_props_init(Api *a) {
        ApiProps *ps = calloc(1, sizeof(ApiProps));
        int r;

        if (!ps)
                return -ENOMEM;
        a->props = ps;
        r = sd_event_add_defer(a->manager->event, &ps->check, on_check, a);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(ps->check, "properties-changed");
        r = sd_event_source_set_enabled(ps->check, SD_EVENT_ONESHOT);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(a->manager->event, &ps->timer, CLOCK_MONOTONIC, PROPS_CHECK_USEC,
                                       USEC_PER_SEC / 2, on_timer, a);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(ps->timer, "properties-check");
        return sd_event_source_set_enabled(ps->timer, SD_EVENT_ON);
}

void api_props_done(Api *a) {
        ApiProps *ps = a->props;

        if (!ps)
                return;
        sd_event_source_disable_unref(ps->check);
        sd_event_source_disable_unref(ps->timer);
        for (int p = 0; p < _PROP_MAX; p++)
                free(ps->last[p]);
        free(ps);
        a->props = NULL;
}
