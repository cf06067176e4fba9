/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Strict parsers for the values operators write: sizes ("64M", as systemd
 * reads them), percentages
 * ("0.1%"), durations ("500ms"), booleans. Each takes the whole string and
 * rejects anything trailing, so "64M # note" is an error, never 64M.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Parts per million: 100% is PPM_ONE. Percentages are kept in ppm. */
#define PPM_ONE UINT32_C(1000000)

/* A size as systemd parses one in a unit file: "64M", "1.5G", "1G 512M",
 * "4096", "4096B"; suffixes K, M, G, T, P, E (powers of 1024, upper case) and
 * B; "max"/"infinity" gives UINT64_MAX when allow_max. -EINVAL for what is not
 * a size, -ERANGE for one past 64 bits or negative. */
int parse_size(const char *s, bool allow_max, uint64_t *ret);

/* "12.5%" → 125000 ppm. Up to four decimals; must end in '%'; 0..100%. */
int parse_percent(const char *s, uint32_t *ret_ppm);

/* "500ms", "1s", "2min", "1h", "250us"; a bare number is seconds. */
int parse_duration(const char *s, uint64_t *ret_usec);

int parse_bool(const char *s, bool *ret);

/* Unsigned decimal in [min, max], nothing else. */
int parse_uint_range(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/* A size or a percentage. */
typedef struct SizeOrPercent {
        bool set;
        bool is_percent;
        uint64_t bytes;
        uint32_t ppm;
} SizeOrPercent;

int parse_size_or_percent(const char *s, SizeOrPercent *ret);

/* Human-readable sizes for messages: "64.0M". */
#define FORMAT_SIZE_MAX 24
const char *format_size(char buf[static FORMAT_SIZE_MAX], uint64_t bytes);
