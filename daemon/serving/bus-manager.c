/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "bus-manager.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "build-config.h"
#include "bus-changes.h"
#include "bus-reply.h"
#include "conf.h"
#include "policy-format.h"
#include "policy-store.h"
#include "policy-writer.h"
#include "util.h"

Manager *bus_manager_of(const BusConnection *c) {
        return c->server->manager;
}

const char *bus_manager_config_root(const Manager *m) {
        const char *r = m->args.config_root;

        return (!r || streq(r, "/")) ? "" : r;
}

/* ---- who may change things ---- */

/* How often a group that was not found is looked up again (it may be created later). */
#define ADMIN_GROUP_RETRY_USEC (10 * USEC_PER_SEC)

/* AdminGroup= to a GID: numeric, or through NSS when the setting changes (a missing group now and then). */
static void admin_group_resolve(BusServer *s, const char *group) {
        char buf[4096];
        struct group gr, *res = NULL;
        uint64_t gid, now = 0;

        (void) sd_event_now(s->manager->event, CLOCK_MONOTONIC, &now);
        if (streq_ptr(group, s->admin_group) &&
            (s->have_admin_gid || !group || now < s->admin_group_checked_usec + ADMIN_GROUP_RETRY_USEC))
                return;
        if (!streq_ptr(group, s->admin_group)) {
                free(s->admin_group);
                s->admin_group = group ? strdup(group) : NULL;
                if (group && !s->admin_group)
                        return;
        }
        s->have_admin_gid = false;
        s->admin_group_checked_usec = now;
        if (!group)
                return;
        if (parse_uint_range(group, 0, UINT32_MAX - 1, &gid) >= 0) {
                s->admin_gid = (gid_t) gid;
                s->have_admin_gid = true;
        } else if (getgrnam_r(group, &gr, buf, sizeof(buf), &res) == 0 && res) {
                s->admin_gid = res->gr_gid;
                s->have_admin_gid = true;
        } else
                log_warning("AdminGroup=%s: no such group (yet); only root may change things", group);
}

static bool caller_is_admin(BusConnection *c) {
        BusServer *s = c->server;

        admin_group_resolve(s, bus_manager_of(c)->config->daemon.admin_group);
        return peer_creds_is_admin(&c->creds, s->have_admin_gid, s->admin_gid);
}

/* 0 if the caller may `what`; otherwise AccessDenied, saying who may. */
int bus_manager_check_admin(BusConnection *c, const char *what, sd_bus_error *error) {
        const char *group = bus_manager_of(c)->config->daemon.admin_group;

        if (caller_is_admin(c))
                return 0;
        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                 "Access denied: %s needs root%s%s%s; the caller is uid %u", what,
                                 group ? " or membership of group '" : " (no AdminGroup= is configured)",
                                 group ? group : "", group ? "' (AdminGroup=)" : "", (unsigned) c->creds.uid);
}

/* ---- reading ---- */

static size_t cgroups_watched(const Observer *o) {
        size_t n = 0;

        for (size_t i = 0; i < o->cgroups.n; i++)
                n += !o->cgroups.entries[i].gone;
        return n;
}

static size_t triggers_armed(const Manager *m) {
        size_t n = 0;

        for (size_t i = 0; i < m->n_triggers; i++)
                n += psi_trigger_armed(m->triggers[i]);
        return n;
}

static int append_policy_keys(sd_bus_message *r) {
        const char *keys[64];
        size_t n = 0;

        while (n < ELEMENTSOF(keys) && (keys[n] = config_policy_key(n)))
                n++;
        return bus_dict_strv(r, "policy_keys", keys, n);
}

static int status_counts(sd_bus_message *r, BusConnection *c) {
        Manager *m = bus_manager_of(c);
        int k = 0;

        if (k >= 0)
                k = bus_dict_u64(r, "cgroups", cgroups_watched(m->observer));
        if (k >= 0)
                k = bus_dict_u64(r, "cgroups_with_policy", m->n_with_policy);
        if (k >= 0)
                k = bus_dict_u64(r, "policies", m->config->n_policies);
        if (k >= 0)
                k = bus_dict_u64(r, "psi_triggers", triggers_armed(m));
        if (k >= 0)
                k = bus_dict_u64(r, "psi_trigger_wakeups", m->trigger_wakeups);
        if (k >= 0)
                k = bus_dict_u64(r, "ticks", m->ticks);
        if (k >= 0)
                k = bus_dict_u64(r, "interval_usec", m->config->daemon.interval_usec);
        if (k >= 0)
                k = bus_dict_u64(r, "rescan_interval_usec", m->config->daemon.rescan_interval_usec);
        if (k >= 0)
                k = bus_dict_u64(r, "events_first_seq", event_log_first(&m->events));
        if (k >= 0)
                k = bus_dict_u64(r, "events_next_seq", m->events.next_seq);
        if (k >= 0)
                k = bus_dict_u64(r, "connections", bus_server_connections(c->server));
        return k;
}

static int status_identity(sd_bus_message *r, BusConnection *c) {
        Manager *m = bus_manager_of(c);
        const char *group = m->config->daemon.admin_group;
        int k = 0;

        if (k >= 0)
                k = bus_dict_str(r, "version", PACKAGE_VERSION);
        if (k >= 0)
                k = sd_bus_message_append(r, "{sv}", "pid", "u", (uint32_t) getpid());
        if (k >= 0)
                k = bus_dict_u64(r, "started_realtime_usec", c->server->started_realtime_usec);
        if (k >= 0)
                k = bus_dict_str(r, "cgroup_root", m->observer->root->path);
        if (k >= 0)
                k = bus_dict_str(r, "config_root", *bus_manager_config_root(m) ? bus_manager_config_root(m) : "/");
        if (k >= 0)
                k = bus_dict_str(r, "control_socket", c->server->path);
        if (k >= 0)
                k = bus_dict_strv(r, "config_files", (const char *const *) m->config->files, m->config->n_files);
        if (group)
                if (k >= 0)
                        k = bus_dict_str(r, "admin_group", group);
        if (k >= 0)
                k = sd_bus_message_append(r, "{sv}", "caller_uid", "u", (uint32_t) c->creds.uid);
        if (k >= 0)
                k = sd_bus_message_append(r, "{sv}", "caller_is_admin", "b", (int) caller_is_admin(c));
        return k;
}

static int method_get_status(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        BusConnection *c = userdata;
        int k;

        k = sd_bus_message_new_method_return(msg, &r);
        if (k >= 0)
                k = sd_bus_message_open_container(r, 'a', "{sv}");
        if (k >= 0)
                k = status_identity(r, c);
        if (k >= 0)
                k = status_counts(r, c);
        if (k >= 0)
                k = append_policy_keys(r);
        if (k >= 0)
                k = bus_append_system(r, bus_manager_of(c)->observer);
        if (k >= 0)
                k = sd_bus_message_close_container(r);
        return k < 0 ? k : sd_bus_send(NULL, r, NULL);
}

static int method_list_cgroups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        Observer *o = bus_manager_of(userdata)->observer;
        int k;

        k = sd_bus_message_new_method_return(msg, &r);
        if (k >= 0)
                k = sd_bus_message_open_container(r, 'a', "a{sv}");
        for (size_t i = 0; k >= 0 && i < o->cgroups.n; i++)
                if (!o->cgroups.entries[i].gone)
                        k = bus_append_cgroup_summary(r, o, &o->cgroups.entries[i]);
        if (k >= 0)
                k = sd_bus_message_close_container(r);
        return k < 0 ? k : sd_bus_send(NULL, r, NULL);
}

/* A cgroup path (relative to the root, or below the root's mount path) or a unit name. */
int bus_manager_resolve(Manager *m, const char *what, CgEntry **ret, sd_bus_error *error) {
        const char *root = m->observer->root->path, *path = what;
        size_t rl = strlen(root), found = 0;
        CgEntry *hit = NULL, *other = NULL;

        if (what[0] == '/' && rl > 1 && strncmp(what, root, rl) == 0 && (what[rl] == '/' || !what[rl]))
                path = what[rl] ? what + rl : "/";
        for (size_t i = 0; i < m->observer->cgroups.n; i++) {
                CgEntry *e = &m->observer->cgroups.entries[i];

                if (e->gone || !(what[0] == '/' ? streq(e->cg->path, path) : streq_ptr(e->unit, what)))
                        continue;
                if (found++ == 0)
                        hit = e;
                else
                        other = e;
        }
        if (found == 1) {
                *ret = hit;
                return 0;
        }
        if (found > 1)
                return sd_bus_error_setf(error, BUS_ERROR_AMBIGUOUS,
                                         "Unit '%s' names %zu cgroups (%s, %s%s); give the cgroup path", what, found,
                                         hit->cg->path, other->cg->path, found > 2 ? ", ..." : "");
        if (what[0] == '/')
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_CGROUP,
                                         "No cgroup '%s' below %s among the %zu the daemon watches", path, root,
                                         cgroups_watched(m->observer));
        return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_CGROUP,
                                 "No unit '%s' among the %zu cgroups the daemon watches (a unit is found by the "
                                 "last component of its cgroup path; a path starting with '/' names a cgroup)",
                                 what, cgroups_watched(m->observer));
}

static int method_get_cgroup(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        Manager *m = bus_manager_of(userdata);
        const char *what;
        CgEntry *e;
        int k;

        k = sd_bus_message_read(msg, "s", &what);
        if (k < 0)
                return k;
        k = bus_manager_resolve(m, what, &e, error);
        if (k < 0)
                return k;
        k = sd_bus_message_new_method_return(msg, &r);
        if (k >= 0)
                k = bus_append_cgroup(r, m->observer, e);
        return k < 0 ? k : sd_bus_send(NULL, r, NULL);
}

static size_t policy_cgroups(const Observer *o, const Policy *p, const char **paths, size_t max) {
        size_t n = 0;

        for (size_t i = 0; i < o->cgroups.n; i++) {
                const CgEntry *e = &o->cgroups.entries[i];
                if (e->gone || e->policy != p)
                        continue;
                if (paths && n < max)
                        paths[n] = e->cg->path;
                n++;
        }
        return n;
}

static int append_matches(sd_bus_message *r, const Policy *p) {
        const char *v[POLICY_MATCH_MAX];

        for (size_t i = 0; i < p->n_matches && i < POLICY_MATCH_MAX; i++)
                v[i] = p->matches[i].pattern;
        return bus_dict_strv(r, "matches", v, MIN(p->n_matches, (size_t) POLICY_MATCH_MAX));
}

static int append_policy_brief(sd_bus_message *r, const Observer *o, const Policy *p) {
        int k = 0;

        if (k >= 0)
                k = bus_dict_str(r, "name", p->name);
        if (k >= 0)
                k = bus_dict_str(r, "file", p->file);
        if (k >= 0)
                k = bus_dict_str(r, "mode", policy_mode_to_string(p->mode));
        if (k >= 0)
                k = sd_bus_message_append(r, "{sv}", "priority", "u", (uint32_t) p->priority);
        if (k >= 0)
                k = sd_bus_message_append(r, "{sv}", "protect", "b", (int) p->protect);
        if (k >= 0)
                k = append_matches(r, p);
        if (k >= 0)
                k = bus_dict_u64(r, "cgroups", policy_cgroups(o, p, NULL, 0));
        return k;
}

static int method_list_policies(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        Manager *m = bus_manager_of(userdata);
        int k;

        k = sd_bus_message_new_method_return(msg, &r);
        if (k >= 0)
                k = sd_bus_message_open_container(r, 'a', "a{sv}");
        for (size_t i = 0; k >= 0 && i < m->config->n_policies; i++) {
                k = sd_bus_message_open_container(r, 'a', "{sv}");
                if (k >= 0)
                        k = append_policy_brief(r, m->observer, m->config->policies[i]);
                if (k >= 0)
                        k = sd_bus_message_close_container(r);
        }
        if (k >= 0)
                k = sd_bus_message_close_container(r);
        return k < 0 ? k : sd_bus_send(NULL, r, NULL);
}

static const Policy *find_policy(const Config *c, const char *name) {
        for (size_t i = 0; i < c->n_policies; i++)
                if (streq(c->policies[i]->name, name))
                        return c->policies[i];
        return NULL;
}

/* Every key but Match= with its effective value ("" when unset). */
static int append_settings(sd_bus_message *r, const Policy *p) {
        const char *key;
        int k = bus_dict_open(r, "settings");

        for (size_t i = 1; k >= 0 && (key = config_policy_key(i)); i++) {
                char v[POLICY_VALUE_MAX];
                if (policy_format_value(p, key, v) == 0)
                        k = bus_dict_str(r, key, v);
        }
        return k < 0 ? k : bus_dict_close(r);
}

/* The policy file as it is on disk now (small; read on the loop like a reload is). */
static int append_text(sd_bus_message *r, const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *buf = malloc(POLICY_FILE_MAX + 1);
        size_t n;

        if (!buf)
                return -ENOMEM;
        if (!f)
                return 0;
        n = fread(buf, 1, POLICY_FILE_MAX, f);
        buf[n] = '\0';
        return memchr(buf, 0, n) ? 0 : bus_dict_str(r, "text", buf);
}

static int method_get_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        _cleanup_free_ const char **paths = NULL;
        Manager *m = bus_manager_of(userdata);
        const Policy *p;
        const char *name;
        size_t n;
        int k;

        k = sd_bus_message_read(msg, "s", &name);
        if (k < 0)
                return k;
        p = find_policy(m->config, name);
        if (!p)
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_POLICY, "No policy '%s' is loaded (%zu are)",
                                         name, m->config->n_policies);
        n = policy_cgroups(m->observer, p, NULL, 0);
        paths = calloc(n + 1, sizeof(char *));
        if (!paths)
                return -ENOMEM;
        policy_cgroups(m->observer, p, paths, n);
        k = sd_bus_message_new_method_return(msg, &r);
        if (k >= 0)
                k = sd_bus_message_open_container(r, 'a', "{sv}");
        if (k >= 0)
                k = append_policy_brief(r, m->observer, p);
        if (k >= 0)
                k = bus_dict_strv(r, "cgroup_paths", paths, n);
        if (k >= 0)
                k = append_settings(r, p);
        if (k >= 0)
                k = append_text(r, p->file);
        if (k >= 0)
                k = sd_bus_message_close_container(r);
        return k < 0 ? k : sd_bus_send(NULL, r, NULL);
}

static int method_list_events(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        Manager *m = bus_manager_of(userdata);
        uint64_t since;
        int k;

        k = sd_bus_message_read(msg, "t", &since);
        if (k < 0)
                return k;
        k = sd_bus_message_new_method_return(msg, &r);
        if (k >= 0)
                k = sd_bus_message_open_container(r, 'a', "(ttissss)");
        for (uint64_t s = MAX(since, event_log_first(&m->events)); k >= 0 && s < m->events.next_seq; s++) {
                const Event *e = event_log_get(&m->events, s);
                if (e)
                        k = sd_bus_message_append(r, "(ttissss)", e->seq, e->realtime_usec, (int32_t) e->level,
                                                  e->action, e->cgroup, e->unit, e->message);
        }
        if (k >= 0)
                k = sd_bus_message_close_container(r);
        return k < 0 ? k : sd_bus_send(NULL, r, NULL);
}

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
        SD_BUS_METHOD_WITH_NAMES("GetCgroup", "s", SD_BUS_PARAM(unit_or_path), "a{sv}", SD_BUS_PARAM(cgroup),
                                 method_get_cgroup, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListPolicies", "", , "aa{sv}", SD_BUS_PARAM(policies),
                                 method_list_policies, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("GetPolicy", "s", SD_BUS_PARAM(name), "a{sv}", SD_BUS_PARAM(policy),
                                 method_get_policy, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("ListEvents", "t", SD_BUS_PARAM(since_seq), "a(ttissss)", SD_BUS_PARAM(events),
                                 method_list_events, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Subscribe", "", "", method_subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Unsubscribe", "", "", method_subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("SetPolicy", "sas", SD_BUS_PARAM(name) SD_BUS_PARAM(assignments),
                                 "s", SD_BUS_PARAM(file), bus_set_policy, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("UnsetPolicy", "sas", SD_BUS_PARAM(name) SD_BUS_PARAM(keys),
                                 "s", SD_BUS_PARAM(file), bus_unset_policy, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Reload", "", "", bus_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Reclaim", "stb", SD_BUS_PARAM(unit_or_path) SD_BUS_PARAM(bytes)
                                 SD_BUS_PARAM(cache_only), "s", SD_BUS_PARAM(result), bus_reclaim,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Writeback", "sb", SD_BUS_PARAM(unit_or_path) SD_BUS_PARAM(wait),
                                 "s", SD_BUS_PARAM(result), bus_writeback, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_NAMES("Event", "ttissss",
                                 SD_BUS_PARAM(seq) SD_BUS_PARAM(realtime_usec) SD_BUS_PARAM(priority)
                                 SD_BUS_PARAM(action) SD_BUS_PARAM(cgroup) SD_BUS_PARAM(unit)
                                 SD_BUS_PARAM(message), 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable hello_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_NAMES("Hello", "", , "s", SD_BUS_PARAM(unique_name), method_hello,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

int bus_manager_attach(BusConnection *c) {
        int r = sd_bus_add_object_vtable(c->bus, NULL, BUS_OBJECT_PATH, BUS_INTERFACE, manager_vtable, c);

        if (r >= 0)
                r = sd_bus_add_object_vtable(c->bus, NULL, "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                             hello_vtable, c);
        return r;
}
