/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control API's one-shot actions: Reclaim and Writeback hand the request
 * to the manager and answer with the action's id; GetAction tells where an
 * action is and what it did; ActionFinished goes to subscribers when one
 * ends, and answers the callers of Writeback(wait=true) waiting for it (at
 * most BUS_WAITERS_MAX, each until its deadline).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api-internal.h"
#include "bus-reply.h"
#include "name-escape.h"
#include "util.h"

static int dict_bool(sd_bus_message *m, const char *key, bool v) {
        return sd_bus_message_append(m, "{sv}", key, "b", (int) v);
}

static bool finished(const Action *a) {
        return a->state == ACTION_DONE || a->state == ACTION_FAILED;
}

/* The figures a kind of action has, once it has them. */
static int append_figures(sd_bus_message *r, const Action *a) {
        int k = 0;

        if (a->kind == ACTION_RECLAIM) {
                k = bus_dict_u64(r, "bytes_asked", a->bytes_asked);
                if (k >= 0)
                        k = dict_bool(r, "cache_only", a->cache_only);
                if (k >= 0 && finished(a))
                        k = bus_dict_u64(r, "bytes_freed", a->bytes_freed);
                return k;
        }
        if (finished(a))
                k = bus_dict_u64(r, "files", a->files);
        if (k >= 0 && a->dirty_before != UINT64_MAX)
                k = bus_dict_u64(r, "dirty_before", a->dirty_before);
        if (k >= 0 && a->dirty_after != UINT64_MAX)
                k = bus_dict_u64(r, "dirty_after", a->dirty_after);
        return k;
}

static int append_times(sd_bus_message *r, const Action *a) {
        int k = bus_dict_u64(r, "queued_realtime_usec", a->queued_usec);

        if (k >= 0 && a->started_usec)
                k = bus_dict_u64(r, "started_realtime_usec", a->started_usec);
        if (k >= 0 && a->finished_usec)
                k = bus_dict_u64(r, "finished_realtime_usec", a->finished_usec);
        if (k >= 0 && a->finished_usec && a->started_usec)
                k = bus_dict_u64(r, "duration_usec", u64_delta(a->finished_usec, a->started_usec));
        if (k >= 0 && finished(a))
                k = dict_bool(r, "budget_reached", a->budget_reached);
        return k;
}

int api_append_action(sd_bus_message *r, const Action *a) {
        int k;

        /* The names were escaped when the action was recorded. */
        k = sd_bus_message_open_container(r, 'a', "{sv}");
        if (k >= 0)
                k = bus_dict_u64(r, "id", a->id);
        if (k >= 0)
                k = bus_dict_str(r, "kind", action_kind_to_string(a->kind));
        if (k >= 0)
                k = bus_dict_str(r, "state", action_state_to_string(a->state));
        if (k >= 0)
                k = bus_dict_str(r, "path", a->path);
        if (k >= 0)
                k = bus_dict_str(r, "asked_by", a->asked_by);
        if (k >= 0 && a->unit[0])
                k = bus_dict_str(r, "unit", a->unit);
        if (k >= 0)
                k = append_times(r, a);
        if (k >= 0)
                k = append_figures(r, a);
        if (k >= 0 && a->message[0])
                k = bus_dict_str(r, "message", a->message);
        if (k >= 0 && a->state == ACTION_FAILED)
                k = bus_dict_str(r, "error", strerror(-a->error));
        if (k >= 0)
                k = sd_bus_message_close_container(r);
        return k;
}

/* ---- Reclaim, Writeback ---- */

static int reply_queued(sd_bus_message *msg, uint64_t id, const char *format, ...) __attribute__((format(printf, 3, 4)));
static int reply_queued(sd_bus_message *msg, uint64_t id, const char *format, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;

        va_start(ap, format);
        text = api_vtextf(format, ap);
        va_end(ap);
        return text ? sd_bus_reply_method_return(msg, "st", text, id) : -ENOMEM;
}

static int act_error(sd_bus_error *error, int r, const char *what, const CgEntry *e) {
        _cleanup_free_ char *path = name_escape(e->cg->path);

        if (!path)
                return -ENOMEM;
        if (r == -EPERM)
                return sd_bus_error_setf(error, BUS_ERROR_REFUSED, "mdreclaimd does not %s %s: it never acts on "
                                         "its own cgroup or init.scope", what, path);
        if (r == -EBUSY)
                return sd_bus_error_setf(error, BUS_ERROR_BUSY, "The worker's queue is full; %s %s later", what,
                                         path);
        return sd_bus_error_setf(error, BUS_ERROR_FAILED, "Cannot %s %s: %s", what, path, strerror(-r));
}

/* Authorized and resolved; then handed to the manager. */
static int act_prepare(sd_bus_message *msg, BusConnection *c, const char *what, CgEntry **ret, sd_bus_error *error) {
        const char *target;
        int k;

        k = api_check_admin(c, what, error);
        if (k < 0)
                return k;
        k = sd_bus_message_read(msg, "s", &target);
        if (k < 0)
                return k;
        return api_resolve(api_of(c)->manager, target, ret, error);
}

static void asked_by(const BusConnection *c, char buf[static 64]) {
        snprintf(buf, 64, "uid %u (pid %d)", (unsigned) c->creds.uid, (int) c->creds.pid);
}

int method_reclaim(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        const Action *a;
        char who[64];
        uint64_t bytes;
        int cache_only, k;
        CgEntry *e;

        k = act_prepare(msg, c, "reclaiming memory", &e, error);
        if (k < 0)
                return k;
        k = sd_bus_message_read(msg, "tb", &bytes, &cache_only);
        if (k < 0)
                return k;
        asked_by(c, who);
        k = manager_reclaim(api_of(c)->manager, e, bytes, cache_only, who, &a);
        if (k < 0)
                return act_error(error, k, "reclaim memory of", e);
        if (finished(a))
                return reply_queued(msg, a->id, "%s (action %" PRIu64 ")", a->message, a->id);
        return reply_queued(msg, a->id, "Reclaim from %s queued as action %" PRIu64 " (%s%s); its result comes as a "
                            "'reclaim' event", a->path, a->id, bytes ? "a set size" : "all reclaimable",
                            cache_only ? ", cache only" : "");
}

static int waiter_add(Api *s, sd_bus_message *msg, uint64_t id) {
        if (s->n_waiters >= BUS_WAITERS_MAX)
                return -EBUSY;
        s->waiters[s->n_waiters++] = (BusWaiter) { .msg = sd_bus_message_ref(msg), .action_id = id,
                                                   .deadline_usec = manager_now_usec(s->manager) + BUS_WAIT_USEC };
        return sd_event_source_set_enabled(s->wait_source, SD_EVENT_ON);
}

/* Answers waiter i (with the action that finished, or NULL: its deadline passed) and drops it. */
static void waiter_answer(Api *s, size_t i, const Action *a) {
        BusWaiter *w = &s->waiters[i];

        if (!a)
                (void) sd_bus_reply_method_errorf(w->msg, BUS_ERROR_TIMEOUT, "Action %" PRIu64 " did not finish "
                                                  "within %llus; it may still run (GetAction, or mdctl events, "
                                                  "tells when it does)", w->action_id,
                                                  (unsigned long long) (BUS_WAIT_USEC / USEC_PER_SEC));
        else if (a->state == ACTION_FAILED)
                (void) sd_bus_reply_method_errorf(w->msg, BUS_ERROR_FAILED, "%s (action %" PRIu64 ")", a->message,
                                                  a->id);
        else
                (void) sd_bus_reply_method_return(w->msg, "st", a->message, a->id);
        sd_bus_message_unref(w->msg);
        s->waiters[i] = s->waiters[--s->n_waiters];
        if (s->n_waiters == 0)
                (void) sd_event_source_set_enabled(s->wait_source, SD_EVENT_OFF);
}

int method_writeback(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        const Action *a;
        char who[64];
        int wait, k;
        CgEntry *e;

        k = act_prepare(msg, c, "starting writeback", &e, error);
        if (k < 0)
                return k;
        k = sd_bus_message_read(msg, "b", &wait);
        if (k < 0)
                return k;
        if (wait && api_of(c)->n_waiters >= BUS_WAITERS_MAX)
                return sd_bus_error_setf(error, BUS_ERROR_BUSY, "%d callers wait already; try again later",
                                         BUS_WAITERS_MAX);
        asked_by(c, who);
        k = manager_writeback(api_of(c)->manager, e, who, &a);
        if (k < 0)
                return act_error(error, k, "write back", e);
        if (!wait)
                return reply_queued(msg, a->id, "Writeback of %s queued as action %" PRIu64 "; its result comes as "
                                    "a 'writeback' event", a->path, a->id);
        k = waiter_add(api_of(c), msg, a->id);
        return k < 0 ? k : 1;
}

/* ---- GetAction ---- */

int method_get_action(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        Manager *m = api_of(c)->manager;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        const Action *a;
        uint64_t id, first;
        int k;

        k = sd_bus_message_read(msg, "t", &id);
        if (k < 0)
                return k;
        a = manager_action(m, id);
        first = action_log_first_id(&m->actions);
        if (!a && id > 0 && id < m->actions.next_id)
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_ACTION, "Action %" PRIu64 " is no longer kept: "
                                         "the last %d are (ids %" PRIu64 " to %" PRIu64 ")", id, ACTIONS_MAX, first,
                                         m->actions.next_id - 1);
        if (!a && m->actions.next_id == 1)
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_ACTION, "No action %" PRIu64 ": this run of "
                                         "mdreclaimd has given no action id yet", id);
        if (!a)
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_ACTION, "No action %" PRIu64 ": this run of "
                                         "mdreclaimd has given ids 1 to %" PRIu64, id, m->actions.next_id - 1);
        k = sd_bus_message_new_method_return(msg, &r);
        if (k >= 0)
                k = api_append_action(r, a);
        return k < 0 ? k : sd_bus_send(NULL, r, NULL);
}

/* ---- ListActions ---- */

static int compare_ids(const void *x, const void *y) {
        const Action *a = *(const Action *const *) x, *b = *(const Action *const *) y;

        return (a->id > b->id) - (a->id < b->id);
}

/* Every action kept (the last ACTIONS_MAX), oldest first. */
int method_list_actions(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusConnection *c = userdata;
        Manager *m = api_of(c)->manager;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        const Action *kept[ACTIONS_MAX];
        size_t n = 0;
        int k;

        for (size_t i = 0; i < ACTIONS_MAX; i++)
                if (m->actions.slots[i].id)
                        kept[n++] = &m->actions.slots[i];
        qsort(kept, n, sizeof(kept[0]), compare_ids);
        k = sd_bus_message_new_method_return(msg, &r);
        if (k >= 0)
                k = sd_bus_message_open_container(r, 'a', "a{sv}");
        for (size_t i = 0; k >= 0 && i < n; i++)
                k = api_append_action(r, kept[i]);
        if (k >= 0)
                k = sd_bus_message_close_container(r);
        return k < 0 ? k : sd_bus_send(NULL, r, NULL);
}

/* ---- ActionFinished ---- */

static int send_action_finished(sd_bus *bus, const void *data) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *s = NULL;
        const Action *a = data;
        int r;

        r = sd_bus_message_new_signal(bus, &s, BUS_OBJECT_PATH, BUS_INTERFACE, "ActionFinished");
        if (r >= 0)
                r = sd_bus_message_append(s, "tss", a->id, action_kind_to_string(a->kind),
                                          action_state_to_string(a->state));
        if (r >= 0)
                r = api_append_action(s, a);
        return r < 0 ? r : sd_bus_send(bus, s, NULL);
}

static void on_action_finished(const Action *a, void *userdata) {
        Api *s = userdata;

        for (size_t i = s->n_waiters; i > 0; i--)
                if (s->waiters[i - 1].action_id == a->id)
                        waiter_answer(s, i - 1, a);
        transport_broadcast(s->transport, send_action_finished, a);
}

static int on_wait_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        Api *s = userdata;

        for (size_t i = s->n_waiters; i > 0; i--)
                if (s->waiters[i - 1].deadline_usec <= usec)
                        waiter_answer(s, i - 1, NULL);
        if (s->n_waiters > 0)
                (void) sd_event_source_set_time(src, usec + USEC_PER_SEC);
        return 0;
}

int api_actions_init(Api *s) {
        int r;

        r = sd_event_add_time_relative(s->manager->event, &s->wait_source, CLOCK_MONOTONIC, USEC_PER_SEC, 0,
                                       on_wait_timer, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(s->wait_source, "control-waiters");
        r = sd_event_source_set_enabled(s->wait_source, SD_EVENT_OFF);
        if (r < 0)
                return r;
        s->manager->action_hook = on_action_finished;
        s->manager->action_hook_userdata = s;
        return 0;
}

void api_actions_done(Api *s) {
        if (s->manager->action_hook_userdata == s) {
                s->manager->action_hook = NULL;
                s->manager->action_hook_userdata = NULL;
        }
        while (s->n_waiters > 0) {
                BusWaiter *w = &s->waiters[--s->n_waiters];

                (void) sd_bus_reply_method_errorf(w->msg, BUS_ERROR_FAILED, "the daemon is stopping; action %" PRIu64
                                                  " did not finish", w->action_id);
                sd_bus_message_unref(w->msg);
        }
        s->wait_source = sd_event_source_disable_unref(s->wait_source);
}
