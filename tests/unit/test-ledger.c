/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the throttle ledger: sharing, precedence, adoption, persistence. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "ledger.h"
#include "throttle.h"
#include "util.h"

/* Point p asks for value on (path, kind, device), with no "lifts when", at time 0. */
static int request(Ledger *l, const char *path, uint64_t id, ThrottleKind kind, uint32_t major, uint32_t minor,
                   ThrottlePoint p, uint64_t value, const char *reason, uint64_t current, ThrottleEntry **ret) {
        ThrottleRequest q = { .kind = kind, .major = major, .minor = minor, .point = p, .value = value,
                              .reason = reason };

        return ledger_request(l, path, id, &q, current, 0, ret);
}

static void test_lower_request_wins(void **state) {
        Ledger l;
        ThrottleEntry *e;

        ledger_init(&l, NULL);
        assert_int_equal(request(&l, "/w", 7, THROTTLE_MEMORY_HIGH, 0, 0, POINT_WRITE, 300, "dirty", THROTTLE_NONE, &e), 0);
        assert_true(e->original == THROTTLE_NONE);
        assert_int_equal(throttle_effective(e), 300);
        assert_int_equal(request(&l, "/w", 7, THROTTLE_MEMORY_HIGH, 0, 0, POINT_ALLOCATION, 200, "pressure", 999, &e), 0);
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
        assert_int_equal(request(&l, "/w", 7, THROTTLE_MEMORY_HIGH, 0, 0, POINT_WRITE, 500, "", 100, &e), 0);
        assert_int_equal(throttle_effective(e), 100);
        ledger_clear(&l);
}

static void test_devices_are_separate(void **state) {
        Ledger l;
        ThrottleEntry *e;

        ledger_init(&l, NULL);
        assert_int_equal(request(&l, "/w", 7, THROTTLE_IO_WBPS, 8, 0, POINT_WRITE, 1000, "", THROTTLE_NONE, &e), 0);
        assert_int_equal(request(&l, "/w", 7, THROTTLE_IO_WBPS, 8, 16, POINT_WRITE, 2000, "", THROTTLE_NONE, &e), 0);
        assert_int_equal(l.n, 2);
        assert_int_equal(throttle_effective(ledger_find(&l, "/w", THROTTLE_IO_WBPS, 8, 0)), 1000);
        assert_null(ledger_find(&l, "/w", THROTTLE_IO_WBPS, 9, 0));
        ledger_clear(&l);
}

static void test_foreign_change_wins(void **state) {
        Ledger l;
        ThrottleEntry *e;

        ledger_init(&l, NULL);
        assert_int_equal(request(&l, "/w", 7, THROTTLE_MEMORY_HIGH, 0, 0, POINT_WRITE, 300, "", THROTTLE_NONE, &e), 0);
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
        assert_int_equal(request(&l, "/a b/tab\there", 7, THROTTLE_IO_WBPS, 8, 0, POINT_WRITE, 1048576,
                                        "victim\tstalls\\ 30%", THROTTLE_NONE, &e), 0);
        e->applied = 1048576;
        assert_int_equal(request(&l, "/m", 9, THROTTLE_MEMORY_HIGH, 0, 0, POINT_ALLOCATION, 4096, "", 67108864, &e), 0);
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
        assert_int_equal(e->original, 67108864);
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

/* ---- hostile and corrupt ledger files ---- */

typedef struct TmpLedger {
        char dir[64];
        char file[96];
} TmpLedger;

static void tmp_ledger(TmpLedger *t) {
        snprintf(t->dir, sizeof(t->dir), "/tmp/mdreclaim-ledger-XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        snprintf(t->file, sizeof(t->file), "%s/throttles", t->dir);
}

static void tmp_ledger_remove(TmpLedger *t) {
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
        assert_int_equal(system(cmd), 0);
}

static void put_file(const char *path, const char *content) {
        FILE *f = fopen(path, "we");

        assert_non_null(f);
        fputs(content, f);
        assert_int_equal(fclose(f), 0);
}

static int load(Ledger *l, const char *file, unsigned *ret_bad_line) {
        ledger_init(l, file);
        return ledger_load(l, ret_bad_line);
}

static int load_full(Ledger *l, const char *file, LedgerLoadReport *ret_report) {
        ledger_init(l, file);
        return ledger_load_full(l, ret_report);
}

/* One line as ledger_save writes it, with no requests. */
static void put_entry(FILE *f, unsigned long id, const char *kind, const char *dev, const char *original,
                      const char *path) {
        fprintf(f, "%lu\t%s\t%s\t%s\t%s\tmax\t\tmax\t\t%s\n", id, kind, dev, original, original, path);
}

/*
 * Runs ledger_load in a child killed after 20 s, so that a hang fails the test
 * instead of the suite. Exits with ledger_load's errno, 100 when its peak RSS
 * grew by more than 32 MiB, 101 when it loaded an entry.
 */
static int load_in_child(const char *file) {
        pid_t pid = fork();
        int status;

        assert_true(pid >= 0);
        if (pid == 0) {
                struct rusage before, after;
                Ledger l;
                unsigned bad;
                int r;

                alarm(20);
                getrusage(RUSAGE_SELF, &before);
                r = load(&l, file, &bad);
                getrusage(RUSAGE_SELF, &after);
                fprintf(stderr, "ledger_load: %d, bad line %u, %zu entries, peak RSS grew by %ld KiB\n", r, bad,
                        l.n, after.ru_maxrss - before.ru_maxrss);
                if (r < 0)
                        _exit(-r);
                _exit(after.ru_maxrss - before.ru_maxrss > 32 * 1024 ? 100 : l.n != 0 ? 101 : 0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_false(WIFSIGNALED(status)); /* SIGALRM: ledger_load hung */
        return WEXITSTATUS(status);
}

static void test_fifo_is_refused(void **state) {
        TmpLedger t;

        tmp_ledger(&t);
        assert_int_equal(mkfifo(t.file, 0600), 0);
        /* Not "hangs until someone writes": refused as not a regular file. */
        assert_int_equal(load_in_child(t.file), EBADFD);
        tmp_ledger_remove(&t);
}

static void test_symlink_is_refused(void **state) {
        TmpLedger t;
        char real[128];
        Ledger l;
        unsigned bad;
        FILE *f;

        tmp_ledger(&t);
        snprintf(real, sizeof(real), "%s/elsewhere", t.dir);
        f = fopen(real, "we");
        put_entry(f, 5, "memory.high", "0:0", "max", "/a");
        fclose(f);
        assert_int_equal(symlink(real, t.file), 0);
        assert_int_equal(load(&l, t.file, &bad), -ELOOP);
        assert_int_equal(l.n, 0);
        ledger_clear(&l);
        tmp_ledger_remove(&t);
}

static void test_huge_line_is_bounded(void **state) {
        LedgerLoadReport rep;
        TmpLedger t;
        Ledger l;

        tmp_ledger(&t);
        /* A 300 MiB line (sparse: no disk used) after the header, skipped as
         * bad without being held in memory. */
        put_file(t.file, "# mdreclaim throttle ledger v1\n");
        assert_int_equal(truncate(t.file, 300 << 20), 0);
        assert_int_equal(load_in_child(t.file), 0);
        /* Reading stops at the bound on the file, and says so. */
        assert_int_equal(load_full(&l, t.file, &rep), 0);
        assert_true(rep.truncated);
        assert_int_equal(l.n, 0);
        ledger_clear(&l);
        tmp_ledger_remove(&t);
}

static void test_long_line_is_skipped(void **state) {
        TmpLedger t;
        Ledger l;
        unsigned bad;
        FILE *f;

        tmp_ledger(&t);
        f = fopen(t.file, "we");
        fputs("# mdreclaim throttle ledger v1\n", f);
        /* An entry whose path is longer than any line ledger_save writes. */
        fputs("5\tmemory.high\t0:0\tmax\tmax\tmax\t\tmax\t\t/", f);
        for (size_t i = 0; i < 1 << 20; i++)
                fputc('a', f);
        fputc('\n', f);
        put_entry(f, 6, "memory.high", "0:0", "max", "/b");
        fclose(f);
        assert_int_equal(load(&l, t.file, &bad), 0);
        assert_int_equal(bad, 2);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.entries[0].path, "/b");
        ledger_clear(&l);
        tmp_ledger_remove(&t);
}

static void write_entries(const char *file, unsigned n) {
        FILE *f = fopen(file, "we");
        char path[32];

        assert_non_null(f);
        fputs("# mdreclaim throttle ledger v1\n", f);
        for (unsigned i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "/cg%u", i);
                put_entry(f, 100 + i, "memory.high", "0:0", "max", path);
        }
        assert_int_equal(fclose(f), 0);
}

/* Under ASan (leak detection on) the 1,904 entries past the bound must not leak. */
static void test_entries_past_the_bound(void **state) {
        LedgerLoadReport rep;
        TmpLedger t;
        Ledger l;
        unsigned bad;

        tmp_ledger(&t);
        write_entries(t.file, 6000);
        assert_int_equal(load(&l, t.file, &bad), 0);
        assert_int_equal(l.n, LEDGER_MAX);
        assert_string_equal(l.entries[LEDGER_MAX - 1].path, "/cg4095");
        ledger_clear(&l);
        /* ... and are counted, for the caller to log. */
        assert_int_equal(load_full(&l, t.file, &rep), 0);
        assert_int_equal(l.n, LEDGER_MAX);
        assert_int_equal(rep.n_dropped, 6000 - LEDGER_MAX);
        assert_int_equal(rep.n_bad, 0);
        assert_false(rep.truncated);
        ledger_clear(&l);
        tmp_ledger_remove(&t);
}

static void test_implausible_originals(void **state) {
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
        LedgerLoadReport rep;
        char big[32];
        TmpLedger t;
        Ledger l;
        unsigned bad;
        FILE *f;

        tmp_ledger(&t);
        snprintf(big, sizeof(big), "%llu", (unsigned long long) (256 * page));
        f = fopen(t.file, "we");
        put_entry(f, 1, "memory.high", "0:0", "1", "/tiny");
        put_entry(f, 2, "memory.high", "0:0", "268435457", "/unaligned");
        put_entry(f, 3, "io.max", "8:0", "0", "/zero-wbps");
        put_entry(f, 4, "io.max", "0:0", "1048576", "/no-device");
        put_entry(f, 5, "memory.high", "0:0", "268435456", "/fine");
        put_entry(f, 6, "memory.high", "0:0", big, "/fine-too");
        put_entry(f, 7, "io.max", "8:16", "1", "/slow-but-fine");
        fclose(f);
        assert_int_equal(load(&l, t.file, &bad), 0);
        assert_int_equal(bad, 0);
        assert_int_equal(l.n, 7);
        /* Kept, with "max" as the value to restore. */
        assert_true(ledger_find(&l, "/tiny", THROTTLE_MEMORY_HIGH, 0, 0)->original == THROTTLE_NONE);
        assert_true(ledger_find(&l, "/unaligned", THROTTLE_MEMORY_HIGH, 0, 0)->original == THROTTLE_NONE);
        assert_true(ledger_find(&l, "/zero-wbps", THROTTLE_IO_WBPS, 8, 0)->original == THROTTLE_NONE);
        assert_true(ledger_find(&l, "/no-device", THROTTLE_IO_WBPS, 0, 0)->original == THROTTLE_NONE);
        assert_int_equal(ledger_find(&l, "/fine", THROTTLE_MEMORY_HIGH, 0, 0)->original, 268435456);
        assert_int_equal(ledger_find(&l, "/fine-too", THROTTLE_MEMORY_HIGH, 0, 0)->original, 256 * page);
        assert_int_equal(ledger_find(&l, "/slow-but-fine", THROTTLE_IO_WBPS, 8, 16)->original, 1);
        ledger_clear(&l);
        /* Counted, and each one marked, for the caller to log. */
        assert_int_equal(load_full(&l, t.file, &rep), 0);
        assert_int_equal(rep.n_implausible, 4);
        assert_true(ledger_find(&l, "/tiny", THROTTLE_MEMORY_HIGH, 0, 0)->original_replaced);
        assert_true(ledger_find(&l, "/no-device", THROTTLE_IO_WBPS, 0, 0)->original_replaced);
        assert_false(ledger_find(&l, "/fine", THROTTLE_MEMORY_HIGH, 0, 0)->original_replaced);
        ledger_clear(&l);
        tmp_ledger_remove(&t);
}

static void test_plausibility(void **state) {
        ThrottleEntry mem = { .kind = THROTTLE_MEMORY_HIGH }, io = { .kind = THROTTLE_IO_WBPS, .major = 8 };

        mem.original = THROTTLE_NONE;
        assert_true(throttle_original_plausible(&mem, 4096));
        mem.original = LEDGER_HIGH_FLOOR;
        assert_true(throttle_original_plausible(&mem, 4096));
        mem.original = LEDGER_HIGH_FLOOR - 4096;
        assert_false(throttle_original_plausible(&mem, 4096));
        mem.original = 1;
        assert_false(throttle_original_plausible(&mem, 0));
        /* The kernel shows memory.high in whole pages. */
        mem.original = LEDGER_HIGH_FLOOR + 4096;
        assert_true(throttle_original_plausible(&mem, 4096));
        assert_false(throttle_original_plausible(&mem, 65536));
        assert_true(throttle_original_plausible(&mem, 0));
        io.original = 0;
        assert_false(throttle_original_plausible(&io, 4096));
        io.original = 1;
        assert_true(throttle_original_plausible(&io, 4096));
        io.original = THROTTLE_NONE;
        assert_true(throttle_original_plausible(&io, 4096));
        io.major = 0;
        assert_false(throttle_original_plausible(&io, 4096));
}

/* memory.swap.max: held at 0 for a reclaim; any original in whole pages, none included, goes back as it was. */
static void test_swap_max(void **state) {
        char dir[] = "/tmp/mdreclaim-ledger-XXXXXX", file[64];
        ThrottleEntry swap = { .kind = THROTTLE_SWAP_MAX }, *e;
        Ledger l, k;
        unsigned bad;

        swap.original = 0;
        assert_true(throttle_original_plausible(&swap, 4096));
        swap.original = THROTTLE_NONE;
        assert_true(throttle_original_plausible(&swap, 4096));
        swap.original = 8192;
        assert_true(throttle_original_plausible(&swap, 4096));
        swap.original = 1000;
        assert_false(throttle_original_plausible(&swap, 4096));
        assert_string_equal(throttle_knob(THROTTLE_SWAP_MAX), "memory.swap.max");
        assert_string_equal(throttle_file(THROTTLE_SWAP_MAX), "memory.swap.max");

        assert_non_null(mkdtemp(dir));
        snprintf(file, sizeof(file), "%s/throttles", dir);
        ledger_init(&l, file);
        assert_int_equal(request(&l, "/db", 9, THROTTLE_SWAP_MAX, 0, 0, POINT_ALLOCATION, 0, "cache-only reclaim",
                                 1073741824, &e), 0);
        assert_int_equal(throttle_effective(e), 0);
        e->applied = 0;
        /* Another kind on the same cgroup is another entry. */
        assert_int_equal(request(&l, "/db", 9, THROTTLE_MEMORY_HIGH, 0, 0, POINT_ALLOCATION, 67108864, "",
                                 THROTTLE_NONE, &e), 0);
        assert_int_equal(l.n, 2);
        assert_int_equal(ledger_save(&l), 0);
        ledger_init(&k, file);
        assert_int_equal(ledger_load(&k, &bad), 0);
        assert_int_equal(bad, 0);
        e = ledger_find(&k, "/db", THROTTLE_SWAP_MAX, 0, 0);
        assert_non_null(e);
        if (e) {
                assert_int_equal(e->original, 1073741824);
                assert_int_equal(e->applied, 0);
                assert_int_equal(e->requested[POINT_ALLOCATION], 0);
        }
        /* Withdrawn: the original is what the file gets back. */
        e = ledger_release(&k, "/db", THROTTLE_SWAP_MAX, 0, 0, POINT_ALLOCATION);
        assert_non_null(e);
        if (e)
                assert_int_equal(throttle_effective(e), 1073741824);
        ledger_clear(&k);
        ledger_clear(&l);
        (void) unlink(file);
        (void) rmdir(dir);
}

static void test_save_ignores_planted_link(void **state) {
        TmpLedger t;
        char tmp[128], outside[128], buf[64] = "";
        ThrottleEntry *e;
        Ledger l;
        struct stat st;
        FILE *f;

        tmp_ledger(&t);
        snprintf(outside, sizeof(outside), "%s/outside", t.dir);
        put_file(outside, "keep me\n");
        snprintf(tmp, sizeof(tmp), "%s.tmp", t.file);
        assert_int_equal(symlink(outside, tmp), 0);
        ledger_init(&l, t.file);
        assert_int_equal(request(&l, "/w", 7, THROTTLE_MEMORY_HIGH, 0, 0, POINT_WRITE, 300, "", THROTTLE_NONE, &e), 0);
        assert_int_equal(ledger_save(&l), 0);
        f = fopen(outside, "re");
        assert_non_null(fgets(buf, sizeof(buf), f));
        fclose(f);
        assert_string_equal(buf, "keep me\n");
        assert_int_equal(lstat(t.file, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        ledger_clear(&l);
        tmp_ledger_remove(&t);
}

/* v2: since and each point's "lifts when" go to the file and come back; a v1 line beside them still reads. */
static void test_since_and_lifts_when(void **state) {
        ThrottleRequest q = { .kind = THROTTLE_IO_WBPS, .major = 8, .minor = 0, .point = POINT_WRITE, .value = 4096,
                              .reason = "db stalls", .lifts_when = "when db stalls no more" };
        LedgerLoadReport rep;
        ThrottleEntry *e;
        TmpLedger t;
        Ledger l, k;
        FILE *f;

        tmp_ledger(&t);
        ledger_init(&l, t.file);
        assert_int_equal(ledger_request(&l, "/w", 7, &q, THROTTLE_NONE, 1700000000123456, &e), 0);
        /* A later request changes the value and the texts, not the since. */
        q.value = 2048;
        q.lifts_when = "when db\tis quiet\\ for CapHoldTime";
        assert_int_equal(ledger_request(&l, "/w", 7, &q, 999, 1800000000000000, &e), 0);
        assert_int_equal(e->since_usec, 1700000000123456);
        assert_int_equal(ledger_save(&l), 0);
        f = fopen(t.file, "ae");
        put_entry(f, 9, "memory.high", "0:0", "max", "/old");
        fclose(f);

        assert_int_equal(load_full(&k, t.file, &rep), 0);
        assert_int_equal(rep.n_bad, 0);
        assert_int_equal(k.n, 2);
        e = ledger_find(&k, "/w", THROTTLE_IO_WBPS, 8, 0);
        assert_int_equal(e->since_usec, 1700000000123456);
        assert_int_equal(e->requested[POINT_WRITE], 2048);
        assert_string_equal(e->lifts_when[POINT_WRITE], "when db\tis quiet\\ for CapHoldTime");
        assert_string_equal(e->lifts_when[POINT_ALLOCATION], "");
        e = ledger_find(&k, "/old", THROTTLE_MEMORY_HIGH, 0, 0);
        assert_int_equal(e->since_usec, 0);     /* unknown in a v1 line */
        assert_string_equal(e->lifts_when[POINT_WRITE], "");
        /* A withdrawn request takes its texts with it. */
        e = ledger_release(&k, "/w", THROTTLE_IO_WBPS, 8, 0, POINT_WRITE);
        assert_string_equal(e->lifts_when[POINT_WRITE], "");
        ledger_clear(&k);
        ledger_clear(&l);
        tmp_ledger_remove(&t);
}

/* Releases: kept in the file, replaced by a new one on the same path, one of every cgroup covers all. */
static void test_releases(void **state) {
        LedgerHold *h;
        TmpLedger t;
        Ledger l, k;
        unsigned bad;

        tmp_ledger(&t);
        ledger_init(&l, t.file);
        assert_int_equal(ledger_hold(&l, "/w\tx", 7, 100, 200, "uid 0 (pid 1)", &h), 0);
        assert_int_equal(ledger_hold(&l, "/w\tx", 7, 150, 300, "uid 5 (pid 2)", &h), 0);
        assert_int_equal(l.n_holds, 1);
        assert_ptr_equal(ledger_held(&l, "/w\tx", 299), h);
        assert_null(ledger_held(&l, "/w\tx", 300));
        assert_null(ledger_held(&l, "/other", 150));
        assert_int_equal(ledger_save(&l), 0);

        assert_int_equal(load(&k, t.file, &bad), 0);
        assert_int_equal(bad, 0);
        assert_int_equal(k.n_holds, 1);
        h = ledger_held(&k, "/w\tx", 299);
        assert_non_null(h);
        assert_int_equal(h->cgroup_id, 7);
        assert_int_equal(h->since_usec, 150);
        assert_string_equal(h->who, "uid 5 (pid 2)");
        /* Every cgroup: any path is held, its own release or not. */
        assert_int_equal(ledger_hold(&k, LEDGER_HOLD_ALL, 0, 100, 500, "uid 0 (pid 3)", NULL), 0);
        assert_string_equal(ledger_held(&k, "/other", 400)->path, LEDGER_HOLD_ALL);
        assert_string_equal(ledger_held(&k, "/w\tx", 400)->path, LEDGER_HOLD_ALL);
        ledger_unhold(&k, ledger_held(&k, "/other", 400));
        assert_null(ledger_held(&k, "/other", 400));
        ledger_clear(&k);
        ledger_clear(&l);

        /* A release line that is not one is skipped like any other. */
        put_file(t.file, "# mdreclaim throttle ledger v2\nrelease\tsoon\t1\t2\twho\t/a\nrelease\t9\t1\t2\twho\tnot-a-path\n");
        assert_int_equal(load(&k, t.file, &bad), 0);
        assert_int_equal(bad, 2);
        assert_int_equal(k.n_holds, 0);
        ledger_clear(&k);
        tmp_ledger_remove(&t);
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

/* A device queue's knobs: one entry per device and knob, kept across a save, never "max". */
static void test_queue_knobs(void **state) {
        char dir[] = "/tmp/mdreclaim-ledger-XXXXXX", file[64], what[48];
        ThrottleEntry *e, q = { .kind = THROTTLE_NR_REQUESTS, .major = 254, .minor = 16, .original = 256 };
        Ledger l, k;
        unsigned bad;

        assert_true(throttle_original_plausible(&q, 4096));
        q.original = THROTTLE_NONE;
        assert_false(throttle_original_plausible(&q, 4096));
        q.original = 0;
        assert_false(throttle_original_plausible(&q, 4096));
        q = (ThrottleEntry) { .kind = THROTTLE_MAX_SECTORS_KB, .original = 1280 };
        assert_false(throttle_original_plausible(&q, 4096));   /* device 0:0 */
        q.major = 8;
        assert_string_equal(throttle_describe(&q, what, sizeof(what)), "8:0 queue max_sectors_kb");

        assert_non_null(mkdtemp(dir));
        snprintf(file, sizeof(file), "%s/queues", dir);
        ledger_init(&l, file);
        assert_int_equal(request(&l, "/sys/block/vdb/queue", 0, THROTTLE_NR_REQUESTS, 254, 16, POINT_WRITE, 4, "r",
                                 256, &e), 0);
        assert_int_equal(request(&l, "/sys/block/vdb/queue", 0, THROTTLE_NR_REQUESTS, 254, 32, POINT_WRITE, 4, "r",
                                 64, &e), 0);
        assert_int_equal(request(&l, "/sys/block/vdb/queue", 0, THROTTLE_MAX_SECTORS_KB, 254, 16, POINT_WRITE, 128,
                                 "r", 1280, &e), 0);
        assert_int_equal(l.n, 3);
        assert_int_equal(throttle_effective(ledger_find(&l, "/sys/block/vdb/queue", THROTTLE_NR_REQUESTS, 254, 32)), 4);
        assert_int_equal(ledger_save(&l), 0);
        ledger_init(&k, file);
        assert_int_equal(ledger_load(&k, &bad), 0);
        assert_int_equal(bad, 0);
        assert_int_equal(k.n, 3);
        e = ledger_find(&k, "/sys/block/vdb/queue", THROTTLE_MAX_SECTORS_KB, 254, 16);
        assert_non_null(e);
        assert_int_equal(e->original, 1280);
        assert_int_equal(e->requested[POINT_WRITE], 128);
        ledger_clear(&k);
        ledger_clear(&l);
        unlink(file);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lower_request_wins),
                cmocka_unit_test(test_never_above_the_original),
                cmocka_unit_test(test_devices_are_separate),
                cmocka_unit_test(test_foreign_change_wins),
                cmocka_unit_test(test_save_and_load),
                cmocka_unit_test(test_fifo_is_refused),
                cmocka_unit_test(test_symlink_is_refused),
                cmocka_unit_test(test_huge_line_is_bounded),
                cmocka_unit_test(test_long_line_is_skipped),
                cmocka_unit_test(test_entries_past_the_bound),
                cmocka_unit_test(test_implausible_originals),
                cmocka_unit_test(test_queue_knobs),
                cmocka_unit_test(test_swap_max),
                cmocka_unit_test(test_plausibility),
                cmocka_unit_test(test_save_ignores_planted_link),
                cmocka_unit_test(test_since_and_lifts_when),
                cmocka_unit_test(test_releases),
                cmocka_unit_test(test_io_max),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
