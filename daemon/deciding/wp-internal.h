/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the files of the write point share, and nobody else sees: the
 * lookups into its state and its inputs, the units its policies are written
 * in, a stalling device, and the one entry of each sub-policy that
 * write_point_decide() (write-point.c) calls in turn. Each file calls only
 * those listed above it:
 *
 *   wp-state.c      lookups into the inputs and the state, the plan's way in
 *   wp-stall.c      baselines, latencies, which devices stall and by how much
 *   wp-caps.c       setting caps: at a stall, by a guard, a step at a time
 *   wp-relax.c      raising and lifting them once nobody stalls
 *   wp-budgets.c    dirty budgets, a capped writer's backlog, the global guard
 *   wp-writeback.c  early writeback
 *   wp-queues.c     shallow device queues
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"
#include "wp-types.h"

#define MIB (UINT64_C(1) << 20)

/* ---- units ---- */

static inline uint64_t ppm_of(uint64_t base, uint32_t ppm) {
        return base / 1000000 * ppm + base % 1000000 * ppm / 1000000;
}

static inline uint64_t bytes_of(const SizeOrPercent *v, uint64_t base) {
        return v->is_percent ? ppm_of(base, v->ppm) : v->bytes;
}

/* DirtyLimit= and DirtyBackground= in bytes on this cgroup; a percentage never comes to less than a size may be. */
static inline uint64_t dirty_limit_bytes(const WpCgroup *c) {
        return MAX(bytes_of(&c->policy->dirty_limit, c->memory_limit), POLICY_DIRTY_LIMIT_MIN);
}

static inline uint64_t dirty_background_bytes(const WpCgroup *c) {
        return MAX(bytes_of(&c->policy->dirty_background, c->memory_limit), POLICY_DIRTY_BACKGROUND_MIN);
}

/* ---- lookups and the plan (wp-state.c) ---- */

/* An action for cgroup c (NULL: none), added to the plan; NULL when the plan is full. */
PointAction *wp_plan_add(PointPlan *p, PointActionKind kind, const WpCgroup *c);
const WpCgroup *wp_find_cgroup(const WpCgroup *cg, size_t n, uint64_t id);
const WpDevice *wp_find_device(const WpDevice *d, size_t n, uint32_t major, uint32_t minor);
/* What the cgroup wrote to the device over the tick, bytes/s. */
uint64_t wp_device_rate_of(const WpCgroup *c, uint32_t major, uint32_t minor);
WpCap *wp_find_cap(WritePointState *s, uint64_t id, uint32_t major, uint32_t minor);
void wp_remove_cap(WritePointState *s, WpCap *c);
WpBudget *wp_find_budget(WritePointState *s, uint64_t id);
/* When the device last saw a stall or a guarded cgroup; `create`: make its entry if there is none. */
WpDeviceQuiet *wp_quiet_of(WritePointState *s, uint32_t major, uint32_t minor, bool create);
/* Whether w may be capped for the protected cgroup `victim`. */
bool wp_may_cap(const WpCgroup *w, const WpCgroup *victim);
/* Whether a cgroup writes: dirty data piling up, or more than a trickle reaching a device. */
bool wp_writing(const WpCgroup *w);
/* Whether the cgroup holds WP_GUARD_DIRTY_MIN of dirty data that is likely the device's: it writes to no
 * other device now (memory.stat's dirty data is the cgroup's, not a device's). */
bool wp_dirty_for(const WpCgroup *w, uint32_t major, uint32_t minor);
/* The memory.high whose per-cgroup dirty limit is `budget`. */
uint64_t wp_budget_high(const WpCgroup *c, uint64_t budget, uint32_t dirty_ratio_pct);
/* The io stall a protected cgroup has alone, learnt so far; 0: none yet. */
uint32_t wp_baseline(const WritePointState *state, uint64_t cgroup_id);

/* ---- stalls (wp-stall.c) ---- */

/* A stalling device: the protected cgroup that stalls worst on it. */
typedef struct Stall {
        uint32_t major, minor;
        const WpCgroup *victim;
        uint32_t limit_ppm;             /* the victim's, baseline included */
        uint64_t target_usec;           /* the victim's IOLatencyTarget=; 0: its stall share rules */
        uint64_t latency_usec;          /* its io wait per request now, under a target */
        uint64_t tick_latency_usec;     /* ... as this tick alone measured it */
} Stall;

void wp_learn_baselines(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, WritePointState *state);
/* The protected cgroup's latency under IOLatencyTarget=, if this tick measured one: the lower of the
 * tick's and the smoothed figure to cut by, the higher to raise by; `ret_tick`, if given: the tick's. */
bool wp_latency_now(const WritePointState *state, const WpCgroup *c, bool to_cut, uint64_t *ret,
                    uint64_t *ret_tick);
/* The protected cgroup's io stall, smoothed; this tick's before there is a smoothed figure. */
uint32_t wp_smoothed_stall(WritePointState *state, const WpCgroup *c);
Stall wp_stall_of(const WritePointState *state, const WpCgroup *c, uint32_t major, uint32_t minor);
bool wp_over_limit(const Stall *s);
/* The devices some protected cgroup stalls on over its limit, at most `max`. */
size_t wp_find_stalls(const WpCgroup *cg, size_t n, const WritePointState *state, Stall *stalls, size_t max);

/* ---- caps (wp-caps.c, wp-relax.c) ---- */

/* GuardRate= of the device's capacity; 0 while the capacity is unknown. */
uint64_t wp_guard_level(const WpDevice *dev, const WpSettings *st);
void wp_cap_lifts_when(PointAction *a, const WpCgroup *victim, bool guarding);
void wp_enforce_observed_caps(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state,
                              PointPlan *plan);
void wp_cap_stalls(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                   size_t n_stalls, const WpSettings *st, uint64_t now, WritePointState *state, PointPlan *plan);
void wp_guard_devices(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                      size_t n_stalls, const WpSettings *st, uint64_t now, WritePointState *state, PointPlan *plan);
void wp_track_busy(const WpCgroup *cg, size_t n, uint64_t now, WritePointState *state);
void wp_relax_caps(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                   size_t n_stalls, const WpSettings *st, uint64_t now, WritePointState *state, PointPlan *plan);

/* ---- budgets and the global dirty guard (wp-budgets.c) ---- */

void wp_enforce_observed_budgets(const WpCgroup *cg, size_t n, WritePointState *state, PointPlan *plan);
void wp_decide_backlogs(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state, PointPlan *plan);
void wp_decide_budgets(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state, PointPlan *plan);
void wp_decide_guard(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state, PointPlan *plan);

/* ---- writeback (wp-writeback.c) and device queues (wp-queues.c) ---- */

void wp_decide_writeback(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                         size_t n_stalls, WritePointState *state, PointPlan *plan);
void wp_writeback_done(WritePointState *state, uint64_t cgroup_id);
void wp_decide_queues(const WpCgroup *cg, size_t n, const WpSettings *st, uint64_t now, WritePointState *state,
                      PointPlan *plan);
/* A queue action failed: the state as if it had not been decided. */
void wp_forget_queue(WritePointState *state, const PointAction *a);
