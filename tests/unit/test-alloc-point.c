/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the allocation point's decisions, on plain data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "alloc-point.h"
#include "util.h"

#define MIB (UINT64_C(1) << 20)
#define SEC USEC_PER_SEC

static Policy cold, hog, db;
static ApCgroup cg[3];
static ApSettings st;
static AllocPointState state;
static PointPlan plan;

static int setup(void **s) {
        cold = (Policy) { .name = (char *) "cold", .mode = POLICY_MODE_ENFORCE, .priority = 50,
                          .pressure_target_ppm = 1000, .reclaim_step_max = 16 * MIB, .metadata_cache_max = UINT64_MAX };
        hog = (Policy) { .name = (char *) "hog", .mode = POLICY_MODE_ENFORCE, .priority = 10,
                         .reclaim_step_max = 16 * MIB, .metadata_cache_max = UINT64_MAX };
        db = (Policy) { .name = (char *) "db", .mode = POLICY_MODE_ENFORCE, .priority = 90, .protect = true,
                        .reclaim_step_max = 16 * MIB, .metadata_cache_max = UINT64_MAX, .pressure_target_ppm = 1000 };
        cg[0] = (ApCgroup) { .id = 1, .path = "/cold.service", .policy = &cold, .valid = true, .interval_usec = SEC,
                             .memory_current = 1200 * MIB, .reclaimable = 1100 * MIB, .file_clean = 1000 * MIB,
                             .slab_reclaimable = 100 * MIB };
        cg[1] = (ApCgroup) { .id = 2, .path = "/hog.service", .policy = &hog, .valid = true, .interval_usec = SEC,
                             .memory_current = 500 * MIB, .reclaimable = 400 * MIB };
        cg[2] = (ApCgroup) { .id = 3, .path = "/db.service", .policy = &db, .valid = true, .interval_usec = SEC,
                             .memory_current = 800 * MIB, .reclaimable = 700 * MIB };
        st = (ApSettings) { .global_threshold_ppm = 100000, .host_stall_valid = true, .tick_usec = SEC,
                            .mem_available = 4000 * MIB, .mem_available_min = 100 * MIB, .throttle_hold_usec = 5 * SEC };
        memset(&state, 0, sizeof(state));
        return 0;
}

static void decide(uint64_t now) {
        alloc_point_decide(cg, 3, &st, now, &state, &plan);
}

static const PointAction *find(PointActionKind k, uint64_t id) {
        for (size_t i = 0; i < plan.n; i++)
                if (plan.actions[i].kind == k && plan.actions[i].cgroup_id == id)
                        return &plan.actions[i];
        return NULL;
}

static __attribute__((returns_nonnull)) const PointAction *must(PointActionKind k, uint64_t id) {
        const PointAction *a = find(k, id);
        if (!a) {
                fail_msg("no %s for %llu", point_action_to_string(k), (unsigned long long) id);
                abort();
        }
        return a;
}

static void test_step_sized_by_distance_to_target(void **s) {
        decide(1 * SEC);
        /* No stall at all: a full step. The protected db is never touched. */
        assert_int_equal(must(PA_RECLAIM, 1)->value, 16 * MIB);
        assert_null(find(PA_RECLAIM, 3));
        assert_null(find(PA_RECLAIM, 2)); /* no PressureTarget=, no host pressure */
        /* One reclaim at a time. */
        decide(2 * SEC);
        assert_null(find(PA_RECLAIM, 1));
        alloc_point_reclaim_done(&state, 1, 16 * MIB, 17 * MIB, false, 2 * SEC, SEC);
        cg[0].stall_ppm = 750; /* a quarter of the target left */
        decide(3 * SEC);
        assert_int_equal(must(PA_RECLAIM, 1)->value, 4 * MIB);
}

static void test_backoff_over_target_grows(void **s) {
        cg[0].stall_ppm = 2000;
        decide(1 * SEC);
        assert_null(find(PA_RECLAIM, 1));
        assert_int_equal(state.cg[0].backoff, 1);
        assert_int_equal(state.cg[0].next_usec, 3 * SEC);
        cg[0].stall_ppm = 0;
        decide(2 * SEC);
        assert_null(find(PA_RECLAIM, 1)); /* still backing off */
        cg[0].stall_ppm = 5000;
        decide(3 * SEC);
        assert_int_equal(state.cg[0].backoff, 2);
        assert_int_equal(state.cg[0].next_usec, 7 * SEC);
        cg[0].stall_ppm = 0;
        decide(7 * SEC);
        assert_non_null(find(PA_RECLAIM, 1));
}

static void test_refaults_climbing_back_off(void **s) {
        cg[0].refault_rate = 10 * MIB;
        decide(1 * SEC);
        assert_null(find(PA_RECLAIM, 1));
        assert_int_equal(state.cg[0].backoff, 1);
        decide(3 * SEC);                /* same refault rate: not climbing any more */
        assert_non_null(find(PA_RECLAIM, 1));
}

static void test_floors(void **s) {
        cold.cache_floor = 1090 * MIB;   /* only 10 MiB above the floor */
        decide(1 * SEC);
        assert_int_equal(must(PA_RECLAIM, 1)->value, 10 * MIB);
        alloc_point_reclaim_done(&state, 1, 10 * MIB, 10 * MIB, false, 1 * SEC, SEC);
        cold.cache_floor = 1100 * MIB;
        decide(2 * SEC);
        assert_null(find(PA_RECLAIM, 1));
        /* memory.low protects what the kernel would not protect for the written cgroup. */
        cold.cache_floor = 0;
        cg[0].protection = 1195 * MIB;
        decide(3 * SEC);
        assert_int_equal(must(PA_RECLAIM, 1)->value, 5 * MIB);
        assert_int_equal(alloc_point_room(&cg[0]), 5 * MIB);
}

static void test_stall_after_reclaim_learns_a_floor(void **s) {
        decide(1 * SEC);
        assert_int_equal(must(PA_RECLAIM, 1)->value, 16 * MIB);
        alloc_point_reclaim_done(&state, 1, 16 * MIB, 16 * MIB, false, 1 * SEC, SEC);
        /* The stall rises right after: what was reclaimed was still used. */
        cg[0].reclaimable = 1084 * MIB;
        cg[0].stall_ppm = 3000;
        decide(2 * SEC);
        assert_null(find(PA_RECLAIM, 1));
        assert_int_equal(state.cg[0].learned_floor, 1084 * MIB + 16 * MIB);
        /* Calm again: nothing is taken below the learned floor. */
        cg[0].stall_ppm = 0;
        decide(10 * SEC);
        assert_null(find(PA_RECLAIM, 1));
        /* The working set grows back: room above the floor is reclaimed again. */
        cg[0].reclaimable = 1300 * MIB;
        decide(11 * SEC);
        assert_non_null(find(PA_RECLAIM, 1));
}

static void test_metadata_cache_max(void **s) {
        hog.metadata_cache_max = 64 * MIB;
        /* Within the dead band (5 % of the cap): nothing. */
        cg[1].slab_reclaimable = 64 * MIB + 64 * MIB / 1000 * AP_SLAB_BAND_PERMILLE;
        decide(1 * SEC);
        assert_null(find(PA_RECLAIM, 2));
        /* Over it, the yield not learnt yet: the smallest request, to learn from. */
        cg[1].slab_reclaimable = 70 * MIB;
        decide(2 * SEC);
        assert_int_equal(must(PA_RECLAIM, 2)->value, AP_SLAB_ASK_MIN);
        assert_non_null(strstr(must(PA_RECLAIM, 2)->reason, "MetadataCacheMax"));
        /* It freed as much as asked: back to the band's lower edge. */
        alloc_point_reclaim_done(&state, 2, AP_SLAB_ASK_MIN, AP_SLAB_ASK_MIN, false, 3 * SEC, SEC);
        decide(4 * SEC);
        assert_int_equal(must(PA_RECLAIM, 2)->value, 6 * MIB + 64 * MIB / 1000 * AP_SLAB_BAND_PERMILLE);
}

/* The hog's slab 16 MiB over a MetadataCacheMax= of 64 MiB, its steps as large, and a first decision at 1 s. */
static void hog_slab_over_its_cap(void) {
        hog.metadata_cache_max = 64 * MIB;
        hog.reclaim_step_max = 64 * MIB;
        cg[1].slab_reclaimable = 80 * MIB;
        decide(1 * SEC);
}

/* Reports what the last request freed as `times` x what it asked, and returns the next request. */
static uint64_t slab_round(uint64_t id, uint64_t now, double times) {
        uint64_t asked = must(PA_RECLAIM, id)->value;

        alloc_point_reclaim_done(&state, id, asked, (uint64_t) ((double) asked * times), false, now, SEC);
        decide(now + SEC / 2);
        return must(PA_RECLAIM, id)->value;
}

static void test_slab_yield_learnt(void **s) {
        uint64_t first, next, excess = 16 * MIB + 64 * MIB / 1000 * AP_SLAB_BAND_PERMILLE;
        uint32_t y;

        hog_slab_over_its_cap();
        first = must(PA_RECLAIM, 2)->value;
        assert_int_equal(first, AP_SLAB_ASK_MIN);
        assert_int_equal(alloc_point_slab_yield(&state, 2), 0);
        /* The kernel freed 21x what it was asked: the next request is a 21st. */
        next = slab_round(2, 2 * SEC, 21);
        assert_int_equal(alloc_point_slab_yield(&state, 2), 21 * AP_YIELD_ONE);
        assert_in_range(next, excess / 21 - 1, excess / 21 + 1);
        assert_non_null(strstr(must(PA_RECLAIM, 2)->reason, "21.00x"));
        /* It then frees 4x: the yield comes down to it, slowly (short of the cap meanwhile). */
        for (int i = 0; i < 16; i++)
                next = slab_round(2, (3 + (uint64_t) i) * SEC, 4);
        y = alloc_point_slab_yield(&state, 2);
        assert_in_range(y, 4 * AP_YIELD_ONE * 9 / 10, 4 * AP_YIELD_ONE * 11 / 10);
        assert_in_range(next, excess / 4 * 9 / 10, excess / 4);
        /* An overshoot counts at once: half of it in one round, the request shrinks. */
        next = slab_round(2, 30 * SEC, 40);
        assert_true(alloc_point_slab_yield(&state, 2) >= 20 * AP_YIELD_ONE);
        assert_true(next <= excess / 20);
}

/* What a reclaim measured while a memory.high write reclaimed the same cgroup teaches nothing. */
static void test_slab_yield_not_learnt_when_shared(void **s) {
        uint64_t asked;

        hog_slab_over_its_cap();
        asked = must(PA_RECLAIM, 2)->value;
        alloc_point_reclaim_done(&state, 2, asked, 30 * asked, true, 2 * SEC, SEC);
        assert_int_equal(alloc_point_slab_yield(&state, 2), 0);
        decide(3 * SEC);
        assert_int_equal(must(PA_RECLAIM, 2)->value, AP_SLAB_ASK_MIN);  /* still the request to learn from */
        /* Once learnt, a shared one leaves it as it was. */
        (void) slab_round(2, 4 * SEC, 3);
        asked = must(PA_RECLAIM, 2)->value;
        alloc_point_reclaim_done(&state, 2, asked, 40 * asked, true, 5 * SEC, SEC);
        assert_int_equal(alloc_point_slab_yield(&state, 2), 3 * AP_YIELD_ONE);
}

static void test_slab_ask_never_under_kernel_minimum(void **s) {
        uint64_t half = 64 * MIB / 10;

        hog_slab_over_its_cap();
        /* Huge batches whatever is asked: 1000x. */
        (void) slab_round(2, 2 * SEC, 1000);
        assert_int_equal(must(PA_RECLAIM, 2)->value, AP_SLAB_ASK_MIN);
        alloc_point_reclaim_done(&state, 2, AP_SLAB_ASK_MIN, 1000 * AP_SLAB_ASK_MIN, false, 3 * SEC, SEC);
        /* The band widens to half such a batch, at most a tenth of the cap: the level swings about the cap. */
        cg[1].slab_reclaimable = 64 * MIB + half;
        decide(4 * SEC);
        assert_null(find(PA_RECLAIM, 2));
        cg[1].slab_reclaimable = 64 * MIB + half + MIB;
        decide(5 * SEC);
        assert_int_equal(must(PA_RECLAIM, 2)->value, AP_SLAB_ASK_MIN);
        /* Nor when what is left to reclaim is under the minimum. */
        alloc_point_reclaim_done(&state, 2, AP_SLAB_ASK_MIN, 0, false, 6 * SEC, SEC);
        cg[1].reclaimable = AP_SLAB_ASK_MIN - 1;
        decide(7 * SEC);
        assert_null(find(PA_RECLAIM, 2));
}

static void test_slab_yield_per_cgroup(void **s) {
        uint64_t a0, a1;

        cold.pressure_target_ppm = 0;
        cold.metadata_cache_max = hog.metadata_cache_max = 64 * MIB;
        cold.reclaim_step_max = hog.reclaim_step_max = 64 * MIB;
        cg[0].slab_reclaimable = cg[1].slab_reclaimable = 80 * MIB;
        decide(1 * SEC);
        assert_int_equal(must(PA_RECLAIM, 1)->value, AP_SLAB_ASK_MIN);
        assert_int_equal(must(PA_RECLAIM, 2)->value, AP_SLAB_ASK_MIN);
        alloc_point_reclaim_done(&state, 1, AP_SLAB_ASK_MIN, 20 * AP_SLAB_ASK_MIN, false, 2 * SEC, SEC);
        alloc_point_reclaim_done(&state, 2, AP_SLAB_ASK_MIN, AP_SLAB_ASK_MIN, false, 2 * SEC, SEC);
        decide(3 * SEC);
        assert_int_equal(alloc_point_slab_yield(&state, 1), 20 * AP_YIELD_ONE);
        assert_int_equal(alloc_point_slab_yield(&state, 2), AP_YIELD_ONE);
        a1 = must(PA_RECLAIM, 2)->value;
        a0 = must(PA_RECLAIM, 1)->value;
        assert_int_equal(a1, 16 * MIB + 64 * MIB / 1000 * AP_SLAB_BAND_PERMILLE);
        assert_in_range(a0, a1 / 20 - 1, a1 / 20 + 1);
        /* A slab reclaim that freed nothing lowers it; a proactive one teaches it nothing. */
        alloc_point_reclaim_done(&state, 1, a0, 0, false, 4 * SEC, SEC);
        assert_int_equal(alloc_point_slab_yield(&state, 1), 15 * AP_YIELD_ONE);
        cold.metadata_cache_max = UINT64_MAX;
        cold.pressure_target_ppm = 1000;
        decide(10 * SEC);
        assert_null(strstr(must(PA_RECLAIM, 1)->reason, "MetadataCacheMax"));
        alloc_point_reclaim_done(&state, 1, must(PA_RECLAIM, 1)->value, 0, false, 11 * SEC, SEC);
        assert_int_equal(alloc_point_slab_yield(&state, 1), 15 * AP_YIELD_ONE);
}

static void test_global_pressure_order(void **s) {
        cold.pressure_target_ppm = 0;
        st.host_stall_ppm = 200000;
        decide(1 * SEC);
        /* Only the lowest priority with room (hog, 10); never the protected db. */
        assert_int_equal(plan.n, 1);
        assert_int_equal(plan.actions[0].cgroup_id, 2);
        assert_null(find(PA_RECLAIM, 3));
        /* Busy or backing off, the hog is not skipped for a higher priority. */
        decide(2 * SEC);
        assert_int_equal(plan.n, 0);
        alloc_point_reclaim_done(&state, 2, 16 * MIB, 0, false, 2 * SEC, SEC);   /* freed nothing: back off */
        decide(3 * SEC);
        assert_int_equal(plan.n, 0);
        /* Once the hog has no room left, the next priority comes. */
        cg[1].reclaimable = 0;
        decide(5 * SEC);
        assert_int_equal(plan.n, 1);
        assert_int_equal(plan.actions[0].cgroup_id, 1);
        /* MemAvailable under its floor is pressure too. */
        setup(NULL);
        cold.pressure_target_ppm = 0;
        st.mem_available = 50 * MIB;
        decide(1 * SEC);
        assert_non_null(find(PA_RECLAIM, 2));
}

static void test_allocation_throttle(void **s) {
        hog.allocation_throttle = true;
        cg[1].growth_rate = 50 * MIB;
        decide(1 * SEC);
        assert_null(find(PA_SET_HIGH, 2)); /* no host pressure */
        st.host_stall_ppm = 300000;
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_HIGH, 2)->value, 500 * MIB);
        decide(3 * SEC);                       /* pressure goes on: held */
        assert_null(find(PA_SET_HIGH, 2));
        st.host_stall_ppm = 0;
        decide(4 * SEC);
        assert_int_equal(must(PA_SET_HIGH, 2)->value, 550 * MIB); /* raised a step */
        for (uint64_t t = 5; t <= 7; t++) {
                decide(t * SEC);
                assert_null(find(PA_LIFT_HIGH, 2));
        }
        decide(8 * SEC);
        assert_non_null(find(PA_LIFT_HIGH, 2)); /* calm for the 5 s hold time since the last pressure at 3 s */
        decide(9 * SEC);
        assert_null(find(PA_LIFT_HIGH, 2));
        assert_null(find(PA_SET_HIGH, 2));
}

/* The hog, growing under host pressure, throttled at its usage at 1 s (only observed if `observe`). */
static void hog_throttled(bool observe) {
        hog.allocation_throttle = true;
        hog.mode = observe ? POLICY_MODE_OBSERVE : POLICY_MODE_ENFORCE;
        cg[1].growth_rate = 50 * MIB;
        st.host_stall_ppm = 300000;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_HIGH, 2)->value, 500 * MIB);
        assert_true(must(PA_SET_HIGH, 2)->observe == observe);
}

/*
 * A raise that fails (a full lane, a ledger that cannot be written) leaves
 * the value written before it in place: the point holds that value again,
 * raises it again and lifts it at the end, rather than forgetting a
 * memory.high that is still lowered.
 */
static void test_failed_raise_is_held_and_lifted(void **s) {
        PointAction a;

        hog_throttled(false);
        assert_int_equal(must(PA_SET_HIGH, 2)->from, 0);
        st.host_stall_ppm = 0;
        decide(2 * SEC);
        a = *must(PA_SET_HIGH, 2);
        assert_int_equal(a.value, 550 * MIB);
        assert_int_equal(a.from, 500 * MIB);
        alloc_point_forget(&state, &a);
        decide(3 * SEC);
        assert_int_equal(must(PA_SET_HIGH, 2)->value, 550 * MIB);     /* raised again from 500 MiB */
        decide(10 * SEC);
        assert_non_null(find(PA_LIFT_HIGH, 2));
        /* A first throttle that fails leaves nothing to hold. */
        st.host_stall_ppm = 300000;
        decide(11 * SEC);
        a = *must(PA_SET_HIGH, 2);
        alloc_point_forget(&state, &a);
        st.host_stall_ppm = 0;
        decide(20 * SEC);
        assert_null(find(PA_LIFT_HIGH, 2));
        assert_null(find(PA_SET_HIGH, 2));
}

/*
 * Pressure that keeps coming back within the hold time: the throttle is
 * raised a tenth a calm tick, and lifted once it is past twice the cgroup's
 * usage (it holds nothing back then) instead of being raised for ever.
 */
static void test_flapping_pressure_lifts_a_loose_throttle(void **s) {
        uint64_t t = 1;
        const PointAction *a = NULL;

        hog_throttled(false);
        for (int i = 0; i < 40 && !a; i++) {
                st.host_stall_ppm = i % 2 ? 300000 : 0;     /* back every other tick, well within 5 s */
                decide(++t * SEC);
                a = find(PA_LIFT_HIGH, 2);
        }
        if (!a) {
                fail_msg("never lifted");
                return;
        }
        assert_non_null(strstr(a->reason, "twice its usage"));
        decide(++t * SEC);
        assert_null(find(PA_SET_HIGH, 2));
}

/* A throttled cgroup missing from one tick's view keeps its throttle: lifted once it is back and calm. */
static void test_throttle_outlives_a_missing_sample(void **s) {
        cg[1].reclaimable = 0;  /* no reclaim of it in flight to keep its state */
        hog_throttled(false);
        st.host_stall_ppm = 0;
        alloc_point_decide(cg, 1, &st, 2 * SEC, &state, &plan);    /* the hog's memory.stat unreadable */
        decide(10 * SEC);
        assert_non_null(find(PA_LIFT_HIGH, 2));
}

/* Decided while observing, under pressure that lasts: written at the first tick the policy enforces. */
static void test_enforce_applies_the_observed_throttle(void **s) {
        const PointAction *a;

        hog_throttled(true);
        decide(2 * SEC);
        assert_null(find(PA_SET_HIGH, 2));     /* held, as observed */
        hog.mode = POLICY_MODE_ENFORCE;
        decide(3 * SEC);
        a = must(PA_SET_HIGH, 2);
        assert_false(a->observe);
        assert_int_equal(a->value, 500 * MIB);
        assert_non_null(strstr(a->reason, "its policy enforces now"));
        /* Its own reason first, not only the mode change. */
        assert_non_null(strstr(a->reason, "the host is under memory pressure: held at 524288000 bytes"));
        assert_non_null(strstr(a->lifts_when, "ThrottleHoldTime"));
        decide(4 * SEC);
        assert_null(find(PA_SET_HIGH, 2));     /* once */
}

/* Decided while observing; the policy enforces once the pressure is gone: nothing is written. */
static void test_enforce_after_the_pressure_writes_nothing(void **s) {
        hog_throttled(true);
        st.host_stall_ppm = 0;
        hog.mode = POLICY_MODE_ENFORCE;
        for (uint64_t t = 2; t <= 10; t++) {
                decide(t * SEC);
                assert_null(find(PA_SET_HIGH, 2));
                assert_null(find(PA_LIFT_HIGH, 2));
        }
}

static void test_exempt_and_observe(void **s) {
        cg[0].exempt = true;
        decide(1 * SEC);
        assert_null(find(PA_RECLAIM, 1));
        cg[0].exempt = false;
        cold.mode = POLICY_MODE_OBSERVE;
        decide(2 * SEC);
        assert_true(must(PA_RECLAIM, 1)->observe);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_step_sized_by_distance_to_target, setup),
                cmocka_unit_test_setup(test_backoff_over_target_grows, setup),
                cmocka_unit_test_setup(test_refaults_climbing_back_off, setup),
                cmocka_unit_test_setup(test_floors, setup),
                cmocka_unit_test_setup(test_stall_after_reclaim_learns_a_floor, setup),
                cmocka_unit_test_setup(test_metadata_cache_max, setup),
                cmocka_unit_test_setup(test_slab_yield_learnt, setup),
                cmocka_unit_test_setup(test_slab_yield_not_learnt_when_shared, setup),
                cmocka_unit_test_setup(test_slab_ask_never_under_kernel_minimum, setup),
                cmocka_unit_test_setup(test_slab_yield_per_cgroup, setup),
                cmocka_unit_test_setup(test_global_pressure_order, setup),
                cmocka_unit_test_setup(test_allocation_throttle, setup),
                cmocka_unit_test_setup(test_failed_raise_is_held_and_lifted, setup),
                cmocka_unit_test_setup(test_flapping_pressure_lifts_a_loose_throttle, setup),
                cmocka_unit_test_setup(test_throttle_outlives_a_missing_sample, setup),
                cmocka_unit_test_setup(test_enforce_applies_the_observed_throttle, setup),
                cmocka_unit_test_setup(test_enforce_after_the_pressure_writes_nothing, setup),
                cmocka_unit_test_setup(test_exempt_and_observe, setup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
