/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The actuator made and freed, and the points' requests: a throttle set
 * (recorded before it is written) and lifted.
 */
#include "actuator-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "throttle.h"
#include "util.h"

/*
 * Takes back a request that could not be carried out: the point's request is
 * what it was before (`saved`, NULL for a new entry), and the entry goes only
 * if nothing holds it (no request, the original in place, no write on its way).
 */
static void undo_request(Actuator *a, ThrottleEntry *t, ThrottlePoint point, const ThrottleEntry *saved) {
        if (saved) {
                t->requested[point] = saved->requested[point];
                memcpy(t->reason[point], saved->reason[point], sizeof(t->reason[point]));
                memcpy(t->lifts_when[point], saved->lifts_when[point], sizeof(t->lifts_when[point]));
                t->drain = saved->drain;        /* a drain the failed set would have ended goes on */
                t->drain_since_usec = saved->drain_since_usec;
                t->drain_emptied = saved->drain_emptied;
        } else
                ledger_release(&a->ledger, t->path, t->kind, t->major, t->minor, point);
        if (!throttle_requested(t) && t->applied == t->original && !actuator_write_in_flight(a, t))
                ledger_remove(&a->ledger, t);
        (void) actuator_persist(a);
}

static const char *set_action(const ThrottleRequest *q) {
        if (q->kind == THROTTLE_IO_WBPS)
                return "cap-writes";
        if (q->kind == THROTTLE_SWAP_MAX)
                return "hold-swap";
        return q->point == POINT_WRITE ? "dirty-budget" : "throttle-allocations";
}

/*
 * Whether a point may set a throttle on cg now: 0; -ECANCELED while an
 * operator's release lasts, while its unit stops, or once it is empty;
 * -ENODEV once it is removed.
 */
static int set_refused(Actuator *a, Cgroup *cg, const ThrottleRequest *q) {
        int r;

        if (actuator_release_refuses(a, cg, q) || actuator_path_stopping(a, cg->path))
                return -ECANCELED;
        /* An empty cgroup is about to be removed (a unit that stopped): a throttle set now could
         * only outlive it, holding its last dirty pages to a crawl (not now, for the point). One
         * removed already, before the table has seen it go, has nothing left to throttle. */
        r = cgroup_populated(cg);
        if (r == 0)
                return -ECANCELED;
        if (r < 0 && cgroup_gone(cg))
                return -ENODEV;
        return 0;
}

/* The ledger's entry for q on cg (NULL: none yet), and the value its file holds (from the entry, else read). */
static int set_entry(Actuator *a, Cgroup *cg, const char *unit, const ThrottleRequest *q, ThrottleEntry **ret,
                     uint64_t *ret_current) {
        ThrottleEntry *t = ledger_find(&a->ledger, cg->path, q->kind, q->major, q->minor);

        /* Another cgroup at a path the ledger knows (a unit started again before the tick saw its old
         * cgroup go, a draining cap's the likeliest): the old record is of a cgroup that is gone. */
        if (t && t->cgroup_id != cg->id) {
                actuator_drop_vanished(a, t, unit, false);
                t = NULL;
        }
        *ret = t;
        if (t) {
                *ret_current = t->applied;
                return 0;
        }
        return throttle_read(cg, q->kind, q->major, q->minor, ret_current);
}

int actuator_throttle_set(Actuator *a, uint64_t cgroup_id, const ThrottleRequest *q) {
        const char *unit;
        int err;
        Cgroup *cg = lookup_why(a, cgroup_id, &unit, &err);
        ThrottleRequest req = *q;
        uint64_t current, before;
        ThrottleEntry *t, saved;
        bool existed;
        int r;

        if (!cg)
                return err;
        r = set_refused(a, cg, q);
        if (r < 0)
                return r;
        /* The kernel keeps memory.high in pages: a value it would round is
         * rounded here, or the next check would take it for someone else's. */
        if (q->kind == THROTTLE_MEMORY_HIGH && q->value != THROTTLE_NONE)
                req.value = q->value / a->page_size * a->page_size;
        r = set_entry(a, cg, unit, q, &t, &current);
        if (r < 0)
                return r;
        existed = t != NULL;
        if (t)
                saved = *t;
        r = ledger_request(&a->ledger, cg->path, cg->id, &req, current, now_usec(CLOCK_REALTIME), &t);
        if (r < 0)
                return r;
        if (q->kind == THROTTLE_IO_WBPS) {
                t->drain = q->drain;
                t->drain_since_usec = 0;        /* the cgroup writes again: the point's cap, not a drain */
                t->drain_emptied = false;
        }
        /* Against what the file will hold: a write still queued may bring another value. */
        before = actuator_value_ahead(a, t);
        if (throttle_effective(t) == before)
                return 0;
        /* No record, no write: a throttle the ledger does not hold could outlive a crash. */
        r = actuator_persist(a);
        if (r >= 0)
                r = actuator_apply(a, cg, t);
        if (r < 0) {
                undo_request(a, t, q->point, existed ? &saved : NULL);
                return r;
        }
        actuator_throttle_event(a, set_action(q), unit, t, before, throttle_effective(t), q->reason);
        if (q->kind != THROTTLE_MEMORY_HIGH)
                (void) actuator_persist(a);     /* written at once: ->applied moved */
        return 0;
}

static ThrottleEntry *find_by_id(Actuator *a, uint64_t cgroup_id, const ThrottleRequest *q) {
        for (size_t i = 0; i < a->ledger.n; i++) {
                ThrottleEntry *t = &a->ledger.entries[i];

                if (t->cgroup_id == cgroup_id && t->kind == q->kind &&
                    (q->kind != THROTTLE_IO_WBPS || (t->major == q->major && t->minor == q->minor)))
                        return t;
        }
        return NULL;
}

int actuator_throttle_lift(Actuator *a, uint64_t cgroup_id, const ThrottleRequest *q) {
        ThrottleEntry *t = find_by_id(a, cgroup_id, q);
        const char *unit;
        int err;
        Cgroup *cg = lookup_why(a, cgroup_id, &unit, &err);
        uint64_t before;
        int r = err == -ENODEV ? 0 : err;

        if (!t)
                return 0;
        ledger_release(&a->ledger, t->path, t->kind, t->major, t->minor, q->point);
        before = actuator_value_ahead(a, t);
        if (cg && throttle_effective(t) != before) {
                r = actuator_apply(a, cg, t);
                if (r >= 0)
                        actuator_throttle_event(a, actuator_lift_action(q->kind), unit, t, before,
                                                throttle_effective(t), q->reason);
        }
        /* Gone: nothing to put back. Not reachable now (out of fds): kept, and verify writes it later. */
        if (!throttle_requested(t) &&
            (err == -ENODEV || (cg && t->applied == t->original && !actuator_write_in_flight(a, t))))
                ledger_remove(&a->ledger, t);
        (void) actuator_persist(a);
        return r < 0 ? r : 1;
}

int actuator_new(const ActuatorArgs *args, Actuator **ret) {
        _cleanup_(actuator_freep) Actuator *a = calloc(1, sizeof(Actuator));
        int r;

        if (!a)
                return -ENOMEM;
        a->page_size = args->page_size ?: 4096;
        /* 4 MiB, and the kernel's charge batch (64 pages) per CPU. */
        a->high_headroom = (UINT64_C(4) << 20) + (uint64_t) MAX(sysconf(_SC_NPROCESSORS_CONF), 1L) * 64 * a->page_size;
        a->events = args->events;
        a->ops = args->ops;
        a->userdata = args->userdata;
        a->inotify_fd = -1;
        ledger_init(&a->ledger, args->ledger_file);
        r = actuator_watches_init(a, args->event);
        if (r < 0)
                return log_error_errno(r, "Cannot watch cgroup.events: %m");
        r = worker_new(args->event, "worker", args->proc_root ?: "/proc", true, actuator_on_job_done, a, &a->worker);
        if (r < 0)
                return log_error_errno(r, "Cannot start the worker thread: %m");
        *ret = TAKE_PTR(a);
        return 0;
}

Actuator *actuator_free(Actuator *a) {
        if (!a)
                return NULL;
        worker_free(a->worker);
        actuator_watches_free(a);
        ledger_clear(&a->ledger);
        for (size_t i = 0; i < a->n_stopping; i++)
                free(a->stopping[i]);
        free(a);
        return NULL;
}

const Ledger *actuator_ledger(const Actuator *a) {
        return &a->ledger;
}
