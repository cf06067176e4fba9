/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the value parsers operators meet in configuration files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "parse-util.h"
#include "util.h"

static uint64_t size_of(const char *s) {
        uint64_t v = UINT64_C(0xdeadbeef);

        assert_int_equal(parse_size(s, false, &v), 0);
        return v;
}

/* Every suffix systemd takes in a unit file (base 1024), and nothing else. */
static void test_size_suffixes(void **state) {
        assert_true(size_of("0") == 0);
        assert_true(size_of("4096") == 4096);
        assert_true(size_of("4096B") == 4096);
        assert_true(size_of("2K") == 2048);
        assert_true(size_of("64M") == UINT64_C(64) << 20);
        assert_true(size_of("3G") == UINT64_C(3) << 30);
        assert_true(size_of("1T") == UINT64_C(1) << 40);
        assert_true(size_of("5P") == UINT64_C(5) << 50);
        assert_true(size_of("15E") == UINT64_C(15) << 60);

        /* Lower case, B after a unit, IEC "iB", SI words: systemd refuses them all. */
        static const char *const refused[] = { "2k", "64m", "3g", "1t", "5p", "1e", "64MB", "64mb", "64KiB",
                                               "16MiB", "1GB", "64b", "64X", "64 MX", "1Ki", "M", "B", "" };
        uint64_t v;
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                assert_int_equal(parse_size(refused[i], false, &v), -EINVAL);
}

/* Fractions, spaces, sums and signs as systemd's parse_size() takes them. */
static void test_size_forms(void **state) {
        uint64_t v;

        assert_true(size_of("1.5G") == UINT64_C(3) << 29);
        assert_true(size_of("1.5K") == 1536);
        assert_true(size_of("0.1K") == 102);            /* below a byte is dropped */
        assert_true(size_of("1.5") == 1);
        assert_true(size_of("1.5B") == 1);
        assert_true(size_of("10.M") == UINT64_C(10) << 20);
        assert_true(size_of("0.5M") == UINT64_C(512) << 10);
        assert_true(size_of("64 M") == UINT64_C(64) << 20);
        assert_true(size_of("  64M") == UINT64_C(64) << 20);
        assert_true(size_of("64 ") == 64);              /* trailing space after bare bytes, as systemd */
        assert_true(size_of("+64M") == UINT64_C(64) << 20);
        assert_true(size_of("1G 512M") == (UINT64_C(3) << 29));
        assert_true(size_of("1G512M") == (UINT64_C(3) << 29));
        assert_true(size_of("1M 1K 1B") == (UINT64_C(1) << 20) + 1024 + 1);
        assert_true(size_of("1K 1") == 1025);
        assert_true(size_of("1.9999999999999999999K") == 2048);    /* double precision, as systemd */
        assert_true(size_of("18446744073709551615") == UINT64_MAX);
        assert_true(size_of("15E 1023P") == (UINT64_C(15) << 60) + (UINT64_C(1023) << 50));

        assert_int_equal(parse_size("64M ", false, &v), -EINVAL);          /* nothing after a suffix */
        assert_int_equal(parse_size("512M 1G", false, &v), -EINVAL);       /* suffixes must descend */
        assert_int_equal(parse_size("1M 1M", false, &v), -EINVAL);
        assert_int_equal(parse_size("1 1", false, &v), -EINVAL);
        assert_int_equal(parse_size("64M # note", false, &v), -EINVAL);
        assert_int_equal(parse_size(".5M", false, &v), -EINVAL);
        assert_int_equal(parse_size("0x10", false, &v), -EINVAL);
        assert_int_equal(parse_size("1e3", false, &v), -EINVAL);
        assert_int_equal(parse_size("-", false, &v), -EINVAL);
        assert_int_equal(parse_size("+", false, &v), -EINVAL);
        assert_int_equal(parse_size("-1", false, &v), -ERANGE);
        assert_int_equal(parse_size("-0M", false, &v), -ERANGE);
        assert_int_equal(parse_size("18446744073709551616", false, &v), -ERANGE);
        assert_int_equal(parse_size("99999999999999999999", false, &v), -ERANGE);
        assert_int_equal(parse_size("16E", false, &v), -ERANGE);
        assert_int_equal(parse_size("15.99E 1P", false, &v), -ERANGE);
        assert_int_equal(parse_size("99999999T", false, &v), -ERANGE);
        assert_int_equal(parse_size("1.99999999999999999999K", false, &v), -ERANGE);  /* 20 digits */
}

/* Every term past 2^64 - 1 bytes is refused, whatever its form: none wraps to a smaller size. */
static void test_size_overflow(void **state) {
        static const char *const refused[] = {
                "18446744073709551615.1K", "18446744073709551615.5", "18446744073709551615.1B",
                "18446744073709551615.9E", "18446744073709551615K", "18014398509481984K",
                "18014398509481983.1K", "17179869184G", "15.5E", "15.0000001E", "1K 18446744073709551615",
                "15E 1024P", "15E 1023P 1023T 1023G 1023M 1023K 1024", "18446744073709551615B 1",
        };
        uint64_t v;

        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                v = 42;
                assert_int_equal(parse_size(refused[i], false, &v), -ERANGE);
                assert_true(v == 42);   /* nothing stored */
        }
        /* The largest of each unit still fits. */
        assert_true(size_of("18014398509481983K") == UINT64_C(18014398509481983) << 10);
        assert_true(size_of("18014398509481982.5K") == (UINT64_C(18014398509481982) << 10) + 512);
        assert_true(size_of("15E") == UINT64_C(15) << 60);
        assert_true(size_of("18446744073709551614B 1") == UINT64_MAX);
        assert_true(size_of("15E 1023P 1023T 1023G 1023M 1023K 1023") == UINT64_MAX);
}

static void test_size_max(void **state) {
        uint64_t v;

        assert_int_equal(parse_size("max", true, &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(parse_size("infinity", true, &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(parse_size("max", false, &v), -EINVAL);
        assert_int_equal(parse_size("infinity", false, &v), -EINVAL);
        assert_int_equal(parse_size("MAX", true, &v), -EINVAL);
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
                cmocka_unit_test(test_size_suffixes),
                cmocka_unit_test(test_size_forms),
                cmocka_unit_test(test_size_overflow),
                cmocka_unit_test(test_size_max),
                cmocka_unit_test(test_percent),
                cmocka_unit_test(test_duration),
                cmocka_unit_test(test_bool_and_uint),
                cmocka_unit_test(test_size_or_percent),
                cmocka_unit_test(test_format_size),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
