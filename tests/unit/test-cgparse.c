/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the cgroup file parsers: values, flat and nested keyed files, PSI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cgparse.h"
#include "util.h"

#define PARSE(fn, s, ...) fn((s), strlen(s), __VA_ARGS__)

static void test_u64(void **state) {
        uint64_t v;

        assert_int_equal(PARSE(cg_parse_u64, "123\n", &v), 0);
        assert_int_equal(v, 123);
        assert_int_equal(PARSE(cg_parse_u64, "max\n", &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(PARSE(cg_parse_u64, "0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(PARSE(cg_parse_u64, "", &v), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_u64, "12a\n", &v), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_u64, "1 2\n", &v), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_u64, "maximum\n", &v), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_u64, "18446744073709551616\n", &v), -EBADMSG);
}

static const char *const keys[] = { "anon", "file", "file_dirty", "pgscan" };

static void test_flat_keyed(void **state) {
        uint64_t v[4] = { 7, 7, 7, 7 }, found;

        assert_int_equal(PARSE(cg_parse_flat_keyed, "anon 1\nkernel 5\nfile 2\nfile_dirty 3\n",
                               keys, 4, v, &found), 0);
        assert_int_equal(v[0], 1);
        assert_int_equal(v[1], 2);
        assert_int_equal(v[2], 3);
        assert_int_equal(v[3], 7);     /* absent: untouched */
        assert_int_equal(found, 0x7);

        /* Out of the usual order still works. */
        assert_int_equal(PARSE(cg_parse_flat_keyed, "pgscan 9\nanon 4", keys, 4, v, &found), 0);
        assert_int_equal(v[3], 9);
        assert_int_equal(v[0], 4);
        assert_int_equal(found, 0x9);

        /* A key that is a prefix of another is not confused with it. */
        assert_int_equal(PARSE(cg_parse_flat_keyed, "file_dirty_extra 1\n", keys, 4, v, &found), 0);
        assert_int_equal(found, 0);

        assert_int_equal(PARSE(cg_parse_flat_keyed, "anon\n", keys, 4, v, &found), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_flat_keyed, "anon -1\n", keys, 4, v, &found), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_flat_keyed, "anon 1 2\n", keys, 4, v, &found), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_flat_keyed, " 1\n", keys, 4, v, &found), -EBADMSG);
}

/* The pass ends with the line that completes the key set. */
static void test_flat_keyed_stops_at_last_key(void **state) {
        static const char text[] = "anon 1\nfile 2\nfile_dirty 3\npgscan 4\nnot a line\n";
        uint64_t v[4] = { 7, 7, 7, 7 }, found;

        assert_int_equal(PARSE(cg_parse_flat_keyed, text, keys, 4, v, &found), 0);
        assert_int_equal(found, 0xf);
        assert_int_equal(v[3], 4);
        /* One key fewer found: the broken line is reached and refused. */
        assert_int_equal(PARSE(cg_parse_flat_keyed, "anon 1\nfile 2\nnot a line\npgscan 4\n", keys, 4, v, &found),
                         -EBADMSG);
        /* No key asked: the whole input is checked. */
        assert_int_equal(PARSE(cg_parse_flat_keyed, text, keys, 0, NULL, &found), -EBADMSG);
}

static void test_psi(void **state) {
        PsiStats p;

        assert_int_equal(PARSE(cg_parse_psi,
                               "some avg10=1.25 avg60=0.50 avg300=100.00 total=12345\n"
                               "full avg10=0.00 avg60=0.01 avg300=0.00 total=99\n", &p), 0);
        assert_int_equal(p.some.avg10, 125);
        assert_int_equal(p.some.avg60, 50);
        assert_int_equal(p.some.avg300, 10000);
        assert_int_equal(p.some.total, 12345);
        assert_true(p.has_full);
        assert_int_equal(p.full.avg60, 1);
        assert_int_equal(p.full.total, 99);

        /* /proc/pressure/cpu of older kernels has no full line. */
        assert_int_equal(PARSE(cg_parse_psi, "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &p), 0);
        assert_false(p.has_full);

        assert_int_equal(PARSE(cg_parse_psi, "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &p), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_psi, "some avg10=0.0 avg60=0.00 avg300=0.00 total=0\n", &p), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_psi, "some avg10=0.00 avg60=0.00 total=0\n", &p), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_psi, "some avg10=0.00 avg60=0.00 avg300=0.00 total=x\n", &p), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_psi, "garbage\n", &p), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_psi, "some avg10=100.99 avg60=0.00 avg300=0.00 total=0\n", &p), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_psi, "some avg10=100.00 avg60=0.00 avg300=0.00 total=0\n", &p), 0);
        /* Cut short: the parser stops at the end it is given, not at a NUL. */
        assert_int_equal(cg_parse_psi("some avg10=1.00 avg60", 15, &p), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_psi, "", &p), -EBADMSG);
}

static void test_io_stat(void **state) {
        IoStatDev d[2];
        size_t n;

        assert_int_equal(PARSE(cg_parse_io_stat,
                               "8:0 rbytes=100 wbytes=200 rios=1 wios=2 dbytes=0 dios=0\n"
                               "253:16 rbytes=0 wbytes=4096 rios=0 wios=1 dbytes=0 dios=0 cost.usage=5\n",
                               d, 2, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(d[0].major, 8);
        assert_int_equal(d[0].minor, 0);
        assert_int_equal(d[0].rbytes, 100);
        assert_int_equal(d[0].wbytes, 200);
        assert_int_equal(d[1].major, 253);
        assert_int_equal(d[1].minor, 16);
        assert_int_equal(d[1].wbytes, 4096);
        assert_int_equal(d[1].wios, 1);

        assert_int_equal(PARSE(cg_parse_io_stat, "", d, 2, &n), 0);
        assert_int_equal(n, 0);
        /* A device with a blkg and no io yet (io.max set there, 6.1 and 6.12 alike): its name and a
         * space, no figures. Zeros, and the other lines read. */
        assert_int_equal(PARSE(cg_parse_io_stat, "254:16 \n8:0 rbytes=1 wbytes=2 rios=3 wios=4\n", d, 2, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(d[0].major, 254);
        assert_int_equal(d[0].minor, 16);
        assert_int_equal(d[0].wbytes, 0);
        assert_int_equal(d[1].wios, 4);
        /* The same with io.cost on: its own stats follow, after a space of their own. */
        assert_int_equal(PARSE(cg_parse_io_stat, "8:0  cost.usage=0 cost.wait=0\n", d, 2, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(d[0].major, 8);
        assert_int_equal(d[0].rbytes, 0);
        assert_int_equal(PARSE(cg_parse_io_stat, "8:0 rbytes=5 wbytes=6 rios=1 wios=1 dbytes=0 dios=0 cost.usage=3\n",
                               d, 2, &n), 0);
        assert_int_equal(d[0].rbytes, 5);
        assert_int_equal(PARSE(cg_parse_io_stat, "8:0 rbytes=1\n8:1 rbytes=2\n8:2 rbytes=3\n", d, 2, &n), -E2BIG);
        assert_int_equal(n, 2);
        assert_int_equal(PARSE(cg_parse_io_stat, "8-0 rbytes=1\n", d, 2, &n), -EBADMSG);
        assert_int_equal(cg_parse_io_stat("5:1", 1, d, 2, &n), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_io_stat, "8:0 rbytes\n", d, 2, &n), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_io_stat, "8:0 wbytes=12x\n", d, 2, &n), -EBADMSG);
}

static void test_meminfo(void **state) {
        static const char *const mk[] = { "MemTotal", "Dirty", "HugePages_Total" };
        uint64_t v[3] = { 0 }, found;

        assert_int_equal(PARSE(cg_parse_meminfo, "MemTotal:       16 kB\nCached:  1 kB\nDirty:   0 kB\n"
                               "HugePages_Total:       5\n", mk, 3, v, &found), 0);
        assert_int_equal(v[0], 16384);
        assert_int_equal(v[1], 0);
        assert_int_equal(v[2], 5);     /* no unit: kept as is */
        assert_int_equal(found, 7);
        assert_int_equal(PARSE(cg_parse_meminfo, "MemTotal 16 kB\n", mk, 3, v, &found), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_meminfo, "MemTotal: 16 MB\n", mk, 3, v, &found), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_meminfo, "MemTotal: kB\n", mk, 3, v, &found), -EBADMSG);
        assert_int_equal(PARSE(cg_parse_meminfo, "MemTotal: 99999999999999999999 kB\n", mk, 3, v, &found), -EBADMSG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_u64),
                cmocka_unit_test(test_flat_keyed),
                cmocka_unit_test(test_flat_keyed_stops_at_last_key),
                cmocka_unit_test(test_psi),
                cmocka_unit_test(test_io_stat),
                cmocka_unit_test(test_meminfo),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
