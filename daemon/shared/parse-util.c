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

/*
 * Sizes as systemd reads them in unit files (MemoryMax=, parse_size() with
 * base 1024): one or more terms, each a decimal number with an optional
 * fraction and an optional suffix E, P, T, G, M, K (powers of 1024) or B
 * (bytes), upper case only; the terms add up and their suffixes must descend
 * ("1G 512M"). Spaces may lead a term and separate a number from its suffix;
 * nothing may trail. A fraction is taken of its suffix's unit and what is
 * below a byte is dropped ("1.5K" is 1536, "0.5" is 0); a fraction is computed
 * in double precision, as systemd does, so that both give the same bytes.
 */
static const struct {
        char suffix;            /* '\0': none, bytes */
        unsigned shift;
} size_units[] = {
        { 'E', 60 }, { 'P', 50 }, { 'T', 40 }, { 'G', 30 }, { 'M', 20 }, { 'K', 10 }, { 'B', 0 }, { '\0', 0 },
};

static bool size_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The digits after a '.', as systemd weighs them: a double, divided by ten per digit. */
static const char *parse_size_fraction(const char *s, double *ret) {
        uint64_t digits;
        const char *e;
        double f;

        *ret = 0;
        if (!isdigit((unsigned char) *s))
                return s;       /* "10.M" is 10M */
        e = parse_digits(s, &digits);
        if (!e)
                return NULL;    /* more digits than 64 bits hold */
        f = (double) digits;
        for (; s < e; s++)
                f /= 10;
        *ret = f;
        return e;
}

/* One term at *p, suffixes from size_units[*next] on; adds it to *total. */
static int parse_size_term(const char **p, size_t *next, uint64_t *total) {
        const char *s = *p;
        uint64_t whole, factor, bytes;
        double frac = 0;
        size_t i;

        while (size_space(*s))
                s++;
        if (*s == '+')
                s++;
        else if (*s == '-')
                return isdigit((unsigned char) s[1]) ? -ERANGE : -EINVAL;
        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        s = parse_digits(s, &whole);
        if (!s)
                return -ERANGE;
        if (*s == '.' && !(s = parse_size_fraction(s + 1, &frac)))
                return -ERANGE;
        while (size_space(*s))
                s++;
        for (i = *next; i < ELEMENTSOF(size_units); i++)
                if (size_units[i].suffix == '\0' || *s == size_units[i].suffix)
                        break;
        if (i == ELEMENTSOF(size_units))
                return -EINVAL;
        factor = UINT64_C(1) << size_units[i].shift;
        /* As systemd: a fraction counts as one more unit here. Compared without adding to `whole`,
         * which wraps to 0 at UINT64_MAX ("18446744073709551615.1K" was taken). */
        if (whole > UINT64_MAX / factor || (frac > 0 && whole == UINT64_MAX / factor))
                return -ERANGE;
        bytes = whole * factor + (uint64_t) (frac * (double) factor);
        if (bytes > UINT64_MAX - *total)
                return -ERANGE;
        *total += bytes;
        *p = s + (size_units[i].suffix != '\0');
        *next = i + 1;
        return 0;
}

int parse_size(const char *s, bool allow_max, uint64_t *ret) {
        uint64_t total = 0;
        size_t next = 0;
        int r;

        if (!s)
                return -EINVAL;
        if (allow_max && (streq(s, "max") || streq(s, "infinity"))) {
                *ret = UINT64_MAX;
                return 0;
        }
        do {
                r = parse_size_term(&s, &next, &total);
                if (r < 0)
                        return r;
        } while (*s);
        *ret = total;
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
