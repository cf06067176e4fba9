/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the actuator's files share: the Actuator itself, the jobs it has in
 * the worker, and the steps the files call in one another. The files call
 * downwards only, in this order (each may call any below it):
 *
 *   actuator-set.c      new/free; a point's set and lift
 *   actuator-restore.c  recover, verify, restore at stop
 *   actuator-watch.c    what a cgroup.events watch reports
 *   actuator-jobs.c     the jobs of both points, and what comes back from the worker
 *   actuator-drain.c    units stopping; a cap drained, then lifted
 *   actuator-release.c  an operator's releases
 *   actuator-apply.c    a value written, recorded (ledger file, watch set), lifted, dropped
 *   actuator-queue.c    the jobs in flight: submitted, superseded, what they will write
 *
 * Not for use outside daemon/acting/actuator-*.c: the rest of the daemon has actuator.h.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "actuator.h"
#include "cgfs.h"
#include "ledger.h"
#include "worker.h"

/* A job in the worker, remembered until it reports back. */
typedef struct PendingJob {
        uint64_t cookie;
        JobKind kind;
        uint64_t cgroup_id;
        ThrottleKind throttle;          /* JOB_FILE_WRITE of a throttle */
        uint32_t major, minor;
        uint64_t value;
        uint64_t from;                  /* memory.high: the value it steps down from (worker.c) */
        uint64_t action_id;             /* an operator's one-shot action */
        uint64_t superseded_usec;       /* CLOCK_MONOTONIC: a newer value was written from the loop then, and the
                                         * job cancelled in the worker; SUPERSEDED_BY_QUEUE: a newer value was
                                         * queued behind it; 0: not superseded */
        bool shared;                    /* JOB_RECLAIM: a memory.high lowering of its cgroup, of one above or of
                                         * one below was pending beside it at some time (Job.shared) */
        /* Its cgroup's path, as the job has it (mark_shared(): a cgroup sampled now and then holds no fd,
         * and a lookup would open one). */
        char path[sizeof(((Job *) NULL)->path)];
} PendingJob;

/* A watch of a throttled cgroup's cgroup.events. */
typedef struct EventsWatch {
        uint64_t cgroup_id;
        int wd;
} EventsWatch;

struct Actuator {
        Ledger ledger;
        int inotify_fd;                 /* cgroup.events of every cgroup the ledger holds a throttle on */
        sd_event_source *inotify_source;
        EventsWatch *watches;           /* at most one per cgroup of the ledger */
        size_t n_watches;
        Worker *worker;
        PendingJob pending[WORKER_LANES * WORKER_QUEUE_MAX];    /* WORKER_QUEUE_MAX in each lane */
        size_t n_pending;
        uint64_t next_cookie;
        uint64_t page_size;
        uint64_t high_headroom;         /* see high_takes_at_once() */
        EventLog *events;
        const ActuatorOps *ops;
        void *userdata;
        char *stopping[ACTUATOR_STOPPING_MAX];  /* units systemd is stopping, oldest first */
        size_t n_stopping;
};

/*
 * A write superseded by one queued behind it: whenever it returned (even
 * before the newer one was queued, its return not yet seen by the loop), if
 * it ran at all its value may be in the file, which only a read can say.
 */
#define SUPERSEDED_BY_QUEUE UINT64_C(1)

/* The cgroup, or NULL: *ret_error says why (-ENODEV: gone; another errno: not now, e.g. out of fds). */
static inline Cgroup *lookup_why(Actuator *a, uint64_t id, const char **ret_unit, int *ret_error) {
        const char *unit = NULL;
        Cgroup *cg = NULL;
        int r = a->ops->lookup(id, &cg, &unit, a->userdata);

        if (ret_unit)
                *ret_unit = unit;
        if (ret_error)
                *ret_error = r < 0 ? r : 0;
        return r < 0 ? NULL : cg;
}

static inline Cgroup *lookup(Actuator *a, uint64_t id, const char **ret_unit) {
        return lookup_why(a, id, ret_unit, NULL);
}

/* ---- actuator-queue.c ---- */

/* Whether a write of t's file is still in the worker. */
bool actuator_write_in_flight(const Actuator *a, const ThrottleEntry *t);
/* The value t holds once the writes queued for it are done. */
uint64_t actuator_value_ahead(const Actuator *a, const ThrottleEntry *t);
/* Queues `job` for cg and remembers it as `p` (-ESHUTDOWN once stopped, -EBUSY: its lane is full). */
int actuator_submit(Actuator *a, Cgroup *cg, Job *job, PendingJob p);
/* The memory.high writes for t still in the worker lose their point, but for the job `keep`. */
void actuator_supersede_writes(Actuator *a, const ThrottleEntry *t, uint64_t keep, uint64_t now);
/* Whether `value` in t's file may come from a write of ours that has not reported back. */
bool actuator_pending_value(const Actuator *a, const ThrottleEntry *t, uint64_t value);

/* ---- actuator-apply.c ---- */

/* "max" or the number. */
void actuator_format_value(uint64_t v, char *buf, size_t size);
/* One event for a throttle change. */
void actuator_throttle_event(Actuator *a, const char *action, const char *unit, const ThrottleEntry *t,
                             uint64_t before, uint64_t after, const char *reason);
/* Writes t's effective value, at once or through the worker. */
int actuator_apply(Actuator *a, Cgroup *cg, ThrottleEntry *t);
/* The watches follow the ledger: one per cgroup it holds a throttle on. */
void actuator_watches_sync(Actuator *a);
/* The ledger file written, the watches synced, the throttles' listeners told. */
int actuator_persist(Actuator *a);
/* The event's action for a lift of this kind. */
const char *actuator_lift_action(ThrottleKind kind);
/* Every point's request on t withdrawn, the original written back, the points told. */
int actuator_lift_entry(Actuator *a, ThrottleEntry *t, const char *why);
/* actuator_lift_entry() on each throttle of one cgroup (0: all) of one kind (-1: any); how many. */
int actuator_lift_on(Actuator *a, uint64_t cgroup_id, int kind, const char *why);
/* t leaves the ledger, its point told. */
void actuator_drop_entry(Actuator *a, ThrottleEntry *t);
/* The cgroup is gone with t on it: said, and dropped. */
void actuator_drop_vanished(Actuator *a, ThrottleEntry *t, const char *unit, bool heard);

/* ---- actuator-release.c ---- */

/* Whether an operator's release keeps cg unthrottled now (the first refusal of each is logged). */
bool actuator_release_refuses(Actuator *a, const Cgroup *cg, const ThrottleRequest *q);
/* Ended releases dropped, each said unless `quiet`; whether any was. */
bool actuator_end_releases(Actuator *a, bool quiet);

/* ---- actuator-drain.c ---- */

/* Whether the cgroup at `path` is a unit systemd is stopping. */
bool actuator_path_stopping(const Actuator *a, const char *path);
/* Whether a draining cap has done its work (*why: how). */
bool actuator_drain_done(Cgroup *cg, const ThrottleEntry *t, const char **why);
/* The cgroup has no process left: its caps drained or lifted, its memory.high lifted; how many changed. */
int actuator_lift_emptied(Actuator *a, uint64_t cgroup_id);

/* ---- actuator-jobs.c ---- */

/* The worker's report of a job: the ledger caught up for a throttle write, the points told of others. */
void actuator_on_job_done(const Job *job, void *userdata);

/* ---- actuator-watch.c ---- */

int actuator_watches_init(Actuator *a, sd_event *event);
void actuator_watches_free(Actuator *a);
