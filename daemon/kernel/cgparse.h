/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Parsers for the shapes of cgroup v2 interface files: single values
 * ("max" included), flat keyed files (memory.stat, memory.events), nested
 * keyed files (io.stat), and pressure (PSI) files. They work on a buffer
 * already read, allocate nothing, and return -EBADMSG for garbage.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "123\n" or "max\n" (→ UINT64_MAX). */
int cg_parse_u64(const char *buf, size_t len, uint64_t *ret);

/*
 * One pass over "key value\n" lines. values[i] receives the value of keys[i];
 * keys the file lacks are left alone and missing from *ret_found (bit i).
 * Keys not in `keys` are skipped: kernels add keys. n_keys <= 64. Once every
 * key is found the rest is neither read nor checked; with n_keys 0 the whole
 * input is checked.
 */
int cg_parse_flat_keyed(const char *buf, size_t len, const char *const *keys, size_t n_keys,
                        uint64_t *values, uint64_t *ret_found);

/* Averages in hundredths of a percent (avg10=1.23 → 123, at most 10000), total in µs. Kept small:
 * every cgroup's sample holds four. */
typedef struct PsiLine {
        uint64_t total;
        uint16_t avg10, avg60, avg300;
} PsiLine;

typedef struct PsiStats {
        PsiLine some, full;
        bool has_full;
} PsiStats;

int cg_parse_psi(const char *buf, size_t len, PsiStats *ret);

typedef struct IoStatDev {
        uint32_t major, minor;
        uint64_t rbytes, wbytes, rios, wios;
} IoStatDev;

/* Up to `max` devices; more is -E2BIG with the first `max` filled. */
int cg_parse_io_stat(const char *buf, size_t len, IoStatDev *devs, size_t max, size_t *ret_n);

/*
 * /proc/meminfo: "Key:   123 kB" lines. Values are converted to bytes
 * (a value without " kB", like HugePages_Total, is kept as it is). Same
 * contract as cg_parse_flat_keyed otherwise.
 */
int cg_parse_meminfo(const char *buf, size_t len, const char *const *keys, size_t n_keys,
                     uint64_t *values, uint64_t *ret_found);
