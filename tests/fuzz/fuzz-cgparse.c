/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target for the cgroup and /proc file parsers (cgparse.c). Every
 * input is given to all five of them: the corpus holds plain copies of real
 * files, and a mutation of one shape is a fair test of the others. Each
 * result is checked against an independent reading of the input or against
 * a second call.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "cgparse.h"
#include "fuzz.h"
#include "util.h"

/* The keys the sampler asks of memory.stat, memory.events and /proc/vmstat. */
static const char *const flat_keys[] = {
        "anon", "file", "shmem", "file_dirty", "file_writeback", "slab_reclaimable",
        "slab_unreclaimable", "workingset_refault_file", "pgscan", "pgsteal",
        "low", "high", "max", "oom", "oom_kill", "oom_group_kill",
        "nr_dirty", "nr_writeback", "nr_dirty_threshold", "nr_dirty_background_threshold",
};

/* Those it asks of /proc/meminfo, and one without " kB". */
static const char *const meminfo_keys[] = {
        "MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "Dirty", "Writeback",
        "SReclaimable", "SwapTotal", "SwapFree", "HugePages_Total",
};

#define VALUE_UNTOUCHED UINT64_C(0x5a5a5a5a5a5a5a5a)
#define ALL_KEYS(keys) ((UINT64_C(1) << ELEMENTSOF(keys)) - 1)

/* "max", or digits that fit in 64 bits, with one optional trailing newline. */
static void check_u64(const char *buf, size_t len) {
        size_t body = len > 0 && buf[len - 1] == '\n' ? len - 1 : len;
        uint64_t v = 0, expect = 0;
        bool valid = body > 0;
        int r = cg_parse_u64(buf, len, &v);

        if (body == 3 && memcmp(buf, "max", 3) == 0)
                expect = UINT64_MAX;
        else
                for (size_t i = 0; valid && i < body; i++)
                        valid = buf[i] >= '0' && buf[i] <= '9' &&
                                !__builtin_mul_overflow(expect, 10, &expect) &&
                                !__builtin_add_overflow(expect, (uint64_t) (buf[i] - '0'), &expect);
        /* On failure *ret may have been written: the header promises nothing there. */
        fuzz_check(valid ? r == 0 && v == expect : r == -EBADMSG);
}

/* Whether some line of buf starts with the key and then `sep`. */
static bool has_line_with_key(const char *buf, size_t len, const char *key, char sep) {
        size_t kl = strlen(key);

        for (size_t off = 0; off < len;) {
                const char *nl = memchr(buf + off, '\n', len - off);
                size_t eol = nl ? (size_t) (nl - buf) : len;

                if (eol - off > kl && memcmp(buf + off, key, kl) == 0 && buf[off + kl] == sep)
                        return true;
                off = eol + 1;
        }
        return false;
}

static void check_flat_keyed(const char *buf, size_t len) {
        uint64_t values[ELEMENTSOF(flat_keys)], found = 0, found_none = 1;
        int r, r_none;

        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                values[i] = VALUE_UNTOUCHED;
        r = cg_parse_flat_keyed(buf, len, flat_keys, ELEMENTSOF(flat_keys), values, &found);
        /*
         * The shape of the lines alone decides success, except that a pass
         * that found every key ends there: what follows may be anything.
         */
        r_none = cg_parse_flat_keyed(buf, len, flat_keys, 0, NULL, &found_none);
        fuzz_check(r == 0 || r == -EBADMSG);
        fuzz_check(r == r_none || (r == 0 && found == ALL_KEYS(flat_keys)));
        if (r_none == 0)
                fuzz_check(found_none == 0);
        if (r < 0)
                return;
        fuzz_check(found >> ELEMENTSOF(flat_keys) == 0);
        for (size_t i = 0; i < ELEMENTSOF(flat_keys); i++) {
                bool f = found & (UINT64_C(1) << i);
                fuzz_check(f == has_line_with_key(buf, len, flat_keys[i], ' '));
                if (!f)
                        fuzz_check(values[i] == VALUE_UNTOUCHED);
        }
}

/*
 * As for flat keyed files, except that a wanted key's value in kB may
 * overflow 64 bits once in bytes: then the call with keys fails where the
 * one without succeeds.
 */
static void check_meminfo(const char *buf, size_t len) {
        uint64_t values[ELEMENTSOF(meminfo_keys)], found = 0, found_none = 1;
        int r, r_none;

        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                values[i] = VALUE_UNTOUCHED;
        r = cg_parse_meminfo(buf, len, meminfo_keys, ELEMENTSOF(meminfo_keys), values, &found);
        r_none = cg_parse_meminfo(buf, len, meminfo_keys, 0, NULL, &found_none);
        fuzz_check(r == 0 || r == -EBADMSG);
        fuzz_check(r_none == 0 || r_none == -EBADMSG);
        fuzz_check(r_none == 0 || r == r_none || (r == 0 && found == ALL_KEYS(meminfo_keys)));
        if (r_none == 0)
                fuzz_check(found_none == 0);
        if (r < 0)
                return;
        fuzz_check(found >> ELEMENTSOF(meminfo_keys) == 0);
        for (size_t i = 0; i < ELEMENTSOF(meminfo_keys); i++) {
                bool f = found & (UINT64_C(1) << i);
                fuzz_check(f == has_line_with_key(buf, len, meminfo_keys[i], ':'));
                if (!f)
                        fuzz_check(values[i] == VALUE_UNTOUCHED);
        }
}

static void check_psi_line(const PsiLine *l) {
        /* Hundredths of a percent: 100.00% is the most time there is. */
        fuzz_check(l->avg10 <= 10000);
        fuzz_check(l->avg60 <= 10000);
        fuzz_check(l->avg300 <= 10000);
}

static void check_psi(const char *buf, size_t len) {
        PsiStats s;
        int r = cg_parse_psi(buf, len, &s);

        fuzz_check(r == 0 || r == -EBADMSG);
        if (r < 0)
                return;
        fuzz_check(len >= 5 && (memcmp(buf, "some ", 5) == 0 || memmem(buf, len, "\nsome ", 6)));
        check_psi_line(&s.some);
        if (s.has_full)
                check_psi_line(&s.full);
        else
                fuzz_check(s.full.avg10 == 0 && s.full.avg60 == 0 && s.full.avg300 == 0 &&
                           s.full.total == 0);
}

static bool io_dev_equal(const IoStatDev *a, const IoStatDev *b) {
        return a->major == b->major && a->minor == b->minor && a->rbytes == b->rbytes &&
               a->wbytes == b->wbytes && a->rios == b->rios && a->wios == b->wios;
}

/* The same input read into a small and a large array must agree on what both hold. */
static void check_io_stat(const char *buf, size_t len) {
        IoStatDev small[2], big[64];
        size_t n_small = SIZE_MAX, n_big = SIZE_MAX, lines = 1;
        int r_small = cg_parse_io_stat(buf, len, small, ELEMENTSOF(small), &n_small);
        int r_big = cg_parse_io_stat(buf, len, big, ELEMENTSOF(big), &n_big);

        for (size_t i = 0; i < len; i++)
                lines += buf[i] == '\n';
        fuzz_check(r_big == 0 || r_big == -E2BIG || r_big == -EBADMSG);
        fuzz_check(r_small == 0 || r_small == -E2BIG || r_small == -EBADMSG);
        if (r_big == -EBADMSG) {
                fuzz_check(r_small == -EBADMSG || (r_small == -E2BIG && n_small == ELEMENTSOF(small)));
                return;
        }
        fuzz_check(n_big <= ELEMENTSOF(big) && n_big <= lines);
        fuzz_check(r_big == 0 || n_big == ELEMENTSOF(big));
        if (r_big == 0 && n_big <= ELEMENTSOF(small))
                fuzz_check(r_small == 0 && n_small == n_big);
        else
                fuzz_check(r_small == -E2BIG && n_small == ELEMENTSOF(small));
        for (size_t i = 0; i < n_small; i++)
                fuzz_check(io_dev_equal(&small[i], &big[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *buf = fuzz_memdup(data, size);

        check_u64(buf, size);
        check_flat_keyed(buf, size);
        check_meminfo(buf, size);
        check_psi(buf, size);
        check_io_stat(buf, size);
        return 0;
}
