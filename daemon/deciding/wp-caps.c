/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Setting the write point's caps: the heaviest writers on a device a
 * protected cgroup stalls on (or, with GuardRate=, is merely active on) get
 * an io.max wbps= cap, and each stalling step takes it lower, down to the
 * writer's floor. Raising and lifting them is wp-relax.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wp-internal.h"

static uint64_t cap_floor(const WpCgroup *w, const WpDevice *dev, uint64_t rate, const WpSettings *st,
                          size_t writers) {
        uint64_t base = dev && dev->capacity ? dev->capacity : rate;

        if (w->policy->write_rate_min.set)
                return MAX(bytes_of(&w->policy->write_rate_min, base), POLICY_WRITE_RATE_MIN_MIN);
        /* The default floor is shared as the guard is: ten writers at 10 % each would be the whole
         * device. A policy's own WriteRateMin= is that writer's, whoever else writes. */
        return MAX(ppm_of(base, st->write_rate_min_ppm) / MAX(writers, (size_t) 1), MIB);
}

/* What lifts a cap: nothing protected stalling (guarding: nor doing io) on its device for the hold time
 * (wp_relax_caps). */
void wp_cap_lifts_when(PointAction *a, const WpCgroup *victim, bool guarding) {
        const char *what = guarding ? "run, stalled or done io there" : "stalled";

        if (victim)
                snprintf(a->lifts_when, sizeof(a->lifts_when),
                         "when %s and any other protected cgroup on %" PRIu32 ":%" PRIu32
                         " have not %s for CapHoldTime", victim->path, a->major, a->minor, what);
        else
                snprintf(a->lifts_when, sizeof(a->lifts_when),
                         "when no protected cgroup on %" PRIu32 ":%" PRIu32 " has %s for CapHoldTime",
                         a->major, a->minor, what);
}

/*
 * GuardRate= of the device's capacity. 0 before the capacity is known: what
 * an unsaturated device completes says nothing of what it could (a guard
 * sized from a victim's trickle would starve the writer), and a writer that
 * floods it gives a first figure within a tick or two (devstat_capacity()).
 */
uint64_t wp_guard_level(const WpDevice *dev, const WpSettings *st) {
        return dev ? ppm_of(dev->capacity, st->guard_rate_ppm) : 0;
}

/* Whether the cgroup's io.stat lists the device: it has done io there since it was made (and its io
 * controller is on). A standing guard goes only there, or to a cgroup made while the daemon runs
 * (WpCgroup.newborn): one that has been there long and never wrote is unlikely to start, and a cap
 * where the io controller is off is a write that fails at every tick. */
static bool lists_device(const WpCgroup *c, uint32_t major, uint32_t minor) {
        for (size_t d = 0; d < c->n_devices; d++)
                if (c->devices[d].major == major && c->devices[d].minor == minor)
                        return true;
        return false;
}

/* Caps held on cgroups that do not write: at most half the table, so that a writer always finds room. */
static size_t standing_caps(const WpCgroup *cg, size_t n, const WritePointState *state) {
        size_t k = 0;

        for (size_t i = 0; i < state->n_caps; i++) {
                const WpCgroup *w = wp_find_cgroup(cg, n, state->caps[i].cgroup_id);
                k += !w || !wp_writing(w);
        }
        return k;
}

/*
 * The four ways a writer's cap is sized, one function each. Each returns
 * false when the cap stays as it is, else the value it asks for in *ret,
 * which cap_writer() raises to the writer's floor.
 */

/* A writer capped for a protected cgroup with IOLatencyTarget=: cut in proportion to how far over the
 * target the latency is, half at most a step. */
static bool cut_by_latency(const WpCap *cap, const Stall *s, uint64_t now, uint64_t *ret) {
        /* The queue in front of the victim shrinks with the writer's share of the
         * device, and the next step judges what this one did. */
        if (now - cap->stepped_usec < WP_LATENCY_STEP_USEC)
                return false;
        /* A cut shows once what the device had queued before it has completed:
         * within a second of the last one the latency stays up while that queue
         * drains. A second cut then only if the tick's own figure has grown since
         * the cut's (the smoothed one climbs on towards a flat level); the cuts
         * that came every half second on that alone took a writer from 11.6 to
         * 2.9 MiB/s in a second (xfs, 16 MiB/s disk). The figures compared are
         * the same protected cgroup's. */
        if (cap->cut_latency_usec && cap->protected_id == s->victim->id &&
            now - cap->stepped_usec < WP_STEP_USEC && s->tick_latency_usec <= cap->cut_latency_usec)
                return false;
        *ret = cap->wbps / 1000 * MAX(s->target_usec * 1000 / s->latency_usec, UINT64_C(500));
        return *ret < cap->wbps;
}

/*
 * The one step a stall takes a guard's cap: an eighth. A quarter held the
 * writer under 90 % of a hand-set 72 % cap's rate where the guard stood near
 * that cap (medians of three boots: 84.0-89.2 % in five cells of eight), for
 * the half of the run it spent a step down; an eighth keeps a guard at 75 %
 * of the capacity over 90 % of such a cap while it is stepped (96-101 % in
 * the five cells measured again: docs/write-point.md).
 */
static uint64_t guard_step(uint64_t guard_wbps) {
        return guard_wbps / 8 * 7;
}

/* A writer capped for a protected cgroup whose stall share rules: a quarter off per step (an eighth of
 * the guard under one). */
static bool step_by_stall(WpCap *cap, const Stall *s, uint32_t smooth, uint64_t now, uint64_t *ret) {
        /* The last step has not had time to show; or one bad tick, not
         * a lasting stall; or, for the second time since the stall
         * began, a step did not bring it down by a tenth: what remains
         * is not this writer's doing (on ext4 the victim's commits
         * even wait for the writer's ordered data that the cap holds
         * back). Hold until the stall goes under the limit. */
        if (now - cap->stepped_usec < WP_STEP_USEC || smooth <= s->limit_ppm)
                return false;
        if (smooth > cap->stall_at_step / 10 * 9) {
                if (cap->no_gain >= 1)
                        return false;
                cap->no_gain++;
        }
        *ret = cap->wbps / 4 * 3;
        /* Under a guard, one step below it at most: the guard is what the operator
         * gives writers beside an active protected cgroup, and every step further
         * was measured to cost the writer more than it gave the victim. */
        if (cap->guard_wbps)
                *ret = MAX(*ret, guard_step(cap->guard_wbps));
        return *ret < cap->wbps;
}

/* A writer's first cap under GuardRate=: its part of that share of the device (guard_share()), once the
 * capacity is known. */
static bool first_by_guard(uint64_t level, uint64_t *ret) {
        *ret = level;
        return *ret > 0;
}

/* A writer's first cap at a stall: three quarters of what it gets now, bounded by what the device
 * completes and by what it sustains (a tick's completions can be a burst into a cache). */
static bool first_by_rate(const WpDevice *dev, uint64_t rate, uint64_t *ret) {
        uint64_t b = rate;

        if (dev && dev->write_rate)
                b = MIN(b, dev->write_rate);
        if (dev && dev->capacity)
                b = MIN(b, dev->capacity);
        *ret = b / 4 * 3;
        return b > 0;   /* only dirty data so far: nothing to size a cap from */
}

/* Which way sizes the writer's cap now. A guard only ever sets the first cap; *ret_guarded: it did. */
static bool cap_wanted(WpCap *cap, const Stall *s, const WpDevice *dev, uint64_t rate, bool guard,
                       uint64_t level, uint32_t smooth, uint64_t now, uint64_t *ret, bool *ret_guarded) {
        *ret_guarded = false;
        if (cap && guard)
                return false;
        if (cap)
                return s->target_usec ? cut_by_latency(cap, s, now, ret) : step_by_stall(cap, s, smooth, now, ret);
        if (guard && first_by_guard(level, ret)) {
                *ret_guarded = true;
                return true;
        }
        if (guard && !wp_over_limit(s))
                return false;   /* nothing to size a guard from yet, and nobody stalls */
        return first_by_rate(dev, rate, ret);
}

/* The writer's entry in the state: a new one, or, cut by latency, one whose knee is noted: where the
 * first cut of a spell came from (the cuts that follow within a few seconds are the same queue draining). */
static WpCap *cap_entry(WritePointState *state, WpCap *cap, const WpCgroup *w, const Stall *s, bool guard,
                        uint64_t now) {
        if (!cap) {
                cap = &state->caps[state->n_caps++];
                *cap = (WpCap) { .cgroup_id = w->id, .major = s->major, .minor = s->minor, .wbps = UINT64_MAX };
        } else if (s->target_usec && !guard) {
                if (!cap->knee_wbps || now - cap->knee_usec > 4 * WP_STEP_USEC || cap->wbps > cap->knee_wbps) {
                        cap->knee_wbps = cap->wbps;
                        cap->knee_usec = now;
                }
        }
        return cap;
}

/* Whether protected cgroup c is active on device r this tick: io there, or a wait on io (a cgroup
 * blocked in an fdatasync behind a writer completes nothing for seconds, and is the one the guard
 * is for). */
static bool guard_active(const WpCgroup *c, const DeviceRate *r) {
        return r->wbytes_per_sec > 0 || r->rbytes_per_sec > 0 || c->io_stall_ppm >= WP_GUARD_WAIT_MIN_PPM;
}

/* Whether the stall's protected cgroup is active on its device this tick (else it only runs). */
static bool victim_active(const Stall *s) {
        for (size_t d = 0; d < s->victim->n_devices; d++)
                if (s->victim->devices[d].major == s->major && s->victim->devices[d].minor == s->minor &&
                    guard_active(s->victim, &s->victim->devices[d]))
                        return true;
        return false;
}

/* Why the cap: a guard beside a cgroup that does io, a latency over its target, or a stall over its limit. */
static void cap_reason(PointAction *a, const Stall *s, uint32_t base, bool at_floor, bool guarded) {
        uint32_t stall = s->victim->io_stall_ppm;
        const char *how = at_floor ? "; at WriteRateMin" : guarded ? "; first cap at GuardRate" : "";

        if (guarded && !wp_over_limit(s) && !victim_active(s))
                snprintf(a->reason, sizeof(a->reason), "%s runs and uses %" PRIu32 ":%" PRIu32 ": writers held to "
                         "GuardRate while it runs%s", s->victim->path, s->major, s->minor,
                         at_floor ? "; at WriteRateMin" : "");
        else if (guarded && !wp_over_limit(s))
                snprintf(a->reason, sizeof(a->reason), "%s does io on %" PRIu32 ":%" PRIu32 " (stall %u.%02u%%): "
                         "writers held to GuardRate from its first tick%s", s->victim->path, s->major, s->minor,
                         stall / 10000, stall / 100 % 100, at_floor ? "; at WriteRateMin" : "");
        else if (s->target_usec)
                snprintf(a->reason, sizeof(a->reason),
                         "%s waits %" PRIu64 ".%" PRIu64 " ms per request on io (IOLatencyTarget %" PRIu64 ".%" PRIu64
                         " ms)%s", s->victim->path, s->latency_usec / 1000, s->latency_usec / 100 % 10,
                         s->target_usec / 1000, s->target_usec / 100 % 10, how);
        else
                snprintf(a->reason, sizeof(a->reason),
                         "%s stalls %u.%02u%% on io (limit %u.%02u%%, %u.%02u%% of it its own)%s", s->victim->path,
                         stall / 10000, stall / 100 % 100, s->limit_ppm / 10000, s->limit_ppm / 100 % 100,
                         base / 10000, base / 100 % 100, how);
}

/* A cap's action on the stall's device, for its protected cgroup, from `previous` to `value`. */
static void cap_action(PointAction *a, const Stall *s, uint64_t previous, uint64_t value) {
        a->major = s->major;
        a->minor = s->minor;
        a->previous = previous;
        a->value = value;
        a->protected_id = s->victim->id;
        a->stall_ppm = s->victim->io_stall_ppm;
}

/*
 * A cap for one writer: the first one from what it gets now (or, guarding,
 * GuardRate= of the device), then a step down per stalling WP_STEP_USEC.
 */
static void cap_writer(const WpCgroup *w, const Stall *s, const WpDevice *dev, uint64_t rate, bool guard,
                       uint64_t level, size_t writers, const WpSettings *st, uint64_t now,
                       WritePointState *state, PointPlan *plan) {
        WpCap *cap = wp_find_cap(state, w->id, s->major, s->minor);
        uint64_t floor = cap_floor(w, dev, rate, st, writers), want;
        uint32_t smooth = wp_smoothed_stall(state, s->victim);
        bool guarded;
        PointAction *a;

        if (!cap_wanted(cap, s, dev, rate, guard, level, smooth, now, &want, &guarded))
                return;
        want = MAX(want, floor);
        if (cap && want >= cap->wbps)
                return; /* at its floor already */
        if (!cap && state->n_caps >= WP_CAPS_MAX)
                return;
        a = wp_plan_add(plan, PA_SET_CAP, w);
        if (!a)
                return;
        cap = cap_entry(state, cap, w, s, guard, now);
        cap_action(a, s, cap->wbps, want);
        cap_reason(a, s, wp_baseline(state, s->victim->id), want == floor, guarded);
        wp_cap_lifts_when(a, s->victim, st->guard_rate_ppm != 0);
        cap->wbps = want;
        if (guarded) {
                cap->guard_wbps = want;
                cap->guard_level = wp_guard_level(dev, st);
        }
        if (!cap->active_usec && (rate >= want / 2 || wp_dirty_for(w, s->major, s->minor)))
                cap->active_usec = now;
        cap->protected_id = s->victim->id;
        cap->stepped_usec = now;
        cap->stall_at_step = smooth;
        cap->cut_latency_usec = s->target_usec && !guarded ? s->tick_latency_usec : 0;
}

/*
 * How much a writer weighs on a guarded device: its write rate there, or,
 * before its first write there, the dirty data it is piling up: a dd fills
 * the page cache within a tick, and once the flusher has queued that on the
 * device a cap comes too late for the seconds it takes to drain. A trickle
 * counts for nothing.
 */
static uint64_t guard_weight(const WpCgroup *w, const Stall *s, const WpDevice *dev) {
        uint64_t trickle = MAX(dev && dev->capacity ? dev->capacity / 20 : 0, MIB);
        uint64_t r = wp_device_rate_of(w, s->major, s->minor);

        if (r >= trickle)
                return r;
        return w->dirty >= WP_GUARD_DIRTY_MIN ? w->dirty : 0;
}

/* Whether a capped writer still counts as one that fills its part (guard_share()). */
static bool cap_in_use(const WpCap *cap, uint64_t now) {
        return cap->active_usec && now - cap->active_usec < WP_SHARE_HOLD_USEC;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* Max-min: what each of n_full writers, and each small one that wants more, gets of `g` after the small
 * writers (sorted, ascending) that want less than an equal part have what they use. */
static uint64_t water_fill(const uint64_t *small, size_t n_small, size_t n_full, uint64_t g) {
        uint64_t left = g;
        size_t i;

        if (n_small + n_full == 0)
                return g;
        for (i = 0; i < n_small; i++) {
                if (small[i] * (n_small + n_full - i) >= left)
                        break;
                left -= small[i];
        }
        /* Every writer small, and room left: the largest may grow by what is left. */
        if (i == n_small + n_full)
                return small[n_small - 1] + left;
        return left / (n_small + n_full - i);
}

/*
 * GuardRate= is a share of the device for all its writers together, not for
 * each: two writers held to 75 % each fill it as one unheld writer does
 * (issue 35: "every writer pays"). Shared max-min: a writer that uses less
 * than an equal part (under three quarters of its cap, or of the whole
 * share if it has none) leaves the rest to the others, and the level is the
 * part each of the others gets. A capped writer that has used half its cap
 * within WP_SHARE_HOLD_USEC, or one with no cap that holds WP_GUARD_DIRTY_MIN
 * of dirty data and writes to no other device (a dd's first tick: what it
 * has written is no measure of what it will, its flush is to come), wants
 * all it can get; the others want what they use, a trickle nothing. (A
 * capped writer's rate in one tick says little: its writeback comes in
 * bursts. What it uses is judged over seconds, by its cap.) *ret_one_more:
 * the level were one more writer to come (a cgroup capped before its first
 * write). Each cap is the level (the caps' sum can pass the share
 * while the small writers stay small; when one grows, the next tick levels
 * again). 0: no capacity known, no guard.
 */
static uint64_t guard_share(const WpCgroup *cg, size_t n, const Stall *s, const WpDevice *dev,
                            const WpSettings *st, const WritePointState *state, uint64_t now,
                            size_t *ret_writers, uint64_t *ret_one_more) {
        uint64_t g = wp_guard_level(dev, st), small[WP_CAPS_MAX];
        uint64_t trickle = MAX(dev && dev->capacity ? dev->capacity / 20 : 0, MIB);
        size_t n_small = 0, n_full = 0, i;

        for (i = 0; g > 0 && i < n; i++) {
                const WpCgroup *c = &cg[i];
                const WpCap *cap;
                uint64_t r;
                bool full;

                /* The same writers whichever protected cgroup asks: two of them on one device
                 * must come to one level, or a cap would follow each in turn every tick. */
                if (c->protect || c->above_writers || !c->policy->cap_writes)
                        continue;
                cap = wp_find_cap((WritePointState *) state, c->id, s->major, s->minor);
                r = wp_device_rate_of(c, s->major, s->minor);
                if (cap)
                        full = cap_in_use(cap, now);
                else
                        full = r >= g / 4 * 3 || wp_dirty_for(c, s->major, s->minor);
                if (!full && r < trickle)
                        continue;
                if (!full && n_small < ELEMENTSOF(small))
                        small[n_small++] = r;
                else
                        n_full++;
        }
        *ret_writers = n_small + n_full;
        if (g == 0)
                return 0;
        qsort(small, n_small, sizeof(small[0]), cmp_u64);
        *ret_one_more = water_fill(small, n_small, n_full + 1, g);
        return water_fill(small, n_small, n_full, g);
}

/*
 * The guard's caps on one device brought to this tick's level, when a
 * writer's part has changed by more than a sixteenth (a writer came, went or
 * grew). Down at once: to the new part, or a step (guard_step()) under it
 * where a stall has taken the cap a step under its part. Up only as the ceiling the
 * cap may climb back to, by the creep or the latency's raises, a step at a
 * time as they judge the device: a part that doubles does not undo cuts the
 * latency made in one tick. A cgroup capped ahead that does not write gets
 * the part of one more writer.
 */
static void level_guard_caps(const WpCgroup *cg, size_t n, const Stall *s, const WpDevice *dev, uint64_t level,
                             uint64_t level_one_more, size_t writers, const WpSettings *st, uint64_t now,
                             WritePointState *state, PointPlan *plan) {
        for (size_t i = 0; i < state->n_caps; i++) {
                WpCap *cap = &state->caps[i];
                const WpCgroup *w;
                uint64_t part, want;
                PointAction *a;
                bool writing;

                if (!cap->guard_wbps || cap->major != s->major || cap->minor != s->minor ||
                    !(w = wp_find_cgroup(cg, n, cap->cgroup_id)) || !wp_may_cap(w, s->victim) || w->above_writers)
                        continue;
                writing = cap_in_use(cap, now) || guard_weight(w, s, dev) > 0;
                part = writing ? level : MIN(level_one_more, cap->guard_wbps);
                /* Never past the whole share the guard had when it set the cap: the capacity
                 * estimate drifts up with what a busy device lets through in bursts, and a guard
                 * that followed it would too. */
                part = MIN(part, cap->guard_level ?: part);
                if (part == 0 || (part > cap->guard_wbps ? part - cap->guard_wbps : cap->guard_wbps - part) <=
                                 cap->guard_wbps / 16)
                        continue;
                want = MAX(cap->wbps < cap->guard_wbps ? guard_step(part) : part,
                           cap_floor(w, dev, wp_device_rate_of(w, s->major, s->minor), st, writers));
                if (want >= cap->wbps) {
                        cap->guard_wbps = part;
                        continue;
                }
                if (!(a = wp_plan_add(plan, PA_SET_CAP, w)))
                        continue;
                cap_action(a, s, cap->wbps, want);
                snprintf(a->reason, sizeof(a->reason), "GuardRate on %" PRIu32 ":%" PRIu32 " is shared by the "
                         "writers there (%zu now, beside %s)", s->major, s->minor, writers, s->victim->path);
                wp_cap_lifts_when(a, s->victim, true);
                cap->guard_wbps = part;
                cap->wbps = want;
                cap->stepped_usec = now;
                cap->stall_at_step = wp_smoothed_stall(state, s->victim);
        }
}

/* The heaviest writers that may be capped for one stalling (or, guard, guarded) device. */
static void decide_device(const WpCgroup *cg, size_t n, const Stall *s, const WpDevice *dev, bool guard,
                          const WpSettings *st, uint64_t now, WritePointState *state, PointPlan *plan) {
        const WpCgroup *top[WP_CAPPED_PER_DEVICE] = {};
        uint64_t top_rate[WP_CAPPED_PER_DEVICE] = {};
        size_t writers = 0;
        uint64_t level = 0, level_one_more = 0;

        if (st->guard_rate_ppm) {
                level = guard_share(cg, n, s, dev, st, state, now, &writers, &level_one_more);
                level_guard_caps(cg, n, s, dev, level, level_one_more, writers, st, now, state, plan);
        }
        for (size_t i = 0; i < n; i++) {
                uint64_t r = st->guard_rate_ppm ? guard_weight(&cg[i], s, dev) :
                             wp_device_rate_of(&cg[i], s->major, s->minor);
                if (r == 0 || !wp_may_cap(&cg[i], s->victim))
                        continue;
                for (size_t k = 0; k < WP_CAPPED_PER_DEVICE; k++)
                        if (!top[k] || r > top_rate[k]) {
                                memmove(&top[k + 1], &top[k], (WP_CAPPED_PER_DEVICE - k - 1) * sizeof(top[0]));
                                memmove(&top_rate[k + 1], &top_rate[k], (WP_CAPPED_PER_DEVICE - k - 1) * sizeof(top_rate[0]));
                                top[k] = &cg[i];
                                top_rate[k] = r;
                                break;
                        }
        }
        /* Writers at a tenth or less of the heaviest one are not what hurts. Guarding, a writer's
         * first cap is the guard's, whether a stall or its io brought it. */
        for (size_t k = 0; k < WP_CAPPED_PER_DEVICE && top[k]; k++)
                if (k == 0 || top_rate[k] * 10 > top_rate[0])
                        cap_writer(top[k], s, dev, wp_device_rate_of(top[k], s->major, s->minor),
                                   guard || (st->guard_rate_ppm && !wp_find_cap(state, top[k]->id, s->major, s->minor)),
                                   level, writers, st, now, state, plan);
        /* Guarding, the writers that have not written yet too: a dd's first second
         * fills the device's queue before any tick can see it (measured: the
         * victim's worst op came there, twice the static cap's), and io.max holds
         * a writer from its first bio only if it is in place before. A ceiling
         * on a cgroup that does not write costs it nothing. */
        if (guard && level > 0) {
                /* Counted once: a count per candidate is the caps times the cgroups, per candidate. */
                size_t standing = standing_caps(cg, n, state);

                for (size_t i = 0; i < n; i++) {
                        const WpCgroup *c = &cg[i];
                        bool idle = !wp_writing(c);
                        size_t before = state->n_caps;

                        /* A cgroup under no policy only once it writes (a host has hundreds that once
                         * wrote a log line, and a new writer among them is capped at its first tick),
                         * or while it is new: made beside a running protected cgroup, it is most
                         * likely a writer's, and the cap is in place before its first write. */
                        if (!wp_may_cap(c, s->victim) || (!lists_device(c, s->major, s->minor) && !c->newborn) ||
                            (idle && ((c->implicit && !c->newborn) || standing >= WP_CAPS_MAX / 2)) ||
                            wp_find_cap(state, c->id, s->major, s->minor))
                                continue;
                        cap_writer(c, s, dev, 0, true, guard_weight(c, s, dev) ? level : level_one_more,
                                   writers + !guard_weight(c, s, dev), st, now, state, plan);
                        if (state->n_caps > before)
                                state->caps[state->n_caps - 1].ahead = idle && c->newborn;
                        standing += idle && state->n_caps > before;
                }
        }
}

/* Each stalling device: marked as stalling now, and its heaviest writers capped or stepped down. */
void wp_cap_stalls(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                   size_t n_stalls, const WpSettings *st, uint64_t now, WritePointState *state, PointPlan *plan) {
        for (size_t k = 0; k < n_stalls; k++) {
                WpDeviceQuiet *q = wp_quiet_of(state, stalls[k].major, stalls[k].minor, true);
                if (q)
                        q->last_stall_usec = now;
                decide_device(cg, n, &stalls[k], wp_find_device(dev, n_dev, stalls[k].major, stalls[k].minor), false,
                              st, now, state, plan);
        }
}

/*
 * GuardRate=: every device a protected cgroup is active on, and every device
 * its io.stat lists while it runs at all (the standing guard), that nobody
 * stalls on, has its writers capped from now on. Standing, the guard is in
 * place before a writer's first bio whichever of the two starts first: a
 * writer that starts beside an idle service has filled the device's queue
 * with seconds of writeback before the service's first fsync, and a cap that
 * comes then cannot reach what is queued.
 */
/* One device guarded for protected cgroup c: held guarded now, and, unless it stalls there (the
 * stall's own caps rule then), its writers capped. */
static void guard_device(const WpCgroup *cg, size_t n, const WpCgroup *c, uint32_t major, uint32_t minor,
                         const WpDevice *dev, size_t n_dev, const Stall *stalls, size_t n_stalls,
                         const WpSettings *st, uint64_t now, WritePointState *state, PointPlan *plan) {
        Stall g = wp_stall_of(state, c, major, minor);
        WpDeviceQuiet *q = wp_quiet_of(state, major, minor, true);

        if (q)
                q->last_guarded_usec = now;
        for (size_t k = 0; k < n_stalls; k++)
                if (stalls[k].major == major && stalls[k].minor == minor)
                        return;
        decide_device(cg, n, &g, wp_find_device(dev, n_dev, major, minor), true, st, now, state, plan);
}

void wp_guard_devices(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                      size_t n_stalls, const WpSettings *st, uint64_t now, WritePointState *state, PointPlan *plan) {
        if (!st->guard_rate_ppm)
                return;
        for (size_t i = 0; i < n; i++) {
                const WpCgroup *c = &cg[i];

                if (!c->protect)
                        continue;
                for (size_t d = 0; d < c->n_devices; d++)
                        if (c->running || guard_active(c, &c->devices[d]))
                                guard_device(cg, n, c, c->devices[d].major, c->devices[d].minor, dev, n_dev,
                                             stalls, n_stalls, st, now, state, plan);
                /* A service that runs but has done no io yet (just started) uses a device nobody can
                 * name: every device the daemon knows the capacity of is guarded until it does. */
                for (size_t d = 0; c->running && c->n_devices == 0 && d < n_dev; d++)
                        if (dev[d].capacity)
                                guard_device(cg, n, c, dev[d].major, dev[d].minor, dev, n_dev, stalls, n_stalls,
                                             st, now, state, plan);
        }
}

/*
 * A cap decided while its policy only observed was never written. Once the
 * policy enforces, it is asked for as it stands at the first tick, not at
 * the next step down (or never, if it is lifted after the hold time).
 */
void wp_enforce_observed_caps(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state,
                              PointPlan *plan) {
        for (size_t i = 0; i < state->n_caps; i++) {
                WpCap *cap = &state->caps[i];
                const WpCgroup *w = wp_find_cgroup(cg, n, cap->cgroup_id), *victim;
                PointAction *a;

                if (!cap->observed || !w || w->policy->mode != POLICY_MODE_ENFORCE || !(a = wp_plan_add(plan, PA_SET_CAP, w)))
                        continue;
                a->major = cap->major;
                a->minor = cap->minor;
                a->value = cap->wbps;
                a->protected_id = cap->protected_id;
                victim = wp_find_cgroup(cg, n, cap->protected_id);
                /* Whom it protects first: the mode change is only why it is written now. */
                snprintf(a->reason, sizeof(a->reason), "%s is protected on %" PRIu32 ":%" PRIu32 " (decided while "
                         "its policy observed; its policy enforces now)", victim ? victim->path : "a cgroup",
                         cap->major, cap->minor);
                wp_cap_lifts_when(a, victim, st->guard_rate_ppm != 0);
        }
}
