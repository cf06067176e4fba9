/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target for the value parsers of parse-util.c. The input, cut at its
 * first NUL, is given to each of them. A value that parses must print back
 * to the same value, and dropping the fraction of "1.5G" or "2.25h" may
 * lower the value by less than one unit, never raise it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "parse-util.h"
#include "util.h"

#define DIGITS "0123456789"

static bool all_digits(const char *s) {
        return *s && strspn(s, DIGITS) == strlen(s);
}

/* Plain decimal, overflow-checked: the oracle for inputs of digits only. */
static bool decimal_value(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        for (; *s; s++)
                if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t) (*s - '0'), &v))
                        return false;
        *ret = v;
        return true;
}

/*
 * Splits "12.5ms" into the whole part with its suffix ("12ms") and one unit
 * of that suffix ("1ms"). False if s has no ".digits" after leading digits.
 */
static bool split_fraction(const char *s, char **ret_whole, char **ret_unit) {
        size_t w = strspn(s, DIGITS), f;
        const char *suffix;

        if (w == 0 || s[w] != '.' || (f = strspn(s + w + 1, DIGITS)) == 0)
                return false;
        suffix = s + w + 1 + f;
        if (asprintf(ret_whole, "%.*s%s", (int) w, s, suffix) < 0)
                abort();
        if (asprintf(ret_unit, "1%s", suffix) < 0)
                abort();
        return true;
}

typedef int (*ValueParser)(const char *s, uint64_t *ret);

/* v parsed from s: the whole part alone gives v - d with 0 <= d < one unit (d <= one unit when
 * `may_round_up`: sizes weigh a fraction in double precision, as systemd does, and ".99999999999999999999"
 * rounds to a whole unit there too). */
static void check_fraction(const char *s, uint64_t v, ValueParser parse, bool may_round_up) {
        _cleanup_free_ char *whole = NULL, *unit = NULL;
        uint64_t w, u;

        if (!split_fraction(s, &whole, &unit))
                return;
        fuzz_check(parse(whole, &w) == 0);
        fuzz_check(parse(unit, &u) == 0);
        fuzz_check(v >= w);
        fuzz_check(v - w < u || (may_round_up && v - w == u));
}

static int size_no_max(const char *s, uint64_t *ret) {
        return parse_size(s, false, ret);
}

static void check_size(const char *s) {
        uint64_t v = 0, v_max = 0, again = 0, expect;
        char buf[32], human[FORMAT_SIZE_MAX];
        int r = parse_size(s, false, &v), r_max = parse_size(s, true, &v_max);

        fuzz_check(r == 0 || r == -EINVAL || r == -ERANGE);
        if (streq(s, "max") || streq(s, "infinity")) {
                fuzz_check(r == -EINVAL && r_max == 0 && v_max == UINT64_MAX);
                return;
        }
        fuzz_check(r_max == r);
        if (all_digits(s)) {
                bool fits = decimal_value(s, &expect);
                fuzz_check(fits == (r == 0));
                fuzz_check(!fits || v == expect);
        }
        if (r < 0)
                return;
        fuzz_check(v_max == v);
        snprintf(buf, sizeof(buf), "%" PRIu64, v);
        fuzz_check(parse_size(buf, false, &again) == 0 && again == v);
        fuzz_check(strlen(format_size(human, v)) < FORMAT_SIZE_MAX);
        check_fraction(s, v, size_no_max, true);
}

static int percent_as_u64(const char *s, uint64_t *ret) {
        uint32_t ppm;
        int r = parse_percent(s, &ppm);

        if (r >= 0)
                *ret = ppm;
        return r;
}

static void check_percent(const char *s) {
        uint32_t ppm = 0, again = 0;
        char buf[32];
        int r = parse_percent(s, &ppm);

        fuzz_check(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r < 0)
                return;
        fuzz_check(ppm <= PPM_ONE);
        fuzz_check(s[strlen(s) - 1] == '%');
        snprintf(buf, sizeof(buf), "%" PRIu32 ".%04" PRIu32 "%%", ppm / 10000, ppm % 10000);
        fuzz_check(parse_percent(buf, &again) == 0 && again == ppm);
        check_fraction(s, ppm, percent_as_u64, false);
}

static void check_duration(const char *s) {
        uint64_t usec = 0, again = 0;
        char buf[32];
        int r = parse_duration(s, &usec);

        fuzz_check(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r < 0)
                return;
        snprintf(buf, sizeof(buf), "%" PRIu64 "us", usec);
        fuzz_check(parse_duration(buf, &again) == 0 && again == usec);
        check_fraction(s, usec, parse_duration, false);
}

static void check_bool(const char *s) {
        static const char *const words[] = { "no", "false", "off", "0", "yes", "true", "on", "1" };
        bool b = false;
        int r = parse_bool(s, &b), expect = -1;

        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                if (strcasecmp(s, words[i]) == 0)
                        expect = i >= ELEMENTSOF(words) / 2;
        fuzz_check(expect < 0 ? r == -EINVAL : r == 0 && b == (expect == 1));
}

static void check_size_or_percent(const char *s) {
        SizeOrPercent v = {};
        uint64_t bytes = 0;
        uint32_t ppm = 0;
        bool percent = *s && s[strlen(s) - 1] == '%';
        int r = parse_size_or_percent(s, &v);
        int r_direct = percent ? parse_percent(s, &ppm) : parse_size(s, false, &bytes);

        fuzz_check(r == r_direct);
        if (r < 0)
                return;
        fuzz_check(v.set && v.is_percent == percent);
        fuzz_check(percent ? v.ppm == ppm && v.bytes == 0 : v.bytes == bytes && v.ppm == 0);
}

static void check_uint_range(const char *s) {
        uint64_t v = 0, expect = 0, clamped = 0;
        bool valid = all_digits(s) && decimal_value(s, &expect);
        int r = parse_uint_range(s, 0, UINT64_MAX, &v);
        int r_clamped = parse_uint_range(s, 10, 100, &clamped);

        fuzz_check(valid ? r == 0 && v == expect : r == -EINVAL);
        if (!valid)
                fuzz_check(r_clamped == -EINVAL);
        else if (expect < 10 || expect > 100)
                fuzz_check(r_clamped == -ERANGE);
        else
                fuzz_check(r_clamped == 0 && clamped == expect);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = fuzz_strndup(data, size);

        check_size(s);
        check_percent(s);
        check_duration(s);
        check_bool(s);
        check_size_or_percent(s);
        check_uint_range(s);
        return 0;
}
