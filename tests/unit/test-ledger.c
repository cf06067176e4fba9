/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the throttle ledger: sharing, precedence, adoption, persistence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ledger.h"
#include "throttle.h"
#include "util.h"

static void test_lower_request_wins(void **state) {
        Ledger l;
        ThrottleEntry *e;

        ledger_init(&l, NULL);
        assert_int_equal(ledger_request(&l, "/w", 7, THROTTLE_MEMORY_HIGH, 0, 0, POINT_WRITE, 300, "dirty", THROTTLE_NONE, &e), 0);
        assert_true(e->original == THROTTLE_NONE);
        assert_int_equal(throttle_effective(e), 300);
        assert_int_equal(ledger_request(&l, "/w", 7, THROTTLE_MEMORY_HIGH, 0, 0, POINT_ALLOCATION, 200, "pressure", 999, &e), 0);
        assert_int_equal(l.n, 1);
        assert_true(e->original == THROTTLE_NONE); /* the first reading stays the original */
        assert_int_equal(throttle_effective(e), 200);
        assert_string_equal(e->reason[POINT_ALLOCATION], "pressure");
        e = ledger_release(&l, "/w", THROTTLE_MEMORY_HIGH, 0, 0, POINT_ALLOCATION);
        assert_int_equal(throttle_effective(e), 300);
        e = ledger_release(&l, "/w", THROTTLE_MEMORY_HIGH, 0, 0, POINT_WRITE);
        assert_false(throttle_requested(e));
        assert_true(throttle_effective(e) == THROTTLE_NONE);
        ledger_remove(&l, e);
        assert_int_equal(l.n, 0);
        ledger_clear(&l);
}

static void test_never_above_the_original(void **state) {
        Ledger l;
        ThrottleEntry *e;

        ledger_init(&l, NULL);
        /* An operator's memory.high of 100 is never loosened by a request of 500. */
        assert_int_equal(ledger_request(&l, "/w", 7, THROTTLE_MEMORY_HIGH, 0, 0, POINT_WRITE, 500, "", 100, &e), 0);
        assert_int_equal(throttle_effective(e), 100);
        ledger_clear(&l);
}

static void test_devices_are_separate(void **state) {
        Ledger l;
        ThrottleEntry *e;

        ledger_init(&l, NULL);
        assert_int_equal(ledger_request(&l, "/w", 7, THROTTLE_IO_WBPS, 8, 0, POINT_WRITE, 1000, "", THROTTLE_NONE, &e), 0);
        assert_int_equal(ledger_request(&l, "/w", 7, THROTTLE_IO_WBPS, 8, 16, POINT_WRITE, 2000, "", THROTTLE_NONE, &e), 0);
        assert_int_equal(l.n, 2);
        assert_int_equal(throttle_effective(ledger_find(&l, "/w", THROTTLE_IO_WBPS, 8, 0)), 1000);
        assert_null(ledger_find(&l, "/w", THROTTLE_IO_WBPS, 9, 0));
        ledger_clear(&l);
}

static void test_foreign_change_wins(void **state) {
        Ledger l;
        ThrottleEntry *e;

        ledger_init(&l, NULL);
        assert_int_equal(ledger_request(&l, "/w", 7, THROTTLE_MEMORY_HIGH, 0, 0, POINT_WRITE, 300, "", THROTTLE_NONE, &e), 0);
        e->applied = 300;
        assert_false(ledger_adopt_foreign(e, 300));
        assert_true(ledger_adopt_foreign(e, 512));
        assert_int_equal(e->original, 512);
        assert_false(throttle_requested(e));
        ledger_clear(&l);
}

static void test_save_and_load(void **state) {
        char dir[] = "/tmp/mdreclaim-ledger-XXXXXX", file[64];
        Ledger l, k;
        ThrottleEntry *e;
        unsigned bad;
        FILE *f;

        assert_non_null(mkdtemp(dir));
        snprintf(file, sizeof(file), "%s/throttles", dir);
        ledger_init(&l, file);
        assert_int_equal(ledger_request(&l, "/a b/tab\there", 7, THROTTLE_IO_WBPS, 8, 0, POINT_WRITE, 1048576,
                                        "victim\tstalls\\ 30%", THROTTLE_NONE, &e), 0);
        e->applied = 1048576;
        assert_int_equal(ledger_request(&l, "/m", 9, THROTTLE_MEMORY_HIGH, 0, 0, POINT_ALLOCATION, 4096, "", 8192, &e), 0);
        assert_int_equal(ledger_save(&l), 0);

        ledger_init(&k, file);
        assert_int_equal(ledger_load(&k, &bad), 0);
        assert_int_equal(bad, 0);
        assert_int_equal(k.n, 2);
        e = ledger_find(&k, "/a b/tab\there", THROTTLE_IO_WBPS, 8, 0);
        assert_non_null(e);
        assert_int_equal(e->cgroup_id, 7);
        assert_true(e->original == THROTTLE_NONE);
        assert_int_equal(e->applied, 1048576);
        assert_int_equal(e->requested[POINT_WRITE], 1048576);
        assert_true(e->requested[POINT_ALLOCATION] == THROTTLE_NONE);
        assert_string_equal(e->reason[POINT_WRITE], "victim\tstalls\\ 30%");
        e = ledger_find(&k, "/m", THROTTLE_MEMORY_HIGH, 0, 0);
        assert_int_equal(e->original, 8192);
        ledger_clear(&k);

        /* Garbage lines are skipped and reported, the rest read. */
        f = fopen(file, "ae");
        fputs("this is not an entry\n", f);
        fclose(f);
        ledger_init(&k, file);
        assert_int_equal(ledger_load(&k, &bad), 0);
        assert_int_equal(bad, 4);
        assert_int_equal(k.n, 2);
        ledger_clear(&k);
        ledger_clear(&l);

        /* No file: an empty ledger. */
        assert_int_equal(unlink(file), 0);
        ledger_init(&k, file);
        assert_int_equal(ledger_load(&k, &bad), 0);
        assert_int_equal(k.n, 0);
        ledger_clear(&k);
        assert_int_equal(rmdir(dir), 0);
}

static void test_io_max(void **state) {
        uint64_t v;
        char buf[64];

        assert_int_equal(throttle_parse_io_max("8:0 rbps=max wbps=1048576 riops=max wiops=max\n"
                                               "8:16 rbps=max wbps=max riops=max wiops=max\n", 8, 0, &v), 0);
        assert_int_equal(v, 1048576);
        assert_int_equal(throttle_parse_io_max("8:0 rbps=max wbps=1048576 riops=max wiops=max\n"
                                               "8:16 rbps=max wbps=max riops=max wiops=max\n", 8, 16, &v), 0);
        assert_true(v == THROTTLE_NONE);
        assert_int_equal(throttle_parse_io_max("", 8, 0, &v), 0);
        assert_true(v == THROTTLE_NONE);
        /* 8:1 is not 8:16. */
        assert_int_equal(throttle_parse_io_max("8:16 rbps=max wbps=5 riops=max wiops=max\n", 8, 1, &v), 0);
        assert_true(v == THROTTLE_NONE);
        assert_int_equal(throttle_parse_io_max("8:0 rbps=max wbps=lots\n", 8, 0, &v), -EBADMSG);
        assert_string_equal(throttle_format(THROTTLE_IO_WBPS, 8, 0, 4096, buf, sizeof(buf)), "8:0 wbps=4096");
        assert_string_equal(throttle_format(THROTTLE_IO_WBPS, 8, 0, THROTTLE_NONE, buf, sizeof(buf)), "8:0 wbps=max");
        assert_string_equal(throttle_format(THROTTLE_MEMORY_HIGH, 0, 0, THROTTLE_NONE, buf, sizeof(buf)), "max");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lower_request_wins),
                cmocka_unit_test(test_never_above_the_original),
                cmocka_unit_test(test_devices_are_separate),
                cmocka_unit_test(test_foreign_change_wins),
                cmocka_unit_test(test_save_and_load),
                cmocka_unit_test(test_io_max),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
