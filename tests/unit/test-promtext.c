/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the Prometheus text format writer: family metadata, sample
 * lines, and label values — the escaped form of names (test-name-escape.c
 * tests it on random bytes too), then escaped as the format wants;
 * reversible.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "name-escape.h"
#include "promtext.h"
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
        prom_label_value(f, arg);
}

static char *escaped(const char *s) {
        return capture(write_label, s);
}

/* Undoes the format's escapes: the escaped form of the name. */
static char *unquote(const char *s) {
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
        return text;
}

static void test_label_escapes(void **state) {
        static const char *const cases[][2] = {
                { "/system.slice/db.service", "/system.slice/db.service" },
                { "a\"b", "a\\\"b" },
                { "a\\b", "a\\\\b" },
                /* valid UTF-8 stands as it is, systemd's own escapes included */
                { "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac" },
                { "system-systemd\\x2dfsck.slice", "system-systemd\\\\x2dfsck.slice" },
                /* the escaped form of names (name-escape.h), its backslash escaped in the format */
                { "a\xff" "b", "a\\\\377b" },
                { "a\nb", "a\\\\012b" },
                { "lit\\101\"", "lit\\\\134101\\\"" },
                { "", "" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *got = escaped(cases[i][0]), *text = NULL, *back = NULL;

                assert_string_equal(got, cases[i][1]);
                /* Reversible: the format's escapes undone, then the names'. */
                text = unquote(got);
                assert_int_equal(name_unescape(text, &back), 0);
                assert_string_equal(back, cases[i][0]);
        }
}

static void write_samples(FILE *f, const void *arg) {
        static const PromFamily gauge = { "x_memory_bytes", PROM_GAUGE, "Memory" };
        static const PromFamily counter = { "x_stall_seconds_total", PROM_COUNTER, "Stall" };
        static const PromFamily plain = { "x_ticks_total", PROM_COUNTER, "Ticks" };
        static const PromFamily ratio = { "x_limit_ratio", PROM_GAUGE, "Limit" };
        PromLabel labels[] = { { "cgroup", "/a\"b" }, { "unit", NULL }, { "point", "write" } };

        prom_family(f, &gauge);
        prom_sample(f, &gauge, labels, ELEMENTSOF(labels), 104857600);
        prom_family(f, &counter);
        prom_sample_micro(f, &counter, labels, 1, 12345);
        prom_sample_micro(f, &counter, labels + 2, 1, 3 * USEC_PER_SEC);
        prom_family(f, &plain);
        prom_sample(f, &plain, NULL, 0, UINT64_MAX);
        prom_sample(f, &plain, labels + 1, 1, 0);
        prom_family(f, &ratio);
        prom_sample_micro(f, &ratio, NULL, 0, 100000);
}

/* HELP then TYPE naming the samples themselves, counters' _total included: what promtool and
 * node_exporter's text parser take as one typed family. No # UNIT, no # EOF (OpenMetrics only). */
static void test_families_and_samples(void **state) {
        _cleanup_free_ char *got = capture(write_samples, NULL);

        assert_string_equal(got,
                            "# HELP x_memory_bytes Memory\n"
                            "# TYPE x_memory_bytes gauge\n"
                            "x_memory_bytes{cgroup=\"/a\\\"b\",point=\"write\"} 104857600\n"
                            "# HELP x_stall_seconds_total Stall\n"
                            "# TYPE x_stall_seconds_total counter\n"
                            "x_stall_seconds_total{cgroup=\"/a\\\"b\"} 0.012345\n"
                            "x_stall_seconds_total{point=\"write\"} 3.000000\n"
                            "# HELP x_ticks_total Ticks\n"
                            "# TYPE x_ticks_total counter\n"
                            "x_ticks_total 18446744073709551615\n"
                            "x_ticks_total 0\n"
                            "# HELP x_limit_ratio Limit\n"
                            "# TYPE x_limit_ratio gauge\n"
                            "x_limit_ratio 0.100000\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_label_escapes),
                cmocka_unit_test(test_families_and_samples),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
