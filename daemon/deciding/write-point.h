/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point, as a pure function: from this tick's view of the cgroups
 * that have a policy, the devices they write to and its own state, it
 * decides a plan of actions. It never touches a file.
 *
 * - Write-rate caps: while a protected cgroup's io stall is over its limit,
 *   the heaviest writers on the devices it uses (not protected, not of higher
 *   priority, not its ancestors or descendants) get an io.max wbps= cap
 *   derived from the device's completed rate; the cap steps down while the
 *   stall lasts, creeps up when it is gone, and is lifted after a quiet hold
 *   time. Never below the writer's WriteRateMin=.
 *   The limit counts the stall the neighbours add: what the protected cgroup
 *   stalls with nobody else writing to its devices (its baseline, learnt
 *   while it is active and uncontended) comes on top of IOPressureLimit=. A
 *   cap steps down at most once per WP_STEP_USEC (the device queue in front
 *   of the victim takes that long to drain), only while the smoothed stall
 *   is over the limit too, and holds once a second step since the stall
 *   began has not brought the smoothed stall down by a tenth: the rest is
 *   not the writer's. It holds until the stall goes under the limit.
 *   With GuardRate=, the writers beside a protected cgroup are capped from
 *   the first tick it does io on their device, at that share of the
 *   device's capacity, before any stall (a cgroup with 16 MiB dirty counts
 *   as a writer on every guarded device before it has written to one): a
 *   stall steps them down, one step at most, from there, they creep back up
 *   to it (never past it) while the protected cgroup does not stall, and the
 *   cap goes once it has done no io there for the hold time. The cgroups
 *   that could be capped but do not write yet get the guard's cap too, so
 *   that a writer starting beside an active protected cgroup is held from
 *   its first bio; a backlog budget comes only once they write.
 *   With IOLatencyTarget= on the protected cgroup, its io wait per request
 *   (PSI "some" time over the requests io.stat counted in the tick; the
 *   whole wait when it completed none) rules instead of its stall share: a
 *   cap over the target is cut in proportion (half at most) every
 *   WP_LATENCY_STEP_USEC, but within WP_STEP_USEC of the last cut only if
 *   the tick's latency has grown since (the requests queued before a cut
 *   keep it high until they complete); one under three quarters of it is
 *   raised by a twentieth of the device (a tenth under half of it), up to the device's
 *   capacity (nine tenths of it unless ManageQueueDepth= bounds the queue),
 *   only once the writer has used three quarters of its cap for WP_STEP_USEC,
 *   and never past an eighth under the cap the last spell of cuts began at
 *   (the knee; a limit that climbs back to it in WP_KNEE_RETURN_SEC, and on
 *   at that pace): the cap follows the
 *   latency both ways, the guard's first cap is where it starts, not a
 *   ceiling, and WriteRateMin= stays its floor.
 * - Dirty budgets: over DirtyLimit= (dirty + writeback) the writer's
 *   memory.high is lowered to the level whose per-cgroup dirty limit matches
 *   the budget; it is restored once the writer is back under DirtyBackground=.
 * - Targeted writeback: over DirtyBackground=, while its devices have headroom
 *   and nobody protected is stalling on them.
 * - Global dirty guard: near the host's dirty threshold, the largest dirtiers
 *   are bounded through their budgets before the kernel throttles everyone.
 * - Device queues (ManageQueueDepth=, off by default): from the first tick a
 *   protected cgroup does io on a device (or waits on it), the device's queue
 *   is made shallow (WP_QUEUE_NR_REQUESTS requests of WP_QUEUE_MAX_SECTORS_KB
 *   at most), so that each of its dependent writes waits behind a few of the
 *   writers' requests, not hundreds; it is restored once no protected cgroup
 *   has done io there for the hold time, or the setting is turned off.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "wp-types.h"

/*
 * Decides this tick's plan. `cgroups` are those with a policy whose mode is
 * not off (their order does not matter); `devices` the devices they use. The
 * state is updated as if every action of the plan succeeded; an actuator that
 * fails calls write_point_forget() so that it is tried again.
 */
void write_point_decide(const WpCgroup *cgroups, size_t n_cgroups, const WpDevice *devices, size_t n_devices,
                        const WpSettings *settings, uint64_t now_usec, WritePointState *state, PointPlan *ret);

/* The action failed: forget what it would have changed in the state. */
void write_point_forget(WritePointState *state, const PointAction *a);

/* A writeback job for the cgroup finished. */
void write_point_writeback_done(WritePointState *state, uint64_t cgroup_id);

/* memory.high level whose per-cgroup dirty limit is `budget` (exposed for tests). */
uint64_t write_point_budget_high(const WpCgroup *c, uint64_t budget, uint32_t dirty_ratio_pct);

/* The io stall a protected cgroup has alone, learnt so far; 0: none yet. */
uint32_t write_point_baseline(const WritePointState *state, uint64_t cgroup_id);

