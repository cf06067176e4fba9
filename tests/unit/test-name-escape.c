/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the escaped form of names: valid printable UTF-8 stands as it
 * is (systemd's \x2d escapes too), bytes that are not UTF-8 and control
 * characters become \ooo, a backslash that would read as an escape becomes
 * \134; the inverse gives the bytes back, on fixed cases and random ones.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "name-escape.h"
#include "util.h"

static const char *const cases[][2] = {
        { "/system.slice/db.service", "/system.slice/db.service" },
        { "", "" },
        /* valid UTF-8 stands as it is, quotes and systemd's own escapes included */
        { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7" },
        { "system-systemd\\x2dfsck.slice", "system-systemd\\x2dfsck.slice" },
        { "mnt-caf\\xc3\\xa9.mount", "mnt-caf\\xc3\\xa9.mount" },
        { "a\"b\\c", "a\"b\\c" },
        /* a byte that is not UTF-8 */
        { "a\xff" "b", "a\\377b" },
        { "\x80", "\\200" },
        { "caf\xe9", "caf\\351" },
        /* truncated, overlong, surrogate, past U+10FFFF, 0xf5 and up */
        { "\xe2\x82", "\\342\\202" },
        { "\xe2\x82z", "\\342\\202z" },
        { "\xc0\xaf", "\\300\\257" },
        { "\xe0\x80\xaf", "\\340\\200\\257" },
        { "\xed\xa0\x80", "\\355\\240\\200" },
        { "\xf0\x8f\xbf\xbf", "\\360\\217\\277\\277" },
        { "\xf4\x90\x80\x80", "\\364\\220\\200\\200" },
        { "\xf5\x80", "\\365\\200" },
        /* the highest code point and the last before the surrogates are valid */
        { "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf" },
        { "\xed\x9f\xbf", "\xed\x9f\xbf" },
        /* control characters */
        { "two\nlines", "two\\012lines" },
        { "tab\t\x7f\x01", "tab\\011\\177\\001" },
        /* a backslash that would read as an escape is one itself */
        { "lit\\101", "lit\\134101" },
        { "\\377\\000", "\\134377\\134000" },
        /* and one that would not is left alone */
        { "\\400 \\12 \\1a \\", "\\400 \\12 \\1a \\" },
};

static void test_escape(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *got = name_escape(cases[i][0]);

                assert_non_null(got);
                assert_string_equal(got, cases[i][1]);
                assert_int_equal(name_is_plain(cases[i][0]), streq(cases[i][0], cases[i][1]));
        }
}

static void test_unescape(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *back = NULL;

                assert_int_equal(name_unescape(cases[i][1], &back), 0);
                assert_string_equal(back, cases[i][0]);
        }
}

static void test_unescape_other_forms(void **state) {
        _cleanup_free_ char *a = NULL, *b = NULL;
        char *c = NULL;

        /* An escape of a byte that needed none still reads as that byte. */
        assert_int_equal(name_unescape("\\101\\303\\251", &a), 0);
        assert_string_equal(a, "A\xc3\xa9");
        assert_int_equal(name_unescape("x\\", &b), 0);
        assert_string_equal(b, "x\\");
        /* No name holds NUL. */
        assert_int_equal(name_unescape("a\\000b", &c), -EINVAL);
        assert_null(c);
}

static void test_escape_into_cuts_at_a_character(void **state) {
        char buf[7];

        name_escape_into(buf, sizeof(buf), "ab\xff" "cd");
        assert_string_equal(buf, "ab\\377");
        name_escape_into(buf, 6, "ab\xff" "cd");
        assert_string_equal(buf, "ab");
        name_escape_into(buf, 3, "a\xc3\xa9");
        assert_string_equal(buf, "a");
        name_escape_into(buf, 1, "abc");
        assert_string_equal(buf, "");
        name_escape_into(buf, sizeof(buf), "abcdef");
        assert_string_equal(buf, "abcdef");
}

/* Valid UTF-8: no stray continuation bytes, overlong forms, surrogates, or code points past U+10FFFF;
 * written apart from the code under test, from the definition. */
static bool valid_utf8(const unsigned char *s) {
        while (*s) {
                size_t n = *s < 0x80 ? 1 : (*s & 0xe0) == 0xc0 ? 2 : (*s & 0xf0) == 0xe0 ? 3 : 4;
                uint32_t cp = n == 1 ? *s : *s & (0xff >> (n + 1));

                if ((*s >= 0x80 && *s < 0xc2) || *s > 0xf4)
                        return false;
                for (size_t i = 1; i < n; i++) {
                        if ((s[i] & 0xc0) != 0x80)
                                return false;
                        cp = cp << 6 | (s[i] & 0x3f);
                }
                if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
                    (cp >= 0xd800 && cp <= 0xdfff))
                        return false;
                s += n;
        }
        return true;
}

static void test_random_bytes_round_trip(void **state) {
        static const char alphabet[] = "\\0123457x/.\n\xc3\xa9\xff\x80\xed\xa0\xf0\x9f\x90\xa7";
        unsigned seed = 17;

        for (int round = 0; round < 20000; round++) {
                char name[24];
                size_t len = (size_t) rand_r(&seed) % (sizeof(name) - 1);
                _cleanup_free_ char *got = NULL, *back = NULL;

                for (size_t i = 0; i < len; i++)
                        name[i] = (char) (rand_r(&seed) % 2 ? alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)]
                                                             : 1 + rand_r(&seed) % 255);
                name[len] = '\0';
                got = name_escape(name);
                assert_non_null(got);
                if (!valid_utf8((const unsigned char *) got))
                        fail_msg("round %d: not valid UTF-8: %s", round, got);
                for (const char *p = got; *p; p++)
                        if ((unsigned char) *p < 0x20 || *p == 0x7f)
                                fail_msg("round %d: a control character in %s", round, got);
                assert_int_equal(name_unescape(got, &back), 0);
                assert_string_equal(back, name);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_escape),
                cmocka_unit_test(test_unescape),
                cmocka_unit_test(test_unescape_other_forms),
                cmocka_unit_test(test_escape_into_cuts_at_a_character),
                cmocka_unit_test(test_random_bytes_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
