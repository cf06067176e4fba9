/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "parse-util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* Leading decimal digits into *ret, overflow-checked; returns the end. */
static const char *parse_digits(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        if (!isdigit((unsigned char) *s))
                return NULL;
        for (; isdigit((unsigned char) *s); s++) {
                unsigned d = (unsigned) (*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return NULL;
                v = v * 10 + d;
        }
        *ret = v;
        return s;
}

/* Optional ".ddd" fraction, kept as a fraction of 10^digits. */
static const char *parse_fraction(const char *s, unsigned max_digits,
                                  uint64_t *ret_num, uint64_t *ret_den) {
        uint64_t num = 0, den = 1;

        if (*s == '.') {
                s++;
                if (!isdigit((unsigned char) *s))
                        return NULL;
                for (unsigned i = 0; isdigit((unsigned char) *s); s++, i++) {
                        if (i >= max_digits)
                                return NULL;
                        num = num * 10 + (unsigned) (*s - '0');
                        den *= 10;
                }
        }
        *ret_num = num;
        *ret_den = den;
        return s;
}

int parse_uint_range(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v;
        const char *e;

        if (!s || !(e = parse_digits(s, &v)) || *e != '\0')
                return -EINVAL;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

static int size_suffix_shift(const char *s, unsigned *ret_shift) {
        static const struct { char c; unsigned shift; } table[] = {
                { 'K', 10 }, { 'M', 20 }, { 'G', 30 }, { 'T', 40 },
        };
        unsigned shift = 0;

        if (*s) {
                bool found = false;
                for (size_t i = 0; i < ELEMENTSOF(table); i++)
                        if (toupper((unsigned char) *s) == table[i].c) {
                                shift = table[i].shift;
                                found = true;
                                s++;
                                break;
                        }
                if (found && *s == 'i')
                        s++;
                if (*s == 'B')
                        s++;
        }
        if (*s != '\0')
                return -EINVAL;
        *ret_shift = shift;
        return 0;
}

int parse_size(const char *s, bool allow_max, uint64_t *ret) {
        uint64_t whole, num, den;
        unsigned shift;
        const char *p;

        if (!s)
                return -EINVAL;
        if (allow_max && (streq(s, "max") || streq(s, "infinity"))) {
                *ret = UINT64_MAX;
                return 0;
        }
        p = parse_digits(s, &whole);
        if (!p)
                return -EINVAL;
        p = parse_fraction(p, 3, &num, &den);
        if (!p || size_suffix_shift(p, &shift) < 0)
                return -EINVAL;
        if (shift == 0 && num != 0)
                return -EINVAL; /* fractional bytes */
        if (shift > 0 && whole > (UINT64_MAX >> shift))
                return -ERANGE;
        if ((whole << shift) > UINT64_MAX - ((num << shift) / den))
                return -ERANGE;
        *ret = (whole << shift) + ((num << shift) / den);
        return 0;
}

int parse_percent(const char *s, uint32_t *ret_ppm) {
        uint64_t whole, num, den, ppm;
        const char *p;

        if (!s || !(p = parse_digits(s, &whole)))
                return -EINVAL;
        p = parse_fraction(p, 4, &num, &den);
        if (!p || !streq(p, "%"))
                return -EINVAL;
        if (whole > 100)
                return -ERANGE;
        ppm = whole * 10000 + num * 10000 / den;
        if (ppm > PPM_ONE)
                return -ERANGE;
        *ret_ppm = (uint32_t) ppm;
        return 0;
}

int parse_duration(const char *s, uint64_t *ret_usec) {
        static const struct { const char *suffix; uint64_t usec; } units[] = {
                { "us", 1 }, { "ms", USEC_PER_MSEC }, { "s", USEC_PER_SEC },
                { "sec", USEC_PER_SEC }, { "", USEC_PER_SEC },
                { "min", 60 * USEC_PER_SEC }, { "m", 60 * USEC_PER_SEC },
                { "h", 3600 * USEC_PER_SEC },
        };
        uint64_t whole, num, den;
        const char *p;

        if (!s || !(p = parse_digits(s, &whole)))
                return -EINVAL;
        p = parse_fraction(p, 3, &num, &den);
        if (!p)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(units); i++) {
                uint64_t u = units[i].usec;
                if (!streq(p, units[i].suffix))
                        continue;
                if (whole > UINT64_MAX / u || whole * u > UINT64_MAX - num * u / den)
                        return -ERANGE;
                *ret_usec = whole * u + num * u / den;
                return 0;
        }
        return -EINVAL;
}

int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "yes", "true", "on", "1" };
        static const char *const no[] = { "no", "false", "off", "0" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

int parse_size_or_percent(const char *s, SizeOrPercent *ret) {
        SizeOrPercent v = { .set = true };
        int r;

        if (s && *s && s[strlen(s) - 1] == '%') {
                v.is_percent = true;
                r = parse_percent(s, &v.ppm);
        } else
                r = parse_size(s, false, &v.bytes);
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

const char *format_size(char buf[static FORMAT_SIZE_MAX], uint64_t bytes) {
        static const char suffixes[] = "BKMGTPE";
        double v = (double) bytes;
        size_t i = 0;

        if (bytes == UINT64_MAX) {
                snprintf(buf, FORMAT_SIZE_MAX, "max");
                return buf;
        }
        while (v >= 1024.0 && i + 1 < sizeof(suffixes) - 1) {
                v /= 1024.0;
                i++;
        }
        if (i == 0)
                snprintf(buf, FORMAT_SIZE_MAX, "%lluB", (unsigned long long) bytes);
        else
                snprintf(buf, FORMAT_SIZE_MAX, "%.1f%c", v, suffixes[i]);
        return buf;
}
