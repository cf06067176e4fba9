/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the daemon's JSON strings: text with JSON's escapes, names
 * in their escaped form; valid JSON whatever the bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "json-out.h"
#include "util.h"

static char *written(void (*write)(FILE *f, const char *s), const char *s) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        write(f, s);
        assert_int_equal(fclose(f), 0);
        return buf;
}

static void test_text(void **state) {
        static const char *const cases[][2] = {
                { "plain", "\"plain\"" },
                { "a\"b\\c", "\"a\\\"b\\\\c\"" },
                { "two\nlines\ttab\x01", "\"two\\nlines\\ttab\\u0001\"" },
                { "caf\xc3\xa9", "\"caf\xc3\xa9\"" },
                /* a byte that is not UTF-8 as the names' escape: the text stays valid JSON */
                { "caf\xe9", "\"caf\\\\351\"" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *got = written(json_string, cases[i][0]);
                assert_string_equal(got, cases[i][1]);
        }
}

static void test_name(void **state) {
        static const char *const cases[][2] = {
                { "/system.slice/db.service", "\"/system.slice/db.service\"" },
                { "/a\"b", "\"/a\\\"b\"" },
                { "/systemd\\x2dfsck.slice", "\"/systemd\\\\x2dfsck.slice\"" },
                /* the escaped form, then JSON's escape of its backslash */
                { "/caf\xe9", "\"/caf\\\\351\"" },
                { "/two\nlines", "\"/two\\\\012lines\"" },
                { "/lit\\101", "\"/lit\\\\134101\"" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *got = written(json_name, cases[i][0]);
                assert_string_equal(got, cases[i][1]);
        }
}

static void test_numbers(void **state) {
        static const int64_t signed_cases[] = { 0, 1, -1, 9, 10, -10, 1234567, INT64_MAX, INT64_MIN };
        static const uint64_t unsigned_cases[] = { 0, 7, 10, 99, 100, 18446744073709551615ULL };

        for (size_t i = 0; i < ELEMENTSOF(signed_cases) + ELEMENTSOF(unsigned_cases); i++) {
                char want[32], *buf = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&buf, &size);

                assert_non_null(f);
                if (i < ELEMENTSOF(signed_cases)) {
                        json_i64(f, signed_cases[i]);
                        snprintf(want, sizeof(want), "%" PRId64, signed_cases[i]);
                } else {
                        json_u64(f, unsigned_cases[i - ELEMENTSOF(signed_cases)]);
                        snprintf(want, sizeof(want), "%" PRIu64, unsigned_cases[i - ELEMENTSOF(signed_cases)]);
                }
                assert_int_equal(fclose(f), 0);
                assert_string_equal(buf, want);
                free(buf);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_text),
                cmocka_unit_test(test_numbers),
                cmocka_unit_test(test_name),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
