/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The two points as the loop runs them. A runner gathers a point's inputs
 * from the observer, calls the pure decision (deciding/), and hands the plan
 * to the actuator; it receives only what it needs (the context below and the
 * time), never the loop itself.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "actuator.h"
#include "alloc-point.h"
#include "conf.h"
#include "event-log.h"
#include "log.h"
#include "observer.h"
#include "queue-depth.h"
#include "write-point.h"

typedef struct PointContext {
        Observer *observer;
        const Config *config;
        Actuator *actuator;
        QueueDepth *queues;             /* device queues (ManageQueueDepth=) */
        EventLog *events;
} PointContext;

/* The newest sample of a cgroup a point governs (a policy not off, still there, sampled); NULL otherwise. */
const CgroupSample *runner_governed_sample(const CgEntry *e);

/* Actions of a point's plans since start, for the metrics, by the place of their kind among the point's
 * own (point_action_index()). */
#define POINT_ACTION_KINDS_MAX 8
typedef struct PointCounters {
        uint64_t done[POINT_ACTION_KINDS_MAX];          /* handed to the actuator (a lift: something was held) */
        uint64_t observed[POINT_ACTION_KINDS_MAX];      /* only logged: Mode=observe */
} PointCounters;

/* Counts an action whose execution returned r >= 0 (a lift: 1 if a throttle was held, 0 if not). */
void point_counters_count(PointCounters *c, unsigned kind, bool lift, bool observe, int r);

/* ---- the write point (runner-write.c) ---- */

typedef struct WriteRunner {
        WritePointState state;
        uint64_t searched_usec;         /* the last search for the cgroups holding dirty data not in view */
        uint64_t searches;
        uint64_t swept_usec;            /* the last sweep of the cold cgroups for a writer not in view */
        bool want_rescan;               /* ... which asks for a rescan too: the writer's cgroup may be new */
        uint32_t dirty_ratio_pct;       /* vm.dirty_ratio, read at rescans */
        bool io_missing_logged;
        bool guarding;                  /* a protected cgroup ran at the last tick */
        PointCounters counters;
} WriteRunner;

/* Both on zeroed memory (the manager is calloc()ed): they set only what is not zero. */
void write_runner_init(WriteRunner *w);
/*
 * The IOLatencyTarget= in force for a cgroup under policy p: the policy's own (off included), else
 * [WritePoint] IOLatencyTarget= (off included), else, without ManageQueueDepth=, the least
 * IOLatencyTargetByFilesystem= of the filesystems on the devices its io.stat lists (*ret_fs: that
 * filesystem's type, else -1); 0: the stall share rules.
 */
uint64_t write_latency_target(const Policy *p, const DaemonSettings *d, const MetadataView *v,
                              const DeviceRate *devices, size_t n_devices, int *ret_fs);
void write_runner_run(WriteRunner *w, const PointContext *ctx, uint64_t now);
/*
 * Writeback of the cgroup's open files: the write point's (starts the writes,
 * action_id 0), or an operator's one-shot action (waits for them to finish,
 * within WRITEBACK_ACTION_BUDGET_USEC).
 */
#define WRITEBACK_ACTION_BUDGET_USEC (30 * USEC_PER_SEC)
int write_runner_writeback(const PointContext *ctx, const CgEntry *e, const char *reason, uint64_t action_id);
void write_runner_job_done(WriteRunner *w, const Job *job, uint64_t cgroup_id);
/* A throttle the write point may have set left the ledger: forget it. */
void write_runner_throttle_dropped(WriteRunner *w, const ThrottleEntry *t);

/* ---- the allocation point (runner-alloc.c) ---- */

typedef struct AllocRunner {
        AllocPointState state;
        char *own_cgroup;               /* the daemon's cgroup, never reclaimed */
        int swappiness_arg;             /* memory.reclaim takes "swappiness=": -1 unknown, 0 no, 1 yes */
        bool swap_note_logged;
        /* Cache-only reclaims in flight with memory.swap.max held at 0, per cgroup: the hold is
         * lifted when the last of a cgroup's ends. */
        struct {
                uint64_t cgroup_id;
                unsigned n;
        } swap_holds[WORKER_QUEUE_MAX];
        size_t n_swap_holds;
        RateLimit swap_fallback_log;    /* "cannot hold memory.swap.max at 0" */
        PointCounters counters;
        uint64_t reclaims;              /* memory.reclaim jobs finished, one-shot requests included */
        uint64_t reclaimed_bytes;       /* memory.current they took away */
} AllocRunner;

void alloc_runner_init(AllocRunner *r, char *own_cgroup);
void alloc_runner_done(AllocRunner *r);
void alloc_runner_run(AllocRunner *r, const PointContext *ctx, uint64_t now);
/*
 * Reclaims `bytes` (UINT64_MAX: all reclaimable) of the cgroup, cache only if
 * asked, for an operator's action `action_id` (0: the point's own). Returns 1
 * when queued (*ret_asked, if given: the bytes asked after the bounds), 0
 * when there is nothing to ask for; -EPERM: exempt.
 */
int alloc_runner_reclaim(AllocRunner *r, const PointContext *ctx, const CgEntry *e, uint64_t bytes, bool cache_only,
                         const char *reason, uint64_t action_id, uint64_t *ret_asked);
/* A job came back. Returns 1 if it was queued again (its action goes on), else 0. */
int alloc_runner_job_done(AllocRunner *r, const PointContext *ctx, const Job *job, uint64_t cgroup_id,
                          uint64_t now);
/* A throttle the allocation point may have set left the ledger: forget it. */
void alloc_runner_throttle_dropped(AllocRunner *r, const ThrottleEntry *t);
