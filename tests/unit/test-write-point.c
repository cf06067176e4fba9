/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the write point's decisions, on plain data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "write-point.h"
#include "util.h"

#define MIB (UINT64_C(1) << 20)
#define SEC USEC_PER_SEC
/* GuardRate=70% of the 16 MiB/s device is for its writers together, shared max-min: the small
 * writer's 1 MiB/s comes off it, and the rest is the heavy writer's. */
#define SHARED (16 * MIB * 7 / 10 - MIB)

static Policy victim_policy, writer_policy, other_policy;
static DeviceRate victim_dev[1], writer_dev[1], other_dev[1];
static WpCgroup cg[3];
static WpDevice dev[1];
static WpSettings st;
static WritePointState state;
static PointPlan plan;

static int setup(void **s) {
        victim_policy = (Policy) { .name = (char *) "victim", .mode = POLICY_MODE_ENFORCE, .priority = 90, .cap_writes = true, .protect = true };
        writer_policy = (Policy) { .name = (char *) "writer", .mode = POLICY_MODE_ENFORCE, .priority = 10, .cap_writes = true };
        other_policy = (Policy) { .name = (char *) "other", .mode = POLICY_MODE_ENFORCE, .priority = 10, .cap_writes = true };
        victim_dev[0] = (DeviceRate) { .major = 8, .minor = 0, .wbytes_per_sec = 40000 };
        writer_dev[0] = (DeviceRate) { .major = 8, .minor = 0, .wbytes_per_sec = 20 * MIB };
        other_dev[0] = (DeviceRate) { .major = 8, .minor = 0, .wbytes_per_sec = 1 * MIB };
        cg[0] = (WpCgroup) { .id = 1, .path = "/victim.slice/db.service", .policy = &victim_policy, .protect = true,
                             .io_limit_ppm = 100000, .have_io_stall = true, .io_stall_ppm = 0,
                             .devices = victim_dev, .n_devices = 1 };
        cg[1] = (WpCgroup) { .id = 2, .path = "/batch.slice/writer.service", .policy = &writer_policy,
                             .have_memory = true, .memory_current = 300 * MIB, .file = 280 * MIB,
                             .memory_limit = 1024 * MIB, .devices = writer_dev, .n_devices = 1 };
        cg[2] = (WpCgroup) { .id = 3, .path = "/batch.slice/small.service", .policy = &other_policy,
                             .devices = other_dev, .n_devices = 1 };
        dev[0] = (WpDevice) { .major = 8, .minor = 0, .write_rate = 16 * MIB, .capacity = 16 * MIB };
        st = (WpSettings) { .hold_usec = 10 * SEC, .write_rate_min_ppm = 100000, .dirty_ratio_pct = 20,
                            .global_guard_ppm = 800000 };
        memset(&state, 0, sizeof(state));
        return 0;
}

static void decide(uint64_t now) {
        write_point_decide(cg, 3, dev, 1, &st, now, &state, &plan);
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
                fail_msg("no %s action for cgroup %llu", point_action_to_string(k), (unsigned long long) id);
                abort();
        }
        return a;
}

static void test_nobody_capped_without_stall(void **s) {
        decide(1 * SEC);
        assert_int_equal(plan.n, 0);
        cg[0].io_stall_ppm = 100000; /* at the limit is not over it */
        decide(2 * SEC);
        assert_int_equal(plan.n, 0);
}

static void test_stall_caps_the_heaviest_writer_then_steps_down_to_floor(void **s) {
        const PointAction *a;

        cg[0].io_stall_ppm = 350000;
        decide(1 * SEC);
        a = must(PA_SET_CAP, 2);
        /* min(its 20 MiB/s, the device's 16 MiB/s completed) * 3/4 */
        assert_int_equal(a->value, 12 * MIB);
        assert_true(a->previous == UINT64_MAX);
        assert_int_equal(a->protected_id, 1);
        assert_int_equal(a->stall_ppm, 350000);
        assert_false(a->observe);
        assert_non_null(strstr(a->reason, "/victim.slice/db.service stalls 35.00%"));
        /* The small writer (a twentieth of the heaviest) and the victim itself are left alone. */
        assert_null(find(PA_SET_CAP, 3));
        assert_null(find(PA_SET_CAP, 1));

        cg[0].io_stall_ppm = 340000; /* falling, but over the limit */
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 9 * MIB);
        for (int t = 3; t < 20; t++) {
                cg[0].io_stall_ppm = MAX(cg[0].io_stall_ppm / 5 * 4, 101000u);
                decide((uint64_t) t * SEC);
        }
        /* Floor: 10% of the 16 MiB/s capacity, but at least 1 MiB/s. */
        assert_int_equal(state.caps[0].wbps, MAX(16 * MIB / 10, MIB));
        decide(21 * SEC);
        assert_null(find(PA_SET_CAP, 2)); /* at its floor: nothing more to do */
}

static void test_first_cap_bounded_by_capacity(void **s) {
        /* A burst: the device completed 24 MiB/s this tick, but sustains 16. */
        dev[0].write_rate = 24 * MIB;
        cg[0].io_stall_ppm = 800000;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 12 * MIB);
        /* Once the writer ends, its cap rises to nine tenths of what the device sustains. */
        assert_int_equal(must(PA_SET_CAP, 2)->drain, 16 * MIB / 10 * 9);
}

static void test_steps_wait_for_the_last_one_to_show(void **s) {
        cg[0].io_stall_ppm = 800000;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 12 * MIB);
        /* A pressure trigger half a second later: too soon for the cap to show. */
        cg[0].io_stall_ppm = 700000;
        decide(1 * SEC + 500000);
        assert_null(find(PA_SET_CAP, 2));
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 9 * MIB);
}

static void test_steps_stop_when_the_stall_does_not_fall(void **s) {
        uint64_t held;

        cg[0].io_stall_ppm = 600000;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 12 * MIB);
        /* One step that brings the stall no lower is tried, then the cap holds. */
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 9 * MIB);
        for (int t = 3; t < 10; t++) {
                decide((uint64_t) t * SEC);
                assert_null(find(PA_SET_CAP, 2));
        }
        /* Calm, then one bad tick: not a lasting stall. */
        cg[0].io_stall_ppm = 20000;
        for (int t = 10; t < 14; t++)
                decide((uint64_t) t * SEC);
        cg[0].io_stall_ppm = 140000;
        decide(14 * SEC);
        assert_null(find(PA_SET_CAP, 2));
        /* After calm (the cap crept up), a new lasting stall: stepping resumes. */
        cg[0].io_stall_ppm = 500000;
        held = state.caps[0].wbps;
        decide(15 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, held / 4 * 3);
}

static void test_a_flicker_under_the_limit_is_not_the_end_of_a_stall(void **s) {
        /* Stalling ticks with one quiet tick between them: one descent. */
        for (int t = 2; t <= 8; t++) {
                cg[0].io_stall_ppm = t % 2 ? 50000 : 900000;
                decide((uint64_t) t * SEC / 2);
        }
        /* 1 s: cap; 2 s: the smoothed stall fell, step; 3 s: it did not, step
         * (first miss); 4 s: second miss, hold. */
        assert_int_equal(state.caps[0].wbps, 12 * MIB / 4 * 3 / 4 * 3);
}

static void test_baseline_is_the_stall_alone(void **s) {
        /* The victim alone: its own fdatasyncs keep it stalling 30 % of the time. */
        writer_dev[0].wbytes_per_sec = 0;
        other_dev[0].wbytes_per_sec = 0;
        dev[0].write_rate = 2 * MIB;
        victim_dev[0].wbytes_per_sec = 2 * MIB;
        cg[0].io_stall_ppm = 300000;
        for (int t = 1; t <= 10; t++)
                decide((uint64_t) t * SEC);
        assert_null(find(PA_SET_CAP, 2));
        assert_int_equal(write_point_baseline(&state, 1), 300000);
        /* The writer arrives: 35 % is within the 10 % limit on top of the 30 %. */
        writer_dev[0].wbytes_per_sec = 20 * MIB;
        dev[0].write_rate = 16 * MIB;
        cg[0].io_stall_ppm = 350000;
        decide(11 * SEC);
        assert_int_equal(plan.n, 0);
        assert_int_equal(write_point_baseline(&state, 1), 300000); /* not learnt while contended */
        cg[0].io_stall_ppm = 450000;
        decide(12 * SEC);
        assert_non_null(strstr(must(PA_SET_CAP, 2)->reason, "stalls 45.00% on io (limit 40.00%, 30.00% of it its own)"));
}

static void test_baseline_learning(void **s) {
        /* Nobody with a policy writes; the device completes more than the
         * victim's own writes (its journal, or a writer without a policy,
         * neither of which can be capped): that is part of its own stall. */
        writer_dev[0].wbytes_per_sec = 0;
        other_dev[0].wbytes_per_sec = 0;
        victim_dev[0].wbytes_per_sec = 1 * MIB;
        dev[0].write_rate = 16 * MIB;
        cg[0].io_stall_ppm = 400000;
        decide(1 * SEC);
        assert_int_equal(write_point_baseline(&state, 1), 400000);
        /* A writer under a policy, even a small one, or a cap on the device: contended. */
        other_dev[0].wbytes_per_sec = 1 * MIB;
        cg[0].io_stall_ppm = 900000;
        decide(2 * SEC);
        assert_int_equal(write_point_baseline(&state, 1), 400000);
        other_dev[0].wbytes_per_sec = 0;
        memset(&state, 0, sizeof(state));
        state.caps[0] = (WpCap) { .cgroup_id = 2, .major = 8, .minor = 0, .wbps = 8 * MIB };
        state.n_caps = 1;
        cg[1].dirty = 32 * MIB;         /* a capped writer whose writes wait in its cap */
        decide(3 * SEC);
        assert_int_equal(write_point_baseline(&state, 1), 0);
        cg[1].dirty = 0;
        memset(&state, 0, sizeof(state));
        /* An idle victim teaches nothing either. */
        victim_dev[0].wbytes_per_sec = 0;
        dev[0].write_rate = 0;
        cg[0].io_stall_ppm = 0;
        decide(6 * SEC);
        assert_int_equal(write_point_baseline(&state, 1), 0);
        /* A baseline goes with its cgroup. */
        victim_dev[0].wbytes_per_sec = 1 * MIB;
        dev[0].write_rate = 1 * MIB;
        cg[0].io_stall_ppm = 200000;
        decide(7 * SEC);
        assert_int_equal(write_point_baseline(&state, 1), 200000);
        write_point_decide(&cg[1], 2, dev, 1, &st, 8 * SEC, &state, &plan);
        assert_int_equal(state.n_baselines, 0);
}

static void test_policy_floor(void **s) {
        writer_policy.write_rate_min = (SizeOrPercent) { .set = true, .bytes = 10 * MIB };
        cg[0].io_stall_ppm = 900000;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 12 * MIB);
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 10 * MIB);
        assert_non_null(strstr(must(PA_SET_CAP, 2)->reason, "at WriteRateMin"));
}

static void test_creep_up_then_lift_after_hold(void **s) {
        const PointAction *a;

        cg[0].io_stall_ppm = 500000;
        decide(1 * SEC);
        assert_int_equal(state.n_caps, 1);
        cg[0].io_stall_ppm = 1000;
        /* Quiet for less than a quarter of the 10 s hold time: held as it is. */
        decide(2 * SEC);
        decide(3 * SEC);
        assert_int_equal(plan.n, 0);
        /* Then up by 5 % of the device per tick, to 90 % of it at most. */
        decide(4 * SEC);
        a = must(PA_SET_CAP, 2);
        assert_int_equal(a->value, 13 * MIB); /* 5 % of 16 MiB/s is under the 1 MiB/s minimum step */
        assert_non_null(strstr(a->reason, "under their limit"));
        for (uint64_t t = 5; t < 11; t++)
                decide(t * SEC);
        assert_int_equal(state.caps[0].wbps, 16 * MIB / 10 * 9);
        assert_null(find(PA_LIFT_CAP, 2));
        /* Lifted once quiet for the whole hold time. */
        decide(11 * SEC);
        assert_non_null(find(PA_LIFT_CAP, 2));
        assert_int_equal(state.n_caps, 0);

        /* A stall while creeping steps it down again. */
        cg[0].io_stall_ppm = 500000;
        decide(20 * SEC);
        cg[0].io_stall_ppm = 0;
        decide(24 * SEC);
        assert_int_equal(state.caps[0].wbps, 13 * MIB);
        cg[0].io_stall_ppm = 500000;
        decide(25 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 13 * MIB / 4 * 3);
}

static void test_never_cap_relatives_protected_or_higher_priority(void **s) {
        /* The writer is the protected cgroup's parent: capping it would cap the victim. */
        cg[1].path = "/victim.slice";
        cg[0].io_stall_ppm = 500000;
        decide(1 * SEC);
        assert_null(find(PA_SET_CAP, 2));
        cg[1].path = "/batch.slice/writer.service";
        writer_policy.priority = 95;
        decide(2 * SEC);
        assert_null(find(PA_SET_CAP, 2));
        writer_policy.priority = 10;
        cg[1].protect = true;
        decide(3 * SEC);
        assert_null(find(PA_SET_CAP, 2));
}

static void test_observe_mode_is_marked(void **s) {
        writer_policy.mode = POLICY_MODE_OBSERVE;
        cg[0].io_stall_ppm = 500000;
        decide(1 * SEC);
        assert_true(must(PA_SET_CAP, 2)->observe);
}

/* Observe, then enforce: what was decided while observing is written at the next tick, not at the next step
 * down, nor never if the stall ends before one. */
static void test_enforce_applies_what_was_observed(void **s) {
        const PointAction *a;

        writer_policy.mode = POLICY_MODE_OBSERVE;
        writer_policy.dirty_limit = (SizeOrPercent) { .set = true, .bytes = 64 * MIB };
        cg[1].dirty = 80 * MIB;
        cg[0].io_stall_ppm = 500000;
        decide(1 * SEC);
        assert_true(must(PA_SET_CAP, 2)->observe);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 12 * MIB);
        assert_true(must(PA_SET_BUDGET, 2)->observe);
        /* Still observing: nothing asked again. */
        cg[0].io_stall_ppm = 0;
        decide(1 * SEC + 100000);
        assert_null(find(PA_SET_CAP, 2));
        assert_null(find(PA_SET_BUDGET, 2));

        writer_policy.mode = POLICY_MODE_ENFORCE;
        decide(1 * SEC + 200000);
        a = must(PA_SET_CAP, 2);
        assert_false(a->observe);
        assert_int_equal(a->value, 12 * MIB);
        assert_true(a->previous == UINT64_MAX);
        assert_int_equal(a->protected_id, 1);
        assert_non_null(strstr(a->reason, "its policy enforces now"));
        assert_non_null(strstr(a->lifts_when, "CapHoldTime"));
        a = must(PA_SET_BUDGET, 2);
        assert_false(a->observe);
        assert_int_equal(a->value, state.budgets[0].high);
        assert_non_null(strstr(a->lifts_when, "with its io.max cap"));
        /* Once: the next tick asks for nothing more. */
        decide(1 * SEC + 300000);
        assert_null(find(PA_SET_CAP, 2));
        assert_null(find(PA_SET_BUDGET, 2));
        /* A failed write is forgotten, and decided afresh. */
        write_point_forget(&state, &(PointAction) { .kind = PA_SET_CAP, .cgroup_id = 2, .major = 8, .minor = 0,
                                                 .previous = UINT64_MAX });
        assert_int_equal(state.n_caps, 0);
}

static void test_gone_writer_is_lifted(void **s) {
        cg[0].io_stall_ppm = 500000;
        decide(1 * SEC);
        assert_int_equal(state.n_caps, 1);
        cg[1].id = 99; /* the capped cgroup is no longer among those with a policy */
        cg[0].io_stall_ppm = 0;
        decide(2 * SEC);
        assert_non_null(find(PA_LIFT_CAP, 2));
        assert_int_equal(state.n_caps, 0);
}

static void test_dirty_budget_with_hysteresis(void **s) {
        const PointAction *a;

        writer_policy.dirty_limit = (SizeOrPercent) { .set = true, .bytes = 64 * MIB };
        writer_policy.dirty_background = (SizeOrPercent) { .set = true, .bytes = 32 * MIB };
        cg[1].dirty = 60 * MIB;
        decide(1 * SEC);
        assert_null(find(PA_SET_BUDGET, 2));
        cg[1].dirty = 80 * MIB;
        decide(2 * SEC);
        a = must(PA_SET_BUDGET, 2);
        /* 20 MiB that is not page cache, plus room for 64 MiB * 100 / 20 of cache. */
        assert_int_equal(a->value, 20 * MIB + 320 * MIB);
        cg[1].dirty = 40 * MIB;       /* under the limit but over the background: kept */
        decide(3 * SEC);
        assert_null(find(PA_LIFT_BUDGET, 2));
        cg[1].dirty = 20 * MIB;
        decide(4 * SEC);
        assert_non_null(find(PA_LIFT_BUDGET, 2));
        assert_int_equal(state.n_budgets, 0);

        /* A budget in percent of the memory limit. */
        writer_policy.dirty_limit = (SizeOrPercent) { .set = true, .is_percent = true, .ppm = 50000 };
        writer_policy.dirty_background = (SizeOrPercent) {};
        cg[1].dirty = 52 * MIB;       /* 5% of 1 GiB is 51.2 MiB */
        decide(5 * SEC);
        assert_non_null(find(PA_SET_BUDGET, 2));
}

/* A percentage that comes to less than the minimum a size may be counts as that minimum. */
static void test_percentages_never_under_the_minimums(void **s) {
        const PointAction *a;

        writer_policy.dirty_limit = (SizeOrPercent) { .set = true, .is_percent = true, .ppm = 1000 };  /* ~1 MiB */
        cg[1].dirty = 6 * MIB;
        decide(1 * SEC);
        assert_null(find(PA_SET_BUDGET, 2));
        cg[1].dirty = 9 * MIB;
        decide(2 * SEC);
        a = must(PA_SET_BUDGET, 2);
        assert_int_equal(a->value, 20 * MIB + POLICY_DIRTY_LIMIT_MIN * 100 / 20);
        assert_non_null(strstr(a->reason, "over 8388608 bytes"));
        /* Held down to the background minimum, not to the ~0.5 MiB a percentage would give. */
        writer_policy.dirty_background = (SizeOrPercent) { .set = true, .is_percent = true, .ppm = 500 };
        cg[1].dirty = 5 * MIB;
        decide(3 * SEC);
        assert_null(find(PA_LIFT_BUDGET, 2));
        cg[1].dirty = 3 * MIB;
        decide(4 * SEC);
        assert_non_null(find(PA_LIFT_BUDGET, 2));

}

/* A write floor in percent that comes to next to nothing: never under 1 MiB/s. */
static void test_write_floor_never_under_the_minimum(void **s) {
        writer_policy.write_rate_min = (SizeOrPercent) { .set = true, .is_percent = true, .ppm = 1 };
        cg[0].io_stall_ppm = 900000;
        for (int t = 1; t < 30; t++) {
                decide((uint64_t) t * SEC);
                cg[0].io_stall_ppm = MAX(cg[0].io_stall_ppm / 5 * 4, 101000u);
        }
        assert_int_equal(state.caps[0].wbps, POLICY_WRITE_RATE_MIN_MIN);
}

static void test_global_guard(void **s) {
        /* Nobody protected doing io: a lone writer is left alone. */
        victim_dev[0].wbytes_per_sec = 0;
        st.host_dirty_threshold = 1000 * MIB;
        st.host_dirty = 900 * MIB;
        cg[1].dirty = 200 * MIB;
        decide(0);
        assert_null(find(PA_SET_BUDGET, 2));
        victim_dev[0].wbytes_per_sec = 40000;
        memset(&state, 0, sizeof(state));
        st.host_dirty_threshold = 1000 * MIB;
        st.host_dirty = 790 * MIB;
        cg[1].dirty = 200 * MIB;
        decide(1 * SEC);
        assert_null(find(PA_SET_BUDGET, 2));
        st.host_dirty = 810 * MIB;
        decide(2 * SEC);
        assert_non_null(find(PA_SET_BUDGET, 2));
        assert_non_null(strstr(must(PA_SET_BUDGET, 2)->reason, "dirty threshold"));
        assert_null(find(PA_SET_BUDGET, 1)); /* protected: never */
        st.host_dirty = 700 * MIB;             /* between the stop and start marks: kept */
        decide(3 * SEC);
        assert_null(find(PA_LIFT_BUDGET, 2));
        st.host_dirty = 500 * MIB;
        decide(4 * SEC);
        assert_non_null(find(PA_LIFT_BUDGET, 2));
}

static void test_writeback_only_with_headroom(void **s) {
        writer_policy.dirty_background = (SizeOrPercent) { .set = true, .bytes = 32 * MIB };
        cg[1].dirty = 100 * MIB;
        dev[0].write_rate = 16 * MIB; /* saturated */
        decide(1 * SEC);
        assert_null(find(PA_WRITEBACK, 2));
        dev[0].write_rate = 2 * MIB;
        cg[0].io_stall_ppm = 500000;  /* room, but a protected cgroup stalls there */
        decide(2 * SEC);
        assert_null(find(PA_WRITEBACK, 2));
        cg[0].io_stall_ppm = 0;
        decide(3 * SEC);
        assert_non_null(find(PA_WRITEBACK, 2));
        decide(4 * SEC);
        assert_null(find(PA_WRITEBACK, 2)); /* one at a time */
        write_point_writeback_done(&state, 2);
        decide(5 * SEC);
        assert_non_null(find(PA_WRITEBACK, 2));
}

static void test_forget_failed_cap(void **s) {
        cg[0].io_stall_ppm = 500000;
        decide(1 * SEC);
        write_point_forget(&state, find(PA_SET_CAP, 2));
        assert_int_equal(state.n_caps, 0);
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 12 * MIB); /* tried again from scratch */
}

/* GuardRate=: capped from the first tick the protected cgroup does io, before any stall. */
static void test_guard_caps_before_a_stall(void **s) {
        const PointAction *a;

        st.guard_rate_ppm = 700000;
        decide(1 * SEC);
        a = must(PA_SET_CAP, 2);
        assert_int_equal(a->value, SHARED);
        assert_non_null(strstr(a->reason, "GuardRate"));
        assert_int_equal(a->protected_id, 1);
        /* The small writer, at a twentieth of the heaviest, gets the guard's ceiling too, but no budget. */
        assert_int_equal(must(PA_SET_CAP, 3)->value, SHARED);
        assert_null(find(PA_SET_BUDGET, 3));
        /* Held there while nothing changes: a guard only sets the first cap. */
        decide(2 * SEC);
        decide(5 * SEC);
        assert_int_equal(plan.n, 0);
}

static void test_guard_steps_down_on_a_stall_and_creeps_back_to_its_level(void **s) {
        uint64_t level = SHARED;

        st.guard_rate_ppm = 700000;
        decide(1 * SEC);
        cg[0].io_stall_ppm = 500000;
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, level / 8 * 7);
        cg[0].io_stall_ppm = 1000;
        /* The capacity estimate drifts up with the bursts a busy device lets through: the
         * creep still stops where the guard began. */
        dev[0].capacity = 24 * MIB;
        for (uint64_t t = 3; t < 12; t++)
                decide(t * SEC);
        /* Back up while the victim does not stall, but never past GuardRate= as it was: on a
         * 24 MiB/s device the small writer's 1 MiB/s is a trickle, so the writer's part is the
         * whole of the first level, not 70 % of the drifted estimate. */
        assert_int_equal(state.caps[0].wbps, 16 * MIB * 7 / 10);
        assert_int_equal(state.n_caps, 2);      /* the writer's, and the small writer's standing one */
}

static const WpCap *cap_of(uint64_t id) {
        for (size_t i = 0; i < state.n_caps; i++)
                if (state.caps[i].cgroup_id == id)
                        return &state.caps[i];
        fail_msg("no cap on cgroup %llu", (unsigned long long) id);
        abort();
}

/* GuardRate= is for all the writers on the device together: ten writers at full speed get a tenth each
 * (their caps sum to the guard, not to ten times it); when nine stop, the last one's part grows back to
 * the whole; a writer that comes later brings the others' parts down at once. */
static void test_guard_is_shared_by_all_writers(void **s) {
        enum { N = 11 };
        static WpCgroup many[N];
        static DeviceRate rate[N][1];
        uint64_t level = 16 * MIB * 7 / 10, sum = 0, t;

        st.guard_rate_ppm = 700000;
        many[0] = cg[0];
        /* Their first tick: what a dd has written is no measure of what it will (1 MiB/s so far, ten
         * of them less than the guard), its dirty data is (64 MiB). */
        for (size_t i = 1; i < N; i++) {
                rate[i][0] = (DeviceRate) { .major = 8, .minor = 0, .wbytes_per_sec = MIB };
                many[i] = (WpCgroup) { .id = 100 + i, .path = "/batch.slice/dd.service", .policy = &other_policy,
                                       .devices = rate[i], .n_devices = 1, .dirty = 64 * MIB };
        }
        write_point_decide(many, N, dev, 1, &st, 1 * SEC, &state, &plan);
        assert_int_equal(state.n_caps, N - 1);
        /* (The default floor, WriteRateMin=10%, is shared too: a tenth of it each, 1 MiB/s at least.) */
        for (size_t i = 0; i < state.n_caps; i++) {
                assert_int_equal(state.caps[i].wbps, MAX(level / 10, MIB));
                sum += state.caps[i].wbps;
        }
        assert_true(sum <= level);
        /* What each drains at when it ends is shared too: nine tenths of the device over the ten. */
        assert_int_equal(must(PA_SET_CAP, 101)->drain, 16 * MIB / 10 * 9 / 10);
        /* Each is held at its cap: nine stop (no io, no dirty data), one goes on. A writer held by
         * io.max writes back in bursts, and a tick between two shows nothing: the nine keep their
         * parts for WP_SHARE_HOLD_USEC. */
        for (size_t i = 1; i < N; i++) {
                rate[i][0].wbytes_per_sec = i == 1 ? level / 10 : 0;
                many[i].dirty = i == 1 ? 8 * MIB : 0;
        }
        write_point_decide(many, N, dev, 1, &st, 2 * SEC, &state, &plan);
        assert_int_equal(cap_of(101)->wbps, MAX(level / 10, MIB));
        /* Then the last one's part is the whole guard again: its ceiling at once, its cap climbing
         * to it a step a tick (the creep), never past it. */
        t = 1 * SEC + WP_SHARE_HOLD_USEC;
        write_point_decide(many, N, dev, 1, &st, t, &state, &plan);
        assert_int_equal(cap_of(101)->guard_wbps, level);
        for (int k = 0; k < 20 && cap_of(101)->wbps < level; k++) {
                rate[1][0].wbytes_per_sec = cap_of(101)->wbps;
                t += SEC / 2;
                write_point_decide(many, N, dev, 1, &st, t, &state, &plan);
        }
        assert_int_equal(cap_of(101)->wbps, level);
        /* One comes back: both parts at half; the cap above it comes down at once, the one under it
         * may climb to it. */
        rate[1][0].wbytes_per_sec = level;
        rate[2][0].wbytes_per_sec = 20 * MIB;
        write_point_decide(many, N, dev, 1, &st, t + SEC / 2, &state, &plan);
        assert_int_equal(cap_of(101)->wbps, level / 2);
        assert_int_equal(cap_of(102)->guard_wbps, level / 2);
        assert_true(cap_of(102)->wbps <= level / 2);
        assert_non_null(strstr(must(PA_SET_CAP, 101)->reason, "shared by the writers there (2 now"));
}

/* A slice's cap held over writers capped below it (core/runner-write.c's keep_deepest()) is not one more
 * writer when the drain rate is shared: two writers under it drain at half of nine tenths of the device
 * each, not a third; the slice, which all they drain goes through, at both halves. The tick their caps
 * come (the slice is above them, not yet marked superseded: that needs their caps from the tick before)
 * and the ticks after. */
static void drain_without_a_held_slice(bool superseded) {
        static WpCgroup w[4];
        static DeviceRate rate[4][1];
        uint64_t half = 16 * MIB / 10 * 9 / 2;
        const PointAction *slice;

        st.guard_rate_ppm = 700000;
        w[0] = cg[0];
        for (size_t i = 1; i < 4; i++)
                rate[i][0] = (DeviceRate) { .major = 8, .minor = 0, .wbytes_per_sec = MIB };
        w[1] = (WpCgroup) { .id = 50, .path = "/batch.slice/jobs", .policy = &other_policy, .implicit = true,
                            .above_writers = true, .superseded = superseded, .devices = rate[1], .n_devices = 1,
                            .dirty = 128 * MIB };
        w[2] = (WpCgroup) { .id = 51, .path = "/batch.slice/jobs/w1", .policy = &other_policy,
                            .devices = rate[2], .n_devices = 1, .dirty = 64 * MIB };
        w[3] = (WpCgroup) { .id = 52, .path = "/batch.slice/jobs/w2", .policy = &other_policy,
                            .devices = rate[3], .n_devices = 1, .dirty = 64 * MIB };
        /* The slice's cap, from the ticks before its writers were found. */
        state.caps[state.n_caps++] = (WpCap) { .cgroup_id = 50, .major = 8, .minor = 0, .wbps = 4 * MIB,
                                               .protected_id = 1, .active_usec = 1 * SEC };
        write_point_decide(w, 4, dev, 1, &st, 1 * SEC, &state, &plan);
        assert_int_equal(state.n_caps, 3);
        assert_int_equal(must(PA_SET_CAP, 51)->drain, MAX(half, must(PA_SET_CAP, 51)->value));
        assert_int_equal(must(PA_SET_CAP, 52)->drain, MAX(half, must(PA_SET_CAP, 52)->value));
        /* Superseded, it is raised to the sum of their caps this tick. */
        if ((slice = superseded ? must(PA_SET_CAP, 50) : find(PA_SET_CAP, 50)))
                assert_int_equal(slice->drain, MAX(2 * half, slice->value));
}

static void test_drain_shared_without_a_held_slice(void **s) {
        drain_without_a_held_slice(false);
}

static void test_drain_shared_without_a_superseded_slice(void **s) {
        drain_without_a_held_slice(true);
}

/* Two protected cgroups on one device, a writer cappable for one of them only: both come to one level
 * for the writers there, so no cap follows each in turn. */
static void test_guard_level_is_the_same_for_every_protected_cgroup(void **s) {
        static Policy low_protect;
        static DeviceRate dev2[1];
        WpCgroup four[4];

        st.guard_rate_ppm = 700000;
        low_protect = (Policy) { .name = (char *) "low", .mode = POLICY_MODE_ENFORCE, .priority = 5,
                                 .cap_writes = true, .protect = true };
        dev2[0] = (DeviceRate) { .major = 8, .minor = 0, .wbytes_per_sec = 40000 };
        memcpy(four, cg, sizeof(cg));
        four[3] = (WpCgroup) { .id = 4, .path = "/low.slice/cache.service", .policy = &low_protect,
                               .protect = true, .io_limit_ppm = 100000, .have_io_stall = true,
                               .devices = dev2, .n_devices = 1 };
        /* Two heavy writers: the writer (priority 10) may be capped for db (90) only, the other (0) for
         * both. */
        other_dev[0].wbytes_per_sec = 20 * MIB;
        other_policy.priority = 0;
        for (uint64_t t = 1; t <= 4; t++) {
                write_point_decide(four, 4, dev, 1, &st, t * SEC, &state, &plan);
                if (t > 1)
                        assert_int_equal(plan.n, 0);
        }
        assert_int_equal(cap_of(2)->wbps, 16 * MIB * 7 / 10 / 2);
        assert_int_equal(cap_of(3)->wbps, 16 * MIB * 7 / 10 / 2);
}

/* Under a guard a lasting stall takes one step off at most; a stall's first cap is the guard's. */
static void test_guard_steps_down_once_at_most(void **s) {
        uint64_t level = SHARED;

        st.guard_rate_ppm = 700000;
        cg[0].io_stall_ppm = 900000;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, level);
        for (uint64_t t = 2; t < 10; t++) {
                cg[0].io_stall_ppm = (uint32_t) (900000 - t * 1000);
                decide(t * SEC);
        }
        assert_int_equal(state.caps[0].wbps, level / 8 * 7);
}

static void test_guard_lifts_once_the_protected_cgroup_is_idle(void **s) {
        st.guard_rate_ppm = 700000;
        decide(1 * SEC);
        assert_int_equal(state.n_caps, 2);
        victim_dev[0].wbytes_per_sec = 0;
        decide(5 * SEC);
        assert_null(find(PA_LIFT_CAP, 2));
        decide(11 * SEC);   /* no io for the 10 s hold time */
        assert_non_null(find(PA_LIFT_CAP, 2));
        assert_int_equal(state.n_caps, 0);
        /* The writer alone is not capped again. */
        decide(12 * SEC);
        decide(13 * SEC);
        assert_int_equal(state.n_caps, 0);
}

/* A capped writer's dirty+writeback is held to a second at its cap (16 MiB at least), resized with the cap,
 * and lifted with it. */
static void test_cap_holds_the_writers_backlog(void **s) {
        const PointAction *a;

        st.guard_rate_ppm = 700000;
        dev[0].capacity = dev[0].write_rate = 100 * MIB;
        writer_dev[0].wbytes_per_sec = 90 * MIB;
        cg[1].dirty = 200 * MIB;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 70 * MIB);
        a = must(PA_SET_BUDGET, 2);
        assert_int_equal(a->value, write_point_budget_high(&cg[1], 70 * MIB, 20));
        assert_true(a->previous == UINT64_MAX);
        assert_non_null(strstr(a->reason, "a second at the cap"));
        /* A stall steps the cap down: the budget follows. */
        cg[0].io_stall_ppm = 500000;
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 70 * MIB / 8 * 7);
        a = must(PA_SET_BUDGET, 2);
        assert_int_equal(a->value, write_point_budget_high(&cg[1], 70 * MIB / 8 * 7, 20));
        assert_int_equal(a->previous, write_point_budget_high(&cg[1], 70 * MIB, 20));
        /* Quiet for the hold time: cap and budget go together. */
        cg[0].io_stall_ppm = 0;
        victim_dev[0].wbytes_per_sec = 0;
        for (uint64_t t = 3; t < 14; t++)
                decide(t * SEC);
        assert_int_equal(state.n_caps, 0);
        assert_int_equal(state.n_budgets, 0);
}

/* A slow cap still leaves the writer 16 MiB; a tighter DirtyLimit= sizes the budget instead. */
static void test_cap_budget_floor_and_a_tighter_one(void **s) {
        st.guard_rate_ppm = 700000;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_BUDGET, 2)->value, write_point_budget_high(&cg[1], 16 * MIB, 20));
        setup(s);
        st.guard_rate_ppm = 700000;
        writer_policy.dirty_limit = (SizeOrPercent) { .set = true, .bytes = 8 * MIB };
        cg[1].dirty = 100 * MIB;
        decide(1 * SEC);
        /* DirtyLimit= is tighter than 16 MiB: the one budget set is sized for it. */
        assert_int_equal(must(PA_SET_CAP, 2)->value, SHARED);
        assert_int_equal(must(PA_SET_BUDGET, 2)->value, write_point_budget_high(&cg[1], 8 * MIB, 20));
        for (size_t i = 0, n = 0; i < plan.n; i++)
                if (plan.actions[i].kind == PA_SET_BUDGET)
                        assert_int_equal(++n, 1);
}

/* Blocked behind the writer, the protected cgroup completes nothing, but it waits on io: still active. */
static void test_guard_holds_while_the_protected_cgroup_waits(void **s) {
        uint64_t level = SHARED;

        st.guard_rate_ppm = 700000;
        decide(1 * SEC);
        cg[0].io_stall_ppm = 500000;
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, level / 8 * 7);
        /* Its fdatasync waits: no bytes done, a stall under its limit. The capacity estimate drifts up. */
        victim_dev[0].wbytes_per_sec = 0;
        cg[0].io_stall_ppm = 60000;
        dev[0].capacity = 24 * MIB;
        for (uint64_t t = 3; t < 30; t++)
                decide(t * SEC);
        /* Neither lifted after the hold time nor crept past the guard's first level (the small
         * writer a trickle now, as above). */
        assert_int_equal(state.n_caps, 2);
        assert_int_equal(state.caps[0].wbps, 16 * MIB * 7 / 10);
        /* Idle for real (no io, no stall): lifted after the hold time. */
        cg[0].io_stall_ppm = 0;
        for (uint64_t t = 30; t < 42; t++)
                decide(t * SEC);
        assert_int_equal(state.n_caps, 0);
}

/* A dd fills the page cache before its first write reaches a device: its dirty data is enough. */
static void test_guard_caps_a_dirtier_before_its_first_write(void **s) {
        st.guard_rate_ppm = 700000;
        writer_dev[0].wbytes_per_sec = 0;
        cg[1].n_devices = 0;
        cg[1].dirty = 64 * MIB;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, SHARED);
        assert_int_equal(must(PA_SET_CAP, 2)->major, 8);
}

/* A fresh daemon that has never seen the device saturated has nothing to size a guard from. */
static void test_guard_without_capacity(void **s) {
        st.guard_rate_ppm = 700000;
        dev[0].capacity = 0;
        dev[0].write_rate = 2 * MIB;
        decide(1 * SEC);
        assert_int_equal(plan.n, 0);
        /* A stall still caps, as without a guard: 3/4 of what the device completes, here under the
         * floor (a tenth of the writer's 20 MiB/s while the capacity is not known). */
        cg[0].io_stall_ppm = 500000;
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 2 * MIB);
        assert_int_equal(must(PA_SET_CAP, 2)->drain, 0);       /* no rate known to drain at: lifted */
        assert_null(strstr(must(PA_SET_CAP, 2)->reason, "GuardRate"));
        setup(s);
        st.guard_rate_ppm = 700000;
        dev[0].capacity = 0;
        decide(1 * SEC);
        /* Once the writer has saturated it, the guard begins. */
        dev[0].capacity = 16 * MIB;
        decide(3 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, SHARED);
}

/* Writers that do not write yet (or only a trickle) get the guard's cap before their first burst, and
 * no backlog budget: one sized for a writer would take their cache. Once one writes, its budget comes. */
static void test_guard_stands_before_the_first_write(void **s) {
        st.guard_rate_ppm = 700000;
        writer_dev[0].wbytes_per_sec = MIB / 2;
        other_dev[0].wbytes_per_sec = 0;
        cg[1].dirty = 0;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 16 * MIB * 7 / 10);
        assert_int_equal(must(PA_SET_CAP, 3)->value, 16 * MIB * 7 / 10);
        assert_null(find(PA_SET_BUDGET, 2));
        assert_null(find(PA_SET_BUDGET, 3));
        writer_dev[0].wbytes_per_sec = 12 * MIB;
        decide(2 * SEC);
        assert_null(find(PA_SET_CAP, 2));
        assert_non_null(find(PA_SET_BUDGET, 2));
        assert_null(find(PA_SET_BUDGET, 3));
        /* Not a protected cgroup's relative, nor a more important one. */
        other_policy.priority = 95;
        memset(&state, 0, sizeof(state));
        decide(3 * SEC);
        assert_null(find(PA_SET_CAP, 3));
}

/* The standing guard: a protected cgroup that runs is guarded on the devices its io.stat lists before
 * it does any io, whichever starts first; one that does not run is not, and once it has stopped its
 * writers' caps go after the hold time. */
static void test_guard_stands_while_the_protected_cgroup_runs(void **s) {
        const PointAction *a;

        st.guard_rate_ppm = 700000;
        victim_dev[0].wbytes_per_sec = 0;
        writer_dev[0].wbytes_per_sec = 0;
        other_dev[0].wbytes_per_sec = 0;
        cg[1].dirty = 0;
        decide(1 * SEC);        /* idle and not running: nothing to guard */
        assert_int_equal(plan.n, 0);
        cg[0].running = true;
        decide(2 * SEC);
        a = must(PA_SET_CAP, 2);
        assert_int_equal(a->value, 16 * MIB * 7 / 10);
        assert_non_null(strstr(a->reason, "/victim.slice/db.service runs and uses 8:0: writers held to GuardRate "
                                          "while it runs"));
        assert_non_null(strstr(a->lifts_when, "have not run, stalled or done io there for CapHoldTime"));
        assert_int_equal(must(PA_SET_CAP, 3)->value, 16 * MIB * 7 / 10);
        /* Idle for far longer than the hold time, but running: the caps stand. */
        decide(30 * SEC);
        assert_null(find(PA_LIFT_CAP, 2));
        assert_int_equal(state.n_caps, 2);
        /* It stops: the hold time after its last tick, they go. */
        cg[0].running = false;
        decide(35 * SEC);
        assert_null(find(PA_LIFT_CAP, 2));
        decide(41 * SEC);
        assert_non_null(find(PA_LIFT_CAP, 2));
        assert_non_null(find(PA_LIFT_CAP, 3));
}

/* A protected service that has just started has done no io: its device cannot be named yet, so every
 * device of known capacity is guarded until its io.stat lists one, and a writer there is capped. */
static void test_guard_of_a_service_with_no_io_yet(void **s) {
        st.guard_rate_ppm = 700000;
        cg[0].running = true;
        cg[0].n_devices = 0;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, SHARED);
        /* Not a device whose capacity is unknown: nothing to size the guard from. */
        memset(&state, 0, sizeof(state));
        dev[0].capacity = 0;
        decide(2 * SEC);
        assert_null(find(PA_SET_CAP, 2));
}

/* CapWrites=no: the policy's cgroups are never capped for a protected one, neither by a guard nor at a
 * stall; the others still are. */
static void test_cap_writes_no_exempts(void **s) {
        writer_policy.cap_writes = false;
        st.guard_rate_ppm = 700000;
        cg[0].io_stall_ppm = 800000;
        decide(1 * SEC);
        assert_null(find(PA_SET_CAP, 2));
        assert_non_null(find(PA_SET_CAP, 3));
        decide(2 * SEC);
        decide(3 * SEC);
        assert_null(find(PA_SET_CAP, 2));
}

/* A cgroup under no policy (CapWritersWithoutPolicy=) is capped once it writes, not before: a host has
 * hundreds that once wrote a line to a log on the device. */
static void test_writer_without_policy_capped_once_it_writes(void **s) {
        st.guard_rate_ppm = 700000;
        cg[0].running = true;
        cg[2].implicit = true;
        other_dev[0].wbytes_per_sec = 0;
        decide(1 * SEC);
        assert_non_null(find(PA_SET_CAP, 2));
        assert_null(find(PA_SET_CAP, 3));
        other_dev[0].wbytes_per_sec = 8 * MIB;
        decide(2 * SEC);
        /* Two writers, each wanting more than half the guard's share: half each. */
        assert_int_equal(must(PA_SET_CAP, 3)->value, 16 * MIB * 7 / 10 / 2);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 16 * MIB * 7 / 10 / 2);
        assert_false(must(PA_SET_CAP, 3)->observe);
}

/* A cgroup made beside a running protected one is capped on the guarded device before it has done any
 * io, under a policy or not: a writer's cgroup is made, then its process starts, and a cap that comes at
 * its first write comes after the flusher has queued its first second on the device. One that has not
 * written by the end of WP_NEWBORN_USEC has its cap lifted and is not capped again while it is idle; one
 * that writes keeps it. */
static void test_new_cgroup_capped_before_its_first_write(void **s) {
        st.guard_rate_ppm = 700000;
        cg[0].running = true;
        cg[1].implicit = cg[1].newborn = true;
        cg[1].n_devices = 0;    /* its io.stat lists no device yet */
        cg[1].dirty = 0;
        cg[2].newborn = true;
        cg[2].n_devices = 0;
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 16 * MIB * 7 / 10);
        assert_int_equal(must(PA_SET_CAP, 3)->value, 16 * MIB * 7 / 10);
        /* cgroup 2 starts writing; cgroup 3 never does. */
        cg[1].dirty = 200 * MIB;
        decide(2 * SEC);
        assert_null(find(PA_LIFT_CAP, 2));
        cg[1].newborn = cg[2].newborn = false;
        cg[1].dirty = 0;        /* a pause between two files: still a writer's cap */
        decide(12 * SEC);
        assert_null(find(PA_LIFT_CAP, 2));
        assert_non_null(strstr(must(PA_LIFT_CAP, 3)->reason, "has not written since"));
        for (size_t i = 0; i < state.n_caps; i++)
                assert_int_not_equal(state.caps[i].cgroup_id, 3);
        decide(13 * SEC);
        assert_null(find(PA_SET_CAP, 3));
        /* Not new: an idle cgroup under no policy that has never done io there is left alone. */
        memset(&state, 0, sizeof(state));
        decide(14 * SEC);
        assert_null(find(PA_SET_CAP, 2));
}

/* IOLatencyTarget=: the victim's io wait per request over the tick (stall time over requests). */
static void victim_waits(uint64_t stall_usec, uint64_t ios) {
        cg[0].io_stall_usec = stall_usec;
        cg[0].io_stall_ppm = (uint32_t) MIN(stall_usec * 2, UINT64_C(1000000));    /* ticks of 0.5 s */
        victim_dev[0].ios = ios;
}

/* Over the target the cap is cut in proportion, half at most, whatever the stall share says; one
 * cut per WP_LATENCY_STEP_USEC. */
static void test_latency_cuts_the_cap_in_proportion(void **s) {
        uint64_t level = SHARED;

        st.guard_rate_ppm = 700000;
        cg[0].io_latency_target_usec = 10000;
        victim_waits(250000, 50);       /* 5 ms a request */
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, level);
        victim_waits(150000, 10);       /* 15 ms: smoothed (5 + 15) / 2 = 10 ms, at the target */
        decide(1 * SEC + SEC / 2);
        assert_null(find(PA_SET_CAP, 2));
        victim_waits(140000, 10);       /* 14 ms: smoothed 12 ms */
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, level / 1000 * (10000 * 1000 / 12000));
        assert_non_null(strstr(must(PA_SET_CAP, 2)->reason, "IOLatencyTarget"));
        /* Too soon for another cut. */
        victim_waits(400000, 4);
        decide(2 * SEC + SEC / 4);
        assert_null(find(PA_SET_CAP, 2));
        /* Far over: half at most. */
        decide(3 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, level / 1000 * 833 / 1000 * 500);
        /* Back under: raised again, but an eighth under where it was last cut from, a limit
         * that climbs back to that cap in WP_KNEE_RETURN_SEC and on past it at that pace. */
        victim_waits(10000, 50);        /* 0.2 ms: smoothed down within a few ticks */
        for (uint64_t t = 7; t < 2 * 3 * WP_KNEE_RETURN_SEC; t++) {
                uint64_t since = (t * SEC / 2 - state.caps[0].knee_usec) / SEC;

                decide(t * SEC / 2);
                assert_true(state.caps[0].wbps <= level / 8 * 7 + since * (level / 8) / WP_KNEE_RETURN_SEC);
                if (t == 100)   /* 50 s: the bound holds it back, under the knee itself */
                        assert_true(state.caps[0].wbps < level);
                if (t == 2 * WP_KNEE_RETURN_SEC + 2)    /* back at the knee, no jump past it */
                        assert_true(state.caps[0].wbps <= level + level / 8 / WP_KNEE_RETURN_SEC);
                /* The cuts after the first, while the queue drains, do not move the knee. */
                assert_int_equal(state.caps[0].knee_wbps, level);
        }
        /* And on past it at the same pace, up to nine tenths of the device. */
        assert_true(state.caps[0].wbps > level);
}

/* A spike cuts once: the tick after it, drained, cuts no more though the smoothed figure is still high;
 * nor is the cap raised before the smoothed figure is down too. */
static void test_latency_a_drained_queue_needs_no_second_cut(void **s) {
        uint64_t level = SHARED;

        st.guard_rate_ppm = 700000;
        cg[0].io_latency_target_usec = 10000;
        victim_waits(100000, 50);
        decide(1 * SEC);
        victim_waits(400000, 4);        /* 100 ms a request */
        decide(1 * SEC + SEC / 2);
        assert_int_equal(must(PA_SET_CAP, 2)->value, level / 1000 * 500);
        victim_waits(50000, 50);        /* 1 ms: the smoothed figure is still about 50 */
        decide(2 * SEC);
        decide(2 * SEC + SEC / 2);
        assert_null(find(PA_SET_CAP, 2));
        assert_int_equal(state.caps[0].wbps, level / 1000 * 500);
}

/* Within a second of a cut, the queue it could not touch still drains: a tick's latency as high as the
 * one the cut answered, or lower, cuts no more, though the smoothed figure climbs on towards it; a higher
 * one does. The guard's first cap and a raise are not cuts: the next cut may come half a second on. */
static void test_latency_holds_while_the_queue_before_a_cut_drains(void **s) {
        uint64_t level = SHARED, cut;

        st.guard_rate_ppm = 700000;
        cg[0].io_latency_target_usec = 10000;
        victim_waits(160000, 10);       /* 16 ms */
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, level);
        /* 16 ms again: the guard's cap was no cut, so half a second on this one comes. */
        decide(1 * SEC + SEC / 2);
        cut = must(PA_SET_CAP, 2)->value;
        assert_int_equal(cut, level / 1000 * (10000 * 1000 / 16000));
        /* 16 ms again: level with the cut's: held. */
        decide(2 * SEC);
        assert_null(find(PA_SET_CAP, 2));
        /* 20 ms: grown since the cut, cut again by the lower figure (smoothed 18). */
        victim_waits(200000, 10);
        decide(2 * SEC + SEC / 2);
        assert_int_equal(must(PA_SET_CAP, 2)->value, cut / 1000 * (10000 * 1000 / 18000));
        cut = state.caps[0].wbps;
        /* Down to 1 ms: smoothed 9.5, held; then 5.25, under three quarters of the target: raised. */
        victim_waits(50000, 50);
        decide(3 * SEC);
        assert_null(find(PA_SET_CAP, 2));
        decide(3 * SEC + SEC / 2);
        assert_int_equal(must(PA_SET_CAP, 2)->value, cut + MIB);     /* a twentieth of the device, a MiB at least */
        cut = state.caps[0].wbps;
        /* 16 ms half a second after the raise: under the 20 of the last cut, but a raise came since. */
        victim_waits(160000, 10);
        decide(4 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, cut / 1000 * (10000 * 1000 / 10625));
        cut = state.caps[0].wbps;
        /* Held while the latency stays at 16 ms, and the smoothed figure climbs on to 13.3; a second
         * after that cut, still over: cut by the smoothed 14.66 ms. */
        decide(4 * SEC + SEC / 2);
        assert_null(find(PA_SET_CAP, 2));
        decide(5 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, cut / 1000 * (10000 * 1000 / 14656));
}

/* The figure held against is the tick's own: a tick that rises past the cut's counts as grown even
 * while the smoothed figure, which the cut's size comes from, is still level with it. */
static void test_latency_hold_compares_the_tick_not_the_smoothed_figure(void **s) {
        uint64_t cut;

        st.guard_rate_ppm = 700000;
        cg[0].io_latency_target_usec = 10000;
        victim_waits(400000, 50);       /* 8 ms: the guard's cap */
        decide(1 * SEC);
        victim_waits(160000, 10);       /* 16 ms, smoothed 12: cut, the tick's 16 recorded */
        decide(1 * SEC + SEC / 2);
        cut = must(PA_SET_CAP, 2)->value;
        victim_waits(200000, 10);       /* 20 ms, smoothed 16: the lower, 16, is level with the cut's */
        decide(2 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, cut / 1000 * (10000 * 1000 / 16000));
}

/* The latency a cut answered is its protected cgroup's: another one over its own target, half a second
 * on, is not held back by a higher figure of the first. */
static void test_latency_hold_is_for_the_same_protected_cgroup(void **s) {
        cg[0].io_latency_target_usec = 10000;
        victim_waits(400000, 10);       /* 40 ms */
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 12 * MIB);
        assert_int_equal(state.caps[0].protected_id, 1);
        victim_waits(10000, 50);        /* 0.2 ms: the first is under its target now */
        cg[2] = (WpCgroup) { .id = 3, .path = "/victim.slice/cache.service", .policy = &victim_policy,
                             .protect = true, .io_limit_ppm = 100000, .have_io_stall = true,
                             .io_stall_ppm = 100000, .io_stall_usec = 50000, .io_latency_target_usec = 2000,
                             .devices = other_dev, .n_devices = 1 };
        other_dev[0].ios = 10;          /* 5 ms, over its 2 ms */
        decide(1 * SEC + SEC / 2);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 12 * MIB / 1000 * 500);
        assert_int_equal(state.caps[0].protected_id, 3);
}

/* Under three quarters of the target the cap goes up, past the guard's level, to the device's capacity;
 * between three quarters and the target it holds. */
static void test_latency_raises_the_cap_past_the_guard(void **s) {
        uint64_t level = SHARED, t = 1 * SEC;

        st.guard_rate_ppm = 700000;
        cg[0].io_latency_target_usec = 10000;
        victim_waits(100000, 50);       /* 2 ms: under half the target */
        decide(t);
        assert_int_equal(must(PA_SET_CAP, 2)->value, level);
        /* The small writer's standing cap, which it does not reach, is not raised. */
        for (int i = 0; i < 12; i++)
                decide(t + (uint64_t) i * SEC / 2);
        assert_int_equal(state.caps[1].cgroup_id, 3);
        assert_int_equal(state.caps[1].wbps, level);
        memset(&state, 0, sizeof(state));
        decide(t);
        /* The writer has used its cap for half a second only: the latency says nothing yet of the
         * queue it will fill, and the cap is held. */
        decide(t += SEC / 2);
        assert_null(find(PA_SET_CAP, 2));
        decide(t += SEC / 2);
        assert_int_equal(must(PA_SET_CAP, 2)->value, level + 16 * MIB / 10);
        /* A pause of the writer starts the wait again: a second of its cap after it comes back. */
        writer_dev[0].wbytes_per_sec = 0;
        decide(t += SEC / 2);
        assert_null(find(PA_SET_CAP, 2));
        writer_dev[0].wbytes_per_sec = 20 * MIB;
        decide(t += SEC / 2);
        assert_null(find(PA_SET_CAP, 2));
        decide(t += SEC / 2);
        assert_null(find(PA_SET_CAP, 2));
        decide(t += SEC / 2);
        assert_int_equal(must(PA_SET_CAP, 2)->value, MIN(must(PA_SET_CAP, 2)->previous + 16 * MIB / 10, 16 * MIB / 10 * 9));
        for (int i = 0; i < 6; i++)
                decide(t += SEC / 2);
        /* Nine tenths of the device at most: without a shallow queue the rest fills it within a tick. */
        assert_int_equal(state.caps[0].wbps, 16 * MIB / 10 * 9);
        assert_int_equal(state.n_caps, 2);   /* the caps stay while the victim is active */
        /* Between three quarters and the target: held. */
        victim_waits(450000, 50);       /* 9 ms: smoothed to about 9 */
        decide(t += SEC / 2);
        decide(t += SEC / 2);
        decide(t += SEC / 2);
        assert_null(find(PA_SET_CAP, 2));
        assert_int_equal(state.caps[0].wbps, 16 * MIB / 10 * 9);
        /* With ManageQueueDepth= the whole device. */
        st.manage_queue_depth = true;
        victim_waits(100000, 50);
        decide(t += SEC / 2);
        decide(t += SEC / 2);
        decide(t += SEC / 2);
        assert_int_equal(state.caps[0].wbps, 16 * MIB);
        victim_waits(450000, 50);
        decide(t += SEC / 2);
        decide(t += SEC / 2);
        /* Still lifted once the victim has been idle for the hold time. */
        victim_waits(0, 0);
        victim_dev[0].wbytes_per_sec = 0;
        decide(t += 5 * SEC);
        assert_null(find(PA_LIFT_CAP, 2));
        decide(t += 6 * SEC);
        assert_non_null(find(PA_LIFT_CAP, 2));
}

/* A request stuck behind the queue completes nothing: the tick's whole wait is its latency. Without a
 * guard that is a stall, and the first cap comes from what the writer gets. */
static void test_latency_of_a_request_that_completes_nothing(void **s) {
        cg[0].io_latency_target_usec = 20000;
        victim_waits(400000, 0);
        decide(1 * SEC);
        assert_int_equal(must(PA_SET_CAP, 2)->value, 16 * MIB / 4 * 3);
        assert_non_null(strstr(must(PA_SET_CAP, 2)->reason, "waits 400.0 ms per request"));
}

/* A tick without io nor wait says nothing: a cap holds, however high the last latency was; and the
 * stall share alone caps nobody under a latency target. */
static void test_latency_without_a_sample_holds(void **s) {
        cg[0].io_latency_target_usec = 10000;
        victim_waits(250000, 100);      /* 2.5 ms a request, a stall share of 50 % */
        decide(1 * SEC);
        decide(2 * SEC);
        assert_int_equal(state.n_caps, 0);
        victim_waits(400000, 2);
        decide(3 * SEC);
        assert_int_equal(state.n_caps, 1);
        victim_waits(0, 0);
        for (uint64_t t = 4; t < 8; t++) {
                decide(t * SEC);
                assert_null(find(PA_SET_CAP, 2));
        }
}

/* Standing caps take half the table at most: a writer that comes later still finds room. Only cgroups
 * whose io.stat lists the device get one. */
static void test_standing_caps_leave_room_for_writers(void **s) {
        enum { N = WP_CAPS_MAX + 20 };
        static WpCgroup many[N];
        static DeviceRate idle_dev[1], none_dev[1];

        st.guard_rate_ppm = 700000;
        idle_dev[0] = (DeviceRate) { .major = 8, .minor = 0 };
        none_dev[0] = (DeviceRate) { .major = 8, .minor = 16 };
        many[0] = cg[0];
        for (size_t i = 1; i < N - 1; i++)
                many[i] = (WpCgroup) { .id = 100 + i, .path = "/batch.slice/idle.service", .policy = &other_policy,
                                       .devices = i % 2 ? idle_dev : none_dev, .n_devices = 1 };
        many[N - 1] = cg[1];
        write_point_decide(many, N, dev, 1, &st, 1 * SEC, &state, &plan);
        assert_true(state.n_caps <= WP_CAPS_MAX / 2 + 1);
        for (size_t i = 0; i < state.n_caps; i++)
                assert_true(state.caps[i].cgroup_id == 2 || state.caps[i].cgroup_id % 2 == 1);
        assert_non_null(find(PA_SET_CAP, 2));
}

/* A standing guard on a cgroup that does not write is no contention: the victim's baseline is learnt
 * beside it. */
static void test_baseline_learnt_beside_a_standing_guard(void **s) {
        st.guard_rate_ppm = 700000;
        writer_dev[0].wbytes_per_sec = 0;
        other_dev[0].wbytes_per_sec = 0;
        cg[1].dirty = 0;
        cg[0].io_stall_ppm = 20000;
        for (uint64_t t = 1; t <= 10; t++)
                decide(t * SEC);
        assert_int_equal(state.n_caps, 2);
        assert_int_equal(state.baselines[0].n, 10);
        assert_int_equal(write_point_baseline(&state, 1), 20000);
}

/* On a fast device a step is larger than the room left under the knee: the raise stops at the knee's
 * limit, never past it. */
static void test_latency_raise_under_the_knee_on_a_fast_device(void **s) {
        dev[0].capacity = dev[0].write_rate = 400 * MIB;
        writer_dev[0].wbytes_per_sec = 400 * MIB;
        st.guard_rate_ppm = 700000;
        cg[0].io_latency_target_usec = 10000;
        victim_waits(100000, 50);
        decide(1 * SEC);
        victim_waits(400000, 4);
        for (uint64_t t = 3; t < 9; t++)        /* cut to 1/64 of the guard within 3 s */
                decide(t * SEC / 2);
        state.caps[0].knee_wbps = 20 * MIB;     /* as if the spell had begun there, now */
        state.caps[0].knee_usec = 4 * SEC;
        state.caps[0].wbps = 10 * MIB;
        victim_waits(10000, 50);
        for (uint64_t t = 9; t < 14; t++)
                decide(t * SEC / 2);
        assert_true(state.caps[0].wbps <= 20 * MIB / 8 * 7 + 3 * (400 * MIB / 100));
        assert_true(state.caps[0].wbps > 10 * MIB);
}

/* The one vocabulary of both points: the names events and metrics carry, each kind's place among its own
 * point's (the metrics count by it), and the kinds that lift. */
static void test_action_kinds(void **s) {
        static const char *const write_kinds[] = { "cap-writes", "lift-cap", "dirty-budget", "lift-dirty-budget",
                                                   "writeback", "shallow-queue", "restore-queue" };
        static const char *const alloc_kinds[] = { "reclaim", "throttle-allocations", "lift-allocation-throttle" };
        unsigned lifts = 0;

        for (unsigned i = 0; i < ELEMENTSOF(write_kinds); i++) {
                assert_string_equal(point_action_to_string(PA_SET_CAP + i), write_kinds[i]);
                assert_int_equal(point_action_index(PA_SET_CAP + i), i);
        }
        for (unsigned i = 0; i < ELEMENTSOF(alloc_kinds); i++) {
                assert_string_equal(point_action_to_string(PA_RECLAIM + i), alloc_kinds[i]);
                assert_int_equal(point_action_index(PA_RECLAIM + i), i);
        }
        assert_int_equal(ELEMENTSOF(write_kinds) + ELEMENTSOF(alloc_kinds), _PA_KIND_MAX);
        assert_null(point_action_to_string(_PA_KIND_MAX));
        for (unsigned k = 0; k < _PA_KIND_MAX; k++)
                lifts += point_action_lifts(k);
        assert_int_equal(lifts, 4);
        assert_true(point_action_lifts(PA_LIFT_CAP) && point_action_lifts(PA_LIFT_BUDGET) &&
                    point_action_lifts(PA_LIFT_QUEUE) && point_action_lifts(PA_LIFT_HIGH));
}

static void test_paths(void **s) {
        assert_true(cgroup_path_is_below("/a/b", "/a"));
        assert_true(cgroup_path_is_below("/a", "/a"));
        assert_false(cgroup_path_is_below("/ab", "/a"));
        assert_true(cgroup_path_is_below("/x", "/"));
}

static const PointAction *find_queue(PointActionKind k) {
        for (size_t i = 0; i < plan.n; i++)
                if (plan.actions[i].kind == k)
                        return &plan.actions[i];
        return NULL;
}

static __attribute__((returns_nonnull)) const PointAction *must_queue(PointActionKind k) {
        const PointAction *a = find_queue(k);

        if (!a) {
                fail_msg("no %s action", point_action_to_string(k));
                abort();
        }
        return a;
}

/* ManageQueueDepth=: shallow from the first tick the protected cgroup does io, restored after the hold time. */
static void test_queue_shallow_while_protected_is_active(void **s) {
        const PointAction *a;

        decide(1 * SEC);
        assert_null(find_queue(PA_SET_QUEUE));  /* off by default */

        st.manage_queue_depth = true;
        decide(2 * SEC);
        a = must_queue(PA_SET_QUEUE);
        assert_int_equal(a->major, 8);
        assert_int_equal(a->minor, 0);
        assert_int_equal(a->value, WP_QUEUE_NR_REQUESTS);
        assert_int_equal(a->queue_kb, WP_QUEUE_MAX_SECTORS_KB);
        assert_int_equal(a->cgroup_id, 1);
        assert_false(a->observe);
        assert_non_null(strstr(a->reason, "/victim.slice/db.service does io on 8:0"));
        assert_non_null(strstr(a->lifts_when, "CapHoldTime"));
        /* Asked for once, held while the victim is active, or waits on io without completing any. */
        decide(3 * SEC);
        assert_null(find_queue(PA_SET_QUEUE));
        victim_dev[0].wbytes_per_sec = 0;
        cg[0].io_stall_ppm = 900000;
        decide(12 * SEC);
        assert_null(find_queue(PA_LIFT_QUEUE));
        /* Idle for the hold time: restored. */
        cg[0].io_stall_ppm = 0;
        decide(20 * SEC);
        assert_null(find_queue(PA_LIFT_QUEUE));
        decide(22 * SEC);
        a = must_queue(PA_LIFT_QUEUE);
        assert_int_equal(a->major, 8);
        assert_false(a->observe);
        assert_int_equal(state.n_queues, 0);
        decide(23 * SEC);
        assert_int_equal(plan.n, 0);
}

/* Writers alone, nobody protected active: the queue is never touched. */
static void test_queue_untouched_without_protected_io(void **s) {
        st.manage_queue_depth = true;
        victim_dev[0].wbytes_per_sec = 0;
        for (uint64_t t = 1; t < 5; t++)
                decide(t * SEC);
        assert_int_equal(state.n_queues, 0);
        assert_null(find_queue(PA_SET_QUEUE));
}

/* Turned off while in force: restored at once. A failed set is asked again; observe only logs. */
static void test_queue_off_forget_and_observe(void **s) {
        st.manage_queue_depth = true;
        decide(1 * SEC);
        write_point_forget(&state, must_queue(PA_SET_QUEUE));
        assert_int_equal(state.n_queues, 0);
        decide(2 * SEC);
        assert_non_null(find_queue(PA_SET_QUEUE));
        st.manage_queue_depth = false;
        decide(3 * SEC);
        assert_non_null(find_queue(PA_LIFT_QUEUE));
        assert_non_null(strstr(must_queue(PA_LIFT_QUEUE)->reason, "ManageQueueDepth is off"));

        st.manage_queue_depth = true;
        victim_policy.mode = POLICY_MODE_OBSERVE;
        decide(4 * SEC);
        assert_true(must_queue(PA_SET_QUEUE)->observe);
        decide(5 * SEC);
        assert_null(find_queue(PA_SET_QUEUE));
        /* Enforcing now: asked for in earnest. */
        victim_policy.mode = POLICY_MODE_ENFORCE;
        decide(6 * SEC);
        assert_false(must_queue(PA_SET_QUEUE)->observe);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_queue_shallow_while_protected_is_active, setup),
                cmocka_unit_test_setup(test_queue_untouched_without_protected_io, setup),
                cmocka_unit_test_setup(test_queue_off_forget_and_observe, setup),
                cmocka_unit_test_setup(test_nobody_capped_without_stall, setup),
                cmocka_unit_test_setup(test_stall_caps_the_heaviest_writer_then_steps_down_to_floor, setup),
                cmocka_unit_test_setup(test_first_cap_bounded_by_capacity, setup),
                cmocka_unit_test_setup(test_steps_wait_for_the_last_one_to_show, setup),
                cmocka_unit_test_setup(test_steps_stop_when_the_stall_does_not_fall, setup),
                cmocka_unit_test_setup(test_a_flicker_under_the_limit_is_not_the_end_of_a_stall, setup),
                cmocka_unit_test_setup(test_baseline_is_the_stall_alone, setup),
                cmocka_unit_test_setup(test_baseline_learning, setup),
                cmocka_unit_test_setup(test_policy_floor, setup),
                cmocka_unit_test_setup(test_creep_up_then_lift_after_hold, setup),
                cmocka_unit_test_setup(test_never_cap_relatives_protected_or_higher_priority, setup),
                cmocka_unit_test_setup(test_observe_mode_is_marked, setup),
                cmocka_unit_test_setup(test_enforce_applies_what_was_observed, setup),
                cmocka_unit_test_setup(test_gone_writer_is_lifted, setup),
                cmocka_unit_test_setup(test_dirty_budget_with_hysteresis, setup),
                cmocka_unit_test_setup(test_percentages_never_under_the_minimums, setup),
                cmocka_unit_test_setup(test_write_floor_never_under_the_minimum, setup),
                cmocka_unit_test_setup(test_global_guard, setup),
                cmocka_unit_test_setup(test_writeback_only_with_headroom, setup),
                cmocka_unit_test_setup(test_forget_failed_cap, setup),
                cmocka_unit_test_setup(test_guard_caps_before_a_stall, setup),
                cmocka_unit_test_setup(test_guard_steps_down_on_a_stall_and_creeps_back_to_its_level, setup),
                cmocka_unit_test_setup(test_guard_is_shared_by_all_writers, setup),
                cmocka_unit_test_setup(test_drain_shared_without_a_held_slice, setup),
                cmocka_unit_test_setup(test_drain_shared_without_a_superseded_slice, setup),
                cmocka_unit_test_setup(test_guard_level_is_the_same_for_every_protected_cgroup, setup),
                cmocka_unit_test_setup(test_guard_steps_down_once_at_most, setup),
                cmocka_unit_test_setup(test_guard_lifts_once_the_protected_cgroup_is_idle, setup),
                cmocka_unit_test_setup(test_guard_holds_while_the_protected_cgroup_waits, setup),
                cmocka_unit_test_setup(test_cap_holds_the_writers_backlog, setup),
                cmocka_unit_test_setup(test_cap_budget_floor_and_a_tighter_one, setup),
                cmocka_unit_test_setup(test_guard_caps_a_dirtier_before_its_first_write, setup),
                cmocka_unit_test_setup(test_guard_without_capacity, setup),
                cmocka_unit_test_setup(test_guard_stands_before_the_first_write, setup),
                cmocka_unit_test_setup(test_new_cgroup_capped_before_its_first_write, setup),
                cmocka_unit_test_setup(test_latency_cuts_the_cap_in_proportion, setup),
                cmocka_unit_test_setup(test_latency_raises_the_cap_past_the_guard, setup),
                cmocka_unit_test_setup(test_latency_a_drained_queue_needs_no_second_cut, setup),
                cmocka_unit_test_setup(test_latency_holds_while_the_queue_before_a_cut_drains, setup),
                cmocka_unit_test_setup(test_latency_hold_is_for_the_same_protected_cgroup, setup),
                cmocka_unit_test_setup(test_latency_hold_compares_the_tick_not_the_smoothed_figure, setup),
                cmocka_unit_test_setup(test_latency_of_a_request_that_completes_nothing, setup),
                cmocka_unit_test_setup(test_latency_without_a_sample_holds, setup),
                cmocka_unit_test_setup(test_standing_caps_leave_room_for_writers, setup),
                cmocka_unit_test_setup(test_baseline_learnt_beside_a_standing_guard, setup),
                cmocka_unit_test_setup(test_latency_raise_under_the_knee_on_a_fast_device, setup),
                cmocka_unit_test_setup(test_action_kinds, setup),
                cmocka_unit_test_setup(test_guard_stands_while_the_protected_cgroup_runs, setup),
                cmocka_unit_test_setup(test_cap_writes_no_exempts, setup),
                cmocka_unit_test_setup(test_guard_of_a_service_with_no_io_yet, setup),
                cmocka_unit_test_setup(test_writer_without_policy_capped_once_it_writes, setup),
                cmocka_unit_test_setup(test_paths, setup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
