/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The size of the worker's writes to memory.reclaim and of its memory.high
 * steps: cut after a slow write so that the next aims at the target time,
 * doubled after quick ones, never under a kernel batch nor over 8 MiB, and
 * not grown by a job's last, smaller write.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "worker.h"

#define KIB UINT64_C(1024)
#define MIB (KIB * KIB)
#define PAGE UINT64_C(4096)
#define FLOOR (RECLAIM_WRITE_MIN_PAGES * PAGE)
#define TARGET RECLAIM_WRITE_TARGET_USEC

static uint64_t next(uint64_t size, uint64_t asked, uint64_t took_usec) {
        return reclaim_write_next(size, asked, took_usec, PAGE);
}

static void test_quick_writes_grow_to_the_max(void **state) {
        uint64_t size = FLOOR;
        int writes = 0;

        assert_int_equal(FLOOR, 128 * KIB);
        while (size < RECLAIM_WRITE_MAX && writes < 20) {
                size = next(size, size, 5000);
                writes++;
        }
        assert_int_equal(size, RECLAIM_WRITE_MAX);
        assert_int_equal(writes, 6);    /* 128K doubled six times */
        assert_int_equal(next(RECLAIM_WRITE_MAX, RECLAIM_WRITE_MAX, 1), RECLAIM_WRITE_MAX);
        /* From a job's first size: three quick writes. */
        assert_int_equal(next(next(next(RECLAIM_WRITE_FIRST, MIB, 1), 2 * MIB, 1), 4 * MIB, 1), RECLAIM_WRITE_MAX);
}

static void test_slow_write_aims_at_the_target(void **state) {
        /* 8 MiB in 5 s (swap-out to a saturated 16 MiB/s disk): about what would take the target. */
        uint64_t size = next(8 * MIB, 8 * MIB, 5000000);

        assert_int_equal(size, (8 * MIB * TARGET / 5000000) / PAGE * PAGE);
        assert_true(size >= FLOOR && size < 8 * MIB / 16);
        /* Just over the target: halved at least. */
        assert_int_equal(next(8 * MIB, 8 * MIB, TARGET + 1), 4 * MIB);
        /* Never under one kernel batch, however slow. */
        assert_int_equal(next(FLOOR, FLOOR, 60 * 1000000), FLOOR);
        assert_int_equal(next(256 * KIB, 256 * KIB, 10 * TARGET), FLOOR);
}

static void test_between_half_and_the_target_it_stays(void **state) {
        assert_int_equal(next(2 * MIB, 2 * MIB, TARGET / 2), 2 * MIB);
        assert_int_equal(next(2 * MIB, 2 * MIB, TARGET), 2 * MIB);
}

static void test_a_short_last_write_does_not_grow_it(void **state) {
        /* A job's remainder of 300K went quickly: it says nothing of 2 MiB. */
        assert_int_equal(next(2 * MIB, 300 * KIB, 1000), 2 * MIB);
        /* But one that was slow for its 300K still cuts it, from what it asked. */
        assert_int_equal(next(2 * MIB, 300 * KIB, 3 * TARGET), FLOOR);
        assert_int_equal(next(4 * MIB, 2 * MIB, 2 * TARGET), MIB);
}

static void test_out_of_range_and_pages(void **state) {
        /* 0 (nothing learned), or more than the max, comes back in range. */
        assert_int_equal(next(0, 0, TARGET), FLOOR);
        assert_int_equal(next(64 * MIB, 64 * MIB, TARGET), RECLAIM_WRITE_MAX);
        /* Whole pages. */
        assert_int_equal(next(MIB, MIB, 3 * TARGET) % PAGE, 0);
        assert_int_equal(next(MIB + 100, MIB, TARGET), MIB);
        /* 64 KiB pages: the floor is 32 of them. */
        assert_int_equal(reclaim_write_next(MIB, MIB, 100 * TARGET, 65536), 32 * 65536);
        /* A page size not known: 4 KiB. */
        assert_int_equal(reclaim_write_next(0, 0, TARGET, 0), FLOOR);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_quick_writes_grow_to_the_max),
                cmocka_unit_test(test_slow_write_aims_at_the_target),
                cmocka_unit_test(test_between_half_and_the_target_it_stays),
                cmocka_unit_test(test_a_short_last_write_does_not_grow_it),
                cmocka_unit_test(test_out_of_range_and_pages),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
