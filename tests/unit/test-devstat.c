/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the device capacities kept over a restart. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "devstat.h"

static int load(DevStatTable *t, const char *text) {
        char *copy = strdup(text);
        int r;

        assert_non_null(copy);
        r = devstat_load_text(t, copy, strlen(text), "test");
        free(copy);
        return r;
}

static void test_capacities_are_read_and_given_to_new_devices(void **s) {
        DevStatTable t = {};
        DevStat *d;

        assert_int_equal(load(&t, "# header\n8:0 16777216\n254:16 1000\n"), 0);
        assert_int_equal(t.n_known, 2);
        d = devstat_want(&t, 8, 0);
        assert_non_null(d);
        assert_int_equal(d->capacity, 16777216);
        d = devstat_want(&t, 8, 16);
        assert_non_null(d);
        assert_int_equal(d->capacity, 0);
        devstat_clear(&t);
}

static void test_odd_text_is_ignored_whole(void **s) {
        static const char *const bad[] = {
                "8:0 16777216\n8:0 lots\n", "8:0\n", "8:0 0\n", "-8:0 5\n", "8:0 5 6\n", "8 0 5\n", " 8:0 5\n",
                "8:-1 5\n", "8: 0 5\n", "8:0 -5\n", "8:0  5\n", "4294967296:0 5\n", "8:0 18446744073709551616\n",
        };
        DevStatTable t = {};
        char nul[] = "8:0 5\0junk";

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(load(&t, bad[i]), -EBADMSG);
                assert_int_equal(t.n_known, 0);
        }
        assert_int_equal(devstat_load_text(&t, nul, sizeof(nul) - 1, "test"), -EBADMSG);
        assert_int_equal(t.n_known, 0);
}

static void test_save_and_load_again(void **s) {
        char dir[] = "/tmp/mdr-devstat.XXXXXX", path[64];
        DevStatTable t = {}, again = {};
        FILE *f;
        char *text = NULL;
        size_t cap = 0;
        ssize_t n;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/devices", dir);
        assert_int_equal(load(&t, "8:0 16777216\n259:0 2000000000\n"), 0);
        t.known_changed = true;
        assert_int_equal(devstat_save(&t, path), 0);
        assert_false(t.known_changed);
        f = fopen(path, "r");
        assert_non_null(f);
        n = getdelim(&text, &cap, '\0', f);
        fclose(f);
        assert_true(n > 0);
        assert_int_equal(devstat_load_text(&again, text, (size_t) n, path), 0);
        assert_int_equal(again.n_known, 2);
        assert_int_equal(again.known[1].major, 259);
        assert_int_equal(again.known[1].capacity, 2000000000);
        free(text);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(rmdir(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_capacities_are_read_and_given_to_new_devices),
                cmocka_unit_test(test_odd_text_is_ignored_whole),
                cmocka_unit_test(test_save_and_load_again),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
