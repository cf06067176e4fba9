/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The allocation point, as a pure function of this tick's view, the policies
 * and its own state, returning a plan. It never touches a file.
 *
 * - Proactive reclaim (PressureTarget=): a feedback loop on the cgroup's own
 *   stall (memory and io "some", from total deltas). Under target it asks for
 *   a step sized by the distance to target, bounded by ReclaimStepMax= and by
 *   the reclaimable estimate above CacheFloor= and memory.min/low; at or over
 *   target, or when file refaults climb, it backs off, longer each time.
 * - MetadataCacheMax=: reclaimable slab more than a dead band above it is
 *   shrunk back to the band's lower edge. memory.reclaim frees slab in
 *   batches far larger than asked, so what it really frees for what it is
 *   asked is learnt per cgroup and the request divided by it.
 * - Global pressure (host memory stall over its threshold, or MemAvailable
 *   under its floor): caches are shrunk lowest Priority= first, then most
 *   reclaimable, a bounded number per tick, until the pressure is gone.
 * - Allocation throttle (AllocationThrottle=yes): while the host is under
 *   pressure, the fastest-growing such cgroup gets memory.high near its usage,
 *   raised step by step as the pressure subsides and restored after.
 * Protect=yes cgroups, the daemon's own cgroup and init.scope are never touched.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "policy.h"

#define AP_STATE_MAX 4096
#define AP_ACTIONS_MAX 256              /* actions in a plan of the allocation point */
#define AP_GLOBAL_PER_TICK 2
#define AP_BACKOFF_MAX 6
#define AP_STEP_MIN (UINT64_C(1) << 20)
/* The least memory.reclaim works for: each of its rounds asks the kernel's
 * reclaim for at least SWAP_CLUSTER_MAX (32) pages, whatever was written. */
#define AP_SLAB_ASK_MIN (UINT64_C(128) << 10)
/* MetadataCacheMax= dead band, in 1/1000 of the cap, either side of it. */
#define AP_SLAB_BAND_PERMILLE 50
/* The learnt yield (freed / asked) in 1/256ths, and its bounds. */
#define AP_YIELD_ONE 256u
#define AP_YIELD_MAX (1024u * AP_YIELD_ONE)

typedef struct ApCgroup {
        uint64_t id;
        const char *path;
        const Policy *policy;           /* never NULL, mode never off */
        bool exempt;                    /* the daemon's own cgroup, init.scope */
        bool valid;                     /* two samples: rates exist */
        uint64_t interval_usec;
        uint32_t stall_ppm;             /* max of memory and io "some" over the interval */
        uint64_t refault_rate;          /* bytes/s */
        int64_t growth_rate;            /* bytes/s of memory.current */
        uint64_t memory_current;
        uint64_t reclaimable;           /* clean file cache + reclaimable slab */
        uint64_t file_clean;            /* clean file cache alone */
        uint64_t slab_reclaimable;
        uint64_t protection;            /* max(memory.min, memory.low) */
} ApCgroup;

typedef struct ApSettings {
        uint32_t global_threshold_ppm;  /* host memory "some" that means pressure */
        uint32_t host_stall_ppm;
        bool host_stall_valid;
        uint64_t mem_available, mem_available_min;
        uint64_t tick_usec;
        uint64_t throttle_hold_usec;    /* calm time before a throttle is restored */
} ApSettings;

typedef struct ApCgroupState {
        uint64_t id;
        unsigned backoff;               /* 0: none; n: wait tick << n */
        uint64_t next_usec;             /* no reclaim before this */
        uint64_t last_refault_rate;
        bool inflight;
        uint64_t last_reclaim_usec;     /* when the last reclaim of it finished */
        uint64_t learned_floor;         /* reclaimable level under which reclaiming hurt; 0: none */
        uint64_t throttle_high;         /* memory.high asked for; 0: not throttled */
        bool throttle_observed;         /* decided while its policy only observed: not written */
        bool slab_inflight;             /* the reclaim in flight is MetadataCacheMax='s */
        uint32_t slab_yield;            /* learnt freed/asked of those, AP_YIELD_ONE = 1x; 0: none yet */
} ApCgroupState;

typedef struct AllocPointState {
        ApCgroupState cg[AP_STATE_MAX];
        size_t n;
        uint64_t last_pressure_usec;
} AllocPointState;

void alloc_point_decide(const ApCgroup *cgroups, size_t n, const ApSettings *st, uint64_t now_usec,
                        AllocPointState *state, PointPlan *ret);

/* A reclaim finished: `freed` bytes (memory.current before - after). `shared`: `freed` is not what
 * the request's own writes yielded (a memory.high lowering reclaimed beside it, Job.shared, or none
 * of its writes was made), and no yield is learnt from it. */
void alloc_point_reclaim_done(AllocPointState *state, uint64_t cgroup_id, uint64_t asked, uint64_t freed,
                              bool shared, uint64_t now_usec, uint64_t tick_usec);

/* The yield learnt for a cgroup's slab reclaims (AP_YIELD_ONE = 1x; 0: none yet). */
uint32_t alloc_point_slab_yield(const AllocPointState *state, uint64_t cgroup_id);

/* An action could not be carried out: a reclaim is no longer in flight; a memory.high set leaves the
 * value written before it (PointAction.from, 0 for none) as the point's. */
void alloc_point_forget(AllocPointState *state, const PointAction *a);

/* The largest reclaim allowed: reclaimable above CacheFloor= and protection. */
uint64_t alloc_point_room(const ApCgroup *c);
