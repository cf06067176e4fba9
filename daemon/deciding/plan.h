/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the two points decide, in one vocabulary: a plan, a bounded list of
 * actions, each naming a cgroup, what is to be done to it, the value, why,
 * and what will undo it. Each point puts its own kinds of action in it;
 * core's runners carry them out.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

typedef enum PointActionKind {
        /* The write point's. */
        PA_SET_CAP,             /* io.max wbps = value on (major:minor) */
        PA_LIFT_CAP,
        PA_SET_BUDGET,          /* memory.high = value: a dirty budget */
        PA_LIFT_BUDGET,
        PA_WRITEBACK,
        PA_SET_QUEUE,           /* the queue of device (major:minor): nr_requests = value, max_sectors_kb = queue_kb */
        PA_LIFT_QUEUE,
        /* The allocation point's. */
        PA_RECLAIM,             /* memory.reclaim of `value` bytes, cache only where the kernel can */
        PA_SET_HIGH,            /* allocation throttle: memory.high = value */
        PA_LIFT_HIGH,
        _PA_KIND_MAX,
} PointActionKind;

/* The kind's name in events, logs and metrics ("cap-writes", "reclaim", ...); NULL for none. */
const char *point_action_to_string(PointActionKind k);

/* Whether the kind lifts what an action of its point set before. */
bool point_action_lifts(PointActionKind k);

/* The kind's place among its own point's kinds: from PA_SET_CAP for the write point's, from
 * PA_RECLAIM for the allocation point's. */
unsigned point_action_index(PointActionKind k);

typedef struct PointAction {
        PointActionKind kind;
        uint64_t cgroup_id;
        const char *path;
        bool observe;                   /* Mode=observe: log, do not write (a lift is never only observed) */
        uint64_t value;
        char reason[160];
        char lifts_when[128];           /* a cap, budget or throttle set: what lifts it */

        /* The write point's alone. */
        uint32_t major, minor;          /* the device of a cap or a queue */
        uint64_t queue_kb;              /* PA_SET_QUEUE: max_sectors_kb */
        uint64_t drain;                 /* PA_SET_CAP: the rate the cap rises to once the writer is gone
                                         * or stopping, while what it left is written (0: lifted at once) */
        uint64_t previous;              /* what the point's state held before it, UINT64_MAX: nothing */
        uint64_t protected_id;
        uint32_t stall_ppm;             /* the protected cgroup's, when it matters */

        /* The allocation point's alone. */
        uint64_t from;                  /* PA_SET_HIGH: the value written before it (0: none), what the
                                         * point holds again if this one fails */
} PointAction;

#define PLAN_ACTIONS_MAX 512

typedef struct PointPlan {
        PointAction actions[PLAN_ACTIONS_MAX];
        size_t n;
        size_t max;                     /* the deciding point's bound, PLAN_ACTIONS_MAX at most */
        bool truncated;                 /* an action did not fit */
} PointPlan;

/* Empties the plan for a point that puts `max` actions in it at most. */
void plan_reset(PointPlan *p, size_t max);

/*
 * A new action of the plan, on the cgroup `cgroup_id` at `path` under
 * `policy` (0, NULL and NULL: none); only observed if that policy only
 * observes. NULL when the plan is full (truncated is set then).
 */
PointAction *plan_add(PointPlan *p, PointActionKind kind, uint64_t cgroup_id, const char *path, const Policy *policy);
