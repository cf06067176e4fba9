/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point's entry: one tick's decision, its sub-policies run in a
 * fixed order (each in a file of its own, wp-internal.h lists them), and what
 * the runner tells it back: an action that failed, a writeback that ended.
 */
#include "write-point.h"

#include "wp-internal.h"

_Static_assert(WP_ACTIONS_MAX <= PLAN_ACTIONS_MAX, "a plan holds every action of the write point");

/* What the plan sets is written, or only observed: the state says which, for the next tick (the
 * wp_enforce_observed functions). */
static void note_observed(const PointPlan *plan, WritePointState *state) {
        for (size_t i = 0; i < plan->n; i++) {
                const PointAction *a = &plan->actions[i];
                WpCap *cap = a->kind == PA_SET_CAP ? wp_find_cap(state, a->cgroup_id, a->major, a->minor) : NULL;
                WpBudget *b = a->kind == PA_SET_BUDGET ? wp_find_budget(state, a->cgroup_id) : NULL;

                if (cap)
                        cap->observed = a->observe;
                if (b)
                        b->observed = a->observe;
        }
}

/* How many of the caps on the device are held on cgroups strictly below `w`; `of[k]` is the cgroup in view
 * of state->caps[k] (NULL: out of view). */
static size_t caps_below(const WritePointState *state, const WpCgroup *const *of, const WpCgroup *w,
                         uint32_t major, uint32_t minor) {
        size_t below = 0;

        for (size_t k = 0; k < state->n_caps; k++) {
                const WpCap *c = &state->caps[k];

                below += of[k] && c->major == major && c->minor == minor && of[k] != w &&
                         !streq(of[k]->path, w->path) && cgroup_path_is_below(of[k]->path, w->path);
        }
        return below;
}

/*
 * What each cap set this tick rises to when its writer ends (its processes gone,
 * or its unit stopping): nine tenths of the device's capacity, the most any cap
 * of the point climbs to without ManageQueueDepth=. A writer's end does not end
 * its backlog: the dirty pages and the bios held in blk-throttle behind its cap
 * are still to be written, and lifted at once they would all queue on the
 * device in front of the cgroup the cap protects (measured: the worst op of a
 * run came as the writer was killed). Held at the drain rate they are written
 * nearly as fast as the device can take them, and no faster. Writers capped
 * on the same device share that rate as they share the guard: four that end
 * together would otherwise drain at four times it (measured: a worst op of
 * 1.7 s as four dd's ended). A slice's cap over writers capped below it
 * (keep_deepest() of core/runner-write.c; from the tick their caps come, before
 * it is marked superseded) is not one more writer: what goes through it is
 * theirs, so it drains at their shares together, and counted it would cut each
 * of theirs by one share too many. Never under the cap itself. 0 where the
 * capacity is unknown: the cap is lifted then, as before any of this.
 */
static void drain_rates(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev,
                        const WritePointState *state, PointPlan *plan) {
        /* Each cap's cgroup and how many caps stand below it, once a tick: a plan may hold hundreds of
         * caps' actions, and each counts the caps on its device. */
        const WpCgroup *of[WP_CAPS_MAX];
        size_t below[WP_CAPS_MAX], set = 0;

        for (size_t i = 0; i < plan->n; i++)
                set += plan->actions[i].kind == PA_SET_CAP;
        if (set == 0)
                return;
        for (size_t k = 0; k < state->n_caps; k++)
                of[k] = wp_find_cgroup(cg, n, state->caps[k].cgroup_id);
        for (size_t k = 0; k < state->n_caps; k++)
                below[k] = of[k] && of[k]->above_writers ?
                        caps_below(state, of, of[k], state->caps[k].major, state->caps[k].minor) : 0;
        for (size_t i = 0; i < plan->n; i++) {
                PointAction *a = &plan->actions[i];
                const WpDevice *d;
                size_t writers = 0, shares = 1;

                if (a->kind != PA_SET_CAP)
                        continue;
                d = wp_find_device(dev, n_dev, a->major, a->minor);
                for (size_t k = 0; k < state->n_caps; k++) {
                        if (state->caps[k].major != a->major || state->caps[k].minor != a->minor)
                                continue;
                        writers += below[k] == 0;
                        if (state->caps[k].cgroup_id == a->cgroup_id && below[k])
                                shares = below[k];
                }
                writers = MAX(writers, (size_t) 1);
                a->drain = d && d->capacity ? MAX(d->capacity / 10 * 9 / writers * MIN(shares, writers), a->value)
                                            : 0;
        }
}

void write_point_decide(const WpCgroup *cg, size_t n, const WpDevice *dev, size_t n_dev, const WpSettings *st,
                        uint64_t now, WritePointState *state, PointPlan *plan) {
        Stall stalls[WP_CAPS_MAX];
        size_t n_stalls;

        plan_reset(plan, WP_ACTIONS_MAX);
        wp_enforce_observed_caps(cg, n, st, state, plan);
        wp_enforce_observed_budgets(cg, n, state, plan);
        wp_learn_baselines(cg, n, dev, n_dev, state);
        n_stalls = wp_find_stalls(cg, n, state, stalls, ELEMENTSOF(stalls));
        wp_cap_stalls(cg, n, dev, n_dev, stalls, n_stalls, st, now, state, plan);
        wp_guard_devices(cg, n, dev, n_dev, stalls, n_stalls, st, now, state, plan);
        wp_track_busy(cg, n, now, state);
        wp_relax_caps(cg, n, dev, n_dev, stalls, n_stalls, st, now, state, plan);
        wp_decide_backlogs(cg, n, st, state, plan);
        wp_decide_budgets(cg, n, st, state, plan);
        wp_decide_guard(cg, n, st, state, plan);
        wp_decide_writeback(cg, n, dev, n_dev, stalls, n_stalls, state, plan);
        wp_decide_queues(cg, n, st, now, state, plan);
        drain_rates(cg, n, dev, n_dev, state, plan);
        note_observed(plan, state);
}

void write_point_forget(WritePointState *state, const PointAction *a) {
        WpCap *cap;
        WpBudget *b;

        switch (a->kind) {
        case PA_SET_CAP:
                cap = wp_find_cap(state, a->cgroup_id, a->major, a->minor);
                if (cap && a->previous == UINT64_MAX)
                        wp_remove_cap(state, cap);
                else if (cap)
                        cap->wbps = a->previous;
                break;
        case PA_SET_BUDGET:
                b = wp_find_budget(state, a->cgroup_id);
                if (b && a->previous == UINT64_MAX)
                        *b = state->budgets[--state->n_budgets];
                else if (b)
                        b->high = a->previous;
                break;
        case PA_WRITEBACK:
                wp_writeback_done(state, a->cgroup_id);
                break;
        case PA_SET_QUEUE:
        case PA_LIFT_QUEUE:
                wp_forget_queue(state, a);
                break;
        default:
                break;
        }
}

void write_point_writeback_done(WritePointState *state, uint64_t cgroup_id) {
        wp_writeback_done(state, cgroup_id);
}

uint64_t write_point_budget_high(const WpCgroup *c, uint64_t budget, uint32_t dirty_ratio_pct) {
        return wp_budget_high(c, budget, dirty_ratio_pct);
}

uint32_t write_point_baseline(const WritePointState *state, uint64_t cgroup_id) {
        return wp_baseline(state, cgroup_id);
}
