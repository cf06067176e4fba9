/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the derived signals: deltas, rates, resets, missing data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "devstat.h"
#include "derived.h"
#include "util.h"

#define PAGE 4096

static CgroupSample sample(uint64_t dirty, uint64_t wb, uint64_t refaults, uint64_t mem_some, uint64_t io_some) {
        CgroupSample s = {
                .have = SAMPLE_MEMORY_STAT | SAMPLE_MEMORY_PRESSURE | SAMPLE_IO_PRESSURE | SAMPLE_IO_STAT,
                .stat_found = (1u << STAT_FILE) | (1u << STAT_FILE_DIRTY) | (1u << STAT_FILE_WRITEBACK) |
                              (1u << STAT_SLAB_RECLAIMABLE) | (1u << STAT_WORKINGSET_REFAULT_FILE) |
                              (1u << STAT_PGSCAN) | (1u << STAT_PGSTEAL),
        };
        s.stat[STAT_FILE] = 100 << 20;
        s.stat[STAT_FILE_DIRTY] = dirty;
        s.stat[STAT_FILE_WRITEBACK] = wb;
        s.stat[STAT_SLAB_RECLAIMABLE] = 5 << 20;
        s.stat[STAT_WORKINGSET_REFAULT_FILE] = refaults;
        s.memory_pressure.some.total = mem_some;
        s.memory_pressure.has_full = true;
        s.io_pressure.some.total = io_some;
        return s;
}

static void test_estimates(void **state) {
        CgroupSample s = sample(10 << 20, 6 << 20, 0, 0, 0);

        assert_int_equal(sample_dirty_bytes(&s), 16 << 20);
        /* 100M of file cache, 16M of it dirty or under writeback, plus 5M slab. */
        assert_int_equal(sample_reclaimable_bytes(&s), (84 << 20) + (5 << 20));
        s.stat[STAT_FILE] = 1 << 20; /* more dirty than file: clamps, never wraps */
        assert_int_equal(sample_reclaimable_bytes(&s), 5 << 20);
        s.have = 0;
        assert_int_equal(sample_reclaimable_bytes(&s), 0);
}

static void test_rates_and_stalls(void **state) {
        CgroupSample a = sample(10 << 20, 0, 100, 1000, 50000), b = sample(30 << 20, 4 << 20, 350, 251000, 50000);
        IoStatDev a_io[1], b_io[2];
        CgroupSignals g = {};

        a.io = a_io;
        b.io = b_io;
        a.io[0] = (IoStatDev) { .major = 8, .minor = 0, .wbytes = 1 << 20, .rbytes = 0, .wios = 10, .rios = 3 };
        a.n_io = 1;
        b.io[0] = (IoStatDev) { .major = 8, .minor = 0, .wbytes = 9 << 20, .rbytes = 4096, .wios = 40, .rios = 4 };
        b.io[1] = (IoStatDev) { .major = 8, .minor = 16, .wbytes = 2 << 20, .wios = 7 }; /* new device */
        b.n_io = 2;

        signals_derive(&a, 10 * USEC_PER_SEC, &b, 12 * USEC_PER_SEC, PAGE, &g);
        assert_true(g.valid);
        assert_int_equal(g.interval_usec, 2 * USEC_PER_SEC);
        assert_true(g.have_memory_stall);
        assert_int_equal(g.memory_stall.some_usec, 250000);
        assert_int_equal(g.memory_stall.some_ppm, 125000);     /* 12.5% of 2 s */
        assert_int_equal(g.io_stall.some_usec, 0);
        assert_int_equal(g.dirty_rate, 12 << 20);              /* +24M over 2 s */
        assert_int_equal(g.refault_rate, 125 * PAGE);          /* 250 pages over 2 s, in bytes */
        assert_int_equal(g.n_devices, 2);
        assert_int_equal(g.devices[0].wbytes_per_sec, 4 << 20);
        assert_int_equal(g.devices[0].rbytes_per_sec, 2048);
        assert_int_equal(g.devices[0].ios, 31);                 /* requests over the interval, not a rate */
        assert_int_equal(g.devices[1].ios, 7);
        assert_int_equal(g.devices[1].minor, 16);
        assert_int_equal(g.devices[1].wbytes_per_sec, 1 << 20);
        assert_int_equal(g.write_rate, 5 << 20);

        /* Shrinking dirty data is a negative rate. The devices' buffer is kept for the next derivation:
         * sized for the most devices seen, holding those of this one. */
        signals_derive(&b, 0, &a, USEC_PER_SEC, PAGE, &g);
        assert_int_equal(g.dirty_rate, -(24 << 20));
        assert_int_equal(g.n_devices, 1);
        assert_int_equal(g.devices_alloc, 2);
        assert_int_equal(g.devices[0].wbytes_per_sec, 0);      /* went backwards: no change */

        /* Without io.stat in one of them: no device, the buffer still kept. */
        a.have &= ~SAMPLE_IO_STAT;
        signals_derive(&a, 0, &b, USEC_PER_SEC, PAGE, &g);
        assert_true(g.valid);
        assert_int_equal(g.n_devices, 0);
        assert_int_equal(g.write_rate, 0);
        assert_non_null(g.devices);
        signals_done(&g);
        assert_null(g.devices);
        assert_false(g.valid);
}

/* A sample's devices are its own: an assigned one holds a copy, in a buffer it keeps and grows only
 * for more devices than it has held; sample_done() frees it. */
static void test_sample_assign(void **state) {
        CgroupSample a = sample(0, 0, 0, 0, 0), b = {};
        IoStatDev io[2] = { { .major = 8, .wbytes = 100 }, { .major = 8, .minor = 16, .wbytes = 200 } };
        const IoStatDev *buf;

        a.io = io;
        a.n_io = 1;
        assert_int_equal(sample_assign(&b, &a), 0);
        assert_ptr_not_equal(b.io, a.io);
        assert_int_equal(b.n_io, 1);
        assert_int_equal(b.io_alloc, 1);
        a.n_io = 2;
        assert_int_equal(sample_assign(&b, &a), 0);            /* grown */
        assert_int_equal(b.io_alloc, 2);
        assert_int_equal(b.io[1].wbytes, 200);
        assert_int_equal(b.stat[STAT_FILE], 100 << 20);
        buf = b.io;
        a.n_io = 0;
        assert_int_equal(sample_assign(&b, &a), 0);            /* none: the buffer kept */
        assert_int_equal(b.n_io, 0);
        assert_ptr_equal(b.io, buf);
        a.n_io = 1;
        assert_int_equal(sample_assign(&b, &a), 0);            /* fewer than it held: no allocation */
        assert_ptr_equal(b.io, buf);
        assert_int_equal(b.io[0].wbytes, 100);
        sample_done(&b);
        assert_null(b.io);
        assert_int_equal(b.n_io, 0);
        assert_int_equal(b.io_alloc, 0);
        assert_int_equal(b.stat[STAT_FILE], 100 << 20);        /* the figures stay */
}

static void test_resets_and_gaps(void **state) {
        CgroupSample a = sample(0, 0, 1000, 5000000, 0), b = sample(0, 0, 10, 100, 0);
        CgroupSignals g = {};

        /* Counters that went backwards count as no change. */
        signals_derive(&a, 0, &b, USEC_PER_SEC, PAGE, &g);
        assert_true(g.valid);
        assert_int_equal(g.memory_stall.some_usec, 0);
        assert_int_equal(g.refault_rate, 0);

        /* No time passed: nothing can be derived. */
        signals_derive(&a, 5, &b, 5, PAGE, &g);
        assert_false(g.valid);

        /* A file missing from either sample gives no figure, not a zero-based one. */
        b.have &= ~SAMPLE_MEMORY_PRESSURE;
        signals_derive(&a, 0, &b, USEC_PER_SEC, PAGE, &g);
        assert_false(g.have_memory_stall);
        assert_true(g.have_io_stall);

        /* Stall beyond the interval (clock skew between the two) is capped at 100%. */
        a = sample(0, 0, 0, 0, 0);
        b = sample(0, 0, 0, 3 * USEC_PER_SEC, 0);
        signals_derive(&a, 0, &b, USEC_PER_SEC, PAGE, &g);
        assert_int_equal(g.memory_stall.some_ppm, 1000000);
        signals_done(&g);
}

static void test_system(void **state) {
        SystemSample a = { .have = SYSTEM_MEMORY_PRESSURE | SYSTEM_VMSTAT }, b;
        SystemSignals g;

        a.vmstat_found = (1u << _VMSTAT_MAX) - 1;
        a.vmstat[VMSTAT_NR_DIRTY] = 100;
        a.vmstat[VMSTAT_NR_WRITEBACK] = 28;
        a.vmstat[VMSTAT_NR_DIRTY_THRESHOLD] = 1000;
        a.vmstat[VMSTAT_NR_DIRTY_BACKGROUND_THRESHOLD] = 500;
        a.vmstat[VMSTAT_WORKINGSET_REFAULT_FILE] = 7;
        a.memory_pressure.some.total = 100;
        b = a;
        b.memory_pressure.some.total = 600;
        b.vmstat[VMSTAT_WORKINGSET_REFAULT_FILE] = 17;

        system_signals_derive(&a, 0, &b, USEC_PER_SEC / 2, PAGE, &g);
        assert_true(g.valid);
        assert_int_equal(g.dirty_bytes, 128 * PAGE);
        assert_int_equal(g.dirty_threshold_bytes, 1000 * PAGE);
        assert_int_equal(g.dirty_background_threshold_bytes, 500 * PAGE);
        assert_int_equal(g.memory_stall.some_usec, 500);
        assert_int_equal(g.memory_stall.some_ppm, 1000);
        assert_int_equal(g.refault_rate, 20 * PAGE);
        assert_false(g.have_io_stall);
}

static void test_rate_per_sec(void **state) {
        assert_int_equal(rate_per_sec(10, USEC_PER_SEC), 10);
        assert_int_equal(rate_per_sec(10, USEC_PER_SEC / 10), 100);
        assert_int_equal(rate_per_sec(10, 0), 0);
        /* Huge deltas do not overflow. */
        assert_true(rate_per_sec(UINT64_MAX / 2, 2 * USEC_PER_SEC) > UINT64_MAX / 8);
}

/* Ticks of half a second: `mib` MiB written, busy `busy_ppm`, writes waiting at the end or not. */
static void ticks(DevStat *d, unsigned n, uint64_t mib, uint32_t busy_ppm, bool waiting) {
        for (unsigned i = 0; i < n; i++)
                devstat_capacity_tick(d, mib << 20, USEC_PER_SEC / 2, busy_ppm, waiting);
}

/* Whether the estimate is within a thousandth of `want` (the sums are doubles). */
static bool near(uint64_t got, uint64_t want) {
        uint64_t diff = got > want ? got - want : want - got;

        return diff <= want / 1000;
}

static void test_device_capacity(void **s) {
        const uint64_t m = UINT64_C(1) << 20;
        DevStat d = {};

        /* Not saturated: says nothing, whatever the rate (a burst into a cache). */
        ticks(&d, 8, 16, 500000, false);
        assert_int_equal(d.capacity, 0);
        /* Saturated: from half a second of it a first figure, the flood's rate so far. */
        ticks(&d, 1, 8, 950000, false);
        assert_int_equal(d.capacity, 0);
        assert_int_equal(devstat_capacity(&d), 16 * m);
        ticks(&d, 1, 10, 950000, false);
        assert_int_equal(d.provisional, 18 * m);
        ticks(&d, 2, 6, 950000, false);
        assert_int_equal(devstat_capacity(&d), 15 * m);
        /* The flood's first two seconds are not in the estimate, nor in the first figure once ticks
         * after them are; the estimate is set once the sums hold two seconds (decayed: two and a
         * half of ticks). */
        ticks(&d, 1, 8, 1000000, false);
        assert_int_equal(d.capacity, 0);
        assert_int_equal(devstat_capacity(&d), 16 * m);
        ticks(&d, 3, 8, 1000000, false);
        assert_int_equal(d.capacity, 0);
        ticks(&d, 1, 8, 1000000, false);
        assert_true(near(d.capacity, 16 * m));
        /* The estimate, once there, is what counts; the first figure is never saved. */
        d.provisional = 99 * m;
        assert_int_equal(devstat_capacity(&d), d.capacity);
        /* A burst moves it by its share of the time (half a second of ten here), and it comes back
         * as the disk's rate goes on. */
        ticks(&d, 16, 8, 1000000, false);
        assert_true(near(d.capacity, 16 * m));
        ticks(&d, 1, 32, 1000000, false);
        assert_true(d.capacity > 18 * m && d.capacity < 19 * m);
        ticks(&d, 240, 8, 1000000, false);
        assert_true(d.capacity < 16 * m + m / 8);
        /* Unsaturated time does not age it: a new flood's first seconds at twice the rate are left
         * out, and what follows weighs as much as the time it took. */
        ticks(&d, 100, 1, 100000, false);
        ticks(&d, 4, 16, 1000000, false);
        assert_true(d.capacity < 16 * m + m / 8);
        ticks(&d, 4, 12, 1000000, false);
        assert_true(d.capacity < 16 * m + m / 2);       /* 16.75 MiB/s, had the 50 s idle aged them */
        ticks(&d, 240, 12, 1000000, false);
        assert_true(d.capacity > 23 * m && d.capacity < 24 * m);
        /* A device saturated by reads, its few writes waiting behind them: no first figure under
         * 1 MiB/s, and none from waits alone. */
        {
                DevStat r = {};

                devstat_capacity_tick(&r, 200 << 10, USEC_PER_SEC, 1000000, true);
                assert_int_equal(devstat_capacity(&r), 0);
                devstat_capacity_tick(&r, 0, USEC_PER_SEC / 2, 1000000, true);
                assert_int_equal(devstat_capacity(&r), 0);
                /* A first figure not confirmed within 10 s of unsaturated ticks is dropped with its
                 * flood; a saturated tick in between keeps it. */
                r = (DevStat) {};
                ticks(&r, 1, 2, 950000, false);
                assert_int_equal(devstat_capacity(&r), 4 * m);
                ticks(&r, 19, 1, 100000, false);
                assert_int_equal(devstat_capacity(&r), 4 * m);
                ticks(&r, 1, 2, 950000, false);
                ticks(&r, 19, 1, 100000, false);
                assert_int_equal(devstat_capacity(&r), 4 * m);
                ticks(&r, 1, 1, 100000, false);
                assert_int_equal(devstat_capacity(&r), 0);
                assert_int_equal(r.flood_usec, 0);
                /* Saturated ticks that write nothing while writes wait bring the rate so far under
                 * 1 MiB/s: no first figure then, rather than the earlier one kept. */
                r = (DevStat) {};
                ticks(&r, 1, 1, 950000, false);
                assert_int_equal(devstat_capacity(&r), 2 * m);
                ticks(&r, 2, 0, 1000000, true);
                assert_int_equal(devstat_capacity(&r), 0);
        }
        /* Saturated with nothing written and no write waiting (reads): no figure for writes. */
        d = (DevStat) { .capacity = 16 * m };
        ticks(&d, 8, 0, 1000000, false);
        assert_int_equal(d.capacity, 16 * m);
        assert_int_equal(d.flood_usec, 0);
        /* Writes completed in bursts, the ticks between them busy with writes waiting (btrfs under
         * qemu, a 16 MiB/s disk): the bursts alone would say 56 MiB/s, with the waits it is 14. */
        d = (DevStat) {};
        ticks(&d, 4, 7, 1000000, false);
        for (int i = 0; i < 8; i++) {
                ticks(&d, 3, 0, 1000000, true);
                ticks(&d, 1, 28, 1000000, false);
        }
        assert_true(near(d.capacity, 14 * m));
        /* Waits for four seconds or more: a stuck device, not a slow one. Neither they nor the
         * completion that ends them (what queued meanwhile) count; the ticks after it do. */
        ticks(&d, 8, 0, 1000000, true);
        assert_true(near(d.capacity, 14 * m));
        ticks(&d, 1, 28, 1000000, false);
        assert_true(near(d.capacity, 14 * m));
        ticks(&d, 1, 14, 1000000, false);
        assert_true(d.capacity > 14 * m + m / 4);
        /* A capacity read from the state file counts as the weight the sums settle at (43 s at its
         * rate): two seconds at half of it (after the flood's first two) take it a twentieth of the
         * way, not all of it (unseeded, it would be at 8 MiB/s). */
        d = (DevStat) { .capacity = 16 * m };
        ticks(&d, 8, 4, 1000000, false);
        assert_true(d.capacity > 15 * m + m / 2 && d.capacity < 15 * m + 3 * m / 4);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_estimates),
                cmocka_unit_test(test_rates_and_stalls),
                cmocka_unit_test(test_sample_assign),
                cmocka_unit_test(test_resets_and_gaps),
                cmocka_unit_test(test_system),
                cmocka_unit_test(test_rate_per_sec),
                cmocka_unit_test(test_device_capacity),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
