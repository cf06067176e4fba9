/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the write point's state as Explain reads it (wp-explain.h), after real decisions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "write-point.h"
#include "wp-explain.h"
#include "util.h"

#define MIB (UINT64_C(1) << 20)
#define SEC USEC_PER_SEC

static Policy victim_policy, writer_policy;
static DeviceRate victim_dev[1], writer_dev[1];
static WpCgroup cg[2];
static WpDevice dev[1];
static WpSettings st;
static WritePointState state;
static PointPlan plan;

static int setup(void **s) {
        victim_policy = (Policy) { .name = (char *) "victim", .mode = POLICY_MODE_ENFORCE, .priority = 90,
                                   .cap_writes = true, .protect = true };
        writer_policy = (Policy) { .name = (char *) "writer", .mode = POLICY_MODE_OBSERVE, .priority = 10,
                                   .cap_writes = true };
        victim_dev[0] = (DeviceRate) { .major = 8, .minor = 0, .wbytes_per_sec = 40000, .ios = 10 };
        writer_dev[0] = (DeviceRate) { .major = 8, .minor = 0, .wbytes_per_sec = 20 * MIB, .ios = 100 };
        cg[0] = (WpCgroup) { .id = 1, .path = "/db.service", .policy = &victim_policy, .protect = true,
                             .io_limit_ppm = 100000, .have_io_stall = true, .io_stall_ppm = 20000,
                             .devices = victim_dev, .n_devices = 1 };
        cg[1] = (WpCgroup) { .id = 2, .path = "/writer.service", .policy = &writer_policy, .have_memory = true,
                             .memory_current = 300 * MIB, .file = 280 * MIB, .memory_limit = 1024 * MIB,
                             .devices = writer_dev, .n_devices = 1 };
        dev[0] = (WpDevice) { .major = 8, .minor = 0, .write_rate = 16 * MIB, .capacity = 16 * MIB };
        st = (WpSettings) { .hold_usec = 10 * SEC, .write_rate_min_ppm = 100000, .dirty_ratio_pct = 20,
                            .guard_rate_ppm = 750000 };
        memset(&state, 0, sizeof(state));
        return 0;
}

static void test_nothing_known_before_a_decision(void **s) {
        uint32_t smooth = 1, baseline = 1;
        uint64_t stall = 1, guarded = 1;

        assert_int_equal(write_point_caps(&state, 2, false, NULL, 0), 0);
        assert_false(write_point_stall_seen(&state, 1, &smooth, &baseline));
        assert_false(write_point_device_seen(&state, 8, 0, &stall, &guarded));
}

static void test_the_guard_cap_read_from_both_sides(void **s) {
        const WpCap *caps[4];
        uint32_t smooth = 0, baseline = 0;
        uint64_t stall = 0, guarded = 0;

        write_point_decide(cg, 2, dev, 1, &st, 3 * SEC, &state, &plan);
        /* The writer, from its side: one cap, for the victim, decided while its policy observes. */
        assert_int_equal(write_point_caps(&state, 2, false, caps, 4), 1);
        assert_int_equal(caps[0]->protected_id, 1);
        assert_int_equal(caps[0]->major, 8);
        assert_int_equal(caps[0]->wbps, 12 * MIB);
        assert_true(caps[0]->observed);
        /* The victim, from its side: the same cap; none is on it. */
        assert_int_equal(write_point_caps(&state, 1, true, caps, 4), 1);
        assert_int_equal(caps[0]->cgroup_id, 2);
        assert_int_equal(write_point_caps(&state, 1, false, NULL, 0), 0);
        /* Counted past `max`, listed up to it. */
        assert_int_equal(write_point_caps(&state, 2, false, caps, 0), 1);
        assert_true(write_point_stall_seen(&state, 1, &smooth, &baseline));
        assert_int_equal(smooth, 20000);
        assert_true(write_point_device_seen(&state, 8, 0, &stall, &guarded));
        assert_int_equal(guarded, 3 * SEC);
        assert_false(write_point_device_seen(&state, 8, 16, &stall, &guarded));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_nothing_known_before_a_decision, setup),
                cmocka_unit_test_setup(test_the_guard_cap_read_from_both_sides, setup),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
