/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "write-point.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

#define MIB (UINT64_C(1) << 20)

const char *wp_action_to_string(WpActionKind k) {
        static const char *const names[] = {
                [WP_SET_CAP] = "cap-writes",
                [WP_LIFT_CAP] = "lift-cap",
                [WP_SET_BUDGET] = "dirty-budget",
                [WP_LIFT_BUDGET] = "lift-dirty-budget",
                [WP_WRITEBACK] = "writeback",
                [WP_SET_QUEUE] = "shallow-queue",
                [WP_LIFT_QUEUE] = "restore-queue",
        };
        return k <= WP_LIFT_QUEUE ? names[k] : NULL;
}

static uint64_t ppm_of(uint64_t base, uint32_t ppm) {
        return base / 1000000 * ppm + base % 1000000 * ppm / 1000000;
}

static uint64_t bytes_of(const SizeOrPercent *v, uint64_t base) {
        return v->is_percent ? ppm_of(base, v->ppm) : v->bytes;
}

/* DirtyLimit= and DirtyBackground= in bytes on this cgroup; a percentage never comes to less than a size may be. */
static uint64_t dirty_limit_bytes(const WpCgroup *c) {
        return MAX(bytes_of(&c->policy->dirty_limit, c->memory_limit), POLICY_DIRTY_LIMIT_MIN);
}

static uint64_t dirty_background_bytes(const WpCgroup *c) {
        return MAX(bytes_of(&c->policy->dirty_background, c->memory_limit), POLICY_DIRTY_BACKGROUND_MIN);
}

uint64_t write_point_budget_high(const WpCgroup *c, uint64_t budget, uint32_t dirty_ratio_pct) {
        uint64_t nonfile = c->memory_current > c->file ? c->memory_current - c->file : 0;
        uint32_t ratio = dirty_ratio_pct ? dirty_ratio_pct : 20;

        /* The kernel lets a cgroup dirty about dirty_ratio% of what it may hold
         * in page cache, so room for budget*100/ratio of cache gives that budget. */
        return nonfile + budget / ratio * 100 + budget % ratio * 100 / ratio;
}

static WpAction *plan_add(WpPlan *p, WpActionKind kind, const WpCgroup *c) {
        WpAction *a;

        if (p->n >= WP_ACTIONS_MAX) {
                p->truncated = true;
                return NULL;
        }
        a = &p->actions[p->n++];
        *a = (WpAction) {
                .kind = kind, .cgroup_id = c ? c->id : 0, .path = c ? c->path : NULL,
                .observe = c && c->policy->mode == POLICY_MODE_OBSERVE, .previous = UINT64_MAX,
        };
        return a;
}

static const WpCgroup *find_cgroup(const WpCgroup *cg, size_t n, uint64_t id) {
        for (size_t i = 0; i < n; i++)
                if (cg[i].id == id)
                        return &cg[i];
        return NULL;
}

static const WpDevice *find_device(const WpDevice *d, size_t n, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < n; i++)
                if (d[i].major == major && d[i].minor == minor)
                        return &d[i];
        return NULL;
}

static uint64_t device_rate_of(const WpCgroup *c, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < c->n_devices; i++)
                if (c->devices[i].major == major && c->devices[i].minor == minor)
                        return c->devices[i].wbytes_per_sec;
        return 0;
}

static WpCap *find_cap(WritePointState *s, uint64_t id, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < s->n_caps; i++)
                if (s->caps[i].cgroup_id == id && s->caps[i].major == major && s->caps[i].minor == minor)
                        return &s->caps[i];
        return NULL;
}

static WpBudget *find_budget(WritePointState *s, uint64_t id) {
        for (size_t i = 0; i < s->n_budgets; i++)
                if (s->budgets[i].cgroup_id == id)
                        return &s->budgets[i];
        return NULL;
}

static WpDeviceQuiet *quiet_of(WritePointState *s, uint32_t major, uint32_t minor, bool create) {
        for (size_t i = 0; i < s->n_quiet; i++)
                if (s->quiet[i].major == major && s->quiet[i].minor == minor)
                        return &s->quiet[i];
        if (!create || s->n_quiet >= WP_CAPS_MAX)
                return NULL;
        s->quiet[s->n_quiet] = (WpDeviceQuiet) { .major = major, .minor = minor };
        return &s->quiet[s->n_quiet++];
}

/* ---- baselines: what a protected cgroup stalls on io when nobody else writes ---- */

static bool may_cap(const WpCgroup *w, const WpCgroup *victim) {
        return !w->protect && w->policy->priority <= victim->policy->priority && !cgroup_paths_related(w->path, victim->path);
}

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
static bool latency_now(const WritePointState *state, const WpCgroup *c, bool to_cut, uint64_t *ret,
                        uint64_t *ret_tick) {
        const WpBaseline *b = baseline_find(state, c->id);

        if (!c->io_latency_target_usec || !b || !b->have_latency || !b->latency_fresh)
                return false;
        *ret = to_cut ? MIN(b->latency_usec, b->latency_now_usec) : MAX(b->latency_usec, b->latency_now_usec);
        if (ret_tick)
                *ret_tick = b->latency_now_usec;
        return true;
}

uint32_t write_point_baseline(const WritePointState *state, uint64_t cgroup_id) {
        for (size_t i = 0; i < state->n_baselines; i++)
                if (state->baselines[i].cgroup_id == cgroup_id)
                        return state->baselines[i].n > 0 ? state->baselines[i].ppm : 0;
        return 0;
}

static uint32_t smoothed_stall(WritePointState *state, const WpCgroup *c) {
        WpBaseline *b = baseline_of(state, c->id, false);
        return b && b->have_smooth ? b->smooth_ppm : c->io_stall_ppm;
}
/* Whether a cgroup writes: dirty data piling up, or more than a trickle reaching a device. */
static bool writing(const WpCgroup *w) {
        uint64_t rate = 0;

        for (size_t d = 0; d < w->n_devices; d++)
                rate += w->devices[d].wbytes_per_sec;
        return w->dirty >= WP_GUARD_DIRTY_MIN || rate >= MIB;
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
                const WpDevice *x = find_device(dev, n_dev, major, minor);
                uint64_t others = 0, trickle = MAX(x ? x->capacity / 20 : 0, MIB);

                /* A standing guard on a cgroup that does not write contends with nobody. */
                for (size_t i = 0; i < state->n_caps; i++) {
                        const WpCgroup *w = find_cgroup(cg, n, state->caps[i].cgroup_id);
                        if (state->caps[i].major == major && state->caps[i].minor == minor && w && writing(w))
                                return true;
                }
                for (size_t i = 0; i < n; i++)
                        if (&cg[i] != c && may_cap(&cg[i], c))
                                others += device_rate_of(&cg[i], major, minor);
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
static void learn_baselines(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev,
                            WritePointState *state) {
        for (size_t i = 0; i < state->n_baselines; i++)
                state->baselines[i].latency_fresh = false;
        for (size_t i = state->n_baselines; i > 0; i--) {
                const WpCgroup *c = find_cgroup(cg, n, state->baselines[i - 1].cgroup_id);
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
        uint64_t l = (uint64_t) c->io_limit_ppm + write_point_baseline(state, c->id);
        return (uint32_t) MIN(l, UINT64_C(1000000));
}

/* A stalling device: the protected cgroup that stalls worst on it. */
typedef struct Stall {
        uint32_t major, minor;
        const WpCgroup *victim;
        uint32_t limit_ppm;             /* the victim's, baseline included */
        uint64_t target_usec;           /* the victim's IOLatencyTarget=; 0: its stall share rules */
        uint64_t latency_usec;          /* its io wait per request now, under a target */
        uint64_t tick_latency_usec;     /* ... as this tick alone measured it */
} Stall;

/* A protected cgroup's stall on a device, in the terms its policy rules its writers by. */
static Stall stall_of(const WritePointState *state, const WpCgroup *c, uint32_t major, uint32_t minor) {
        Stall s = { major, minor, c, effective_limit(state, c), c->io_latency_target_usec, 0, 0 };

        if (s.target_usec && !latency_now(state, c, true, &s.latency_usec, &s.tick_latency_usec))
                s.latency_usec = 0;
        return s;
}

/* Whether the cgroup is over what its policy tolerates: its latency target, or its stall limit. */
static bool over_limit(const Stall *s) {
        return s->target_usec ? s->latency_usec > s->target_usec : s->victim->io_stall_ppm > s->limit_ppm;
}

static size_t find_stalls(const WpCgroup *cg, size_t n, const WritePointState *state, Stall *stalls, size_t max) {
        size_t ns = 0;

        for (size_t i = 0; i < n; i++) {
                const WpCgroup *c = &cg[i];

                if (!c->protect || !c->have_io_stall)
                        continue;
                for (size_t d = 0; d < c->n_devices; d++) {
                        Stall s = stall_of(state, c, c->devices[d].major, c->devices[d].minor);
                        size_t k;

                        if (!over_limit(&s))
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

static uint64_t cap_floor(const WpCgroup *w, const WpDevice *dev, uint64_t rate, const WpSettings *st) {
        uint64_t base = dev && dev->capacity ? dev->capacity : rate;

        if (w->policy->write_rate_min.set)
                return MAX(bytes_of(&w->policy->write_rate_min, base), POLICY_WRITE_RATE_MIN_MIN);
        return MAX(ppm_of(base, st->write_rate_min_ppm), MIB);
}

/* What lifts a cap: nothing protected stalling (guarding: nor doing io) on its device for the hold time
 * (relax_caps). */
static void cap_lifts_when(WpAction *a, const WpCgroup *victim, bool guarding) {
        const char *what = guarding ? "stalled or done io there" : "stalled";

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
 * floods it makes it known within a tick or two.
 */
static uint64_t guard_level(const WpDevice *dev, const WpSettings *st) {
        return dev ? ppm_of(dev->capacity, st->guard_rate_ppm) : 0;
}

/*
 * A capped writer's backlog, held to about a second at its cap: what it has
 * dirty or under writeback is what a protected cgroup's journal commit or log
 * sync can end up waiting behind (the bios a cap holds back), and what floods
 * the device when the writer is gone and its cap lifted. With memory.high
 * sized for that much dirty data the writer waits in its own write() calls.
 * A tighter DirtyLimit= sizes it instead; a tighter budget of the host's
 * guard in force stays.
 */
static void cap_budget(const WpCgroup *w, uint64_t wbps, const WpSettings *st, WritePointState *state,
                       WpPlan *plan) {
        uint64_t limit = wbps <= UINT64_MAX / WP_CAP_BACKLOG_USEC ? wbps * WP_CAP_BACKLOG_USEC / USEC_PER_SEC :
                         wbps / USEC_PER_SEC * WP_CAP_BACKLOG_USEC, high;
        WpBudget *b = find_budget(state, w->id);
        WpAction *a;

        if (!w->have_memory)
                return;
        limit = MAX(limit, WP_CAP_BACKLOG_MIN);
        if (w->policy->dirty_limit.set)
                limit = MIN(limit, dirty_limit_bytes(w));
        high = write_point_budget_high(w, limit, st->dirty_ratio_pct);
        if (!b) {
                if (state->n_budgets >= WP_BUDGETS_MAX || !(a = plan_add(plan, WP_SET_BUDGET, w)))
                        return;
                b = &state->budgets[state->n_budgets++];
                *b = (WpBudget) { .cgroup_id = w->id, .high = UINT64_MAX };
        } else if (b->cap ? b->limit == limit : b->high <= high) {
                return;
        } else if (!(a = plan_add(plan, WP_SET_BUDGET, w))) {
                return;
        }
        a->previous = b->high;
        a->value = high;
        snprintf(a->reason, sizeof(a->reason), "capped at %" PRIu64 " B/s: its dirty+writeback held to %" PRIu64
                 " bytes, a second at the cap (%" PRIu64 " now)", wbps, limit, w->dirty);
        snprintf(a->lifts_when, sizeof(a->lifts_when), "with its io.max cap");
        *b = (WpBudget) { .cgroup_id = w->id, .high = high, .limit = limit, .cap = true };
}

/* Whether the cgroup's io.stat lists the device: it has done io there since it was made (and its io
 * controller is on). A standing guard goes only there: a cap on a cgroup that never wrote is a
 * write that fails or churns every tick, and a cgroup made for a new writer is capped at the
 * first tick it writes, as before. */
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
                const WpCgroup *w = find_cgroup(cg, n, state->caps[i].cgroup_id);
                k += !w || !writing(w);
        }
        return k;
}

/*
 * A cap for one writer: the first one from what it gets now (or, guarding,
 * GuardRate= of the device), then a step down per stalling WP_STEP_USEC.
 * A guard only ever sets the first cap.
 */
static void cap_writer(const WpCgroup *w, const Stall *s, const WpDevice *dev, uint64_t rate, bool guard,
                       const WpSettings *st, uint64_t now, WritePointState *state, WpPlan *plan) {
        WpCap *cap = find_cap(state, w->id, s->major, s->minor);
        uint64_t floor = cap_floor(w, dev, rate, st), want;
        uint32_t stall = s->victim->io_stall_ppm, base = write_point_baseline(state, s->victim->id);
        uint32_t smooth = smoothed_stall(state, s->victim);
        bool guarded = false;
        WpAction *a;

        if (cap && guard)
                return;
        if (cap && s->target_usec) {
                /* In proportion to how far over the target the latency is, half at most a
                 * step: the queue in front of the victim shrinks with the writer's share of
                 * the device, and the next step judges what this one did. */
                if (now - cap->stepped_usec < WP_LATENCY_STEP_USEC)
                        return;
                /* A cut shows once what the device had queued before it has completed:
                 * within a second of the last one the latency stays up while that queue
                 * drains. A second cut then only if the tick's own figure has grown since
                 * the cut's (the smoothed one climbs on towards a flat level); the cuts
                 * that came every half second on that alone took a writer from 11.6 to
                 * 2.9 MiB/s in a second (xfs, 16 MiB/s disk). The figures compared are
                 * the same protected cgroup's. */
                if (cap->cut_latency_usec && cap->protected_id == s->victim->id &&
                    now - cap->stepped_usec < WP_STEP_USEC && s->tick_latency_usec <= cap->cut_latency_usec)
                        return;
                want = cap->wbps / 1000 * MAX(s->target_usec * 1000 / s->latency_usec, UINT64_C(500));
                if (want >= cap->wbps)
                        return;
        } else if (cap) {
                /* The last step has not had time to show; or one bad tick, not
                 * a lasting stall; or, for the second time since the stall
                 * began, a step did not bring it down by a tenth: what remains
                 * is not this writer's doing (on ext4 the victim's commits
                 * even wait for the writer's ordered data that the cap holds
                 * back). Hold until the stall goes under the limit. */
                if (now - cap->stepped_usec < WP_STEP_USEC || smooth <= s->limit_ppm)
                        return;
                if (smooth > cap->stall_at_step / 10 * 9) {
                        if (cap->no_gain >= 1)
                                return;
                        cap->no_gain++;
                }
                want = cap->wbps / 4 * 3;
                /* Under a guard, one step below it at most: the guard is what the operator
                 * gives writers beside an active protected cgroup, and every step further
                 * was measured to cost the writer more than it gave the victim. */
                if (cap->guard_wbps)
                        want = MAX(want, cap->guard_wbps / 4 * 3);
                if (want >= cap->wbps)
                        return;
        } else if (guard && guard_level(dev, st) > 0) {
                want = guard_level(dev, st);
                guarded = true;
        } else if (guard && !over_limit(s)) {
                return; /* nothing to size a guard from yet, and nobody stalls */
        } else {
                /* Start from what the writer gets now, bounded by what the device
                 * completes and by what it sustains (a tick's completions can be a
                 * burst into a cache). */
                uint64_t b = rate;
                if (dev && dev->write_rate)
                        b = MIN(b, dev->write_rate);
                if (dev && dev->capacity)
                        b = MIN(b, dev->capacity);
                if (b == 0)
                        return; /* only dirty data so far: nothing to size a cap from */
                want = b / 4 * 3;
        }
        want = MAX(want, floor);
        if (cap && want >= cap->wbps)
                return; /* at its floor already */
        if (!cap && state->n_caps >= WP_CAPS_MAX)
                return;
        a = plan_add(plan, WP_SET_CAP, w);
        if (!a)
                return;
        if (!cap) {
                cap = &state->caps[state->n_caps++];
                *cap = (WpCap) { .cgroup_id = w->id, .major = s->major, .minor = s->minor, .wbps = UINT64_MAX };
        } else if (s->target_usec && !guard) {
                /* The knee is where the first cut of a spell came from: the cuts that follow
                 * within a few seconds are the same queue draining. */
                if (!cap->knee_wbps || now - cap->knee_usec > 4 * WP_STEP_USEC || cap->wbps > cap->knee_wbps) {
                        cap->knee_wbps = cap->wbps;
                        cap->knee_usec = now;
                }
        }
        a->major = s->major;
        a->minor = s->minor;
        a->previous = cap->wbps;
        a->value = want;
        a->protected_id = s->victim->id;
        a->stall_ppm = stall;
        if (guarded && !over_limit(s))
                snprintf(a->reason, sizeof(a->reason), "%s does io on %" PRIu32 ":%" PRIu32 " (stall %u.%02u%%): "
                         "writers held to GuardRate from its first tick%s", s->victim->path, s->major, s->minor,
                         stall / 10000, stall / 100 % 100, want == floor ? "; at WriteRateMin" : "");
        else if (s->target_usec)
                snprintf(a->reason, sizeof(a->reason),
                         "%s waits %" PRIu64 ".%" PRIu64 " ms per request on io (IOLatencyTarget %" PRIu64 ".%" PRIu64
                         " ms)%s", s->victim->path, s->latency_usec / 1000, s->latency_usec / 100 % 10,
                         s->target_usec / 1000, s->target_usec / 100 % 10,
                         want == floor ? "; at WriteRateMin" : guarded ? "; first cap at GuardRate" : "");
        else
                snprintf(a->reason, sizeof(a->reason),
                         "%s stalls %u.%02u%% on io (limit %u.%02u%%, %u.%02u%% of it its own)%s", s->victim->path,
                         stall / 10000, stall / 100 % 100, s->limit_ppm / 10000, s->limit_ppm / 100 % 100,
                         base / 10000, base / 100 % 100,
                         want == floor ? "; at WriteRateMin" : guarded ? "; first cap at GuardRate" : "");
        cap_lifts_when(a, s->victim, st->guard_rate_ppm != 0);
        cap->wbps = want;
        if (guarded)
                cap->guard_wbps = want;
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
        uint64_t r = device_rate_of(w, s->major, s->minor);

        if (r >= trickle)
                return r;
        return w->dirty >= WP_GUARD_DIRTY_MIN ? w->dirty : 0;
}

/* The heaviest writers that may be capped for one stalling (or, guard, guarded) device. */
static void decide_device(const WpCgroup *cg, size_t n, const Stall *s, const WpDevice *dev, bool guard,
                          const WpSettings *st, uint64_t now, WritePointState *state, WpPlan *plan) {
        const WpCgroup *top[WP_CAPPED_PER_DEVICE] = {};
        uint64_t top_rate[WP_CAPPED_PER_DEVICE] = {};

        for (size_t i = 0; i < n; i++) {
                uint64_t r = st->guard_rate_ppm ? guard_weight(&cg[i], s, dev) :
                             device_rate_of(&cg[i], s->major, s->minor);
                if (r == 0 || !may_cap(&cg[i], s->victim))
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
                        cap_writer(top[k], s, dev, device_rate_of(top[k], s->major, s->minor),
                                   guard || (st->guard_rate_ppm && !find_cap(state, top[k]->id, s->major, s->minor)),
                                   st, now, state, plan);
        /* Guarding, the writers that have not written yet too: a dd's first second
         * fills the device's queue before any tick can see it (measured: the
         * victim's worst op came there, twice the static cap's), and io.max holds
         * a writer from its first bio only if it is in place before. A ceiling
         * on a cgroup that does not write costs it nothing. */
        if (guard && guard_level(dev, st) > 0) {
                /* Counted once: a count per candidate is the caps times the cgroups, per candidate. */
                size_t standing = standing_caps(cg, n, state);

                for (size_t i = 0; i < n; i++) {
                        bool idle = !writing(&cg[i]);
                        size_t before = state->n_caps;

                        if (!may_cap(&cg[i], s->victim) || !lists_device(&cg[i], s->major, s->minor) ||
                            (idle && standing >= WP_CAPS_MAX / 2) || find_cap(state, cg[i].id, s->major, s->minor))
                                continue;
                        cap_writer(&cg[i], s, dev, 0, true, st, now, state, plan);
                        standing += idle && state->n_caps > before;
                }
        }
}

static void remove_cap(WritePointState *s, WpCap *c) {
        *c = s->caps[--s->n_caps];
}

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
         * that of an empty queue (busy_since_usec, kept by track_busy()). */
        if (!latency_now(state, p, false, &lat, NULL) || lat > p->io_latency_target_usec / 4 * 3 ||
            now - cap->stepped_usec < WP_LATENCY_STEP_USEC || cap->wbps >= ceiling ||
            !cap->busy_since_usec || now - cap->busy_since_usec < WP_STEP_USEC)
                return 0;
        step = MAX(d && d->capacity ? d->capacity / (lat < p->io_latency_target_usec / 2 ? 10 : 20) : 0, MIB);
        return ceiling - cap->wbps <= step ? ceiling : cap->wbps + step;
}

/* Every tick, stalling or not, once this tick's cuts and guards are set, before the raises: since
 * when each writer uses three quarters of its cap (latency_raise() waits for a second of it). */
static void track_busy(const WpCgroup *cg, size_t n, uint64_t now, WritePointState *state) {
        for (size_t i = 0; i < state->n_caps; i++) {
                WpCap *cap = &state->caps[i];
                const WpCgroup *w = find_cgroup(cg, n, cap->cgroup_id);

                if (!w || device_rate_of(w, cap->major, cap->minor) < cap->wbps / 4 * 3)
                        cap->busy_since_usec = 0;
                else if (!cap->busy_since_usec)
                        cap->busy_since_usec = now;
        }
}

/* Caps where nobody stalls now: creep up, or lift after the hold time. */
static void relax_caps(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                       size_t n_stalls, const WpSettings *st, uint64_t now, WritePointState *state, WpPlan *plan) {
        for (size_t i = state->n_caps; i > 0; i--) {
                WpCap *cap = &state->caps[i - 1];
                const WpCgroup *w = find_cgroup(cg, n, cap->cgroup_id);
                const WpDevice *d = find_device(dev, n_dev, cap->major, cap->minor);
                WpDeviceQuiet *q = quiet_of(state, cap->major, cap->minor, false);
                const WpCgroup *p;
                bool stalling = false, lift, by_latency;
                uint64_t want = 0;
                WpAction *a;

                for (size_t k = 0; k < n_stalls; k++)
                        stalling |= stalls[k].major == cap->major && stalls[k].minor == cap->minor;
                if (w && stalling)
                        continue;
                lift = !w || !q || now - MAX(q->last_stall_usec, q->last_guarded_usec) >= st->hold_usec;
                p = find_cgroup(cg, n, cap->protected_id);
                by_latency = !lift && p && p->io_latency_target_usec;
                if (by_latency) {
                        want = latency_raise(cap, w, p, d, st, state, now);
                        if (!want)
                                continue;
                        cap->stepped_usec = now;
                        cap->cut_latency_usec = 0;
                } else if (!lift) {
                        uint64_t ceiling = d && d->capacity ? d->capacity / 10 * 9 : UINT64_MAX;

                        /* Guarding, up to the guard's own first cap: the capacity estimate
                         * drifts up with what a busy device lets through in bursts. */
                        if (st->guard_rate_ppm && now - q->last_guarded_usec < st->hold_usec)
                                ceiling = MIN(ceiling, cap->guard_wbps ?: guard_level(d, st) ?: UINT64_MAX);

                        /* Creep only once the stall has been gone a quarter of the hold
                         * time, and slowly: a full device queue brings it back at once.
                         * The cap itself goes only at the end of the hold time. */
                        if (now - q->last_stall_usec < st->hold_usec / 4)
                                continue;
                        /* The stall is over: a new one starts a new descent. */
                        cap->no_gain = 0;
                        if (cap->wbps >= ceiling)
                                continue;
                        want = MIN(cap->wbps + MAX(d && d->capacity ? d->capacity / 20 : 0, MIB), ceiling);
                }
                a = plan_add(plan, lift ? WP_LIFT_CAP : WP_SET_CAP, w);
                if (!a)
                        return;
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
                if (!lift)
                        cap_lifts_when(a, find_cgroup(cg, n, cap->protected_id), st->guard_rate_ppm != 0);
                if (lift)
                        remove_cap(state, cap);
                else
                        cap->wbps = want;
        }
}

/* What lifts a budget: the cgroup back under DirtyBackground (decide_budgets), or the host's dirty data
 * back under 4/5 of where the guard starts (decide_guard). */
static void budget_lifts_when(WpAction *a, const WpCgroup *c, bool guard) {
        snprintf(a->lifts_when, sizeof(a->lifts_when), "%s",
                 guard ? "when host dirty data falls under 4/5 of the GlobalDirtyGuard level" :
                 c->policy->dirty_background.set ? "when dirty+writeback falls under DirtyBackground" :
                 "when dirty+writeback falls under half of DirtyLimit");
}

static void set_budget(const WpCgroup *c, uint64_t limit, bool guard, const char *why, const WpSettings *st,
                       WritePointState *state, WpPlan *plan) {
        WpAction *a;

        if (state->n_budgets >= WP_BUDGETS_MAX)
                return;
        a = plan_add(plan, WP_SET_BUDGET, c);
        if (!a)
                return;
        a->value = write_point_budget_high(c, limit, st->dirty_ratio_pct);
        snprintf(a->reason, sizeof(a->reason), "%s: dirty+writeback %" PRIu64 " over %" PRIu64 " bytes", why,
                 c->dirty, limit);
        budget_lifts_when(a, c, guard);
        state->budgets[state->n_budgets++] = (WpBudget) { .cgroup_id = c->id, .high = a->value,
                                                          .limit = guard ? 0 : limit, .guard = guard };
}


/* The policy's limit changed under a budget in force: sized again at once, looser or tighter. */
static void resize_budget(const WpCgroup *c, WpBudget *b, uint64_t limit, const WpSettings *st, WpPlan *plan) {
        WpAction *a = plan_add(plan, WP_SET_BUDGET, c);

        if (!a)
                return;
        a->previous = b->high;
        a->value = write_point_budget_high(c, limit, st->dirty_ratio_pct);
        snprintf(a->reason, sizeof(a->reason), "DirtyLimit changed from %" PRIu64 " to %" PRIu64 " bytes", b->limit,
                 limit);
        budget_lifts_when(a, c, false);
        b->high = a->value;
        b->limit = limit;
}

static void lift_budget(const WpCgroup *c, uint64_t id, const char *why, WritePointState *state, WpPlan *plan) {
        WpBudget *b = find_budget(state, id);
        WpAction *a = plan_add(plan, WP_LIFT_BUDGET, c);

        if (!a)
                return;
        a->cgroup_id = id;
        a->previous = b ? b->high : UINT64_MAX;
        a->value = UINT64_MAX;
        snprintf(a->reason, sizeof(a->reason), "%s", why);
        if (b)
                *b = state->budgets[--state->n_budgets];
}

static bool has_cap(const WritePointState *s, uint64_t id) {
        for (size_t i = 0; i < s->n_caps; i++)
                if (s->caps[i].cgroup_id == id)
                        return true;
        return false;
}

/*
 * Every capped writer's backlog budget sized from its caps (on several
 * devices, their sum), every tick, so that it follows the caps and comes
 * back when a tighter budget that stood in its way is gone; and lifted with
 * the writer's last cap.
 */
static void decide_backlogs(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state,
                            WpPlan *plan) {
        for (size_t i = state->n_budgets; i > 0; i--) {
                const WpBudget *b = &state->budgets[i - 1];

                if (b->cap && !has_cap(state, b->cgroup_id))
                        lift_budget(find_cgroup(cg, n, b->cgroup_id), b->cgroup_id, "its io.max cap is lifted",
                                    state, plan);
        }
        for (size_t i = 0; i < state->n_caps; i++) {
                const WpCgroup *w = find_cgroup(cg, n, state->caps[i].cgroup_id);
                uint64_t sum = 0;
                bool first = true;

                for (size_t k = 0; k < state->n_caps; k++)
                        if (state->caps[k].cgroup_id == state->caps[i].cgroup_id) {
                                first = first && k >= i;
                                /* A cap whose first value is not set yet counts for nothing. */
                                if (state->caps[k].wbps != UINT64_MAX)
                                        sum = MIN(sum + state->caps[k].wbps, UINT64_MAX / 2);
                        }
                /* Standing caps on cgroups that do not write hold no backlog: a budget sized
                 * for one would take their cache. */
                if (w && first && writing(w))
                        cap_budget(w, sum, st, state, plan);
        }
}

static uint64_t background_of(const WpCgroup *c, uint64_t limit) {
        return c->policy->dirty_background.set ? dirty_background_bytes(c) : limit / 2;
}

static void decide_budgets(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state,
                           WpPlan *plan) {
        for (size_t i = 0; i < n; i++) {
                const WpCgroup *c = &cg[i];
                WpBudget *b = find_budget(state, c->id);
                uint64_t limit;

                if (!c->policy->dirty_limit.set || !c->have_memory)
                        continue;
                limit = dirty_limit_bytes(c);
                if (b && b->cap)
                        continue;       /* the cap's, tighter than DirtyLimit= (cap_budget) */
                if (!b && c->dirty > limit)
                        set_budget(c, limit, false, "over DirtyLimit", st, state, plan);
                else if (b && !b->guard && b->limit != limit && c->dirty >= background_of(c, limit))
                        resize_budget(c, b, limit, st, plan);
                else if (b && c->dirty < background_of(c, limit))
                        lift_budget(c, c->id, "back under DirtyBackground", state, plan);
        }
        for (size_t i = state->n_budgets; i > 0; i--)
                if (!find_cgroup(cg, n, state->budgets[i - 1].cgroup_id))
                        lift_budget(NULL, state->budgets[i - 1].cgroup_id, "no longer under a policy that is on",
                                    state, plan);
}

/* A protected cgroup that did io over the last tick: someone the kernel's
 * global throttling would hurt beside the dirtiers. */
static bool protected_active(const WpCgroup *cg, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (!cg[i].protect)
                        continue;
                if (cg[i].have_io_stall && cg[i].io_stall_ppm > 0)
                        return true;
                for (size_t d = 0; d < cg[i].n_devices; d++)
                        if (cg[i].devices[d].wbytes_per_sec > 0 || cg[i].devices[d].rbytes_per_sec > 0)
                                return true;
        }
        return false;
}

/*
 * Near the host's dirty threshold: bound the three largest dirtiers early,
 * before the kernel throttles every writer alike. Only while a protected
 * cgroup is doing io: with nobody to protect, slowing a writer that is alone
 * buys nothing (measured: it cost a lone writer most of its rate).
 */
static void decide_guard(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state, WpPlan *plan) {
        uint64_t start, stop;

        if (st->host_dirty_threshold == 0 || st->global_guard_ppm == 0)
                return;
        start = ppm_of(st->host_dirty_threshold, st->global_guard_ppm);
        stop = start / 5 * 4;
        if (st->host_dirty >= start && protected_active(cg, n))
                for (int round = 0; round < 3; round++) {
                        const WpCgroup *big = NULL;
                        for (size_t i = 0; i < n; i++)
                                if (!cg[i].protect && cg[i].have_memory && !find_budget(state, cg[i].id) &&
                                    cg[i].dirty > 0 && (!big || cg[i].dirty > big->dirty))
                                        big = &cg[i];
                        if (!big)
                                break;
                        set_budget(big, big->policy->dirty_limit.set ?
                                   MIN(dirty_limit_bytes(big), big->dirty / 2) :
                                   big->dirty / 2, true, "host near its dirty threshold", st, state, plan);
                }
        else if (st->host_dirty < stop)
                for (size_t i = state->n_budgets; i > 0; i--)
                        if (state->budgets[i - 1].guard)
                                lift_budget(find_cgroup(cg, n, state->budgets[i - 1].cgroup_id),
                                            state->budgets[i - 1].cgroup_id, "host dirty data back down", state, plan);
}

static bool writeback_inflight(const WritePointState *s, uint64_t id) {
        for (size_t i = 0; i < s->n_writeback_inflight; i++)
                if (s->writeback_inflight[i] == id)
                        return true;
        return false;
}

/* Early writeback where it helps: over DirtyBackground, devices with headroom, nobody stalling there. */
static void decide_writeback(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                             size_t n_stalls, WritePointState *state, WpPlan *plan) {
        for (size_t i = 0; i < n; i++) {
                const WpCgroup *c = &cg[i];
                bool headroom = c->n_devices > 0;
                WpAction *a;

                if (!c->policy->dirty_background.set || !c->have_memory || writeback_inflight(state, c->id) ||
                    c->dirty <= dirty_background_bytes(c) ||
                    state->n_writeback_inflight >= WP_BUDGETS_MAX)
                        continue;
                for (size_t d = 0; d < c->n_devices && headroom; d++) {
                        const WpDevice *x = find_device(dev, n_dev, c->devices[d].major, c->devices[d].minor);
                        for (size_t k = 0; k < n_stalls; k++)
                                headroom &= !(stalls[k].major == c->devices[d].major &&
                                              stalls[k].minor == c->devices[d].minor);
                        headroom &= !x || !x->capacity || x->write_rate < x->capacity / 10 * 9;
                }
                if (!headroom)
                        continue;
                a = plan_add(plan, WP_WRITEBACK, c);
                if (!a)
                        return;
                a->value = c->dirty;
                snprintf(a->reason, sizeof(a->reason), "dirty+writeback %" PRIu64 " over DirtyBackground, devices idle enough",
                         c->dirty);
                state->writeback_inflight[state->n_writeback_inflight++] = c->id;
        }
}

/*
 * GuardRate=: every device a protected cgroup did io on this tick, or waits
 * on (a cgroup blocked in an fdatasync behind the writer completes nothing
 * for seconds, and is the one the guard is for), and that nobody stalls on,
 * has its heavy writers capped from now on.
 */
static void guard_devices(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const Stall *stalls,
                          size_t n_stalls, const WpSettings *st, uint64_t now, WritePointState *state,
                          WpPlan *plan) {
        if (!st->guard_rate_ppm)
                return;
        for (size_t i = 0; i < n; i++) {
                const WpCgroup *c = &cg[i];

                for (size_t d = 0; c->protect && d < c->n_devices; d++) {
                        const DeviceRate *r = &c->devices[d];
                        Stall g = stall_of(state, c, r->major, r->minor);
                        WpDeviceQuiet *q;
                        bool stalling = false;

                        if (r->wbytes_per_sec == 0 && r->rbytes_per_sec == 0 &&
                            c->io_stall_ppm < WP_GUARD_WAIT_MIN_PPM)
                                continue;
                        q = quiet_of(state, r->major, r->minor, true);
                        if (q)
                                q->last_guarded_usec = now;
                        for (size_t k = 0; k < n_stalls; k++)
                                stalling |= stalls[k].major == r->major && stalls[k].minor == r->minor;
                        if (!stalling)
                                decide_device(cg, n, &g, find_device(dev, n_dev, r->major, r->minor), true, st, now,
                                              state, plan);
                }
        }
}

/* ---- device queues (ManageQueueDepth=) ---- */

static WpQueue *queue_of(WritePointState *s, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < s->n_queues; i++)
                if (s->queues[i].major == major && s->queues[i].minor == minor)
                        return &s->queues[i];
        return NULL;
}

/* Whether protected cgroup c is active on its device d: io there, or waiting on io (blocked behind a
 * writer, it completes nothing). */
static bool active_on(const WpCgroup *c, const DeviceRate *d) {
        return d->wbytes_per_sec > 0 || d->rbytes_per_sec > 0 || (c->have_io_stall &&
                                                                  c->io_stall_ppm >= WP_GUARD_WAIT_MIN_PPM);
}

static void shallow_queue(const WpCgroup *c, const DeviceRate *d, WpQueue *q, WpPlan *plan) {
        WpAction *a = plan_add(plan, WP_SET_QUEUE, c);

        if (!a)
                return;
        a->major = d->major;
        a->minor = d->minor;
        a->value = WP_QUEUE_NR_REQUESTS;
        a->queue_kb = WP_QUEUE_MAX_SECTORS_KB;
        a->protected_id = c->id;
        snprintf(a->reason, sizeof(a->reason), "%s does io on %" PRIu32 ":%" PRIu32 ": its queue kept shallow "
                 "(ManageQueueDepth)", c->path, d->major, d->minor);
        snprintf(a->lifts_when, sizeof(a->lifts_when), "when no protected cgroup has done io on %" PRIu32 ":%" PRIu32
                 " for CapHoldTime", d->major, d->minor);
        q->observed = a->observe;
}

static void restore_queue(const WpCgroup *cg, size_t n, WpQueue *q, const char *why, WritePointState *s,
                          WpPlan *plan) {
        WpAction *a = plan_add(plan, WP_LIFT_QUEUE, find_cgroup(cg, n, q->protected_id));

        if (!a)
                return;
        a->cgroup_id = q->protected_id;
        a->observe = false;     /* a lift is never only observed */
        a->major = q->major;
        a->minor = q->minor;
        a->value = UINT64_MAX;
        snprintf(a->reason, sizeof(a->reason), "%s", why);
        *q = s->queues[--s->n_queues];
}

/*
 * Each device a protected cgroup is active on has its queue made shallow
 * from that tick (one decided while the cgroup only observed is asked for
 * once it enforces); restored once nobody protected has been active there
 * for the hold time, or at once when the setting is off.
 */
static void decide_queues(const WpCgroup *cg, size_t n, const WpSettings *st, uint64_t now, WritePointState *state,
                          WpPlan *plan) {
        for (size_t i = 0; st->manage_queue_depth && i < n; i++) {
                const WpCgroup *c = &cg[i];

                for (size_t d = 0; c->protect && d < c->n_devices; d++) {
                        const DeviceRate *r = &c->devices[d];
                        WpQueue *q = queue_of(state, r->major, r->minor);
                        bool observe = c->policy->mode == POLICY_MODE_OBSERVE;

                        if (!active_on(c, r))
                                continue;
                        if (!q && state->n_queues < WP_QUEUES_MAX) {
                                q = &state->queues[state->n_queues++];
                                *q = (WpQueue) { .major = r->major, .minor = r->minor, .protected_id = c->id };
                                shallow_queue(c, r, q, plan);
                        } else if (q && q->observed && !observe)
                                shallow_queue(c, r, q, plan);
                        if (q) {
                                q->last_active_usec = now;
                                if (!observe || q->observed)
                                        q->protected_id = c->id;
                        }
                }
        }
        for (size_t i = state->n_queues; i > 0; i--) {
                WpQueue *q = &state->queues[i - 1];

                if (!st->manage_queue_depth)
                        restore_queue(cg, n, q, "ManageQueueDepth is off", state, plan);
                else if (now - q->last_active_usec >= st->hold_usec)
                        restore_queue(cg, n, q, "no protected cgroup has done io there for the hold time", state,
                                      plan);
        }
}

/*
 * A cap or a budget decided while its policy only observed was never written.
 * Once the policy enforces, it is asked for as it stands at the first tick,
 * not at the next step down (or never, if it is lifted after the hold time).
 */
static void enforce_observed(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state,
                             WpPlan *plan) {
        for (size_t i = 0; i < state->n_caps; i++) {
                WpCap *cap = &state->caps[i];
                const WpCgroup *w = find_cgroup(cg, n, cap->cgroup_id);
                WpAction *a;

                if (!cap->observed || !w || w->policy->mode != POLICY_MODE_ENFORCE || !(a = plan_add(plan, WP_SET_CAP, w)))
                        continue;
                a->major = cap->major;
                a->minor = cap->minor;
                a->value = cap->wbps;
                a->protected_id = cap->protected_id;
                snprintf(a->reason, sizeof(a->reason), "its policy enforces now: the cap decided while it observed");
                cap_lifts_when(a, find_cgroup(cg, n, cap->protected_id), st->guard_rate_ppm != 0);
        }
        for (size_t i = 0; i < state->n_budgets; i++) {
                WpBudget *b = &state->budgets[i];
                const WpCgroup *c = find_cgroup(cg, n, b->cgroup_id);
                WpAction *a;

                if (!b->observed || !c || c->policy->mode != POLICY_MODE_ENFORCE ||
                    !(a = plan_add(plan, WP_SET_BUDGET, c)))
                        continue;
                a->value = b->high;
                snprintf(a->reason, sizeof(a->reason), "its policy enforces now: the dirty budget decided while "
                         "it observed (dirty+writeback %" PRIu64 " bytes)", c->dirty);
                if (b->cap)
                        snprintf(a->lifts_when, sizeof(a->lifts_when), "with its io.max cap");
                else
                        budget_lifts_when(a, c, b->guard);
        }
}

/* What the plan sets is written, or only observed: the state says which, for enforce_observed(). */
static void note_observed(const WpPlan *plan, WritePointState *state) {
        for (size_t i = 0; i < plan->n; i++) {
                const WpAction *a = &plan->actions[i];
                WpCap *cap = a->kind == WP_SET_CAP ? find_cap(state, a->cgroup_id, a->major, a->minor) : NULL;
                WpBudget *b = a->kind == WP_SET_BUDGET ? find_budget(state, a->cgroup_id) : NULL;

                if (cap)
                        cap->observed = a->observe;
                if (b)
                        b->observed = a->observe;
        }
}

/*
 * What each cap set this tick rises to when its writer ends (its processes gone,
 * or its unit stopping): nine tenths of the device's capacity, the most any cap
 * of the point climbs to without ManageQueueDepth=. A writer's end does not end
 * its backlog: the dirty pages and the bios held in blk-throttle behind its cap
 * are still to be written, and lifted at once they would all queue on the
 * device in front of the cgroup the cap protects (measured: the worst op of a
 * run came as the writer was killed). Held at the drain rate they are written
 * nearly as fast as the device can take them, and no faster. 0 where the
 * capacity is unknown: the cap is lifted then, as before any of this.
 */
static void drain_rates(const WpDevice *dev, size_t n_dev, WpPlan *plan) {
        for (size_t i = 0; i < plan->n; i++) {
                WpAction *a = &plan->actions[i];
                const WpDevice *d;

                if (a->kind != WP_SET_CAP)
                        continue;
                d = find_device(dev, n_dev, a->major, a->minor);
                a->drain = d && d->capacity ? d->capacity / 10 * 9 : 0;
        }
}

void write_point_decide(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const WpSettings *st,
                        uint64_t now, WritePointState *state, WpPlan *plan) {
        Stall stalls[WP_CAPS_MAX];
        size_t n_stalls;

        plan->n = 0;
        plan->truncated = false;
        enforce_observed(cg, n, st, state, plan);
        learn_baselines(cg, n, dev, n_dev, state);
        n_stalls = find_stalls(cg, n, state, stalls, ELEMENTSOF(stalls));
        for (size_t k = 0; k < n_stalls; k++) {
                WpDeviceQuiet *q = quiet_of(state, stalls[k].major, stalls[k].minor, true);
                if (q)
                        q->last_stall_usec = now;
                decide_device(cg, n, &stalls[k], find_device(dev, n_dev, stalls[k].major, stalls[k].minor), false,
                              st, now, state, plan);
        }
        guard_devices(cg, n, dev, n_dev, stalls, n_stalls, st, now, state, plan);
        track_busy(cg, n, now, state);
        relax_caps(cg, n, dev, n_dev, stalls, n_stalls, st, now, state, plan);
        decide_backlogs(cg, n, st, state, plan);
        decide_budgets(cg, n, st, state, plan);
        decide_guard(cg, n, st, state, plan);
        decide_writeback(cg, n, dev, n_dev, stalls, n_stalls, state, plan);
        decide_queues(cg, n, st, now, state, plan);
        drain_rates(dev, n_dev, plan);
        note_observed(plan, state);
}

void write_point_forget(WritePointState *state, const WpAction *a) {
        WpCap *cap;
        WpBudget *b;

        switch (a->kind) {
        case WP_SET_CAP:
                cap = find_cap(state, a->cgroup_id, a->major, a->minor);
                if (cap && a->previous == UINT64_MAX)
                        remove_cap(state, cap);
                else if (cap)
                        cap->wbps = a->previous;
                break;
        case WP_SET_BUDGET:
                b = find_budget(state, a->cgroup_id);
                if (b && a->previous == UINT64_MAX)
                        *b = state->budgets[--state->n_budgets];
                else if (b)
                        b->high = a->previous;
                break;
        case WP_WRITEBACK:
                write_point_writeback_done(state, a->cgroup_id);
                break;
        case WP_SET_QUEUE: {
                /* Asked for again at the next tick the protected cgroup is active there. */
                WpQueue *q = queue_of(state, a->major, a->minor);
                if (q)
                        *q = state->queues[--state->n_queues];
                break;
        }
        case WP_LIFT_QUEUE:
                /* Lifted again at the next tick, unless a protected cgroup is active there by then. */
                if (!queue_of(state, a->major, a->minor) && state->n_queues < WP_QUEUES_MAX)
                        state->queues[state->n_queues++] = (WpQueue) { .major = a->major, .minor = a->minor,
                                                                       .protected_id = a->cgroup_id };
                break;
        default:
                break;
        }
}

void write_point_writeback_done(WritePointState *state, uint64_t id) {
        for (size_t i = 0; i < state->n_writeback_inflight; i++)
                if (state->writeback_inflight[i] == id) {
                        state->writeback_inflight[i] = state->writeback_inflight[--state->n_writeback_inflight];
                        return;
                }
}
