/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "alloc-point.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* Configuration refuses a ReclaimStepMax= under the smallest step taken: it would never reclaim. */
_Static_assert(POLICY_RECLAIM_STEP_MAX_MIN >= AP_STEP_MIN, "ReclaimStepMax= may not go under AP_STEP_MIN");
_Static_assert(AP_ACTIONS_MAX <= PLAN_ACTIONS_MAX, "a plan holds every action of the allocation point");

static ApCgroupState *state_of(AllocPointState *s, uint64_t id, bool create) {
        for (size_t i = 0; i < s->n; i++)
                if (s->cg[i].id == id)
                        return &s->cg[i];
        if (!create || s->n >= AP_STATE_MAX)
                return NULL;
        s->cg[s->n] = (ApCgroupState) { .id = id };
        return &s->cg[s->n++];
}

uint64_t alloc_point_room(const ApCgroup *c) {
        uint64_t floor = c->policy->cache_floor, room;

        room = c->reclaimable > floor ? c->reclaimable - floor : 0;
        /* memory.reclaim ignores the written cgroup's own protection: honour it here. */
        if (c->protection > 0)
                room = MIN(room, c->memory_current > c->protection ? c->memory_current - c->protection : 0);
        return room;
}

/* The room, also above the level where reclaiming this cgroup was seen to hurt. */
static uint64_t room_for(const ApCgroup *c, const ApCgroupState *cs) {
        uint64_t room = alloc_point_room(c);

        if (cs && cs->learned_floor > 0)
                room = MIN(room, c->reclaimable > cs->learned_floor ? c->reclaimable - cs->learned_floor : 0);
        return room;
}

static PointAction *add(PointPlan *p, PointActionKind kind, const ApCgroup *c) {
        return plan_add(p, kind, c->id, c->path, c->policy);
}

/* False when the plan is full and nothing was added. */
static bool reclaim(PointPlan *p, const ApCgroup *c, ApCgroupState *cs, uint64_t bytes, const char *why) {
        PointAction *a = add(p, PA_RECLAIM, c);

        if (!a)
                return false;
        a->value = bytes;
        snprintf(a->reason, sizeof(a->reason), "%s", why);
        cs->inflight = true;
        return true;
}

static void back_off(ApCgroupState *cs, uint64_t now, uint64_t tick) {
        cs->backoff = MIN(cs->backoff + 1, (unsigned) AP_BACKOFF_MAX);
        cs->next_usec = now + (tick << cs->backoff);
}

static bool touchable(const ApCgroup *c) {
        return !c->policy->protect && !c->exempt;
}

/* One step of the PressureTarget= loop. */
static void proactive(PointPlan *p, const ApCgroup *c, ApCgroupState *cs, const ApSettings *st, uint64_t now) {
        uint32_t target = c->policy->pressure_target_ppm;
        uint64_t step, room;
        char why[160];

        if (!target || !c->valid || cs->inflight || now < cs->next_usec)
                return;
        if (c->stall_ppm >= target) {
                /* Stalling right after a reclaim: it took what is still used. Keep
                 * at least what is left now (and one step more) from here on. */
                if (cs->last_reclaim_usec && now - cs->last_reclaim_usec <= 2 * st->tick_usec)
                        cs->learned_floor = c->reclaimable + c->policy->reclaim_step_max;
                back_off(cs, now, st->tick_usec);
                return;
        }
        /* The working set moves: a learned floor wears off, by 1/256 a tick
         * (about three minutes to lose a half at 1 s ticks). */
        cs->learned_floor -= cs->learned_floor / 256;
        /* Refaults climbing: it is reclaiming pages that are still used. */
        if (c->refault_rate > AP_STEP_MIN && c->refault_rate > cs->last_refault_rate * 2) {
                cs->last_refault_rate = c->refault_rate;
                back_off(cs, now, st->tick_usec);
                return;
        }
        cs->last_refault_rate = c->refault_rate;
        step = c->policy->reclaim_step_max / target * (target - c->stall_ppm) +
               c->policy->reclaim_step_max % target * (target - c->stall_ppm) / target;
        room = room_for(c, cs);
        step = MIN(step, room);
        if (step < AP_STEP_MIN)
                return;
        snprintf(why, sizeof(why), "stall %u.%02u%% under PressureTarget %u.%02u%%", c->stall_ppm / 10000,
                 c->stall_ppm / 100 % 100, target / 10000, target / 100 % 100);
        reclaim(p, c, cs, step, why);
}

/* bytes / yield, the yield in 1/AP_YIELD_ONE, without overflow. */
static uint64_t div_yield(uint64_t bytes, uint32_t yield) {
        return bytes / yield * AP_YIELD_ONE + bytes % yield * AP_YIELD_ONE / yield;
}

/*
 * MetadataCacheMax=: nothing within the dead band around the cap; above it, a
 * request sized to bring slab back to the band's lower edge once multiplied by
 * what this cgroup's reclaims have been seen to free for what they asked (the
 * yield; the first request, before any is learnt, is the smallest). When
 * the kernel frees more than the band for the least it works for, the band is
 * widened to half that batch (up to a tenth of the cap) so that the level still
 * swings about the cap rather than under it.
 */
static void metadata_cap(PointPlan *p, const ApCgroup *c, ApCgroupState *cs) {
        uint64_t max = c->policy->metadata_cache_max, half, ask;
        uint32_t yield = MAX(cs->slab_yield, AP_YIELD_ONE);
        char why[160];

        if (max == UINT64_MAX || c->slab_reclaimable <= max || cs->inflight)
                return;
        half = MAX(max / 1000 * AP_SLAB_BAND_PERMILLE, AP_SLAB_ASK_MIN / 2 * yield / AP_YIELD_ONE);
        half = MIN(half, max / 10);
        if (c->slab_reclaimable - max <= half)
                return;
        /* Not learnt yet: the least the kernel works for, to learn from (it has freed 7x a
         * first request's whole excess on xfs in one go). */
        ask = cs->slab_yield ? div_yield(c->slab_reclaimable - (max - half), yield) : AP_SLAB_ASK_MIN;
        ask = MIN(MAX(ask, AP_SLAB_ASK_MIN), c->policy->reclaim_step_max);
        ask = MIN(ask, alloc_point_room(c));
        if (ask < AP_SLAB_ASK_MIN)
                return;
        snprintf(why, sizeof(why), "slab_reclaimable %" PRIu64 " over MetadataCacheMax %" PRIu64 " + %" PRIu64 "; yield %u.%02ux",
                 c->slab_reclaimable, max, half, cs->slab_yield / AP_YIELD_ONE,
                 cs->slab_yield % AP_YIELD_ONE * 100 / AP_YIELD_ONE);
        /* Marked only if queued: a later request's result is not this one's yield. */
        if (reclaim(p, c, cs, ask, why))
                cs->slab_inflight = true;
}

static bool host_pressure(const ApSettings *st) {
        return (st->host_stall_valid && st->host_stall_ppm > st->global_threshold_ppm) ||
               (st->mem_available_min && st->mem_available < st->mem_available_min);
}

/* Lowest priority first, then most reclaimable. */
static bool before(const ApCgroup *a, const ApCgroup *b) {
        if (a->policy->priority != b->policy->priority)
                return a->policy->priority < b->policy->priority;
        return alloc_point_room(a) > alloc_point_room(b);
}

/*
 * Host pressure: caches of the lowest priority that still has room go first,
 * at most AP_GLOBAL_PER_TICK cgroups a tick and all of that one priority: a
 * higher priority is touched only once every lower one is at its floor. A
 * cgroup whose last reclaim freed little waits out its backoff.
 */
static void global(PointPlan *p, const ApCgroup *cg, size_t n, AllocPointState *s, uint64_t now) {
        const ApCgroup *picked[AP_GLOBAL_PER_TICK] = {};
        bool level_set = false;
        unsigned level = 0;

        for (size_t i = 0; i < n; i++)
                if (touchable(&cg[i]) && alloc_point_room(&cg[i]) >= AP_STEP_MIN &&
                    (!level_set || cg[i].policy->priority < level)) {
                        level = cg[i].policy->priority;
                        level_set = true;
                }
        if (!level_set)
                return;
        for (size_t k = 0; k < AP_GLOBAL_PER_TICK; k++) {
                ApCgroupState *cs;

                for (size_t i = 0; i < n; i++) {
                        ApCgroupState *x = state_of(s, cg[i].id, false);
                        bool dup = false;

                        for (size_t j = 0; j < k; j++)
                                dup |= picked[j] == &cg[i];
                        if (dup || !touchable(&cg[i]) || cg[i].policy->priority != level ||
                            (x && (x->inflight || now < x->next_usec)) || alloc_point_room(&cg[i]) < AP_STEP_MIN)
                                continue;
                        if (!picked[k] || before(&cg[i], picked[k]))
                                picked[k] = &cg[i];
                }
                if (!picked[k])
                        break;
                cs = state_of(s, picked[k]->id, true);
                if (cs)
                        reclaim(p, picked[k], cs, MIN(picked[k]->policy->reclaim_step_max, alloc_point_room(picked[k])),
                                "host under memory pressure: caches of lower priority first");
        }
}

/* What lifts an allocation throttle: no host pressure for the hold time; it is raised a step each calm tick before. */
static void throttle_lifts_when(PointAction *a) {
        snprintf(a->lifts_when, sizeof(a->lifts_when),
                 "when the host has been free of memory pressure for ThrottleHoldTime; raised a step each calm "
                 "tick before");
}

/*
 * A throttle in force while the host is calm: raised a tenth (a step at
 * least) each calm tick, lifted after the hold time or once it no longer
 * holds the cgroup back. Under pressure it stays, unless it was decided
 * while its policy observed and the policy enforces now: then it is asked
 * for as it stands. False when the plan is full.
 */
static bool throttle_held(PointPlan *p, const ApCgroup *c, ApCgroupState *cs, const AllocPointState *s,
                          const ApSettings *st, uint64_t now, bool pressure) {
        PointAction *a;
        uint64_t step = MAX(cs->throttle_high / 10, AP_STEP_MIN);
        uint64_t raised = cs->throttle_high > UINT64_MAX - step ? UINT64_MAX : cs->throttle_high + step;
        /* Raised past twice the usage, it holds nothing back: lifted, rather than raised a
         * tenth a tick for as long as pressure keeps coming back within the hold time. */
        bool loose = cs->throttle_high / 2 >= c->memory_current;
        bool calm = !pressure && (loose || now - s->last_pressure_usec >= st->throttle_hold_usec);

        if (pressure && cs->throttle_observed && c->policy->mode == POLICY_MODE_ENFORCE) {
                a = add(p, PA_SET_HIGH, c);
                if (!a)
                        return false;
                a->value = cs->throttle_high;
                /* Its own reason first: the mode change is only why it is written now. */
                snprintf(a->reason, sizeof(a->reason), "the host is under memory pressure: held at %" PRIu64
                         " bytes, as decided while its policy observed (its policy enforces now; it grows %"
                         PRId64 " bytes/s)", cs->throttle_high, c->growth_rate);
                throttle_lifts_when(a);
                cs->throttle_observed = false;
                return true;
        }
        if (pressure)
                return true;
        /* Decided while it observed, never written, and the pressure is gone: nothing to
         * write (a raise written now would throttle a cgroup with no pressure). */
        if (cs->throttle_observed && c->policy->mode == POLICY_MODE_ENFORCE) {
                cs->throttle_high = 0;
                cs->throttle_observed = false;
                return true;
        }
        a = add(p, calm ? PA_LIFT_HIGH : PA_SET_HIGH, c);
        if (!a)
                return false;
        a->value = calm ? UINT64_MAX : raised;
        /* A raise that fails leaves the last value written (the actuator keeps it): the
         * point holds that again, to raise or lift it later. */
        a->from = cs->throttle_observed ? 0 : cs->throttle_high;
        snprintf(a->reason, sizeof(a->reason), "%s",
                 !calm ? "host pressure subsiding"
                 : loose ? "raised past twice its usage: it no longer holds the cgroup back"
                         : "host pressure over for the hold time");
        if (!calm)
                throttle_lifts_when(a);
        cs->throttle_high = calm ? 0 : raised;
        cs->throttle_observed = a->observe;
        return true;
}

/* The fastest-growing cgroup while the host is under pressure: its memory.high set near its usage. */
static void throttle_fastest(PointPlan *p, const ApCgroup *fastest, AllocPointState *s) {
        ApCgroupState *cs = state_of(s, fastest->id, true);
        PointAction *a = cs ? add(p, PA_SET_HIGH, fastest) : NULL;

        if (!a)
                return;
        a->value = MAX(fastest->memory_current, AP_STEP_MIN);
        snprintf(a->reason, sizeof(a->reason), "grows %" PRId64 " bytes/s while the host is under memory pressure",
                 fastest->growth_rate);
        throttle_lifts_when(a);
        cs->throttle_high = a->value;
        cs->throttle_observed = a->observe;
}

static void throttle(PointPlan *p, const ApCgroup *cg, size_t n, AllocPointState *s, const ApSettings *st,
                     uint64_t now, bool pressure) {
        const ApCgroup *fastest = NULL;

        for (size_t i = 0; i < n; i++) {
                const ApCgroup *c = &cg[i];
                ApCgroupState *cs = state_of(s, c->id, false);

                if (cs && cs->throttle_high) {
                        if (!throttle_held(p, c, cs, s, st, now, pressure))
                                return;
                        continue;
                }
                if (pressure && c->policy->allocation_throttle && touchable(c) && c->valid && c->growth_rate > 0 &&
                    (!fastest || c->growth_rate > fastest->growth_rate))
                        fastest = c;
        }
        if (fastest)
                throttle_fastest(p, fastest, s);
}

void alloc_point_decide(const ApCgroup *cg, size_t n, const ApSettings *st, uint64_t now, AllocPointState *s,
                        PointPlan *p) {
        bool pressure = host_pressure(st);

        plan_reset(p, AP_ACTIONS_MAX);
        if (pressure)
                s->last_pressure_usec = now;
        for (size_t i = 0; i < n; i++) {
                ApCgroupState *cs;

                if (!touchable(&cg[i]))
                        continue;
                cs = state_of(s, cg[i].id, cg[i].policy->pressure_target_ppm > 0 ||
                                           cg[i].policy->metadata_cache_max != UINT64_MAX);
                if (!cs)
                        continue;
                metadata_cap(p, &cg[i], cs);
                proactive(p, &cg[i], cs, st, now);
        }
        if (pressure)
                global(p, cg, n, s, now);
        throttle(p, cg, n, s, st, now, pressure);
        /* Forget cgroups that are gone (or lost their policy), unless a request is in flight or a
         * throttle written: a cgroup missing from one view (a memory.stat that failed to parse once) keeps
         * its throttle, to be raised and lifted when it is back; one that is gone for good is dropped
         * by the actuator, which tells the point (alloc_point_forget()), and goes the tick after. */
        for (size_t i = s->n; i > 0; i--) {
                const ApCgroupState *cs = &s->cg[i - 1];
                bool present = false;

                for (size_t k = 0; k < n && !present; k++)
                        present = cg[k].id == cs->id;
                if (!present && !cs->inflight && !(cs->throttle_high && !cs->throttle_observed))
                        s->cg[i - 1] = s->cg[--s->n];
        }
}

/*
 * What a slab reclaim freed for what it asked, smoothed: an overshoot counts
 * half at once (the next request shrinks at once), a shortfall a quarter (the
 * request grows back slowly), so that it errs on the short side.
 */
static void learn_yield(ApCgroupState *cs, uint64_t asked, uint64_t freed) {
        uint64_t sample = freed / asked >= AP_YIELD_MAX / AP_YIELD_ONE
                                  ? AP_YIELD_MAX
                                  : freed / asked * AP_YIELD_ONE + freed % asked * AP_YIELD_ONE / asked;
        uint64_t y = cs->slab_yield;

        if (y == 0)
                y = sample;
        else if (sample > y)
                y = (y + sample) / 2;
        else
                y = (3 * y + sample) / 4;
        cs->slab_yield = (uint32_t) MAX(y, 1u);
}

uint32_t alloc_point_slab_yield(const AllocPointState *s, uint64_t id) {
        for (size_t i = 0; i < s->n; i++)
                if (s->cg[i].id == id)
                        return s->cg[i].slab_yield;
        return 0;
}

void alloc_point_reclaim_done(AllocPointState *s, uint64_t id, uint64_t asked, uint64_t freed, bool shared,
                              uint64_t now, uint64_t tick) {
        ApCgroupState *cs = state_of(s, id, false);

        if (!cs)
                return;
        cs->inflight = false;
        cs->last_reclaim_usec = now;
        if (cs->slab_inflight && asked > 0 && !shared)
                learn_yield(cs, asked, freed);
        cs->slab_inflight = false;
        /* Got what it asked (EAGAIN happens even then): the loop may go on; otherwise wait. */
        if (freed * 2 >= asked && cs->backoff > 0)
                cs->backoff--;
        else if (freed * 2 < asked)
                back_off(cs, now, tick);
}

void alloc_point_forget(AllocPointState *s, const PointAction *a) {
        ApCgroupState *cs = state_of(s, a->cgroup_id, false);

        if (!cs)
                return;
        if (a->kind == PA_RECLAIM)
                cs->inflight = cs->slab_inflight = false;
        else if (a->kind == PA_SET_HIGH)
                cs->throttle_high = a->from;
}
