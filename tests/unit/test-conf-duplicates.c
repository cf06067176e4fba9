/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the check that no two policies claim the same Match= pattern:
 * the exact messages (each later claim names every earlier claim of another
 * policy, policies in name order) and their count past the record's bound;
 * and a load of the largest configuration the directories allow, 3 x 1,024
 * policies of 64 patterns each, which must complete (issue 19: the check was
 * quadratic). The time of that load is printed, not asserted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <cmocka.h>

#include "conf.h"
#include "conf-test.h"
#include "util.h"

#define SCALE_PATTERNS 64

/* A policy file in policies.d of config_dirs[dir]. */
static void put_policy(size_t dir, const char *name, const char *text) {
        char rel[256];

        snprintf(rel, sizeof(rel), "%s/" CONFIG_POLICY_DIR "/%s.conf", config_dirs[dir] + 1, name);
        tmp_root_put(rel, text);
}

static int message_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The diagnostics, sorted, are exactly `expected` (sorted here too). */
static void assert_messages(ConfDiag *d, char **expected, size_t n) {
        qsort(d->messages, d->n_messages, sizeof(char *), message_cmp);
        qsort(expected, n, sizeof(char *), message_cmp);
        for (size_t i = 0; i < d->n_messages; i++)
                fprintf(stderr, "  diag: %s\n", d->messages[i]);
        assert_int_equal(d->n_dropped, 0);
        assert_int_equal(d->n_messages, n);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(d->messages[i], expected[i]);
}

/* The message of a claim of `pattern` by policy `later` that `earlier` made first. */
static char *claim_message(const char *later, size_t later_dir, unsigned later_line, const char *pattern,
                           const char *earlier, size_t earlier_dir, unsigned earlier_line) {
        char *s;

        assert_true(asprintf(&s, "%s%s/" CONFIG_POLICY_DIR "/%s.conf:%u: duplicate policy: Match=%s is already "
                             "claimed by policy '%s' (%s%s/" CONFIG_POLICY_DIR "/%s.conf:%u)",
                             tmp_root, config_dirs[later_dir], later, later_line, pattern,
                             earlier, tmp_root, config_dirs[earlier_dir], earlier, earlier_line) >= 0);
        return s;
}

static void test_duplicate_messages(void **state) {
        ConfDiag d = {};
        Config *c = NULL;
        char *expected[6];

        /* Policies go in name order, whatever their directory: a, b, c. */
        put_policy(0, "a", "[Policy]\nMatch=dup.service\nMatch=dup.service other.service\n");
        put_policy(1, "b", "[Policy]\nMatch=dup.service mine.service\n");
        put_policy(2, "c", "[Policy]\nMatch=other.service dup.service\n");
        put_policy(2, "d", "[Policy]\nMatch=alone.service alone.service\n");  /* twice in one: fine */
        assert_int_equal(config_load(tmp_root, &c, &d), -EINVAL);
        assert_null(c);
        /* Each claim names every earlier claim of another policy: b's names both of a's lines. */
        expected[0] = claim_message("b", 1, 2, "dup.service", "a", 0, 2);
        expected[1] = claim_message("b", 1, 2, "dup.service", "a", 0, 3);
        expected[2] = claim_message("c", 2, 2, "dup.service", "a", 0, 2);
        expected[3] = claim_message("c", 2, 2, "dup.service", "a", 0, 3);
        expected[4] = claim_message("c", 2, 2, "dup.service", "b", 1, 2);
        expected[5] = claim_message("c", 2, 2, "other.service", "a", 0, 3);
        assert_messages(&d, expected, ELEMENTSOF(expected));
        for (size_t i = 0; i < ELEMENTSOF(expected); i++)
                free(expected[i]);
        conf_diag_clear(&d);
}

/* Past CONF_DIAG_MAX the claims are counted as before: one for each earlier claim. */
static void test_duplicate_count_past_the_record(void **state) {
        const size_t n = 300;
        ConfDiag d = {};
        Config *c = NULL;
        char name[32];

        for (size_t i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "p%03zu", i);
                put_policy(i % ELEMENTSOF(config_dirs), name, "[Policy]\nMatch=same.service\n");
        }
        assert_int_equal(config_load(tmp_root, &c, &d), -EINVAL);
        assert_int_equal(d.n_messages, CONF_DIAG_MAX);
        assert_int_equal(conf_diag_count(&d), n * (n - 1) / 2);
        conf_diag_clear(&d);
}

/* Policy `i` of the scale test: SCALE_PATTERNS unit names of its own, one a line. */
static void put_scale_policy(size_t i) {
        char name[32], text[SCALE_PATTERNS * 40 + 16];
        size_t off;

        snprintf(name, sizeof(name), "p%05zu", i);
        off = (size_t) snprintf(text, sizeof(text), "[Policy]\n");
        for (size_t j = 0; j < SCALE_PATTERNS; j++)
                off += (size_t) snprintf(text + off, sizeof(text) - off, "Match=u%05zu-%02zu.service\n", i, j);
        put_policy(i / CONFIG_DIR_FILES_MAX, name, text);
}

static double seconds_since(const struct timespec *t0) {
        struct timespec t;

        assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &t), 0);
        return (double) (t.tv_sec - t0->tv_sec) + (double) (t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_largest_configuration_loads(void **state) {
        const size_t n = ELEMENTSOF(config_dirs) * CONFIG_DIR_FILES_MAX;
        ConfDiag d = {};
        Config *c = NULL;
        struct timespec t0;
        int r;

        for (size_t i = 0; i < n; i++)
                put_scale_policy(i);
        assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &t0), 0);
        r = config_load(tmp_root, &c, &d);
        fprintf(stderr, "config_load of %zu policies x %d Match=: %.3f s\n", n, SCALE_PATTERNS,
                seconds_since(&t0));
        for (size_t i = 0; i < d.n_messages; i++)
                fprintf(stderr, "  diag: %s\n", d.messages[i]);
        assert_int_equal(r, 0);
        assert_int_equal(c->n_policies, n);

        /* What the daemon does per cgroup: the last policy's last pattern, and no match at all. */
        assert_int_equal(clock_gettime(CLOCK_MONOTONIC, &t0), 0);
        assert_string_equal(config_find_policy(c, "/u03071-63.service", "u03071-63.service")->name, "p03071");
        assert_null(config_find_policy(c, "/none.service", "none.service"));
        fprintf(stderr, "two config_find_policy() lookups: %.3f ms\n", seconds_since(&t0) * 1e3);
        config_free(c);
        conf_diag_clear(&d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_duplicate_messages, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_duplicate_count_past_the_record, tmp_root_setup,
                                                tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_largest_configuration_loads, tmp_root_setup,
                                                tmp_root_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
