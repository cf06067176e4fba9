/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the value parsers operators meet in configuration files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "parse-util.h"
#include "util.h"

static void test_size(void **state) {
        uint64_t v;

        assert_int_equal(parse_size("0", false, &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(parse_size("4096", false, &v), 0);
        assert_int_equal(v, 4096);
        assert_int_equal(parse_size("64M", false, &v), 0);
        assert_int_equal(v, UINT64_C(64) << 20);
        assert_int_equal(parse_size("1.5G", false, &v), 0);
        assert_int_equal(v, UINT64_C(3) << 29);
        assert_int_equal(parse_size("2k", false, &v), 0);
        assert_int_equal(v, 2048);
        assert_int_equal(parse_size("1T", false, &v), 0);
        assert_int_equal(v, UINT64_C(1) << 40);
        assert_int_equal(parse_size("16MiB", false, &v), 0);
        assert_int_equal(v, UINT64_C(16) << 20);
        assert_int_equal(parse_size("max", true, &v), 0);
        assert_true(v == UINT64_MAX);

        assert_int_equal(parse_size("max", false, &v), -EINVAL);
        assert_int_equal(parse_size("64M # note", false, &v), -EINVAL);
        assert_int_equal(parse_size("64 M", false, &v), -EINVAL);
        assert_int_equal(parse_size("-1", false, &v), -EINVAL);
        assert_int_equal(parse_size("", false, &v), -EINVAL);
        assert_int_equal(parse_size("1.5", false, &v), -EINVAL);
        assert_int_equal(parse_size("64X", false, &v), -EINVAL);
        assert_int_equal(parse_size("99999999999999999999", false, &v), -EINVAL);
        assert_int_equal(parse_size("99999999T", false, &v), -ERANGE);
}

static void test_percent(void **state) {
        uint32_t ppm;

        assert_int_equal(parse_percent("0.1%", &ppm), 0);
        assert_int_equal(ppm, 1000);
        assert_int_equal(parse_percent("10%", &ppm), 0);
        assert_int_equal(ppm, 100000);
        assert_int_equal(parse_percent("100%", &ppm), 0);
        assert_int_equal(ppm, PPM_ONE);
        assert_int_equal(parse_percent("0.0001%", &ppm), 0);
        assert_int_equal(ppm, 1);

        assert_int_equal(parse_percent("101%", &ppm), -ERANGE);
        assert_int_equal(parse_percent("100.5%", &ppm), -ERANGE);
        assert_int_equal(parse_percent("10", &ppm), -EINVAL);
        assert_int_equal(parse_percent("10%%", &ppm), -EINVAL);
        assert_int_equal(parse_percent("0.00001%", &ppm), -EINVAL);
        assert_int_equal(parse_percent("%", &ppm), -EINVAL);
}

static void test_duration(void **state) {
        uint64_t u;

        assert_int_equal(parse_duration("1s", &u), 0);
        assert_int_equal(u, USEC_PER_SEC);
        assert_int_equal(parse_duration("500ms", &u), 0);
        assert_int_equal(u, 500 * USEC_PER_MSEC);
        assert_int_equal(parse_duration("2", &u), 0);
        assert_int_equal(u, 2 * USEC_PER_SEC);
        assert_int_equal(parse_duration("1.5s", &u), 0);
        assert_int_equal(u, 1500 * USEC_PER_MSEC);
        assert_int_equal(parse_duration("2min", &u), 0);
        assert_int_equal(u, 120 * USEC_PER_SEC);
        assert_int_equal(parse_duration("250us", &u), 0);
        assert_int_equal(u, 250);

        assert_int_equal(parse_duration("18446744073709.6", &u), -ERANGE);
        assert_int_equal(parse_duration("5124095576.999h", &u), -ERANGE);
        assert_int_equal(parse_duration("1 s", &u), -EINVAL);
        assert_int_equal(parse_duration("1fortnight", &u), -EINVAL);
        assert_int_equal(parse_duration("s", &u), -EINVAL);
}

static void test_bool_and_uint(void **state) {
        bool b;
        uint64_t v;

        assert_int_equal(parse_bool("yes", &b), 0);
        assert_true(b);
        assert_int_equal(parse_bool("Off", &b), 0);
        assert_false(b);
        assert_int_equal(parse_bool("maybe", &b), -EINVAL);

        assert_int_equal(parse_uint_range("100", 0, 100, &v), 0);
        assert_int_equal(v, 100);
        assert_int_equal(parse_uint_range("101", 0, 100, &v), -ERANGE);
        assert_int_equal(parse_uint_range("1e2", 0, 100, &v), -EINVAL);
        assert_int_equal(parse_uint_range(" 5", 0, 100, &v), -EINVAL);
}

static void test_size_or_percent(void **state) {
        SizeOrPercent s;

        assert_int_equal(parse_size_or_percent("20%", &s), 0);
        assert_true(s.set && s.is_percent);
        assert_int_equal(s.ppm, 200000);
        assert_int_equal(parse_size_or_percent("256M", &s), 0);
        assert_true(s.set && !s.is_percent);
        assert_int_equal(s.bytes, UINT64_C(256) << 20);
        assert_int_equal(parse_size_or_percent("256M%", &s), -EINVAL);
}

static void test_format_size(void **state) {
        char buf[FORMAT_SIZE_MAX];

        assert_string_equal(format_size(buf, 512), "512B");
        assert_string_equal(format_size(buf, UINT64_C(64) << 20), "64.0M");
        assert_string_equal(format_size(buf, UINT64_MAX), "max");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_size),
                cmocka_unit_test(test_percent),
                cmocka_unit_test(test_duration),
                cmocka_unit_test(test_bool_and_uint),
                cmocka_unit_test(test_size_or_percent),
                cmocka_unit_test(test_format_size),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
