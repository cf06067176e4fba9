/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control API's methods that change something: policies (written by the
 * policy writer, answered when it is done), reload, and releasing a cgroup
 * from its throttles (one-shot actions are api-actions.c's). Each checks the caller first; a
 * refused caller changes nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-internal.h"
#include "conf.h"
#include "message-ids.h"
#include "name-escape.h"
#include "policy-store.h"
#include "util.h"

/* ---- policies ---- */

/* A reply of one formatted string. */
static int reply_text(sd_bus_message *msg, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int reply_text(sd_bus_message *msg, const char *format, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;

        va_start(ap, format);
        text = api_vtextf(format, ap);
        va_end(ap);
        return text ? sd_bus_reply_method_return(msg, "s", text) : -ENOMEM;
}

/* What a policy job needs to answer and to record who asked. */
typedef struct PolicyRequest {
        sd_bus_message *msg;
        uid_t uid;
        pid_t pid;
        char *summary;          /* "set DirtyLimit=256M Mode=enforce" */
} PolicyRequest;

static void policy_request_free(PolicyRequest *q) {
        if (!q)
                return;
        sd_bus_message_unref(q->msg);
        free(q->summary);
        free(q);
}

static void policy_request_freep(PolicyRequest **q) {
        policy_request_free(*q);
}

static void policy_change_freep(PolicyChange **c) {
        policy_change_free(*c);
}

static void strv_free(char **v, size_t n) {
        for (size_t i = 0; v && i < n; i++)
                free(v[i]);
        free(v);
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
                strv_free(v, n);
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

/* The change asked for: the policy's name and the keys set (or unset; none: remove the file). */
static int policy_change_new(const char *root, const char *name, bool set, char **v, size_t n, PolicyChange **ret) {
        _cleanup_(policy_change_freep) PolicyChange *ch = calloc(1, sizeof(PolicyChange));

        if (!ch || !(ch->name = strdup(name)) || !(ch->root = strdup(root)))
                return -ENOMEM;
        if (set) {
                ch->set = v;
                ch->n_set = n;
        } else {
                ch->unset = v;
                ch->n_unset = n;
                ch->remove = n == 0;
        }
        *ret = TAKE_PTR(ch);
        return 0;
}

static int policy_request_new(sd_bus_message *msg, const BusConnection *c, char *summary, PolicyRequest **ret) {
        PolicyRequest *q = calloc(1, sizeof(PolicyRequest));

        if (!q || !summary) {
                free(q);
                free(summary);
                return -ENOMEM;
        }
        *q = (PolicyRequest) { .msg = sd_bus_message_ref(msg), .uid = c->creds.uid, .pid = c->creds.pid,
                               .summary = summary };
        *ret = q;
        return 0;
}

/* SetPolicy and UnsetPolicy: checked here, written by the policy writer, answered when it is done. */
static int policy_change(sd_bus_message *msg, BusConnection *c, bool set, sd_bus_error *error) {
        _cleanup_(policy_change_freep) PolicyChange *ch = NULL;
        _cleanup_(policy_request_freep) PolicyRequest *q = NULL;
        const char *name, *why;
        char **v = NULL;
        size_t n = 0;
        int k;

        k = api_check_admin(c, set ? "setting a policy" : "unsetting a policy", error);
        if (k < 0)
                return k;
        k = sd_bus_message_read(msg, "s", &name);
        if (k < 0)
                return k;
        if (!policy_name_settable(name, &why))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid policy name '%s': %s", name, why);
        k = read_strv(msg, &v, &n, error);
        if (k < 0)
                return k;
        k = policy_request_new(msg, c, summarize(set ? "set" : n ? "unset" : "removed", v, n), &q);
        if (k >= 0)
                k = policy_change_new(api_config_root(api_of(c)), name, set, v, n, &ch);
        if (k < 0) {
                strv_free(v, n);
                return k;
        }
        k = policy_writer_submit(api_of(c)->writer, TAKE_PTR(ch), q);
        if (k == -EBUSY)
                return sd_bus_error_setf(error, BUS_ERROR_BUSY, "%d policy changes are waiting already; try again",
                                         POLICY_WRITER_QUEUE_MAX);
        if (k < 0)
                return k;
        TAKE_PTR(q);
        return 1;
}

int method_set_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return policy_change(msg, userdata, true, error);
}

int method_unset_policy(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return policy_change(msg, userdata, false, error);
}

static void record_policy_change(EventLog *events, const PolicyJob *j, const PolicyRequest *q) {
        char f_policy[POLICY_NAME_MAX + 16], f_uid[32], f_pid[32];
        const char *fields[] = { f_policy, f_uid, f_pid, j->change->remove ? "CHANGE=removed" : "CHANGE=changed", NULL };

        snprintf(f_policy, sizeof(f_policy), "POLICY=%s", j->change->name);
        snprintf(f_uid, sizeof(f_uid), "CALLER_UID=%u", (unsigned) q->uid);
        snprintf(f_pid, sizeof(f_pid), "CALLER_PID=%d", (int) q->pid);
        event_record(events, &(LogEvent) {
                              .level = LOG_NOTICE,
                              .message_id = MESSAGE_POLICY_CHANGED,
                              .action = "policy-change",
                              .fields = fields,
                      },
                      "Policy '%s' %s by uid %u (pid %d)%s%s", j->change->name,
                      j->change->remove ? "removed" : "changed", (unsigned) q->uid, (int) q->pid,
                      j->change->remove ? "" : ": ", j->change->remove ? "" : q->summary);
}

/* An answer of the file alone (as daemons before the outcome gave it): the change is in force either way. */
static int policy_reply_new(sd_bus_message *msg, const char *file, sd_bus_message **ret) {
        int k = sd_bus_message_new_method_return(msg, ret);

        if (k >= 0)
                k = sd_bus_message_append(*ret, "s", file);
        return k;
}

/*
 * The file, and what the policy does now that the configuration is reloaded
 * with it; every name in its escaped form. What it does is told when it can
 * be: should that part fail, the answer is the file alone, so that no caller
 * reads a change in force as one refused.
 */
static int reply_policy_changed(Api *s, sd_bus_message *msg, const PolicyJob *j) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        _cleanup_free_ char *file = name_escape(j->path);
        int k;

        k = file ? policy_reply_new(msg, file, &r) : -ENOMEM;
        if (k >= 0 && (k = api_append_policy_outcome(r, s->manager, j->change->name)) < 0) {
                log_warning_errno(k, "Policy '%s' is in force (%s), but what it governs cannot be told in the "
                                  "answer: %m", j->change->name, file);
                r = sd_bus_message_unref(r);
                k = policy_reply_new(msg, file, &r);
        }
        if (k < 0)
                return sd_bus_reply_method_errorf(msg, BUS_ERROR_FAILED, "Policy '%s' was written and is in "
                                                  "force, but the answer could not be built: %s", j->change->name,
                                                  strerror(-k));
        return sd_bus_send(NULL, r, NULL);
}

static void on_policy_done(PolicyJob *j, void *userdata) {
        Api *s = userdata;
        PolicyRequest *q = j->userdata;
        const char *name = BUS_ERROR_FAILED;

        if (j->result >= 0) {
                record_policy_change(s->manager->events, j, q);
                if (manager_reload(s->manager, NULL) < 0) {
                        _cleanup_free_ char *file = name_escape(j->path);

                        (void) sd_bus_reply_method_errorf(q->msg, BUS_ERROR_FAILED,
                                                          "%s was written, but the reload refused the configuration "
                                                          "(see the journal); the running one stays in force",
                                                          file ?: "The policy file");
                } else
                        (void) reply_policy_changed(s, q->msg, j);
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

int api_changes_init(Api *s) {
        int r;

        /* Candidates a killed run left behind, before the writer could make new ones. */
        (void) policy_store_clean_stale(api_config_root(s));
        r = policy_writer_new(s->manager->event, on_policy_done, on_policy_dropped, s, &s->writer);
        if (r < 0)
                return r;
        return api_actions_init(s);
}

void api_changes_done(Api *s) {
        s->writer = policy_writer_free(s->writer);
        api_actions_done(s);
}

/* The diagnostics of a refused configuration, in one text for the caller. */
static void diag_text(const ConfDiag *diag, char *text, size_t size) {
        size_t off = 0;

        text[0] = '\0';
        for (size_t i = 0; i < diag->n_messages && off < size; i++)
                off += (size_t) snprintf(text + off, size - off, "%s%s", i ? "\n" : "", diag->messages[i]);
}

int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        ConfDiag diag = {};
        char text[4096];
        int k;

        k = api_check_admin(c, "reloading the configuration", error);
        if (k < 0)
                return k;
        /* Parsed once: the errors the reload logs are the ones the caller gets. */
        k = manager_reload(api_of(c)->manager, &diag);
        diag_text(&diag, text, sizeof(text));
        conf_diag_clear(&diag);
        if (k == -ENOMEM)
                return k;
        if (k < 0)
                return sd_bus_error_setf(error, BUS_ERROR_INVALID_CONFIGURATION,
                                         "%s\nThe configuration has errors; the running one stays in force", text);
        return sd_bus_reply_method_return(msg, NULL);
}

/* "10min", "90s", "2h": how long a release lasts, for its answer. */
static const char *span_text(char buf[static 32], uint64_t usec) {
        uint64_t s = usec / USEC_PER_SEC;

        if (s >= 3600 && s % 3600 == 0)
                snprintf(buf, 32, "%" PRIu64 "h", s / 3600);
        else if (s >= 60 && s % 60 == 0)
                snprintf(buf, 32, "%" PRIu64 "min", s / 60);
        else
                snprintf(buf, 32, "%" PRIu64 "s", s);
        return buf;
}

static int release_error(sd_bus_error *error, int r, const char *what) {
        if (r == -E2BIG)
                return sd_bus_error_setf(error, BUS_ERROR_BUSY, "%d cgroups are released already; release every "
                                         "cgroup instead, or wait for a release to end", LEDGER_HOLDS_MAX);
        return sd_bus_error_setf(error, BUS_ERROR_FAILED, "Cannot release %s: %s", what, strerror(-r));
}

int method_release(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        Manager *m = api_of(c)->manager;
        _cleanup_free_ char *name = NULL;
        const char *target, *what = "every cgroup";
        char who[LEDGER_WHO_MAX], span[32];
        CgEntry *e = NULL;
        uint64_t usec;
        int k;

        k = api_check_admin(c, "releasing throttles", error);
        if (k < 0)
                return k;
        k = sd_bus_message_read(msg, "st", &target, &usec);
        if (k < 0)
                return k;
        usec = usec ?: BUS_RELEASE_DEFAULT_USEC;
        if (usec > BUS_RELEASE_MAX_USEC)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "A release lasts at most %s",
                                         span_text(span, BUS_RELEASE_MAX_USEC));
        if (*target && (k = api_resolve(m, target, &e, error)) < 0)
                return k;
        if (e && !(what = name = name_escape(e->cg->path)))
                return -ENOMEM;
        snprintf(who, sizeof(who), "uid %u (pid %d)", (unsigned) c->creds.uid, (int) c->creds.pid);
        k = actuator_release(m->actuator, e ? e->cg->id : 0, now_usec(CLOCK_REALTIME) + usec, who);
        if (k < 0)
                return release_error(error, k, what);
        return reply_text(msg, "Released %s for %s: %d throttle%s lifted; the points set none before it ends",
                          what, span_text(span, usec), k, k == 1 ? "" : "s");
}

int method_end_release(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        Manager *m = api_of(c)->manager;
        _cleanup_free_ char *name = NULL;
        const char *target, *what = "every cgroup";
        CgEntry *e = NULL;
        int k;

        k = api_check_admin(c, "ending a release", error);
        if (k < 0)
                return k;
        k = sd_bus_message_read(msg, "s", &target);
        if (k < 0)
                return k;
        if (*target && (k = api_resolve(m, target, &e, error)) < 0)
                return k;
        if (e && !(what = name = name_escape(e->cg->path)))
                return -ENOMEM;
        k = actuator_release_end(m->actuator, e ? e->cg->path : LEDGER_HOLD_ALL);
        if (k == -ENOENT)
                return sd_bus_error_setf(error, BUS_ERROR_REFUSED, "%s is not released%s", what,
                                         e && actuator_released(m->actuator, e->cg->path) ?
                                         " itself: every cgroup is ('mdctl release --end --all')" : "");
        if (k < 0)
                return sd_bus_error_setf(error, BUS_ERROR_FAILED, "Cannot end the release of %s: %s", what,
                                         strerror(-k));
        return reply_text(msg, "Ended the release of %s: the points may throttle it again from their next tick",
                          what);
}
