/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of policy values written back in file syntax: exact sizes and
 * percentages, every key of [Policy] covered, and each formatted value
 * parsed again by the same value parsers gives the same setting.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "conf.h"
#include "parse-util.h"
#include "policy-format.h"
#include "util.h"

static void test_sizes(void **state) {
        char b[POLICY_VALUE_MAX];

        assert_string_equal(format_size_exact(b, 0), "0");
        assert_string_equal(format_size_exact(b, 1), "1");
        assert_string_equal(format_size_exact(b, 1023), "1023");
        assert_string_equal(format_size_exact(b, 1024), "1K");
        assert_string_equal(format_size_exact(b, 1536), "1536");
        assert_string_equal(format_size_exact(b, UINT64_C(256) << 20), "256M");
        assert_string_equal(format_size_exact(b, UINT64_C(3) << 30), "3G");
        assert_string_equal(format_size_exact(b, UINT64_C(1) << 40), "1T");
        assert_string_equal(format_size_exact(b, UINT64_C(2048) << 40), "2P");
        assert_string_equal(format_size_exact(b, UINT64_C(3) << 50), "3P");
        assert_string_equal(format_size_exact(b, UINT64_C(15) << 60), "15E");
        assert_string_equal(format_size_exact(b, UINT64_MAX), "max");
}

static void test_percentages(void **state) {
        char b[POLICY_VALUE_MAX];

        assert_string_equal(format_percent(b, 0), "0%");
        assert_string_equal(format_percent(b, 100000), "10%");
        assert_string_equal(format_percent(b, 1000000), "100%");
        assert_string_equal(format_percent(b, 1000), "0.1%");
        assert_string_equal(format_percent(b, 125000), "12.5%");
        assert_string_equal(format_percent(b, 1), "0.0001%");
        assert_string_equal(format_percent(b, 1230), "0.123%");
}

static void test_round_trip(void **state) {
        static const uint64_t sizes[] = { 0, 1, 4095, 4096, 1 << 20, (UINT64_C(5) << 30) + 4096, UINT64_C(7) << 40,
                                          UINT64_C(9) << 50, UINT64_C(1) << 60, UINT64_MAX - 1 };
        static const uint32_t ppms[] = { 1, 10, 999, 1000, 123400, 999999, 1000000 };
        char b[POLICY_VALUE_MAX];

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                uint64_t v;
                assert_int_equal(parse_size(format_size_exact(b, sizes[i]), true, &v), 0);
                assert_int_equal(v, sizes[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(ppms); i++) {
                uint32_t v;
                assert_int_equal(parse_percent(format_percent(b, ppms[i]), &v), 0);
                assert_int_equal(v, ppms[i]);
        }
}

static void test_every_key(void **state) {
        Policy *p = policy_new("p", "/p.conf");
        char b[POLICY_VALUE_MAX];
        const char *key;
        size_t n = 0;

        assert_non_null(p);
        assert_string_equal(config_policy_key(0), "Match");
        /* Every key the loader takes, but Match=, has a formatter. */
        for (size_t i = 1; (key = config_policy_key(i)); i++, n++)
                assert_int_equal(policy_format_value(p, key, b), 0);
        assert_true(n >= 12);
        assert_int_equal(policy_format_value(p, "Match", b), -ENOENT);
        assert_int_equal(policy_format_value(p, "Bogus", b), -ENOENT);

        /* Defaults. */
        policy_format_value(p, "Mode", b);
        assert_string_equal(b, "observe");
        policy_format_value(p, "DirtyLimit", b);
        assert_string_equal(b, "");
        policy_format_value(p, "WriteRateMin", b);
        assert_string_equal(b, "");
        policy_format_value(p, "MetadataCacheMax", b);
        assert_string_equal(b, "max");
        policy_format_value(p, "AllocationThrottle", b);
        assert_string_equal(b, "no");
        policy_format_value(p, "ReclaimStepMax", b);
        assert_string_equal(b, "16M");
        policy_format_value(p, "PressureTarget", b);
        assert_string_equal(b, "");
        policy_format_value(p, "IOLatencyTarget", b);
        assert_string_equal(b, "");

        /* Durations in the largest unit that holds them exactly. */
        p->io_latency_target_usec = 20000;
        policy_format_value(p, "IOLatencyTarget", b);
        assert_string_equal(b, "20ms");
        p->io_latency_target_usec = 1500;
        policy_format_value(p, "IOLatencyTarget", b);
        assert_string_equal(b, "1500us");
        p->io_latency_target_usec = 2 * USEC_PER_SEC;
        policy_format_value(p, "IOLatencyTarget", b);
        assert_string_equal(b, "2s");
        p->io_latency_target_usec = POLICY_LATENCY_OFF;
        policy_format_value(p, "IOLatencyTarget", b);
        assert_string_equal(b, "off");
        p->io_latency_target_usec = 0;

        /* Set values. */
        p->mode = POLICY_MODE_ENFORCE;
        p->protect = true;
        p->dirty_limit = (SizeOrPercent) { .set = true, .is_percent = true, .ppm = 200000 };
        p->dirty_background = (SizeOrPercent) { .set = true, .bytes = UINT64_C(64) << 20 };
        p->pressure_target_ppm = 1000;
        policy_format_value(p, "Mode", b);
        assert_string_equal(b, "enforce");
        policy_format_value(p, "Protect", b);
        assert_string_equal(b, "yes");
        policy_format_value(p, "DirtyLimit", b);
        assert_string_equal(b, "20%");
        policy_format_value(p, "DirtyBackground", b);
        assert_string_equal(b, "64M");
        policy_format_value(p, "PressureTarget", b);
        assert_string_equal(b, "0.1%");
        policy_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sizes),
                cmocka_unit_test(test_percentages),
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_every_key),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
