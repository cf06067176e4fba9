/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the OpenMetrics writer: family metadata, sample lines, and
 * label values — escaped as the format wants, valid UTF-8 whatever the bytes,
 * and reversible (checked on fixed cases and on random byte strings).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "openmetrics.h"
#include "util.h"

/* What `write` printed, as a new string. */
static char *capture(void (*write)(FILE *f, const void *arg), const void *arg) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        write(f, arg);
        assert_int_equal(fclose(f), 0);
        return buf;
}

static void write_label(FILE *f, const void *arg) {
        om_label_value(f, arg);
}

static char *escaped(const char *s) {
        return capture(write_label, s);
}

static void test_label_escapes(void **state) {
        static const char *const cases[][2] = {
                { "/system.slice/db.service", "/system.slice/db.service" },
                { "a\"b", "a\\\"b" },
                { "a\\b", "a\\\\b" },
                { "a\nb", "a\\nb" },
                { "tab\there", "tab\there" },
                /* valid UTF-8 stands as it is */
                { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7" },
                /* systemd's own escapes are not ours: left alone */
                { "system-systemd\\x2dfsck.slice", "system-systemd\\\\x2dfsck.slice" },
                /* a byte that is not UTF-8 becomes \xHH (a backslash escaped in the format) */
                { "a\xff" "b", "a\\\\xffb" },
                { "\x80", "\\\\x80" },
                /* truncated, overlong, surrogate, past U+10FFFF, 0xf5 and up */
                { "\xe2\x82", "\\\\xe2\\\\x82" },
                { "\xc0\xaf", "\\\\xc0\\\\xaf" },
                { "\xe0\x80\xaf", "\\\\xe0\\\\x80\\\\xaf" },
                { "\xed\xa0\x80", "\\\\xed\\\\xa0\\\\x80" },
                { "\xf4\x90\x80\x80", "\\\\xf4\\\\x90\\\\x80\\\\x80" },
                { "\xf5\x80", "\\\\xf5\\\\x80" },
                /* a literal backslash that would read as our escape is one itself */
                { "\\xc3\\xA9", "\\\\x5cxc3\\\\x5cxA9" },
                { "\\x5c", "\\\\x5cx5c" },
                { "\\x7f", "\\\\x7f" },
                /* cut short at the end: no escape to mistake */
                { "\\x", "\\\\x" },
                { "\\xf", "\\\\xf" },
                { "", "" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *got = escaped(cases[i][0]);
                assert_string_equal(got, cases[i][1]);
        }
}

/* Undoes the format's escapes, then ours: the bytes of the original name. */
static size_t unescape(const char *s, char *out) {
        size_t n = 0;
        char *text = malloc(strlen(s) + 1);
        size_t t = 0;

        assert_non_null(text);
        for (; *s; s++) {
                /* Between the quotes the format allows no bare quote or newline, and three escapes. */
                assert_true(*s != '"' && *s != '\n');
                if (*s == '\\') {
                        s++;
                        assert_true(*s == '\\' || *s == '"' || *s == 'n');
                        text[t++] = *s == 'n' ? '\n' : *s;
                } else
                        text[t++] = *s;
        }
        text[t] = '\0';
        for (size_t i = 0; i < t; i++) {
                unsigned v;

                if (text[i] == '\\' && text[i + 1] == 'x' && sscanf(text + i + 2, "%2x", &v) == 1 &&
                    strspn(text + i + 2, "0123456789abcdefABCDEF") >= 2 && (v >= 0x80 || v == 0x5c)) {
                        out[n++] = (char) v;
                        i += 3;
                } else
                        out[n++] = text[i];
        }
        free(text);
        return n;
}

/* Valid UTF-8: no stray continuation bytes, overlong forms, surrogates, or code points past U+10FFFF. */
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

static void test_label_random_bytes_round_trip(void **state) {
        static const char alphabet[] = "\\x5cA9af\"\n/.\xc3\xa9\xff\x80\xed\xa0\xf0\x9f\x90\xa7";
        unsigned seed = 17;

        for (int round = 0; round < 20000; round++) {
                char name[24], back[24 * 4];
                size_t len = (size_t) rand_r(&seed) % (sizeof(name) - 1);
                _cleanup_free_ char *got = NULL;

                for (size_t i = 0; i < len; i++)
                        name[i] = (char) (rand_r(&seed) % 2 ? alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)]
                                                             : 1 + rand_r(&seed) % 255);
                name[len] = '\0';
                got = escaped(name);
                if (!valid_utf8((const unsigned char *) got))
                        fail_msg("round %d: not a valid label value: %s", round, got);
                assert_int_equal(unescape(got, back), len);
                assert_memory_equal(back, name, len);
        }
}

static void write_samples(FILE *f, const void *arg) {
        static const OmFamily gauge = { "x_memory_bytes", OM_GAUGE, "bytes", "Memory" };
        static const OmFamily counter = { "x_stall_seconds", OM_COUNTER, "seconds", "Stall" };
        static const OmFamily plain = { "x_ticks", OM_COUNTER, NULL, "Ticks" };
        OmLabel labels[] = { { "cgroup", "/a\"b" }, { "unit", NULL }, { "point", "write" } };

        om_family(f, &gauge);
        om_sample(f, &gauge, labels, ELEMENTSOF(labels), 104857600);
        om_family(f, &counter);
        om_sample_usec(f, &counter, labels, 1, 12345);
        om_sample_usec(f, &counter, labels + 2, 1, 3 * USEC_PER_SEC);
        om_family(f, &plain);
        om_sample(f, &plain, NULL, 0, UINT64_MAX);
        om_sample(f, &plain, labels + 1, 1, 0);
        om_eof(f);
}

static void test_families_and_samples(void **state) {
        _cleanup_free_ char *got = capture(write_samples, NULL);

        assert_string_equal(got,
                            "# TYPE x_memory_bytes gauge\n"
                            "# UNIT x_memory_bytes bytes\n"
                            "# HELP x_memory_bytes Memory\n"
                            "x_memory_bytes{cgroup=\"/a\\\"b\",point=\"write\"} 104857600\n"
                            "# TYPE x_stall_seconds counter\n"
                            "# UNIT x_stall_seconds seconds\n"
                            "# HELP x_stall_seconds Stall\n"
                            "x_stall_seconds_total{cgroup=\"/a\\\"b\"} 0.012345\n"
                            "x_stall_seconds_total{point=\"write\"} 3.000000\n"
                            "# TYPE x_ticks counter\n"
                            "# HELP x_ticks Ticks\n"
                            "x_ticks_total 18446744073709551615\n"
                            "x_ticks_total 0\n"
                            "# EOF\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_label_escapes),
                cmocka_unit_test(test_label_random_bytes_round_trip),
                cmocka_unit_test(test_families_and_samples),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
