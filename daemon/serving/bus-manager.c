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
#include "bus-reply.h"
#include "conf.h"
#include "policy-format.h"
#include "policy-store.h"
#include "policy-writer.h"
#include "util.h"

#define MESSAGE_POLICY_CHANGED "8b1e2f0c4d7a4e6b9c3d5a7f1e0b2c4d"

static Manager *conn_manager(const BusConnection *c) {
        return c->server->manager;
}

static const char *config_root(const Manager *m) {
        const char *r = m->args.config_root;

        return (!r || streq(r, "/")) ? "" : r;
}

/* ---- who may change things ---- */

static void admin_group_resolve(BusServer *s, const char *group) {
        char buf[4096];
        struct group gr, *res = NULL;
        uint64_t gid;

        if (streq_ptr(group, s->admin_group))
                return;
        free(s->admin_group);
        s->admin_group = group ? strdup(group) : NULL;
        s->have_admin_gid = false;
        if (!group)
                return;
        if (parse_uint_range(group, 0, UINT32_MAX - 1, &gid) >= 0) {
                s->admin_gid = (gid_t) gid;
                s->have_admin_gid = true;
        } else if (getgrnam_r(group, &gr, buf, sizeof(buf), &res) == 0 && res) {
                s->admin_gid = res->gr_gid;
                s->have_admin_gid = true;
        } else
                log_warning("AdminGroup=%s: no such group; only root may change things", group);
}

static bool caller_is_admin(BusConnection *c) {
        BusServer *s = c->server;

        admin_group_resolve(s, conn_manager(c)->config->daemon.admin_group);
        return peer_creds_is_admin(&c->creds, s->have_admin_gid, s->admin_gid);
}

/* 0 if the caller may `what`; otherwise AccessDenied, saying who may. */
static int check_admin(BusConnection *c, const char *what, sd_bus_error *error) {
        const char *group = conn_manager(c)->config->daemon.admin_group;

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

static size_t connections_open(const BusServer *s) {
        size_t n = 0;

        for (size_t i = 0; i < s->n_connections; i++)
                n += !s->connections[i]->dead;
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
        Manager *m = conn_manager(c);
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
                k = bus_dict_u64(r, "connections", connections_open(c->server));
        return k;
}

static int status_identity(sd_bus_message *r, BusConnection *c) {
        Manager *m = conn_manager(c);
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
                k = bus_dict_str(r, "config_root", *config_root(m) ? config_root(m) : "/");
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
                k = bus_append_system(r, conn_manager(c)->observer);
        if (k >= 0)
                k = sd_bus_message_close_container(r);
        return k < 0 ? k : sd_bus_send(NULL, r, NULL);
}

static int method_list_cgroups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        Observer *o = conn_manager(userdata)->observer;
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
static int resolve_cgroup(Manager *m, const char *what, CgEntry **ret, sd_bus_error *error) {
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
        Manager *m = conn_manager(userdata);
        const char *what;
        CgEntry *e;
        int k;

        k = sd_bus_message_read(msg, "s", &what);
        if (k < 0)
                return k;
        k = resolve_cgroup(m, what, &e, error);
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
        Manager *m = conn_manager(userdata);
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
        Manager *m = conn_manager(userdata);
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
        Manager *m = conn_manager(userdata);
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

/* ---- changing ---- */

static int on_wait_timer(sd_event_source *src, uint64_t usec, void *userdata);

/* A reply of one formatted string. */
static int reply_text(sd_bus_message *msg, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int reply_text(sd_bus_message *msg, const char *format, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&text, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return sd_bus_reply_method_return(msg, "s", text);
}

/* What a policy job needs to answer and to record who asked. */
typedef struct PolicyRequest {
        sd_bus_message *msg;
        uid_t uid;
        pid_t pid;
        char *summary;          /* "set DirtyLimit=256M Mode=enforce" */
} PolicyRequest;

static void policy_request_free(PolicyRequest *q) {
        sd_bus_message_unref(q->msg);
        free(q->summary);
        free(q);
}

static int read_strv(sd_bus_message *msg, char ***ret, size_t *ret_n, sd_bus_error *error) {
        char **v = NULL;
        size_t n = 0;
        const char *s;
        int k;

        k = sd_bus_message_enter_container(msg, 'a', "s");
        while (k >= 0 && (k = sd_bus_message_read(msg, "s", &s)) > 0) {
                char **nv;

                if (n >= BUS_POLICY_ARGS_MAX) {
                        k = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "More than %d keys in one call",
                                              BUS_POLICY_ARGS_MAX);
                        break;
                }
                nv = realloc(v, (n + 1) * sizeof(char *));
                if (!nv || !(nv[n] = strdup(s))) {
                        if (nv)
                                v = nv;
                        k = -ENOMEM;
                        break;
                }
                v = nv;
                n++;
        }
        if (k >= 0)
                k = sd_bus_message_exit_container(msg);
        if (k < 0) {
                for (size_t i = 0; i < n; i++)
                        free(v[i]);
                free(v);
                return k;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static char *summarize(const char *verb, char *const *v, size_t n) {
        size_t size = strlen(verb) + 1;
        char *s, *p;

        for (size_t i = 0; i < n; i++)
                size += strlen(v[i]) + 1;
        s = p = malloc(size);
        if (!s)
                return NULL;
        p = stpcpy(p, verb);
        for (size_t i = 0; i < n; i++)
                p = stpcpy(stpcpy(p, " "), v[i]);
        return s;
}

/* SetPolicy and UnsetPolicy: checked here, written by the policy writer, answered when it is done. */
static int policy_change(sd_bus_message *msg, BusConnection *c, bool set, sd_bus_error *error) {
        PolicyChange *ch = NULL;
        PolicyRequest *q = NULL;
        const char *name, *why;
        char **v = NULL;
        size_t n = 0;
        int k;

        k = check_admin(c, set ? "setting a policy" : "unsetting a policy", error);
        if (k >= 0)
                k = sd_bus_message_read(msg, "s", &name);
        if (k >= 0)
                k = read_strv(msg, &v, &n, error);
        if (k < 0)
                return k;
        ch = calloc(1, sizeof(PolicyChange));
        q = calloc(1, sizeof(PolicyRequest));
        if (!ch || !q || !(ch->name = strdup(name)) || !(ch->root = strdup(config_root(conn_manager(c)))) ||
            !(q->summary = summarize(set ? "set" : n ? "unset" : "removed", v, n))) {
                k = -ENOMEM;
                goto fail;
        }
        if (set) {
                ch->set = TAKE_PTR(v);
                ch->n_set = n;
        } else {
                ch->unset = TAKE_PTR(v);
                ch->n_unset = n;
                ch->remove = n == 0;
        }
        if (!policy_name_settable(name, &why)) {
                k = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid policy name '%s': %s", name, why);
                goto fail;
        }
        q->msg = sd_bus_message_ref(msg);
        q->uid = c->creds.uid;
        q->pid = c->creds.pid;
        k = policy_writer_submit(c->server->writer, TAKE_PTR(ch), q);
        if (k == -EBUSY)
                k = sd_bus_error_setf(error, BUS_ERROR_BUSY, "%d policy changes are waiting already; try again",
                                      POLICY_WRITER_QUEUE_MAX);
        if (k < 0) {
                policy_request_free(q);
                return k;
        }
        return 1;
fail:
        for (size_t i = 0; v && i < n; i++)
                free(v[i]);
        free(v);
        policy_change_free(ch);
        if (q)
                policy_request_free(q);
        return k;
}

static int method_set_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return policy_change(msg, userdata, true, error);
}

static int method_unset_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return policy_change(msg, userdata, false, error);
}

static void record_policy_change(Manager *m, const PolicyJob *j, const PolicyRequest *q) {
        char f_policy[POLICY_NAME_MAX + 16], f_uid[32];
        const char *fields[] = { f_policy, f_uid, NULL };

        snprintf(f_policy, sizeof(f_policy), "POLICY=%s", j->change->name);
        snprintf(f_uid, sizeof(f_uid), "CALLER_UID=%u", (unsigned) q->uid);
        manager_event(m, &(LogEvent) {
                              .level = LOG_NOTICE,
                              .message_id = MESSAGE_POLICY_CHANGED,
                              .action = "policy-change",
                              .fields = fields,
                      },
                      "Policy '%s' %s by uid %u (pid %d)%s%s", j->change->name,
                      j->change->remove ? "removed" : "changed", (unsigned) q->uid, (int) q->pid,
                      j->change->remove ? "" : ": ", j->change->remove ? "" : q->summary);
}

static void on_policy_done(PolicyJob *j, void *userdata) {
        BusServer *s = userdata;
        PolicyRequest *q = j->userdata;
        const char *name = BUS_ERROR_FAILED;

        if (j->result >= 0) {
                record_policy_change(s->manager, j, q);
                if (manager_reload(s->manager) < 0)
                        (void) sd_bus_reply_method_errorf(q->msg, BUS_ERROR_FAILED,
                                                          "%s was written, but the reload refused the configuration "
                                                          "(see the journal); the running one stays in force",
                                                          j->path);
                else
                        (void) sd_bus_reply_method_return(q->msg, "s", j->path);
        } else {
                if (j->result == -EINVAL)
                        name = BUS_ERROR_INVALID_POLICY;
                else if (j->result == -ENOENT)
                        name = BUS_ERROR_NO_SUCH_POLICY;
                (void) sd_bus_reply_method_errorf(q->msg, name, "%s",
                                                  j->message ? j->message : strerror(-j->result));
        }
        policy_request_free(q);
}

static void on_policy_dropped(PolicyJob *j) {
        PolicyRequest *q = j->userdata;

        (void) sd_bus_reply_method_errorf(q->msg, BUS_ERROR_FAILED, "the daemon is stopping");
        policy_request_free(q);
}

int bus_manager_writer_new(BusServer *s) {
        int r = policy_writer_new(s->manager->event, on_policy_done, s, &s->writer);

        if (r >= 0)
                r = sd_event_add_time_relative(s->manager->event, &s->wait_source, CLOCK_MONOTONIC, USEC_PER_SEC, 0,
                                               on_wait_timer, s);
        if (r >= 0) {
                (void) sd_event_source_set_description(s->wait_source, "control-waiters");
                r = sd_event_source_set_enabled(s->wait_source, SD_EVENT_OFF);
        }
        return r;
}

void bus_manager_writer_free(BusServer *s) {
        s->writer = policy_writer_free(s->writer, on_policy_dropped);
        while (s->n_waiters > 0) {
                BusWaiter *w = &s->waiters[0];
                (void) sd_bus_reply_method_errorf(w->msg, BUS_ERROR_FAILED, "the daemon is stopping");
                sd_bus_message_unref(w->msg);
                free(w->action);
                free(w->cgroup);
                s->waiters[0] = s->waiters[--s->n_waiters];
        }
        s->wait_source = sd_event_source_disable_unref(s->wait_source);
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        Manager *m = conn_manager(c);
        _cleanup_(config_freep) Config *config = NULL;
        ConfDiag diag = {};
        int k;

        k = check_admin(c, "reloading the configuration", error);
        if (k < 0)
                return k;
        /* Load once to report the errors to the caller; the reload itself logs them too. */
        k = config_load(m->args.config_root, &config, &diag);
        if (k < 0 && k != -ENOMEM) {
                char text[4096];
                size_t off = 0;

                text[0] = '\0';
                for (size_t i = 0; i < diag.n_messages && off < sizeof(text); i++)
                        off += (size_t) snprintf(text + off, sizeof(text) - off, "%s%s", i ? "\n" : "",
                                                 diag.messages[i]);
                conf_diag_clear(&diag);
                return sd_bus_error_setf(error, BUS_ERROR_INVALID_CONFIGURATION,
                                         "%s\nThe configuration has errors; the running one stays in force", text);
        }
        conf_diag_clear(&diag);
        if (k < 0)
                return k;
        if (manager_reload(m) < 0)
                return sd_bus_error_setf(error, BUS_ERROR_INVALID_CONFIGURATION,
                                         "The configuration was refused (see the journal)");
        return sd_bus_reply_method_return(msg, NULL);
}

/* ---- acting on request ---- */

static int act_error(sd_bus_error *error, int r, const char *what, const char *path) {
        if (r == -EPERM)
                return sd_bus_error_setf(error, BUS_ERROR_REFUSED, "mdreclaimd does not %s %s: it never acts on "
                                         "its own cgroup or init.scope", what, path);
        if (r == -EBUSY)
                return sd_bus_error_setf(error, BUS_ERROR_BUSY, "The worker's queue is full; %s %s later", what,
                                         path);
        return sd_bus_error_setf(error, BUS_ERROR_FAILED, "Cannot %s %s: %s", what, path, strerror(-r));
}

/* Authorized and resolved; then handed to the point that owns the action. */
static int act_prepare(sd_bus_message *msg, BusConnection *c, const char *what, CgEntry **ret, sd_bus_error *error) {
        const char *target;
        int k;

        k = check_admin(c, what, error);
        if (k >= 0)
                k = sd_bus_message_read(msg, "s", &target);
        if (k >= 0)
                k = resolve_cgroup(conn_manager(c), target, ret, error);
        return k;
}

static int method_reclaim(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        char reason[64];
        uint64_t bytes;
        int cache_only, k;
        CgEntry *e;

        k = act_prepare(msg, c, "reclaiming memory", &e, error);
        if (k >= 0)
                k = sd_bus_message_read(msg, "tb", &bytes, &cache_only);
        if (k < 0)
                return k;
        snprintf(reason, sizeof(reason), "asked by uid %u", (unsigned) c->creds.uid);
        k = manager_reclaim(conn_manager(c), e, bytes ? bytes : UINT64_MAX, cache_only, reason);
        if (k < 0)
                return act_error(error, k, "reclaim memory of", e->cg->path);
        return reply_text(msg, "Reclaim from %s queued (%s%s); its result comes as a "
                                           "'reclaim' event", e->cg->path, bytes ? "a set size" : "all reclaimable",
                                           cache_only ? ", cache only" : "");
}

static int waiter_add(BusServer *s, sd_bus_message *msg, const char *action, const char *cgroup) {
        BusWaiter *w;
        uint64_t now = 0;

        if (s->n_waiters >= BUS_WAITERS_MAX)
                return -EBUSY;
        (void) sd_event_now(s->manager->event, CLOCK_MONOTONIC, &now);
        w = &s->waiters[s->n_waiters];
        *w = (BusWaiter) { .action = strdup(action), .cgroup = strdup(cgroup), .deadline_usec = now + BUS_WAIT_USEC };
        if (!w->action || !w->cgroup) {
                free(w->action);
                free(w->cgroup);
                return -ENOMEM;
        }
        w->msg = sd_bus_message_ref(msg);
        s->n_waiters++;
        return sd_event_source_set_enabled(s->wait_source, SD_EVENT_ON);
}

/* Answers waiter i (an event's message, or NULL: its deadline passed) and drops it. */
static void waiter_answer(BusServer *s, size_t i, const char *message) {
        BusWaiter *w = &s->waiters[i];

        if (message)
                (void) sd_bus_reply_method_return(w->msg, "s", message);
        else
                (void) sd_bus_reply_method_errorf(w->msg, BUS_ERROR_TIMEOUT, "No %s of %s finished within %llus; "
                                                  "it may still run (mdctl events shows when it does)", w->action,
                                                  w->cgroup, (unsigned long long) (BUS_WAIT_USEC / USEC_PER_SEC));
        sd_bus_message_unref(w->msg);
        free(w->action);
        free(w->cgroup);
        s->waiters[i] = s->waiters[--s->n_waiters];
        if (s->n_waiters == 0)
                (void) sd_event_source_set_enabled(s->wait_source, SD_EVENT_OFF);
}

void bus_manager_on_event(BusServer *s, const Event *e) {
        for (size_t i = s->n_waiters; i > 0; i--)
                if (streq(s->waiters[i - 1].action, e->action) && streq(s->waiters[i - 1].cgroup, e->cgroup))
                        waiter_answer(s, i - 1, e->message);
}

static int on_wait_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        BusServer *s = userdata;

        for (size_t i = s->n_waiters; i > 0; i--)
                if (s->waiters[i - 1].deadline_usec <= usec)
                        waiter_answer(s, i - 1, NULL);
        if (s->n_waiters > 0)
                (void) sd_event_source_set_time(src, usec + USEC_PER_SEC);
        return 0;
}

static int method_writeback(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        char reason[64];
        int wait, k;
        CgEntry *e;

        k = act_prepare(msg, c, "starting writeback", &e, error);
        if (k >= 0)
                k = sd_bus_message_read(msg, "b", &wait);
        if (k < 0)
                return k;
        if (wait && c->server->n_waiters >= BUS_WAITERS_MAX)
                return sd_bus_error_setf(error, BUS_ERROR_BUSY, "%d callers wait already; try again later",
                                         BUS_WAITERS_MAX);
        snprintf(reason, sizeof(reason), "asked by uid %u", (unsigned) c->creds.uid);
        k = manager_writeback(conn_manager(c), e, reason);
        if (k < 0)
                return act_error(error, k, "write back", e->cg->path);
        if (!wait)
                return reply_text(msg, "Writeback of %s queued; its result comes as a "
                                                   "'writeback' event", e->cg->path);
        k = waiter_add(c->server, msg, "writeback", e->cg->path);
        return k < 0 ? k : 1;
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
                                 "s", SD_BUS_PARAM(file), method_set_policy, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("UnsetPolicy", "sas", SD_BUS_PARAM(name) SD_BUS_PARAM(keys),
                                 "s", SD_BUS_PARAM(file), method_unset_policy, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Reload", "", "", method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Reclaim", "stb", SD_BUS_PARAM(unit_or_path) SD_BUS_PARAM(bytes)
                                 SD_BUS_PARAM(cache_only), "s", SD_BUS_PARAM(result), method_reclaim,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Writeback", "sb", SD_BUS_PARAM(unit_or_path) SD_BUS_PARAM(wait),
                                 "s", SD_BUS_PARAM(result), method_writeback, SD_BUS_VTABLE_UNPRIVILEGED),
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
