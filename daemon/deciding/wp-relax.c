/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point's caps once nobody stalls on their device: raised step by
 * step (by the latency a target rules, else creeping up slowly), and lifted
 * after the hold time.
 */
#include <inttypes.h>
#include <stdio.h>

#include "wp-internal.h"

/*
 * A cap whose protected cgroup has a latency target, under it: raised by a
 * twentieth of the device (a tenth while the latency is under half the
 * target) while the latency is under three quarters of the target and the
 * writer has used at least three quarters of its cap for WP_STEP_USEC, one
 * step per WP_LATENCY_STEP_USEC so that each shows before the next; up to the device's
 * capacity (nine tenths of it without ManageQueueDepth=) and never past the
 * knee's limit below. The guard's level is where it started, not a
 * ceiling. 0: hold.
 */
static uint64_t latency_raise(const WpCap *cap, const WpCgroup *w, const WpCgroup *p, const WpDevice *d,
                              const WpSettings *st, const WritePointState *state, uint64_t now) {
        /* A deep device queue fills within a tick once the cap no longer binds, and the op
         * that waits behind it takes seconds: a tenth of the device stays out of reach then.
         * A shallow queue bounds that wait, and the writer may have the whole device. */
        uint64_t lat, ceiling = !d || !d->capacity ? UINT64_MAX :
                                st->manage_queue_depth ? d->capacity : d->capacity / 10 * 9, step;

        /* Where the latency last went over, the queue filled: the raises stop an eighth
         * under that cap, a limit that climbs back to it in WP_KNEE_RETURN_SEC and on past
         * it at that pace, so that the next probe of the knee comes slowly and seldom: on
         * btrfs each probe cost the victim a second of syncs that waited hundreds of ms,
         * and a limit ten times as fast probed about every 10 s. */
        if (cap->knee_wbps) {
                uint64_t since = now > cap->knee_usec ? (now - cap->knee_usec) / USEC_PER_SEC : 0;
                uint64_t knee = cap->knee_wbps / 8 * 7;
                ceiling = MIN(ceiling, since >= 8 * WP_KNEE_RETURN_SEC ? UINT64_MAX :
                                       knee + since * (cap->knee_wbps / 8) / WP_KNEE_RETURN_SEC);
        }
        /* A cap the writer does not reach says nothing of what a higher one would do to
         * the latency: a standing guard raised while its writer is idle would greet the
         * writer's first burst wide open. Nor does one it has reached only just: the queue
         * it feeds takes a second to fill, and the latency of the writer's first tick is
         * that of an empty queue (busy_since_usec, kept by wp_track_busy()). */
        if (!wp_latency_now(state, p, false, &lat, NULL) || lat > p->io_latency_target_usec / 4 * 3 ||
            now - cap->stepped_usec < WP_LATENCY_STEP_USEC || cap->wbps >= ceiling ||
            !cap->busy_since_usec || now - cap->busy_since_usec < WP_STEP_USEC)
                return 0;
        step = MAX(d && d->capacity ? d->capacity / (lat < p->io_latency_target_usec / 2 ? 10 : 20) : 0, MIB);
        return ceiling - cap->wbps <= step ? ceiling : cap->wbps + step;
}

/* Every tick, stalling or not, once this tick's cuts and guards are set, before the raises: since
 * when each writer uses three quarters of its cap (latency_raise() waits for a second of it), and
 * when it last used half of it (guard_share() counts it for WP_SHARE_HOLD_USEC after). */
void wp_track_busy(const WpCgroup *cg, size_t n, uint64_t now, WritePointState *state) {
        for (size_t i = 0; i < state->n_caps; i++) {
                WpCap *cap = &state->caps[i];
                const WpCgroup *w = wp_find_cgroup(cg, n, cap->cgroup_id);

                uint64_t r = w ? wp_device_rate_of(w, cap->major, cap->minor) : 0;

                if (w && (r >= cap->wbps / 2 || wp_dirty_for(w, cap->major, cap->minor)))
                        cap->active_usec = now;
                if (!w || r < cap->wbps / 4 * 3)
                        cap->busy_since_usec = 0;
                else if (!cap->busy_since_usec)
                        cap->busy_since_usec = now;
        }
}

/* Whether the device is among this tick's stalling ones. */
static bool stalling_on(const Stall *stalls, size_t n_stalls, uint32_t major, uint32_t minor) {
        bool stalling = false;

        for (size_t k = 0; k < n_stalls; k++)
                stalling |= stalls[k].major == major && stalls[k].minor == minor;
        return stalling;
}

/*
 * A cap the stall share rules, nobody stalling on its device for a while:
 * up by a twentieth of the device (a MiB at least), to nine tenths of it.
 * False: it holds.
 */
static bool creep(WpCap *cap, const WpDevice *d, const WpDeviceQuiet *q, const WpSettings *st, uint64_t now,
                  uint64_t *ret) {
        uint64_t ceiling = d && d->capacity ? d->capacity / 10 * 9 : UINT64_MAX;

        /* Guarding, up to the guard's own first cap: the capacity estimate
         * drifts up with what a busy device lets through in bursts. */
        if (st->guard_rate_ppm && now - q->last_guarded_usec < st->hold_usec)
                ceiling = MIN(ceiling, cap->guard_wbps ?: wp_guard_level(d, st) ?: UINT64_MAX);

        /* Creep only once the stall has been gone a quarter of the hold
         * time, and slowly: a full device queue brings it back at once.
         * The cap itself goes only at the end of the hold time. */
        if (now - q->last_stall_usec < st->hold_usec / 4)
                return false;
        /* The stall is over: a new one starts a new descent. */
        cap->no_gain = 0;
        if (cap->wbps >= ceiling)
                return false;
        *ret = MIN(cap->wbps + MAX(d && d->capacity ? d->capacity / 20 : 0, MIB), ceiling);
        return true;
}

/* The cap raised to `want`, or lifted, in the plan and the state: its action, NULL when the plan is full.
 * `p`: the protected cgroup the cap is for, if it is still under a policy. */
static PointAction *relax_cap(WpCap *cap, const WpCgroup *w, const WpCgroup *p, bool lift, bool by_latency, uint64_t want,
                      const WpSettings *st, WritePointState *state, PointPlan *plan) {
        PointAction *a = wp_plan_add(plan, lift ? PA_LIFT_CAP : PA_SET_CAP, w);

        if (!a)
                return NULL;
        a->cgroup_id = cap->cgroup_id;
        a->major = cap->major;
        a->minor = cap->minor;
        a->previous = cap->wbps;
        a->value = lift ? UINT64_MAX : want;
        a->protected_id = cap->protected_id;
        if (by_latency)
                snprintf(a->reason, sizeof(a->reason), "%s waits under its IOLatencyTarget", p->path);
        else
                snprintf(a->reason, sizeof(a->reason), "%s", !w ? "no longer under a policy that is on" :
                         lift ? "protected cgroups quiet for the hold time" : "protected cgroups under their limit");
        if (lift) {
                wp_remove_cap(state, cap);
        } else {
                wp_cap_lifts_when(a, p, st->guard_rate_ppm != 0);
                cap->wbps = want;
        }
        return a;
}

/* A cap set on a new cgroup before it wrote: kept once it writes, lifted if it has not written by the
 * end of WP_NEWBORN_USEC (a cgroup of a service that only reads, or a slice). True: the cap is settled
 * for this tick (kept as it is, or lifted); *ret_full: the plan had no room. */
static bool settle_ahead(WpCap *cap, const WpCgroup *w, WritePointState *state, PointPlan *plan, bool *ret_full) {
        PointAction *a;

        *ret_full = false;
        if (!cap->ahead || !w)
                return false;
        if (wp_writing(w)) {
                cap->ahead = false;
                return false;
        }
        if (w->newborn)
                return true;
        a = wp_plan_add(plan, PA_LIFT_CAP, w);
        if (!a) {
                *ret_full = true;
                return true;
        }
        a->major = cap->major;
        a->minor = cap->minor;
        a->previous = cap->wbps;
        a->value = UINT64_MAX;
        a->protected_id = cap->protected_id;
        snprintf(a->reason, sizeof(a->reason), "capped when it was made, beside a protected cgroup; it has "
                 "not written since");
        wp_remove_cap(state, cap);
        return true;
}

/* The sum of the caps on one device of the cgroups in view below w (not w's own). */
static uint64_t caps_below(const WritePointState *state, const WpCgroup *cg, size_t n, const WpCgroup *w,
                           uint32_t major, uint32_t minor) {
        uint64_t sum = 0;

        for (size_t i = 0; i < state->n_caps; i++) {
                const WpCap *c = &state->caps[i];
                const WpCgroup *below = c->major == major && c->minor == minor && c->wbps != UINT64_MAX ?
                                        wp_find_cgroup(cg, n, c->cgroup_id) : NULL;

                if (below && below->id != w->id && cgroup_path_is_below(below->path, w->path))
                        sum = MIN(sum + c->wbps, UINT64_MAX / 2);
        }
        return sum;
}

/* Caps where nobody stalls now: raised, by the latency or creeping, or lifted after the hold time. */
void wp_relax_caps(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                   size_t n_stalls, const WpSettings *st, uint64_t now, WritePointState *state, PointPlan *plan) {
        for (size_t i = state->n_caps; i > 0; i--) {
                WpCap *cap = &state->caps[i - 1];
                const WpCgroup *w = wp_find_cgroup(cg, n, cap->cgroup_id);
                const WpCgroup *p = wp_find_cgroup(cg, n, cap->protected_id);
                const WpDevice *d = wp_find_device(dev, n_dev, cap->major, cap->minor);
                WpDeviceQuiet *q = wp_quiet_of(state, cap->major, cap->minor, false);
                PointAction *a;
                bool lift, by_latency;
                uint64_t want = 0;
                bool full;

                if (settle_ahead(cap, w, state, plan, &full)) {
                        if (full)
                                return;
                        continue;
                }
                if (w && stalling_on(stalls, n_stalls, cap->major, cap->minor))
                        continue;
                lift = !w || !q || now - MAX(q->last_stall_usec, q->last_guarded_usec) >= st->hold_usec;
                /* Capped in its stead, its writers' caps rule it: never cut, and lifted with theirs at
                 * the end of the hold time, not before (what its throttle queued before theirs came is
                 * still to be written: keep_deepest()); raised to the sum of theirs, so that it holds
                 * them to no less than their own caps do. */
                if (w && w->superseded && !lift) {
                        want = caps_below(state, cg, n, w, cap->major, cap->minor);
                        if (want <= cap->wbps)
                                continue;
                        if (!(a = relax_cap(cap, w, p, false, false, want, st, state, plan)))
                                return;
                        snprintf(a->reason, sizeof(a->reason),
                                 "held over the writers below it: raised to the sum of their caps");
                        continue;
                }
                by_latency = !lift && p && p->io_latency_target_usec;
                if (by_latency) {
                        want = latency_raise(cap, w, p, d, st, state, now);
                        if (!want)
                                continue;
                        cap->stepped_usec = now;
                        cap->cut_latency_usec = 0;
                } else if (!lift && !creep(cap, d, q, st, now, &want)) {
                        continue;
                }
                if (!relax_cap(cap, w, p, lift, by_latency, want, st, state, plan))
                        return;
        }
}
