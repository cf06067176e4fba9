/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The actuator: everything about applying, recording, verifying, restoring
 * and withdrawing throttles, and running the cgroup jobs of both points.
 * A point asks for a throttle value and the actuator records it in the
 * ledger before it writes it (no record, no write); every tick it checks
 * that its values are still in place (someone else's value wins and is not
 * fought over); at stop, and at start after a crash, it puts the originals
 * back. An operator may release a cgroup: its throttles are lifted and the
 * points' requests refused until the release ends. Cgroups are named by id
 * and looked up through a callback; results come back through callbacks, so
 * using it needs no point's code.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "cgfs.h"
#include "event-log.h"
#include "ledger.h"
#include "worker.h"

typedef struct ActuatorOps {
        /* The cgroup with this id, opened for use (and its unit name, or NULL): 0; -ENODEV once it
         * is gone; another negative errno when it cannot be opened now (out of fds: try later). */
        int (*lookup)(uint64_t cgroup_id, Cgroup **ret_cg, const char **ret_unit, void *userdata);
        /* A reclaim or writeback job finished (a writeback's event is recorded already). */
        void (*job_done)(const Job *job, uint64_t cgroup_id, void *userdata);
        /* A throttle left the ledger without its point asking (someone else's value, the cgroup
         * gone): the point that set it forgets it. May be NULL. */
        void (*throttle_dropped)(const ThrottleEntry *t, void *userdata);
        /* The throttles or the releases changed (a value, an entry, a release begun or ended). May be NULL. */
        void (*throttles_changed)(void *userdata);
} ActuatorOps;

typedef struct ActuatorArgs {
        sd_event *event;
        const char *ledger_file;        /* NULL: the ledger is kept in memory only */
        const char *proc_root;          /* "/proc" outside tests */
        uint64_t page_size;             /* the kernel keeps memory.high in pages */
        EventLog *events;
        const ActuatorOps *ops;
        void *userdata;
} ActuatorArgs;

typedef struct Actuator Actuator;

int actuator_new(const ActuatorArgs *args, Actuator **ret);
Actuator *actuator_free(Actuator *a);
static inline void actuator_freep(Actuator **a) {
        if (*a)
                actuator_free(*a);
}

/*
 * Point q->point asks for q->value: recorded, persisted, then written if the
 * effective value changes (for memory.high the lowest request wins). The
 * ledger could not be written: -EIO-like errors, and nothing is written.
 * -ENODEV: the cgroup is gone; -ENOENT (io.max): the io controller is not
 * enabled for it; -EBUSY: the worker's queue is full; -ECANCELED: an
 * operator released the cgroup and the release lasts (logged once per
 * release; the point tries again later).
 */
int actuator_throttle_set(Actuator *a, uint64_t cgroup_id, const ThrottleRequest *q);

/*
 * Point q->point withdraws its request; the value falls back to the other
 * point's or the original. Returns 1 if a throttle was held, 0 if none was.
 */
int actuator_throttle_lift(Actuator *a, uint64_t cgroup_id, const ThrottleRequest *q);

/*
 * An operator releases the cgroup (cgroup_id 0: every cgroup) until
 * `until_usec` (CLOCK_REALTIME), `who` asking. The release is recorded in the
 * ledger, every throttle on it is lifted at once (the point that set it hears
 * of it through throttle_dropped), a "release" event is recorded, and until
 * then actuator_throttle_set() refuses the points' requests on it. A release
 * of the same cgroup replaces the last; it outlives a restart. Returns the
 * number of throttles lifted; -ENODEV: the cgroup is gone; -E2BIG: too many
 * cgroups are released; -EIO-like errors: the ledger could not be written
 * (nothing was lifted).
 */
int actuator_release(Actuator *a, uint64_t cgroup_id, uint64_t until_usec, const char *who);

/* Ends the release of the cgroup at `path` (LEDGER_HOLD_ALL: the release of every cgroup) now, with
 * its "release-ended" event; the points may throttle it again from their next tick. -ENOENT: it is
 * not released. */
int actuator_release_end(Actuator *a, const char *path);
/* The release that keeps the cgroup at `path` unthrottled now, or NULL. */
const LedgerHold *actuator_released(const Actuator *a, const char *path);

/*
 * systemd says `unit` is stopping (or not any more): while it stops, its
 * cgroup's throttles are lifted at once (io.max first) and no point may set
 * one on it (-ECANCELED), since the cgroup is about to be removed with
 * whatever is on it. At most ACTUATOR_STOPPING_MAX units are remembered (the
 * oldest goes first); the cgroup.events watch still lifts at emptying. Only
 * the system manager's units count: a cgroup whose ancestors are all slices.
 * `unit` NULL: forget every stop (the bus that told them went away).
 */
#define ACTUATOR_STOPPING_MAX 64
void actuator_unit_stopping(Actuator *a, const char *unit, bool stopping);

/* Runs a reclaim or writeback job on the cgroup (-ENODEV if gone, -EBUSY if their lane of the
 * worker is full, -EINVAL for another kind). */
int actuator_run_job(Actuator *a, uint64_t cgroup_id, const Job *job);

/* The operator's action whose job runs now (0: none), and since when (CLOCK_REALTIME). */
uint64_t actuator_running_action(const Actuator *a, uint64_t *ret_started);

/* At start: reads the ledger a previous run left, restores what still holds its values. */
int actuator_recover(Actuator *a);
/* Every tick: our values still in place? A foreign value wins and becomes the original. Ended
 * releases are dropped. */
void actuator_verify(Actuator *a);
/* At stop, before actuator_restore_all(): the worker's jobs told to stop, without waiting. */
void actuator_stop_jobs(Actuator *a);
/* At stop: every throttle back to its original (raising a limit does not block). */
void actuator_restore_all(Actuator *a);

/* The throttles held, as recorded. */
const Ledger *actuator_ledger(const Actuator *a);
/* Jobs submitted and not yet reported back. */
size_t actuator_jobs_pending(const Actuator *a);
/* The worker its jobs run on (NULL once stopped), for a test to hold one of its lanes with a job of
 * its own (cookie 0: the actuator takes no result for it). */
Worker *actuator_worker(Actuator *a);
