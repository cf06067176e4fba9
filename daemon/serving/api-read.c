/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control API's read methods: status, cgroups, policies, recent events,
 * throttles and releases.
 * Everyone who can reach the socket may call them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api-internal.h"
#include "blkqueue.h"
#include "build-config.h"
#include "bus-reply.h"
#include "name-escape.h"
#include "nearest.h"
#include "policy-effective.h"
#include "policy-store.h"
#include "protection.h"
#include "unit-name.h"
#include "util.h"

static int append_policy_keys(sd_bus_message *r) {
        const char *keys[64];
        size_t n = 0;

        while (n < ELEMENTSOF(keys) && (keys[n] = config_policy_key(n)))
                n++;
        return bus_dict_strv(r, "policy_keys", keys, n);
}

static int status_counts(sd_bus_message *r, BusConnection *c) {
        Manager *m = api_of(c)->manager;
        int k;

        k = bus_dict_u64(r, "cgroups", api_cgroups_watched(m->observer));
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "cgroups_unwatched", m->observer->cgroups.unopened + m->observer->out_of_fds);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "cgroups_with_policy", m->n_with_policy);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "policies", m->config->n_policies);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "psi_triggers", trigger_set_armed(&m->triggers));
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "psi_trigger_wakeups", m->trigger_wakeups);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "ticks", m->ticks);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "interval_usec", m->config->daemon.interval_usec);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "rescan_interval_usec", m->config->daemon.rescan_interval_usec);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "cold_sample_interval_usec", m->config->daemon.cold_interval_usec);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "cold_sample_budget_ppm", m->config->daemon.cold_budget_ppm);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "cold_round_usec", m->observer->cold_round_usec);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "cold_samples_deferred", m->observer->cold_deferred);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "events_first_seq", event_log_first(m->events));
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "events_next_seq", m->events->next_seq);
        if (k < 0)
                return k;
        return bus_dict_u64(r, "connections", transport_connections(api_of(c)->transport));
}

static int status_identity(sd_bus_message *r, BusConnection *c) {
        Manager *m = api_of(c)->manager;
        const char *group = m->config->daemon.admin_group;
        int k;

        k = bus_dict_str(r, "version", PACKAGE_VERSION);
        if (k < 0)
                return k;
        k = sd_bus_message_append(r, "{sv}", "pid", "u", (uint32_t) getpid());
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "started_realtime_usec", api_of(c)->started_realtime_usec);
        if (k < 0)
                return k;
        k = bus_dict_name(r, "cgroup_root", m->observer->root->path);
        if (k < 0)
                return k;
        k = sd_bus_message_append(r, "{sv}", "cgroup_root_is_cgroup2", "b", (int) m->observer->root->is_cgroup2);
        if (k < 0)
                return k;
        k = bus_dict_name(r, "config_root", *api_config_root(api_of(c)) ? api_config_root(api_of(c)) : "/");
        if (k < 0)
                return k;
        k = bus_dict_name(r, "control_socket", api_of(c)->transport->path);
        if (k < 0)
                return k;
        k = bus_dict_namev(r, "config_files", (const char *const *) m->config->files, m->config->n_files);
        if (k < 0)
                return k;
        if (group && (k = bus_dict_str(r, "admin_group", group)) < 0)
                return k;
        k = sd_bus_message_append(r, "{sv}", "caller_uid", "u", (uint32_t) c->creds.uid);
        if (k < 0)
                return k;
        return sd_bus_message_append(r, "{sv}", "caller_is_admin", "b", (int) api_caller_is_admin(c));
}

/* What is protected and who is capped for it (core/protection.h), with the line STATUS= ends with. */
static int status_protection(sd_bus_message *r, Manager *m) {
        _cleanup_free_ char *line = NULL;
        const char *devices[PROTECTION_DEVICES_MAX];
        char names[PROTECTION_DEVICES_MAX][48];
        ProtectionSummary p;
        int k;

        protection_summary(m, &p);
        line = protection_line(m, &p);
        if (!line)
                return -ENOMEM;
        for (size_t i = 0; i < p.n_devices; i++) {
                blkdev_name(m->observer->host->sys_fd, p.devices[i].major, p.devices[i].minor, names[i],
                            sizeof(names[i]));
                devices[i] = names[i];
        }
        if ((k = bus_dict_name(r, "protection", line)) < 0 ||
            (k = bus_dict_u64(r, "protected_cgroups", p.n_protected)) < 0 ||
            (k = bus_dict_namev(r, "protected_units", p.protected, MIN(p.n_protected, ELEMENTSOF(p.protected)))) < 0 ||
            (k = bus_dict_u64(r, "writers_capped", p.n_capped)) < 0 ||
            (k = bus_dict_namev(r, "capped_writers", p.capped, MIN(p.n_capped, ELEMENTSOF(p.capped)))) < 0 ||
            (k = bus_dict_strv(r, "capped_devices", devices, p.n_devices)) < 0)
                return k;
        return bus_dict_u64(r, "throttles_held", p.n_throttles);
}

int method_get_status(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        BusConnection *c = userdata;
        int k;

        k = sd_bus_message_new_method_return(msg, &r);
        if (k < 0)
                return k;
        k = sd_bus_message_open_container(r, 'a', "{sv}");
        if (k < 0)
                return k;
        k = status_identity(r, c);
        if (k < 0)
                return k;
        k = status_counts(r, c);
        if (k < 0)
                return k;
        k = append_policy_keys(r);
        if (k < 0)
                return k;
        k = status_protection(r, api_of(c)->manager);
        if (k < 0)
                return k;
        k = bus_append_system(r, api_of(c)->manager->observer);
        if (k < 0)
                return k;
        k = sd_bus_message_close_container(r);
        if (k < 0)
                return k;
        return sd_bus_send(NULL, r, NULL);
}

/* A reply of one array of dictionaries (aa{sv}), its items appended by `fill`. */
static int reply_dict_array(sd_bus_message *msg, int (*fill)(sd_bus_message *r, Manager *m), Manager *m) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        int k;

        k = sd_bus_message_new_method_return(msg, &r);
        if (k < 0)
                return k;
        k = sd_bus_message_open_container(r, 'a', "a{sv}");
        if (k < 0)
                return k;
        k = fill(r, m);
        if (k < 0)
                return k;
        k = sd_bus_message_close_container(r);
        if (k < 0)
                return k;
        return sd_bus_send(NULL, r, NULL);
}

static int append_cgroups(sd_bus_message *r, Manager *m) {
        Observer *o = m->observer;
        int k = 0;

        for (size_t i = 0; k >= 0 && i < o->cgroups.n; i++)
                if (!o->cgroups.entries[i].gone)
                        k = bus_append_cgroup_summary(r, o, &o->cgroups.entries[i]);
        return k;
}

int method_list_cgroups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return reply_dict_array(msg, append_cgroups, api_of(userdata)->manager);
}

/* ListCgroupsJSON's orders: what mdctl's --sort names. */
typedef enum ListOrder {
        ORDER_NAME,
        ORDER_DIRTY,
        ORDER_PRESSURE,
        ORDER_MEMORY,
        _ORDER_MAX,
} ListOrder;

static const char *const list_orders[_ORDER_MAX] = {
        [ORDER_NAME] = "name",
        [ORDER_DIRTY] = "dirty",
        [ORDER_PRESSURE] = "pressure",
        [ORDER_MEMORY] = "memory",
};

typedef struct ListRow {
        uint64_t figure;
        const CgEntry *e;
        bool plain;             /* its path is its own escaped form */
} ListRow;

/* The figure an order sorts by, as the summary shows it (0 where the summary has none). */
static uint64_t order_figure(const CgEntry *e, ListOrder order) {
        const CgroupSample *s = cg_entry_sample(e);
        const CgroupSignals *g = &e->signals;

        switch (order) {
        case ORDER_DIRTY:
                return s && (s->have & SAMPLE_MEMORY_STAT) ? sample_dirty_bytes(s) : 0;
        case ORDER_MEMORY:
                return s && (s->have & SAMPLE_MEMORY_CURRENT) ? s->memory_current : 0;
        case ORDER_PRESSURE:
                return !g->valid ? 0 : (g->have_memory_stall ? g->memory_stall.some_ppm : 0) +
                                       (uint64_t) (g->have_io_stall ? g->io_stall.some_ppm : 0);
        default:
                return 0;
        }
}

/* The bytes of a name's escaped form, one at a time, without writing it out. */
typedef struct EscapedCursor {
        const char *s;                  /* what is left of the name */
        char piece[NAME_PIECE_MAX];     /* the escaped form of the character before s */
        size_t at;                      /* the next byte of piece */
} EscapedCursor;

static unsigned char escaped_next(EscapedCursor *c) {
        if (!c->piece[c->at]) {
                if (!*c->s)
                        return 0;
                c->s += name_escape_piece(c->s, c->piece);
                c->at = 0;
        }
        return (unsigned char) c->piece[c->at++];
}

/* strcmp() of two names' escaped forms, the paths the rows show: what mdctl sorted by when it sorted. */
static int compare_escaped(const char *x, const char *y) {
        EscapedCursor a = { .s = x }, b = { .s = y };

        for (;;) {
                unsigned char ca = escaped_next(&a), cb = escaped_next(&b);

                if (ca != cb || !ca)
                        return (int) ca - (int) cb;
        }
}

/* Largest first, then by path A to Z. */
static int compare_rows(const void *x, const void *y) {
        const ListRow *a = x, *b = y;

        if (a->figure != b->figure)
                return a->figure > b->figure ? -1 : 1;
        if (a->plain && b->plain)
                return strcmp(a->e->cg->path, b->e->cg->path);
        return compare_escaped(a->e->cg->path, b->e->cg->path);
}

/* A piece of the reply's text: rows are written into it until it holds this much. */
#define LIST_JSON_PIECE 65536

/* The text of the rows, in pieces of about LIST_JSON_PIECE bytes, appended as strings. */
static int append_json_rows(sd_bus_message *r, const ListRow *rows, size_t n, uint64_t now) {
        size_t at = 0;
        int k = 0;

        do {
                _cleanup_free_ char *text = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&text, &size);

                if (!f)
                        return -ENOMEM;
                /* One thread writes it: no lock taken at each character. */
                (void) __fsetlocking(f, FSETLOCKING_BYCALLER);
                if (at == 0)
                        fputc('[', f);
                for (; k >= 0 && at < n && ftell(f) < LIST_JSON_PIECE; at++) {
                        if (at > 0)
                                fputc(',', f);
                        k = json_append_cgroup_summary(f, rows[at].e, now);
                }
                if (at == n)
                        fputc(']', f);
                /* A write that found no room says so in ferror(), not always at fclose(); asked first,
                 * while f still exists. */
                bool failed = ferror(f) != 0;

                if ((fclose(f) != 0 || failed) && k >= 0)
                        k = -ENOMEM;
                /* Copied in as it is: JSON text from json-out.c is UTF-8 whatever the names' bytes (and
                 * holds no NUL), so append_basic()'s check of 20 MB at 50,000 cgroups is not needed. */
                if (k >= 0) {
                        char *space;

                        k = sd_bus_message_append_string_space(r, size, &space);
                        if (k >= 0)
                                memcpy(space, text, size);
                }
        } while (k >= 0 && at < n);
        return k;
}

int method_list_cgroups_json(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        const Observer *o = api_of(userdata)->manager->observer;
        _cleanup_free_ ListRow *rows = NULL;
        ListOrder order = _ORDER_MAX;
        const char *name;
        size_t n = 0;
        int k;

        k = sd_bus_message_read(msg, "s", &name);
        if (k < 0)
                return k;
        for (size_t i = 0; i < _ORDER_MAX; i++)
                if (streq(name, list_orders[i]))
                        order = (ListOrder) i;
        if (order == _ORDER_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "unknown order '%s': expected name, dirty, pressure or memory", name);
        rows = o->cgroups.n ? calloc(o->cgroups.n, sizeof(ListRow)) : NULL;
        if (o->cgroups.n && !rows)
                return -ENOMEM;
        for (size_t i = 0; i < o->cgroups.n; i++)
                if (!o->cgroups.entries[i].gone)
                        rows[n++] = (ListRow) { .figure = order_figure(&o->cgroups.entries[i], order),
                                                .e = &o->cgroups.entries[i],
                                                .plain = name_is_plain(o->cgroups.entries[i].cg->path) };
        if (n > 1)
                qsort(rows, n, sizeof(ListRow), compare_rows);
        k = sd_bus_message_new_method_return(msg, &r);
        if (k < 0)
                return k;
        k = sd_bus_message_open_container(r, 'a', "s");
        if (k < 0)
                return k;
        k = append_json_rows(r, rows, n, now_usec(CLOCK_MONOTONIC));
        if (k < 0)
                return k;
        k = sd_bus_message_close_container(r);
        if (k < 0)
                return k;
        return sd_bus_send(NULL, r, NULL);
}

int method_get_cgroup(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        Manager *m = api_of(userdata)->manager;
        CgEntry *e;
        int k;

        k = api_resolve_argument(msg, m, &e, error);
        if (k < 0)
                return k;
        /* Asked for by name: figures of now, for a cgroup that is otherwise sampled now and then too. */
        if (!e->hot && (k = observer_sample_entry(m->observer, e, manager_now_usec(m))) == -ENOMEM)
                return k;
        k = sd_bus_message_new_method_return(msg, &r);
        if (k < 0)
                return k;
        k = bus_append_cgroup(r, m->observer, e, &m->config->daemon);
        if (k < 0)
                return k;
        return sd_bus_send(NULL, r, NULL);
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

/* The unit names nearest to the first literal Match= pattern that has any: what the caller may have meant. */
static void nearest_units(const Observer *o, const Policy *p, NearestNames *ret) {
        nearest_names_init(ret, "");
        for (size_t i = 0; i < p->n_matches && ret->n == 0; i++) {
                const char *pat = p->matches[i].pattern;
                const char *want = pat[0] == '/' ? cgroup_path_unit(pat) : pat;

                if (!want || strpbrk(pat, "*?["))
                        continue;
                nearest_names_init(ret, want);
                for (size_t k = 0; k < o->cgroups.n; k++) {
                        const CgEntry *e = &o->cgroups.entries[k];
                        if (!e->gone && e->unit)
                                nearest_names_offer(ret, e->unit);
                }
        }
}

/* The first cgroup the policy's patterns match that another policy governs (a more specific match), and how many. */
static size_t policy_shadowed(const Observer *o, const Policy *p, const CgEntry **ret_first) {
        size_t n = 0;

        *ret_first = NULL;
        for (size_t i = 0; i < o->cgroups.n; i++) {
                const CgEntry *e = &o->cgroups.entries[i];
                if (e->gone || !e->policy || e->policy == p || policy_match_score(p, e->cg->path, e->unit) == 0)
                        continue;
                if (n++ == 0)
                        *ret_first = e;
        }
        return n;
}

int api_append_policy_outcome(sd_bus_message *r, const Manager *m, const char *name) {
        const char *paths[API_OUTCOME_PATHS_MAX];
        const Policy *p = NULL;
        const CgEntry *first;
        NearestNames near;
        size_t n, shadowed;
        int k;

        for (size_t i = 0; i < m->config->n_policies && !p; i++)
                if (streq(m->config->policies[i]->name, name))
                        p = m->config->policies[i];
        k = sd_bus_message_open_container(r, 'a', "{sv}");
        if (k < 0 || !p)        /* removed: nothing governed by it to tell */
                return k < 0 ? k : sd_bus_message_close_container(r);
        n = policy_cgroups(m->observer, p, paths, ELEMENTSOF(paths));
        shadowed = policy_shadowed(m->observer, p, &first);
        if (n == 0)
                nearest_units(m->observer, p, &near);
        if ((k = bus_dict_str(r, "mode", policy_mode_to_string(p->mode))) < 0 ||
            (k = sd_bus_message_append(r, "{sv}", "mode_default", "b", (int) (p->mode_line == 0))) < 0 ||
            (k = sd_bus_message_append(r, "{sv}", "protect", "b", (int) p->protect)) < 0 ||
            (k = sd_bus_message_append(r, "{sv}", "cap_writes", "b", (int) p->cap_writes)) < 0 ||
            (k = bus_dict_u64(r, "cgroups", n)) < 0 ||
            (k = bus_dict_namev(r, "cgroup_paths", paths, MIN(n, ELEMENTSOF(paths)))) < 0)
                return k;
        if (shadowed > 0 &&
            ((k = bus_dict_u64(r, "shadowed", shadowed)) < 0 ||
             (k = bus_dict_name(r, "shadowed_path", first->cg->path)) < 0 ||
             (k = bus_dict_str(r, "shadowed_by", first->policy->name)) < 0))
                return k;
        if (n == 0 && (k = bus_dict_namev(r, "nearest_units", near.names, near.n)) < 0)
                return k;
        return sd_bus_message_close_container(r);
}

static int append_matches(sd_bus_message *r, const Policy *p) {
        const char *v[POLICY_MATCH_MAX];

        for (size_t i = 0; i < p->n_matches && i < POLICY_MATCH_MAX; i++)
                v[i] = p->matches[i].pattern;
        return bus_dict_namev(r, "matches", v, MIN(p->n_matches, (size_t) POLICY_MATCH_MAX));
}

static int append_policy_brief(sd_bus_message *r, const Observer *o, const Policy *p) {
        int k;

        k = bus_dict_str(r, "name", p->name);
        if (k < 0)
                return k;
        k = bus_dict_name(r, "file", p->file);
        if (k < 0)
                return k;
        k = bus_dict_str(r, "mode", policy_mode_to_string(p->mode));
        if (k < 0)
                return k;
        k = sd_bus_message_append(r, "{sv}", "priority", "u", (uint32_t) p->priority);
        if (k < 0)
                return k;
        k = sd_bus_message_append(r, "{sv}", "protect", "b", (int) p->protect);
        if (k < 0)
                return k;
        k = append_matches(r, p);
        if (k < 0)
                return k;
        return bus_dict_u64(r, "cgroups", policy_cgroups(o, p, NULL, 0));
}

static int append_policies(sd_bus_message *r, Manager *m) {
        int k;

        for (size_t i = 0; i < m->config->n_policies; i++) {
                k = sd_bus_message_open_container(r, 'a', "{sv}");
                if (k < 0)
                        return k;
                k = append_policy_brief(r, m->observer, m->config->policies[i]);
                if (k < 0)
                        return k;
                k = sd_bus_message_close_container(r);
                if (k < 0)
                        return k;
        }
        return 0;
}

int method_list_policies(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return reply_dict_array(msg, append_policies, api_of(userdata)->manager);
}

static const Policy *find_policy(const Config *c, const char *name) {
        for (size_t i = 0; i < c->n_policies; i++)
                if (streq(c->policies[i]->name, name))
                        return c->policies[i];
        return NULL;
}

/* Every key but Match= with its effective value ("" when unset), and where an unset IOLatencyTarget=
 * comes from the filesystems, their targets. */
static int append_settings(sd_bus_message *r, const Policy *p, const DaemonSettings *d) {
        char by_fs[POLICY_VALUE_MAX];
        const char *key;
        int k;

        if (!p->io_latency_target_usec && latency_by_filesystem(d, by_fs) &&
            (k = bus_dict_str(r, "io_latency_target_by_filesystem", by_fs)) < 0)
                return k;

        k = bus_dict_open(r, "settings");
        if (k < 0)
                return k;
        for (size_t i = 1; k >= 0 && (key = config_policy_key(i)); i++) {
                char v[POLICY_VALUE_MAX];
                if (policy_format_effective(p, d, key, v) == 0)
                        k = bus_dict_str(r, key, v);
        }
        return k < 0 ? k : bus_dict_close(r);
}

/* The policy file as it is on disk now (small; read on the loop like a reload is). */
static int append_text(sd_bus_message *r, const char *path) {
        _cleanup_free_ char *text = NULL;
        int k = policy_store_read_text(path, &text);

        if (k == -ENOMEM)
                return k;
        /* Unreadable, or not text: the settings above still say what is in force. */
        return k < 0 ? 0 : bus_dict_str(r, "text", text);
}

int method_get_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        _cleanup_free_ const char **paths = NULL;
        Manager *m = api_of(userdata)->manager;
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
        if (k < 0)
                return k;
        k = sd_bus_message_open_container(r, 'a', "{sv}");
        if (k < 0)
                return k;
        k = append_policy_brief(r, m->observer, p);
        if (k < 0)
                return k;
        k = bus_dict_namev(r, "cgroup_paths", paths, n);
        if (k < 0)
                return k;
        k = append_settings(r, p, &m->config->daemon);
        if (k < 0)
                return k;
        k = append_text(r, p->file);
        if (k < 0)
                return k;
        k = sd_bus_message_close_container(r);
        if (k < 0)
                return k;
        return sd_bus_send(NULL, r, NULL);
}

/* One field as a{sv} entry: its key in lower case; a whole number as t, yes/no as b, the rest as s. */
static int append_event_field(sd_bus_message *r, const char *field) {
        const char *eq = strchr(field, '='), *value = eq + 1;
        char key[64];
        size_t n = MIN((size_t) (eq - field), sizeof(key) - 1);
        uint64_t u;

        for (size_t i = 0; i < n; i++)
                key[i] = (char) (field[i] >= 'A' && field[i] <= 'Z' ? field[i] - 'A' + 'a' : field[i]);
        key[n] = '\0';
        if (streq(value, "yes") || streq(value, "no"))
                return sd_bus_message_append(r, "{sv}", key, "b", (int) streq(value, "yes"));
        if (value[0] >= '0' && value[0] <= '9' && parse_uint_range(value, 0, UINT64_MAX, &u) >= 0)
                return bus_dict_u64(r, key, u);
        return bus_dict_str(r, key, value);
}

int api_append_event_fields(sd_bus_message *r, const Event *e) {
        const char *cursor = NULL, *field;
        int k = sd_bus_message_open_container(r, 'a', "{sv}");

        while (k >= 0 && (field = event_next_field(e, &cursor)))
                k = append_event_field(r, field);
        return k < 0 ? k : sd_bus_message_close_container(r);
}

static int append_event(sd_bus_message *r, const Event *e, bool with_fields) {
        int k = sd_bus_message_open_container(r, 'r', with_fields ? "ttissssa{sv}" : "ttissss");

        if (k >= 0)
                k = sd_bus_message_append(r, "ttissss", e->seq, e->realtime_usec, (int32_t) e->level, e->action,
                                          e->cgroup, e->unit, e->message);
        if (k >= 0 && with_fields)
                k = api_append_event_fields(r, e);
        return k < 0 ? k : sd_bus_message_close_container(r);
}

/* ListEvents (as it always was) and ListEventsWithFields (each event's fields too). */
static int list_events(sd_bus_message *msg, Manager *m, bool with_fields) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        uint64_t since;
        int k;

        k = sd_bus_message_read(msg, "t", &since);
        if (k < 0)
                return k;
        k = sd_bus_message_new_method_return(msg, &r);
        if (k < 0)
                return k;
        k = sd_bus_message_open_container(r, 'a', with_fields ? "(ttissssa{sv})" : "(ttissss)");
        if (k < 0)
                return k;
        for (uint64_t s = MAX(since, event_log_first(m->events)); k >= 0 && s < m->events->next_seq; s++) {
                const Event *e = event_log_get(m->events, s);
                if (e)
                        k = append_event(r, e, with_fields);
        }
        if (k < 0)
                return k;
        k = sd_bus_message_close_container(r);
        if (k < 0)
                return k;
        return sd_bus_send(NULL, r, NULL);
}

int method_list_events(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return list_events(msg, api_of(userdata)->manager, false);
}

int method_list_events_with_fields(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return list_events(msg, api_of(userdata)->manager, true);
}

/* ---- throttles ---- */

/* The unit of the cgroup with this id while it is at `path`, or NULL. */
static const char *unit_of(Manager *m, uint64_t cgroup_id, const char *path) {
        const CgEntry *e = cgroup_id ? cgtable_find(&m->observer->cgroups, cgroup_id) : NULL;

        return e && streq(e->cg->path, path) ? e->unit : NULL;
}

/* The reasons (or "lifts when") of the points asking for t; each named when two ask. */
static const char *request_texts(const ThrottleEntry *t, bool lifts, char *buf, size_t size) {
        size_t off = 0, n = 0;

        for (int p = 0; p < _POINT_MAX; p++)
                n += t->requested[p] != THROTTLE_NONE;
        buf[0] = '\0';
        for (int p = 0; p < _POINT_MAX && off < size; p++)
                if (t->requested[p] != THROTTLE_NONE)
                        off += (size_t) snprintf(buf + off, size - off, "%s%s%s%s", off ? "; " : "",
                                                 n > 1 ? throttle_point_to_string(p) : "", n > 1 ? ": " : "",
                                                 lifts ? t->lifts_when[p] : t->reason[p]);
        return buf;
}

/* Which cgroup, and which knob of it. */
static int throttle_identity(sd_bus_message *r, Manager *m, const ThrottleEntry *t) {
        const char *unit = unit_of(m, t->cgroup_id, t->path);
        char dev[32], name[48];
        int k;

        k = bus_dict_name(r, "path", t->path);
        if (k < 0)
                return k;
        k = bus_dict_u64(r, "id", t->cgroup_id);
        if (k < 0)
                return k;
        if (unit && (k = bus_dict_name(r, "unit", unit)) < 0)
                return k;
        k = bus_dict_str(r, "knob", throttle_knob(t->kind));
        if (k < 0 || !throttle_kind_has_device(t->kind))
                return k;
        snprintf(dev, sizeof(dev), "%" PRIu32 ":%" PRIu32, t->major, t->minor);
        k = bus_dict_str(r, "device", dev);
        if (k < 0)
                return k;
        blkdev_name(m->observer->host->sys_fd, t->major, t->minor, name, sizeof(name));
        return bus_dict_str(r, "device_name", name);
}

/* Its value, what it replaced, who asked, since when, why and until when. */
static int throttle_story(sd_bus_message *r, Manager *m, const ThrottleEntry *t) {
        /* A device's queue is no cgroup's: an operator's release does not cover it. */
        const LedgerHold *h = throttle_kind_is_queue(t->kind) ? NULL : actuator_released(m->actuator, t->path);
        const char *points[_POINT_MAX];
        char text[_POINT_MAX * (LEDGER_REASON_MAX + LEDGER_LIFTS_MAX)];
        size_t n = 0;
        int k;

        for (int p = 0; p < _POINT_MAX; p++)
                if (t->requested[p] != THROTTLE_NONE)
                        points[n++] = throttle_point_to_string(p);
        k = bus_dict_limit(r, "value", throttle_effective(t));
        if (k < 0)
                return k;
        k = bus_dict_limit(r, "original", t->original);
        if (k < 0)
                return k;
        k = bus_dict_strv(r, "points", points, n);
        if (k < 0)
                return k;
        if (t->since_usec && (k = bus_dict_u64(r, "since_realtime_usec", t->since_usec)) < 0)
                return k;
        k = bus_dict_name(r, "reason", request_texts(t, false, text, sizeof(text)));
        if (k < 0)
                return k;
        k = bus_dict_name(r, "lifts_when", request_texts(t, true, text, sizeof(text)));
        if (k < 0 || !h)
                return k;
        return bus_dict_u64(r, "released_until_usec", h->until_usec);
}

/* A cgroup an operator released: no knob, who and until when. */
static int append_release(sd_bus_message *r, Manager *m, const LedgerHold *h) {
        const char *unit = unit_of(m, h->cgroup_id, h->path);
        char reason[LEDGER_WHO_MAX + 16];
        int k;

        snprintf(reason, sizeof(reason), "released by %s", h->who);
        k = bus_dict_name(r, "path", h->path);
        if (k < 0)
                return k;
        if (unit && (k = bus_dict_name(r, "unit", unit)) < 0)
                return k;
        k = bus_dict_u64(r, "since_realtime_usec", h->since_usec);
        if (k < 0)
                return k;
        k = bus_dict_str(r, "reason", reason);
        if (k < 0)
                return k;
        k = bus_dict_str(r, "released_by", h->who);
        if (k < 0)
                return k;
        return bus_dict_u64(r, "released_until_usec", h->until_usec);
}

static int append_entries(sd_bus_message *r, Manager *m, const Ledger *l) {
        int k = 0;

        for (size_t i = 0; k >= 0 && i < l->n; i++) {
                k = sd_bus_message_open_container(r, 'a', "{sv}");
                if (k >= 0)
                        k = throttle_identity(r, m, &l->entries[i]);
                if (k >= 0)
                        k = throttle_story(r, m, &l->entries[i]);
                if (k >= 0)
                        k = sd_bus_message_close_container(r);
        }
        return k;
}

/* The cgroups' throttles, the device queues kept shallow, the releases. */
static int append_throttles(sd_bus_message *r, Manager *m) {
        const Ledger *l = actuator_ledger(m->actuator);
        uint64_t now = now_usec(CLOCK_REALTIME);
        int k = append_entries(r, m, l);

        if (k >= 0 && m->queues)
                k = append_entries(r, m, queue_depth_ledger(m->queues));
        for (size_t i = 0; k >= 0 && i < l->n_holds; i++) {
                if (l->holds[i].until_usec <= now)
                        continue;       /* ended: dropped at the next tick */
                k = sd_bus_message_open_container(r, 'a', "{sv}");
                if (k >= 0)
                        k = append_release(r, m, &l->holds[i]);
                if (k >= 0)
                        k = sd_bus_message_close_container(r);
        }
        return k;
}

int method_list_throttles(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return reply_dict_array(msg, append_throttles, api_of(userdata)->manager);
}
