/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the write point knows of each protected cgroup's io: the stall it has
 * with nobody else writing to its devices (its baseline), its stall and io
 * latency smoothed over ticks, and which devices it stalls on beyond what
 * its policy tolerates.
 */
#include "wp-internal.h"

static WpBaseline *baseline_of(WritePointState *s, uint64_t id, bool create) {
        for (size_t i = 0; i < s->n_baselines; i++)
                if (s->baselines[i].cgroup_id == id)
                        return &s->baselines[i];
        if (!create || s->n_baselines >= WP_BASELINES_MAX)
                return NULL;
        s->baselines[s->n_baselines] = (WpBaseline) { .cgroup_id = id };
        return &s->baselines[s->n_baselines++];
}

static const WpBaseline *baseline_find(const WritePointState *s, uint64_t id) {
        for (size_t i = 0; i < s->n_baselines; i++)
                if (s->baselines[i].cgroup_id == id)
                        return &s->baselines[i];
        return NULL;
}

/*
 * The cgroup's io wait per request over the tick: its "some" time over the
 * requests io.stat counted. Requests that do not overlap (a service of
 * dependent syncs, each waiting for the one before) make this their mean
 * latency; parallel ones make it less. A tick that counted no request but
 * waited says the wait itself: a request stuck behind a deep queue
 * completes nothing for seconds. No request and no wait: nothing to say.
 */
static bool latency_sample(const WpCgroup *c, uint64_t *ret) {
        uint64_t ios = 0;

        for (size_t d = 0; d < c->n_devices; d++)
                ios += c->devices[d].ios;
        if (ios == 0 && c->io_stall_usec == 0)
                return false;
        *ret = c->io_stall_usec / MAX(ios, UINT64_C(1));
        return true;
}

/*
 * The latency of a protected cgroup under IOLatencyTarget=, if this tick
 * measured one: the lower of this tick's and the smoothed figure to cut a cap
 * by (a queue that has drained since a spike needs no second cut for it), the
 * higher to raise one by (one good tick after a bad one is not enough).
 * `ret_tick`, if given: this tick's figure alone.
 */
bool wp_latency_now(const WritePointState *state, const WpCgroup *c, bool to_cut, uint64_t *ret,
                    uint64_t *ret_tick) {
        const WpBaseline *b = baseline_find(state, c->id);

        if (!c->io_latency_target_usec || !b || !b->have_latency || !b->latency_fresh)
                return false;
        *ret = to_cut ? MIN(b->latency_usec, b->latency_now_usec) : MAX(b->latency_usec, b->latency_now_usec);
        if (ret_tick)
                *ret_tick = b->latency_now_usec;
        return true;
}

uint32_t wp_smoothed_stall(WritePointState *state, const WpCgroup *c) {
        WpBaseline *b = baseline_of(state, c->id, false);
        return b && b->have_smooth ? b->smooth_ppm : c->io_stall_ppm;
}

/* Whether anyone that could be capped for `c` writes to one of its devices
 * (more than a trickle), or is capped there now. Not the device's completed
 * rate beyond c's own writes: that takes in the journal blocks c's own
 * fsyncs make a kernel thread write (ext4's jbd2: several MiB/s for a
 * victim of small fdatasyncs). A writer without a policy, which cannot be
 * capped, thus counts as part of what c stalls on its own. */
static bool contended(const WpCgroup *cg, size_t n, const WpCgroup *c, const WpDevice *dev, size_t n_dev,
                      const WritePointState *state) {
        for (size_t d = 0; d < c->n_devices; d++) {
                uint32_t major = c->devices[d].major, minor = c->devices[d].minor;
                const WpDevice *x = wp_find_device(dev, n_dev, major, minor);
                uint64_t others = 0, trickle = MAX(x ? x->capacity / 20 : 0, MIB);

                /* A standing guard on a cgroup that does not write contends with nobody. */
                for (size_t i = 0; i < state->n_caps; i++) {
                        const WpCgroup *w = wp_find_cgroup(cg, n, state->caps[i].cgroup_id);
                        if (state->caps[i].major == major && state->caps[i].minor == minor && w && wp_writing(w))
                                return true;
                }
                for (size_t i = 0; i < n; i++)
                        if (&cg[i] != c && wp_may_cap(&cg[i], c))
                                others += wp_device_rate_of(&cg[i], major, minor);
                if (others >= trickle)
                        return true;
        }
        return false;
}

static bool doing_io(const WpCgroup *c) {
        for (size_t d = 0; d < c->n_devices; d++)
                if (c->devices[d].wbytes_per_sec > 0 || c->devices[d].rbytes_per_sec > 0)
                        return true;
        return false;
}

/* A quarter of each new uncontended, active tick goes into the average:
 * an idle tick says nothing about what the cgroup's own io costs it. */
void wp_learn_baselines(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, WritePointState *state) {
        for (size_t i = 0; i < state->n_baselines; i++)
                state->baselines[i].latency_fresh = false;
        for (size_t i = state->n_baselines; i > 0; i--) {
                const WpCgroup *c = wp_find_cgroup(cg, n, state->baselines[i - 1].cgroup_id);
                if (!c || !c->protect)
                        state->baselines[i - 1] = state->baselines[--state->n_baselines];
        }
        for (size_t i = 0; i < n; i++) {
                const WpCgroup *c = &cg[i];
                WpBaseline *b;
                uint64_t lat;

                if (!c->protect || !c->have_io_stall)
                        continue;
                b = baseline_of(state, c->id, true);
                if (!b)
                        continue;
                b->smooth_ppm = b->have_smooth ? (uint32_t) (((uint64_t) b->smooth_ppm + c->io_stall_ppm) / 2) :
                                c->io_stall_ppm;
                b->have_smooth = true;
                b->latency_fresh = latency_sample(c, &lat);
                if (b->latency_fresh) {
                        b->latency_now_usec = lat;
                        b->latency_usec = b->have_latency ? (b->latency_usec + lat) / 2 : lat;
                        b->have_latency = true;
                }
                if (!doing_io(c) || contended(cg, n, c, dev, n_dev, state))
                        continue;
                if (b->n == 0)
                        b->ppm = c->io_stall_ppm;
                else
                        b->ppm = (uint32_t) (((uint64_t) b->ppm * 3 + c->io_stall_ppm) / 4);
                if (b->n < UINT32_MAX)
                        b->n++;
        }
}

/* IOPressureLimit= on top of what the cgroup stalls alone. */
static uint32_t effective_limit(const WritePointState *state, const WpCgroup *c) {
        uint64_t l = (uint64_t) c->io_limit_ppm + wp_baseline(state, c->id);
        return (uint32_t) MIN(l, UINT64_C(1000000));
}

/* A protected cgroup's stall on a device, in the terms its policy rules its writers by. */
Stall wp_stall_of(const WritePointState *state, const WpCgroup *c, uint32_t major, uint32_t minor) {
        Stall s = { major, minor, c, effective_limit(state, c), c->io_latency_target_usec, 0, 0 };

        if (s.target_usec && !wp_latency_now(state, c, true, &s.latency_usec, &s.tick_latency_usec))
                s.latency_usec = 0;
        return s;
}

/* Whether the cgroup is over what its policy tolerates: its latency target, or its stall limit. */
bool wp_over_limit(const Stall *s) {
        return s->target_usec ? s->latency_usec > s->target_usec : s->victim->io_stall_ppm > s->limit_ppm;
}

size_t wp_find_stalls(const WpCgroup *cg, size_t n, const WritePointState *state, Stall *stalls, size_t max) {
        size_t ns = 0;

        for (size_t i = 0; i < n; i++) {
                const WpCgroup *c = &cg[i];

                if (!c->protect || !c->have_io_stall)
                        continue;
                for (size_t d = 0; d < c->n_devices; d++) {
                        Stall s = wp_stall_of(state, c, c->devices[d].major, c->devices[d].minor);
                        size_t k;

                        if (!wp_over_limit(&s))
                                break;
                        for (k = 0; k < ns; k++)
                                if (stalls[k].major == s.major && stalls[k].minor == s.minor)
                                        break;
                        if (k == ns) {
                                if (ns >= max)
                                        continue;
                                stalls[ns++] = s;
                        } else if (c->io_stall_ppm > stalls[k].victim->io_stall_ppm) {
                                stalls[k] = s;
                        }
                }
        }
        return ns;
}
