/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point's dirty budgets: a memory.high sized so that the kernel's
 * per-cgroup dirty limit comes to the budget. A writer over DirtyLimit= gets
 * one, a capped writer one for its backlog, and the largest dirtiers one
 * when the host nears its dirty threshold (the global dirty guard).
 */
#include <inttypes.h>
#include <stdio.h>

#include "wp-internal.h"

/* What lifts a budget: the cgroup back under DirtyBackground (wp_decide_budgets), or the host's dirty data
 * back under 4/5 of where the guard starts (wp_decide_guard). */
static void budget_lifts_when(PointAction *a, const WpCgroup *c, bool guard) {
        snprintf(a->lifts_when, sizeof(a->lifts_when), "%s",
                 guard ? "when host dirty data falls under 4/5 of the GlobalDirtyGuard level" :
                 c->policy->dirty_background.set ? "when dirty+writeback falls under DirtyBackground" :
                 "when dirty+writeback falls under half of DirtyLimit");
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
                       PointPlan *plan) {
        uint64_t limit = wbps <= UINT64_MAX / WP_CAP_BACKLOG_USEC ? wbps * WP_CAP_BACKLOG_USEC / USEC_PER_SEC :
                         wbps / USEC_PER_SEC * WP_CAP_BACKLOG_USEC, high;
        WpBudget *b = wp_find_budget(state, w->id);
        PointAction *a;

        if (!w->have_memory)
                return;
        limit = MAX(limit, WP_CAP_BACKLOG_MIN);
        if (w->policy->dirty_limit.set)
                limit = MIN(limit, dirty_limit_bytes(w));
        high = wp_budget_high(w, limit, st->dirty_ratio_pct);
        if (!b) {
                if (state->n_budgets >= WP_BUDGETS_MAX || !(a = wp_plan_add(plan, PA_SET_BUDGET, w)))
                        return;
                b = &state->budgets[state->n_budgets++];
                *b = (WpBudget) { .cgroup_id = w->id, .high = UINT64_MAX };
        } else if (b->cap ? b->limit == limit : b->high <= high) {
                return;
        } else if (!(a = wp_plan_add(plan, PA_SET_BUDGET, w))) {
                return;
        }
        a->previous = b->high;
        a->value = high;
        snprintf(a->reason, sizeof(a->reason), "capped at %" PRIu64 " B/s: its dirty+writeback held to %" PRIu64
                 " bytes, a second at the cap (%" PRIu64 " now)", wbps, limit, w->dirty);
        snprintf(a->lifts_when, sizeof(a->lifts_when), "with its io.max cap");
        *b = (WpBudget) { .cgroup_id = w->id, .high = high, .limit = limit, .cap = true };
}

static void set_budget(const WpCgroup *c, uint64_t limit, bool guard, const char *why, const WpSettings *st,
                       WritePointState *state, PointPlan *plan) {
        PointAction *a;

        if (state->n_budgets >= WP_BUDGETS_MAX)
                return;
        a = wp_plan_add(plan, PA_SET_BUDGET, c);
        if (!a)
                return;
        a->value = wp_budget_high(c, limit, st->dirty_ratio_pct);
        snprintf(a->reason, sizeof(a->reason), "%s: dirty+writeback %" PRIu64 " over %" PRIu64 " bytes", why,
                 c->dirty, limit);
        budget_lifts_when(a, c, guard);
        state->budgets[state->n_budgets++] = (WpBudget) { .cgroup_id = c->id, .high = a->value,
                                                          .limit = guard ? 0 : limit, .guard = guard };
}

/* The policy's limit changed under a budget in force: sized again at once, looser or tighter. */
static void resize_budget(const WpCgroup *c, WpBudget *b, uint64_t limit, const WpSettings *st, PointPlan *plan) {
        PointAction *a = wp_plan_add(plan, PA_SET_BUDGET, c);

        if (!a)
                return;
        a->previous = b->high;
        a->value = wp_budget_high(c, limit, st->dirty_ratio_pct);
        snprintf(a->reason, sizeof(a->reason), "DirtyLimit changed from %" PRIu64 " to %" PRIu64 " bytes", b->limit,
                 limit);
        budget_lifts_when(a, c, false);
        b->high = a->value;
        b->limit = limit;
}

static void lift_budget(const WpCgroup *c, uint64_t id, const char *why, WritePointState *state, PointPlan *plan) {
        WpBudget *b = wp_find_budget(state, id);
        PointAction *a = wp_plan_add(plan, PA_LIFT_BUDGET, c);

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
void wp_decide_backlogs(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state, PointPlan *plan) {
        for (size_t i = state->n_budgets; i > 0; i--) {
                const WpBudget *b = &state->budgets[i - 1];
                const WpCgroup *w = wp_find_cgroup(cg, n, b->cgroup_id);

                if (b->cap && !has_cap(state, b->cgroup_id))
                        lift_budget(w, b->cgroup_id, "its io.max cap is lifted", state, plan);
                else if (b->cap && w && w->superseded)
                        lift_budget(w, b->cgroup_id, "the writers below it are capped in its stead, each with "
                                    "a budget of its own", state, plan);
        }
        for (size_t i = 0; i < state->n_caps; i++) {
                const WpCgroup *w = wp_find_cgroup(cg, n, state->caps[i].cgroup_id);
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
                if (w && first && wp_writing(w) && !w->superseded)
                        cap_budget(w, sum, st, state, plan);
        }
}

static uint64_t background_of(const WpCgroup *c, uint64_t limit) {
        return c->policy->dirty_background.set ? dirty_background_bytes(c) : limit / 2;
}

void wp_decide_budgets(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state, PointPlan *plan) {
        for (size_t i = 0; i < n; i++) {
                const WpCgroup *c = &cg[i];
                WpBudget *b = wp_find_budget(state, c->id);
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
                if (!wp_find_cgroup(cg, n, state->budgets[i - 1].cgroup_id))
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
void wp_decide_guard(const WpCgroup *cg, size_t n, const WpSettings *st, WritePointState *state, PointPlan *plan) {
        uint64_t start, stop;

        if (st->host_dirty_threshold == 0 || st->global_guard_ppm == 0)
                return;
        start = ppm_of(st->host_dirty_threshold, st->global_guard_ppm);
        stop = start / 5 * 4;
        if (st->host_dirty >= start && protected_active(cg, n))
                for (int round = 0; round < 3; round++) {
                        const WpCgroup *big = NULL;
                        for (size_t i = 0; i < n; i++)
                                if (!cg[i].protect && !cg[i].above_writers && cg[i].have_memory &&
                                    !wp_find_budget(state, cg[i].id) &&
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
                                lift_budget(wp_find_cgroup(cg, n, state->budgets[i - 1].cgroup_id),
                                            state->budgets[i - 1].cgroup_id, "host dirty data back down", state, plan);
}

/* A budget decided while its policy only observed, asked for as it stands once the policy enforces. */
void wp_enforce_observed_budgets(const WpCgroup *cg, size_t n, WritePointState *state, PointPlan *plan) {
        for (size_t i = 0; i < state->n_budgets; i++) {
                WpBudget *b = &state->budgets[i];
                const WpCgroup *c = wp_find_cgroup(cg, n, b->cgroup_id);
                PointAction *a;

                if (!b->observed || !c || c->policy->mode != POLICY_MODE_ENFORCE ||
                    !(a = wp_plan_add(plan, PA_SET_BUDGET, c)))
                        continue;
                a->value = b->high;
                /* The budget's own reason first: the mode change is only why it is written now. */
                snprintf(a->reason, sizeof(a->reason), "%s: dirty+writeback %" PRIu64 " bytes, %" PRIu64 " allowed "
                         "(decided while its policy observed; its policy enforces now)",
                         b->cap ? "a capped writer's backlog" : b->guard ? "the global dirty guard" : "over DirtyLimit",
                         c->dirty, b->limit ? b->limit : dirty_limit_bytes(c));
                if (b->cap)
                        snprintf(a->lifts_when, sizeof(a->lifts_when), "with its io.max cap");
                else
                        budget_lifts_when(a, c, b->guard);
        }
}
