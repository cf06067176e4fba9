/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the sample history: the ring, the bound on cgroups, and the file (round trip, refusals). */
#include <errno.h>
#include <fcntl.h>
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

#include "history.h"
#include "util.h"

/* A sample whose every figure says which it is (sizes and rates in whole KiB, as the store keeps them). */
static HistorySample sample(uint64_t t) {
        return (HistorySample) { .realtime_usec = t, .interval_usec = 1000, .memory_bytes = t * 10 * 1024,
                                 .file_bytes = t * 11 * 1024, .dirty_bytes = t * 12 * 1024,
                                 .slab_reclaimable_bytes = t * 13 * 1024, .memory_stall_usec = t + 1,
                                 .io_stall_usec = t + 2, .write_rate = t * 14 * 1024, .memory_high = HISTORY_NONE,
                                 .wbps_cap = t * 15 * 1024 };
}

static void append(History *h, const char *path, uint64_t t) {
        HistorySample s = sample(t);

        assert_int_equal(history_append(h, path, &s), 0);
}

/* The times a track holds, oldest first, as "1,2,3". */
static const char *times(const History *h, const char *path, char buf[static 256]) {
        const HistoryTrack *t = history_find(h, path);
        size_t off = 0;

        buf[0] = 0;
        for (size_t i = 0; t && i < history_track_count(t) && off < 200; i++)
                off += (size_t) snprintf(buf + off, 256 - off, "%s%llu", i ? "," : "",
                                         (unsigned long long) history_track_get(h, t, i).realtime_usec);
        return buf;
}

/* The store keeps 32-bit figures: sizes and rates to the nearest KiB, HISTORY_NONE as it is, and what
 * 32 bits cannot hold at the largest they can, never wrapped to a small figure. */
static void test_figures_packed(void **state) {
        History *h;
        HistorySample s = { .realtime_usec = UINT64_C(1) << 60, .interval_usec = UINT64_C(1) << 40,
                            .memory_bytes = 4096, .file_bytes = 1535, .dirty_bytes = 1536,
                            .slab_reclaimable_bytes = UINT64_C(5) << 40, .memory_stall_usec = 999999,
                            .io_stall_usec = UINT32_MAX, .write_rate = HISTORY_NONE, .memory_high = 85368832,
                            .wbps_cap = 12570679 }, got;

        assert_int_equal(sizeof(HistoryPacked), 48);
        assert_int_equal(history_new(2, 1, &h), 0);
        assert_int_equal(history_append(h, NULL, &s), 0);
        got = history_track_get(h, &h->host, 0);
        assert_int_equal(got.realtime_usec, UINT64_C(1) << 60);
        assert_int_equal(got.interval_usec, UINT32_MAX - 1);
        assert_int_equal(got.memory_bytes, 4096);
        assert_int_equal(got.file_bytes, 1024);
        assert_int_equal(got.dirty_bytes, 2048);
        assert_int_equal(got.slab_reclaimable_bytes, (uint64_t) (UINT32_MAX - 1) * 1024);
        assert_int_equal(got.memory_stall_usec, 999999);
        assert_int_equal(got.io_stall_usec, UINT32_MAX - 1);
        assert_int_equal(got.write_rate, HISTORY_NONE);
        assert_int_equal(got.memory_high, 85368832);
        assert_int_equal(got.wbps_cap, 12570624);       /* 12276 KiB/s: off by 55 bytes/s */
        history_free(h);
}

static void test_ring_wraps(void **state) {
        History *h;
        char buf[256];

        assert_int_equal(history_new(4, 2, &h), 0);
        assert_string_equal(times(h, NULL, buf), "");
        for (uint64_t t = 1; t <= 3; t++)
                append(h, NULL, t);
        assert_string_equal(times(h, NULL, buf), "1,2,3");
        for (uint64_t t = 4; t <= 9; t++)
                append(h, NULL, t);
        assert_string_equal(times(h, NULL, buf), "6,7,8,9");
        assert_int_equal(history_track_get(h, &h->host, 3).wbps_cap, 9 * 15 * 1024);
        append(h, "/a.service", 9);
        assert_string_equal(times(h, "/a.service", buf), "9");
        assert_null(history_find(h, "/b.service"));
        history_free(h);
}

static void test_bounds(void **state) {
        History *h;
        HistorySample s = sample(5);
        char buf[256];

        assert_int_equal(history_new(3, 2, &h), 0);
        append(h, "/a", 5);
        append(h, "/b", 5);
        /* Every track has a sample of this round: no room. */
        assert_int_equal(history_append(h, "/c", &s), -ENOSPC);
        assert_int_equal(h->n_tracks, 2);
        /* A later round: the track whose newest sample is the oldest (/b, not recorded in it) is given up. */
        append(h, "/a", 6);
        append(h, "/c", 6);
        assert_null(history_find(h, "/b"));
        assert_string_equal(times(h, "/c", buf), "6");
        assert_string_equal(times(h, "/a", buf), "5,6");
        history_free(h);

        assert_int_equal(history_new(0, 2, &h), -EINVAL);
        assert_int_equal(history_new(HISTORY_SAMPLES_MAX + 1, 2, &h), -EINVAL);
        assert_int_equal(history_new(2, HISTORY_CGROUPS_MAX + 1, &h), -EINVAL);
        /* No cgroups at all: the host alone. */
        assert_int_equal(history_new(2, 0, &h), 0);
        assert_int_equal(history_append(h, "/a", &s), -ENOSPC);
        append(h, NULL, 1);
        history_free(h);
}

/* The history `h` written to a memory file, rewound. */
static FILE *saved(const History *h) {
        FILE *f = tmpfile();

        assert_non_null(f);
        assert_int_equal(history_save(h, f), 0);
        rewind(f);
        return f;
}

static History *filled(void) {
        History *h;

        assert_int_equal(history_new(5, 3, &h), 0);
        for (uint64_t t = 1; t <= 7; t++) {
                append(h, NULL, t);
                append(h, "/system.slice/db.service", t);
                if (t > 4)
                        append(h, "/system.slice/writer.service", t);
        }
        return h;
}

static void test_round_trip(void **state) {
        History *h = filled(), *back, *small;
        FILE *f = saved(h);
        char buf[256];

        assert_int_equal(history_new(5, 3, &back), 0);
        assert_int_equal(history_load(back, f), 0);
        assert_string_equal(times(back, NULL, buf), "3,4,5,6,7");
        assert_string_equal(times(back, "/system.slice/db.service", buf), "3,4,5,6,7");
        assert_string_equal(times(back, "/system.slice/writer.service", buf), "5,6,7");
        for (size_t i = 0; i < 5; i++) {
                HistorySample a = history_track_get(back, &back->host, i), b = history_track_get(h, &h->host, i);

                assert_memory_equal(&a, &b, sizeof(HistorySample));
        }
        /* A smaller configuration keeps the newest samples and the first cgroups. */
        rewind(f);
        assert_int_equal(history_new(2, 1, &small), 0);
        assert_int_equal(history_load(small, f), 0);
        assert_string_equal(times(small, NULL, buf), "6,7");
        assert_string_equal(times(small, "/system.slice/db.service", buf), "6,7");
        assert_null(history_find(small, "/system.slice/writer.service"));
        fclose(f);
        history_free(small);
        history_free(back);
        history_free(h);
}

/* Loads `bytes` into a fresh history; expects `error` and nothing kept. */
static void assert_refused(const void *bytes, size_t size, int error) {
        History *h;
        FILE *f = tmpfile();

        assert_non_null(f);
        assert_int_equal(fwrite(bytes, 1, size, f), size);
        rewind(f);
        assert_int_equal(history_new(5, 3, &h), 0);
        assert_int_equal(history_load(h, f), error);
        assert_int_equal(h->host.n, 0);
        assert_int_equal(h->n_tracks, 0);
        fclose(f);
        history_free(h);
}

static void test_garbage_refused(void **state) {
        History *h = filled();
        FILE *f = saved(h);
        char *file = malloc(1 << 16);
        size_t size;

        assert_non_null(file);
        size = fread(file, 1, 1 << 16, f);
        fclose(f);
        assert_true(size > 64 && size < (1 << 16));
        assert_refused(file, 0, -EBADMSG);
        /* Whole, it loads (the checks below do not fail for another reason). */
        {
                History *ok;
                FILE *g = tmpfile();
                assert_int_equal(fwrite(file, 1, size, g), size);
                rewind(g);
                assert_int_equal(history_new(5, 3, &ok), 0);
                assert_int_equal(history_load(ok, g), 0);
                fclose(g);
                history_free(ok);
        }
        /* Cut short, one byte too many, one byte changed deep inside: refused whole. */
        assert_refused(file, size - 1, -EBADMSG);
        file[size] = 0;
        assert_refused(file, size + 1, -EBADMSG);
        file[size / 2] ^= 0x40;
        assert_refused(file, size, -EBADMSG);
        file[size / 2] ^= 0x40;
        /* Another version, or samples of another size: not read. */
        file[8] = HISTORY_FILE_VERSION + 1;
        assert_refused(file, size, -EPROTONOSUPPORT);
        file[8] = HISTORY_FILE_VERSION;
        file[12] ^= 8;
        assert_refused(file, size, -EPROTONOSUPPORT);
        file[12] ^= 8;
        /* Not ours at all. */
        assert_refused("throttles v2\n", 13, -EBADMSG);
        for (size_t i = 0; i < size; i++)
                file[i] = (char) (i * 7919 % 251);
        assert_refused(file, size, -EBADMSG);
        free(file);
        history_free(h);
}

static void test_files(void **state) {
        char dir[] = "/tmp/test-history-XXXXXX", path[64];
        History *h = filled(), *back;
        char buf[256];
        int fd;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(history_new(5, 3, &back), 0);
        /* No file yet: an empty history, no error. */
        assert_int_equal(history_read_file(back, dir), 0);
        assert_int_equal(back->host.n, 0);
        assert_int_equal(history_write_file(h, dir), 0);
        snprintf(path, sizeof(path), "%s/" HISTORY_FILE_NAME, dir);
        assert_int_equal(history_read_file(back, dir), 0);
        assert_string_equal(times(back, "/system.slice/writer.service", buf), "5,6,7");
        history_free(back);
        /* Larger than this configuration could write: not read at all. */
        fd = open(path, O_WRONLY | O_APPEND);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 64 << 20), 0);
        close(fd);
        assert_int_equal(history_new(5, 3, &back), 0);
        assert_int_equal(history_read_file(back, dir), -EBADMSG);
        assert_int_equal(back->host.n, 0);
        /* Written again over it, atomically: no temporary file is left. */
        assert_int_equal(history_write_file(h, dir), 0);
        assert_int_equal(history_read_file(back, dir), 0);
        assert_int_equal(back->host.n, 5);
        history_free(back);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(rmdir(dir), 0);
        history_free(h);
}

/*
 * Samples taken while the clock was ahead (1000 and on), then the clock set
 * back (to 10): a new cgroup gets a track at once, not once the clock has
 * caught up, and every track goes on in time order.
 */
static void test_future_samples_give_way(void **state) {
        History *h;
        HistorySample s = sample(11);
        char buf[256];

        assert_int_equal(history_new(4, 2, &h), 0);
        for (uint64_t t = 1000; t <= 1002; t++) {
                append(h, NULL, t);
                append(h, "/a", t);
                append(h, "/b", t);
        }
        /* The clock is back at 10: /c takes the track of the cgroup the round did not record (/b). */
        append(h, NULL, 10);
        append(h, "/a", 10);
        append(h, "/c", 10);
        assert_null(history_find(h, "/b"));
        assert_string_equal(times(h, "/c", buf), "10");
        assert_string_equal(times(h, "/a", buf), "10");
        assert_string_equal(times(h, NULL, buf), "10");
        /* Within one round, the tracks the round wrote are still not given up. */
        assert_int_equal(history_append(h, "/d", &(HistorySample) { .realtime_usec = 10 }), -ENOSPC);
        append(h, "/a", 11);
        append(h, "/d", 11);
        assert_null(history_find(h, "/c"));
        assert_int_equal(history_append(h, "/e", &s), -ENOSPC);
        history_free(h);
}

/* The same from the file: a history saved while the clock was ahead, read back after it was set back. */
static void test_future_samples_from_the_file(void **state) {
        History *h, *back;
        FILE *f;
        char buf[256];

        assert_int_equal(history_new(4, 2, &h), 0);
        for (uint64_t t = 1; t <= 2; t++)
                append(h, NULL, t);
        for (uint64_t t = 1000; t <= 1001; t++) {
                append(h, NULL, t);
                append(h, "/a", t);
                append(h, "/b", t);
        }
        f = saved(h);
        assert_int_equal(history_new(4, 2, &back), 0);
        assert_int_equal(history_load(back, f), 0);
        assert_string_equal(times(back, NULL, buf), "1,2,1000,1001");
        append(back, NULL, 10);
        assert_string_equal(times(back, NULL, buf), "1,2,10");
        append(back, "/c", 10);
        assert_string_equal(times(back, "/c", buf), "10");
        append(back, "/d", 10);
        assert_null(history_find(back, "/a"));
        assert_null(history_find(back, "/b"));
        fclose(f);
        history_free(back);
        history_free(h);

        /* A file an older daemon wrote across the clock's step back, out of order: read back in order. */
        assert_int_equal(history_new(4, 2, &h), 0);
        for (uint64_t t = 1; t <= 4; t++)
                append(h, NULL, t);
        h->host.ring[0].realtime_usec = 1000;
        h->host.ring[1].realtime_usec = 1001;
        h->host.ring[2].realtime_usec = 5;
        h->host.ring[3].realtime_usec = 6;
        f = saved(h);
        assert_int_equal(history_new(4, 2, &back), 0);
        assert_int_equal(history_load(back, f), 0);
        assert_string_equal(times(back, NULL, buf), "5,6");
        fclose(f);
        history_free(back);
        history_free(h);
}

/* Ten samples' span, the newest four as taken, older ones merged three to one (two merged samples). */
static History *tiered(void) {
        History *h;

        assert_int_equal(history_new_tiered(10, 4, 3, 2, &h), 0);
        assert_int_equal(h->coarse, 2);
        return h;
}

/* Past the fine ring, samples are merged: the times say which, the figures how. */
static void test_tiers_merge(void **state) {
        History *h = tiered();
        HistorySample m;
        char buf[256];

        for (uint64_t t = 1; t <= 4; t++)
                append(h, NULL, t);
        assert_string_equal(times(h, NULL, buf), "1,2,3,4");
        /* 1 left the fine ring: given out as a merged sample of one, then of two, dated by its newest. */
        append(h, NULL, 5);
        assert_string_equal(times(h, NULL, buf), "1,2,3,4,5");
        append(h, NULL, 6);
        assert_string_equal(times(h, NULL, buf), "2,3,4,5,6");
        append(h, NULL, 7);
        assert_string_equal(times(h, NULL, buf), "3,4,5,6,7");
        assert_int_equal(h->host.n_coarse, 1);
        assert_int_equal(h->host.n_partial, 0);
        m = history_track_get(h, &h->host, 0);
        assert_int_equal(m.interval_usec, 3000);                /* the three spans */
        assert_int_equal(m.memory_bytes, 3 * 10 * 1024);        /* the peak */
        assert_int_equal(m.dirty_bytes, 3 * 12 * 1024);
        assert_int_equal(m.memory_stall_usec, 2 + 3 + 4);       /* the stalls summed */
        assert_int_equal(m.io_stall_usec, 3 + 4 + 5);
        assert_int_equal(m.write_rate, 28 * 1024);              /* the mean of 14, 28 and 42 KiB/s */
        assert_int_equal(m.wbps_cap, 1 * 15 * 1024);            /* the lowest cap in force */
        assert_int_equal(m.memory_high, HISTORY_NONE);          /* none was */
        /* On to 16: the span is the last ten (7..16): two merged samples, four as taken. */
        for (uint64_t t = 8; t <= 16; t++)
                append(h, NULL, t);
        assert_string_equal(times(h, NULL, buf), "9,12,13,14,15,16");
        assert_int_equal(history_track_get(h, &h->host, 1).interval_usec, 3000);
        assert_int_equal(history_track_get(h, &h->host, 2).interval_usec, 1000);
        history_free(h);

        /* Unknown figures do not count: a rate known in one part is the merged rate, a cap in one part holds. */
        h = tiered();
        for (uint64_t t = 1; t <= 7; t++) {
                HistorySample s = sample(t);

                s.write_rate = t == 2 ? 20 * 1024 : HISTORY_NONE;
                s.memory_high = t == 3 ? 64 << 20 : HISTORY_NONE;
                s.wbps_cap = HISTORY_NONE;
                assert_int_equal(history_append(h, NULL, &s), 0);
        }
        m = history_track_get(h, &h->host, 0);
        assert_int_equal(m.write_rate, 20 * 1024);
        assert_int_equal(m.memory_high, 64 << 20);
        assert_int_equal(m.wbps_cap, HISTORY_NONE);
        history_free(h);

        /* A span within the fine ring has no coarse tier; the default keeps ten minutes as taken. */
        assert_int_equal(history_new(600, 1, &h), 0);
        assert_int_equal(h->coarse, 0);
        history_free(h);
        assert_int_equal(history_new(3600, 1, &h), 0);
        assert_int_equal(h->fine, HISTORY_FINE_DEFAULT);
        assert_int_equal(h->coarse, (3600 - HISTORY_FINE_DEFAULT) / HISTORY_FACTOR_DEFAULT);
        history_free(h);
        /* The tick decides how many make one: a merged sample spans at most what 32 bits of µs hold. */
        assert_int_equal(history_new_for_tick(3600, 1, USEC_PER_SEC, &h), 0);
        assert_int_equal(h->factor, 30);
        history_free(h);
        assert_int_equal(history_new_for_tick(3600, 1, 5 * 60 * USEC_PER_SEC, &h), 0);
        assert_int_equal(h->factor, 14);                /* 14 × 5 min = 70 min */
        assert_true(h->factor * 5 * 60 * USEC_PER_SEC <= UINT32_MAX - 1);
        history_free(h);
        assert_int_equal(history_new_for_tick(3600, 1, 60 * 60 * USEC_PER_SEC, &h), 0);
        assert_int_equal(h->coarse, 0);                 /* two would not fit: none merged */
        assert_int_equal(h->fine, 3600);
        history_free(h);
        assert_int_equal(history_new_for_tick(0, 1, USEC_PER_SEC, &h), -EINVAL);
        assert_int_equal(history_new_tiered(10, 11, 3, 1, &h), -EINVAL);
        assert_int_equal(history_new_tiered(10, 0, 3, 1, &h), -EINVAL);
        assert_int_equal(history_new_tiered(10, 4, 1, 1, &h), -EINVAL);
}

/* Both tiers and the partial sample come back from the file as they were. */
static void test_tiers_round_trip(void **state) {
        History *h = tiered(), *back = tiered();
        FILE *f;
        char buf[256];

        for (uint64_t t = 1; t <= 14; t++) {
                append(h, NULL, t);
                append(h, "/a", t);
        }
        assert_string_equal(times(h, "/a", buf), "6,9,10,11,12,13,14");
        f = saved(h);
        assert_int_equal(history_load(back, f), 0);
        assert_string_equal(times(back, "/a", buf), "6,9,10,11,12,13,14");
        assert_int_equal(history_track_count(&back->host), history_track_count(&h->host));
        for (size_t i = 0; i < history_track_count(&h->host); i++) {
                HistorySample a = history_track_get(back, &back->host, i), b = history_track_get(h, &h->host, i);

                assert_memory_equal(&a, &b, sizeof(HistorySample));
        }
        /* The partial sample came back merged whole: the next samples merge on from there. */
        append(back, "/a", 15);
        assert_string_equal(times(back, "/a", buf), "6,9,11,12,13,14,15");
        fclose(f);
        history_free(back);

        /* A configuration without a coarse tier takes merged samples as samples, the newest that fit. */
        f = saved(h);
        assert_int_equal(history_new(5, 2, &back), 0);
        assert_int_equal(history_load(back, f), 0);
        assert_string_equal(times(back, "/a", buf), "10,11,12,13,14");
        fclose(f);
        history_free(back);
        history_free(h);
}

/* The clock set back into the merged part: the merged samples dated after it go too. */
static void test_tiers_future_dropped(void **state) {
        History *h = tiered();
        char buf[256];

        for (uint64_t t = 1; t <= 14; t++)
                append(h, NULL, t * 10);
        assert_string_equal(times(h, NULL, buf), "60,90,100,110,120,130,140");
        append(h, NULL, 95);
        assert_string_equal(times(h, NULL, buf), "60,90,95");
        append(h, NULL, 50);
        assert_string_equal(times(h, NULL, buf), "50");
        history_free(h);
}

/* A file of version 2 (no merged samples: an older daemon's) is read, its older samples merged as they come. */
static void test_untiered_file_read(void **state) {
        uint8_t file[1024];
        size_t size = 0;
        uint64_t sum = UINT64_C(0xcbf29ce484222325);
        uint32_t head[] = { 2, sizeof(HistoryPacked), 1, 0, 0, 16 };
        History *h = tiered();
        FILE *f = tmpfile();
        char buf[256];

        memcpy(file, "MDRHIST", 8);
        memcpy(file + 8, head, sizeof(head));
        size = 8 + sizeof(head);
        for (uint32_t t = 1; t <= 16; t++) {
                HistoryPacked p = { .realtime_usec = t, .interval_usec = 1000, .memory_kib = t * 10,
                                    .memory_high_kib = UINT32_MAX, .wbps_cap_kib = UINT32_MAX,
                                    .write_rate_kib = UINT32_MAX };

                memcpy(file + size, &p, sizeof(p));
                size += sizeof(p);
        }
        for (size_t i = 0; i < size; i++)
                sum = (sum ^ file[i]) * UINT64_C(0x100000001b3);
        memcpy(file + size, &sum, sizeof(sum));
        size += sizeof(sum);
        assert_non_null(f);
        assert_int_equal(fwrite(file, 1, size, f), size);
        rewind(f);
        assert_int_equal(history_load(h, f), 0);
        assert_string_equal(times(h, NULL, buf), "9,12,13,14,15,16");
        assert_int_equal(history_track_get(h, &h->host, 0).memory_bytes, 9 * 10 * 1024);
        fclose(f);
        history_free(h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_figures_packed),
                cmocka_unit_test(test_ring_wraps),
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_garbage_refused),
                cmocka_unit_test(test_files),
                cmocka_unit_test(test_future_samples_give_way),
                cmocka_unit_test(test_future_samples_from_the_file),
                cmocka_unit_test(test_tiers_merge),
                cmocka_unit_test(test_tiers_round_trip),
                cmocka_unit_test(test_tiers_future_dropped),
                cmocka_unit_test(test_untiered_file_read),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
