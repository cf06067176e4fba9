/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the "did you mean" names: the distance, and which names are offered back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "nearest.h"

static void test_distance(void **state) {
        char longer[NEAREST_NAME_MAX + 2];

        assert_int_equal(name_distance("", ""), 0);
        assert_int_equal(name_distance("nginx.service", "nginx.service"), 0);
        assert_int_equal(name_distance("ngnix.service", "nginx.service"), 1);     /* a swap */
        assert_int_equal(name_distance("ngix.service", "nginx.service"), 1);      /* an insertion */
        assert_int_equal(name_distance("nginxx.service", "nginx.service"), 1);    /* a deletion */
        assert_int_equal(name_distance("nginy.service", "nginx.service"), 1);     /* a substitution */
        assert_int_equal(name_distance("abc", ""), 3);
        assert_int_equal(name_distance("", "abc"), 3);
        assert_int_equal(name_distance("ca", "abc"), 3);                           /* OSA: no edit of a swap */
        assert_int_equal(name_distance("kitten", "sitting"), 3);
        memset(longer, 'a', sizeof(longer) - 1);
        longer[sizeof(longer) - 1] = '\0';
        assert_true(name_distance(longer, "a") == SIZE_MAX);
        longer[NEAREST_NAME_MAX] = '\0';
        assert_int_equal(name_distance(longer, longer), 0);
}

/* The bounded distance agrees with the whole one wherever it is within the bound, and says SIZE_MAX past
 * it: over every pair of short names from a small alphabet (swaps, lengths apart, far-off starts). */
static void test_distance_within(void **state) {
        static const char letters[] = "ab.";
        char a[6], b[6];

        for (unsigned x = 0; x < 3 * 3 * 3 * 3 * 3; x++)
                for (unsigned y = 0; y < 3 * 3 * 3 * 3; y += 1) {
                        size_t la = 1 + x % 5, lb = y % 4;
                        unsigned v = x, w = y;

                        for (size_t i = 0; i < la; i++, v /= 3)
                                a[i] = letters[v % 3];
                        a[la] = '\0';
                        for (size_t i = 0; i < lb; i++, w /= 3)
                                b[i] = letters[w % 3];
                        b[lb] = '\0';
                        for (size_t max = 0; max <= 6; max++) {
                                size_t d = name_distance(a, b);

                                assert_true(name_distance_within(a, b, max) == (d <= max ? d : SIZE_MAX));
                        }
                }
        assert_true(name_distance_within("db.service", "a-very-long-name.service", 3) == SIZE_MAX);
        assert_int_equal(name_distance_within("ngnix.service", "nginx.service", 1), 1);
}

static void test_nearest(void **state) {
        static const char *const seen[] = {
                "db.service", "nginx.service", "ngin.service", "writer.service", "nginx.service",
                "mginx.service", "nginx-exporter.service", "ngnix.service", "system.slice",
        };
        NearestNames n;

        nearest_names_init(&n, "ngnix.service");
        for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
                nearest_names_offer(&n, seen[i]);
        /* Itself is no suggestion; the twice-seen nginx.service counts once; ties in name order. */
        assert_int_equal(n.n, 3);
        assert_string_equal(n.names[0], "nginx.service");
        assert_int_equal(n.distances[0], 1);
        assert_string_equal(n.names[1], "mginx.service");
        assert_string_equal(n.names[2], "ngin.service");
        assert_int_equal(n.distances[1], 2);
        assert_int_equal(n.distances[2], 2);

        /* Nothing near: nothing offered (a third of 13 letters is 4). */
        nearest_names_init(&n, "mysql.service");
        nearest_names_offer(&n, "mariadb.service");
        nearest_names_offer(&n, "writer.service");
        assert_int_equal(n.n, 0);
        nearest_names_offer(&n, "mysqld.service");
        assert_int_equal(n.n, 1);

        /* Short names: two edits at most. */
        nearest_names_init(&n, "db");
        nearest_names_offer(&n, "dbx");
        nearest_names_offer(&n, "web");
        nearest_names_offer(&n, "nginx");
        assert_int_equal(n.n, 2);
        assert_string_equal(n.names[0], "dbx");
        assert_string_equal(n.names[1], "web");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_distance),
                cmocka_unit_test(test_distance_within),
                cmocka_unit_test(test_nearest),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
