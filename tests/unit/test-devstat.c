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
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "devstat.h"
#include "hostfs.h"

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

/* The stat file of fixture disk 8:0, as it is written (the same file: a kept fd sees the change). */
static void put_raw(const char *dir, const char *text) {
        char p[256];
        FILE *f;

        snprintf(p, sizeof(p), "%s/sys/dev/block/8:0/stat", dir);
        f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

/* ... holding these counters (fields 5, 8, 9 and 10 of 11). */
static void put_stat(const char *dir, uint64_t writes, uint64_t write_ms, uint64_t in_flight, uint64_t io_ms) {
        char text[256];

        snprintf(text, sizeof(text), "0 0 0 0 %llu 0 %llu %llu %llu %llu 0\n", (unsigned long long) writes,
                 (unsigned long long) writes * 8, (unsigned long long) write_ms, (unsigned long long) in_flight,
                 (unsigned long long) io_ms);
        put_raw(dir, text);
}

static void put_inflight(const char *dir, unsigned reads, unsigned writes) {
        char p[256];
        FILE *f;

        snprintf(p, sizeof(p), "%s/sys/dev/block/8:0/inflight", dir);
        f = fopen(p, "w");
        assert_non_null(f);
        fprintf(f, "%8u %8u\n", reads, writes);
        assert_int_equal(fclose(f), 0);
}

static DevStat *sample(HostRoot *h, DevStatTable *t, uint64_t now) {
        assert_non_null(devstat_want(t, 8, 0));
        devstat_sample(h, t, now);
        return devstat_find(t, 8, 0);
}

/*
 * The time a write took (queued and served) over a tick: busy all of it
 * with writes of 500 ms each is congested; fast writes, or slow ones on a
 * device idle most of the tick, are not; a busy tick with requests in
 * flight and none completed counts as a whole tick's wait.
 */
static void test_write_wait_and_congestion(void **s) {
        char dir[] = "/tmp/test-devstat-XXXXXX", p[256], q[256];
        HostRoot *h = NULL;
        DevStatTable t = {};
        DevStat *d;

        assert_non_null(mkdtemp(dir));
        snprintf(p, sizeof(p), "%s/proc", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        for (const char *sub = "sys\0sys/dev\0sys/dev/block\0sys/dev/block/8:0\0"; *sub; sub += strlen(sub) + 1) {
                snprintf(q, sizeof(q), "%s/%s", dir, sub);
                assert_int_equal(mkdir(q, 0755), 0);
        }
        snprintf(q, sizeof(q), "%s/sys", dir);
        assert_int_equal(host_root_open(p, q, &h), 0);

        put_stat(dir, 100, 1000, 0, 5000);
        d = sample(h, &t, 1000000);
        assert_false(devstat_congested(d));     /* one sample: nothing known */
        put_stat(dir, 104, 3000, 30, 6000);     /* 4 writes, 2 s between them, busy the whole second */
        d = sample(h, &t, 2000000);
        assert_int_equal(d->write_wait_usec, 500000);
        assert_true(devstat_congested(d));
        put_stat(dir, 204, 3100, 2, 7000);      /* 100 writes of 1 ms */
        d = sample(h, &t, 3000000);
        assert_int_equal(d->write_wait_usec, 1000);
        assert_false(devstat_congested(d));
        /* ... but congested a second ago: lately, for DEVSTAT_CONGESTED_HOLD_USEC. */
        assert_true(devstat_congested_lately(d, 3000000));
        assert_true(devstat_congested_lately(d, 2000000 + DEVSTAT_CONGESTED_HOLD_USEC - 1));
        assert_false(devstat_congested_lately(d, 2000000 + DEVSTAT_CONGESTED_HOLD_USEC));
        put_stat(dir, 204, 3100, 3, 8000);      /* busy, reads in flight, no write completed */
        put_inflight(dir, 3, 0);
        d = sample(h, &t, 4000000);
        assert_int_equal(d->write_wait_usec, 0);
        assert_false(devstat_congested(d));
        put_stat(dir, 204, 3100, 3, 9000);      /* busy, writes in flight, none completed */
        put_inflight(dir, 1, 2);
        d = sample(h, &t, 5000000);
        assert_int_equal(d->write_wait_usec, 1000000);
        assert_true(devstat_congested(d));
        put_stat(dir, 206, 4100, 0, 9300);      /* slow writes, but busy 30 % of the tick */
        d = sample(h, &t, 6000000);
        assert_int_equal(d->write_wait_usec, 500000);
        assert_false(devstat_congested(d));
        put_stat(dir, 206, 4100, 0, 9300);      /* idle */
        d = sample(h, &t, 7000000);
        assert_int_equal(d->write_wait_usec, 0);
        assert_false(devstat_congested(d));
        /* The kernel's 32-bit millisecond counters wrap: 2 writes of 500 ms across the wrap, busy. */
        put_stat(dir, 300, 4294967000ULL, 0, 4294966000ULL);
        d = sample(h, &t, 8000000);
        put_stat(dir, 302, 704, 5, 704);
        d = sample(h, &t, 9000000);
        assert_int_equal(d->write_wait_usec, 500000);
        assert_int_equal(d->busy_ppm, 1000000);
        assert_true(devstat_congested(d));
        /* Its stat unreadable (garbage) from now on: the entry keeps its last figures, but the table's time moves,
         * and the congestion ages out against it. */
        put_raw(dir, "garbage\n");
        d = sample(h, &t, 9000000 + DEVSTAT_CONGESTED_HOLD_USEC);
        assert_int_equal(t.sampled_usec, 9000000 + DEVSTAT_CONGESTED_HOLD_USEC);
        assert_int_equal(d->sample_usec, 9000000);
        assert_false(devstat_congested_lately(d, t.sampled_usec));

        devstat_clear(&t);
        host_root_free(h);
        snprintf(q, sizeof(q), "rm -rf '%s'", dir);
        assert_int_equal(system(q), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_capacities_are_read_and_given_to_new_devices),
                cmocka_unit_test(test_odd_text_is_ignored_whole),
                cmocka_unit_test(test_save_and_load_again),
                cmocka_unit_test(test_write_wait_and_congestion),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
