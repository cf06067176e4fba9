/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cgparse.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "util.h"

static bool is_digit(char c) {
        return (unsigned char) (c - '0') <= 9;
}

/* Digits from p up to end; returns the position after them or NULL. */
static const char *scan_u64(const char *p, const char *end, uint64_t *ret) {
        const char *start = p, *unchecked_end = end - p > 19 ? p + 19 : end;
        uint64_t v = 0;

        /* Nineteen digits cannot overflow 64 bits: check only past them. */
        for (; p < unchecked_end && is_digit(*p); p++)
                v = v * 10 + (unsigned) (*p - '0');
        for (; p < end && is_digit(*p); p++)
                if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (unsigned) (*p - '0'), &v))
                        return NULL;
        if (p == start)
                return NULL;
        *ret = v;
        return p;
}

/* scan_u64 for a value nobody asked for: the same verdict, no arithmetic
 * unless it is long enough to overflow. */
static const char *skip_u64(const char *p, const char *end) {
        const char *start = p;
        uint64_t unused;

        while (p < end && is_digit(*p))
                p++;
        if (p == start)
                return NULL;
        return p - start < 20 ? p : scan_u64(start, end, &unused);
}

static const char *line_end(const char *p, const char *end) {
        const char *nl = memchr(p, '\n', (size_t) (end - p));
        return nl ? nl : end;
}

int cg_parse_u64(const char *buf, size_t len, uint64_t *ret) {
        const char *end = buf + len, *p;

        if (len > 0 && end[-1] == '\n')
                end--;
        if (end - buf == 3 && memcmp(buf, "max", 3) == 0) {
                *ret = UINT64_MAX;
                return 0;
        }
        p = scan_u64(buf, end, ret);
        return p && p == end ? 0 : -EBADMSG;
}

/*
 * The keys of one parse, grouped by length once per file rather than measured
 * once per line and key: most lines of memory.stat match no key, and their
 * length alone rules out nearly every candidate.
 */
#define KEYSET_LEN_MAX 48

typedef struct KeySet {
        const char *const *keys;
        uint64_t by_len[KEYSET_LEN_MAX];        /* bit i: keys[i] has this length */
        uint64_t longer;                        /* keys of KEYSET_LEN_MAX bytes or more */
} KeySet;

static int keyset_init(KeySet *ks, const char *const *keys, size_t n_keys) {
        if (n_keys > 64)
                return -EINVAL;
        memset(ks, 0, sizeof(*ks));
        ks->keys = keys;
        for (size_t i = 0; i < n_keys; i++) {
                size_t l = strlen(keys[i]);
                if (l < KEYSET_LEN_MAX)
                        ks->by_len[l] |= UINT64_C(1) << i;
                else
                        ks->longer |= UINT64_C(1) << i;
        }
        return 0;
}

/* The index of the key equal to [p, p+klen), or -1. */
static int keyset_find(const KeySet *ks, const char *p, size_t klen) {
        for (uint64_t m = klen < KEYSET_LEN_MAX ? ks->by_len[klen] : ks->longer; m; m &= m - 1) {
                int i = __builtin_ctzll(m);
                if (memcmp(ks->keys[i], p, klen) == 0 && ks->keys[i][klen] == '\0')
                        return i;
        }
        return -1;
}

/*
 * One pass over "KEY<sep>VALUE" lines. With kb_suffix, spaces may follow the
 * separator and a " kB" suffix multiplies the value by 1024 (/proc/meminfo).
 * The pass ends at the line that completes the key set: memory.stat has
 * some fifty lines and the sampler's last key is in the middle of them.
 */
static int parse_keyed(const char *buf, size_t len, const char *const *keys, size_t n_keys, uint64_t *values,
                       uint64_t *ret_found, char sep, bool kb_suffix) {
        const char *p = buf, *end = buf + len;
        uint64_t found = 0, all;
        KeySet ks;

        if (keyset_init(&ks, keys, n_keys) < 0)
                return -EINVAL;
        all = n_keys == 64 ? UINT64_MAX : (UINT64_C(1) << n_keys) - 1;
        while (p < end) {
                const char *eol = line_end(p, end), *k_end = memchr(p, sep, (size_t) (eol - p)), *v;
                uint64_t val = 0, mult = 1;
                int i;

                if (!k_end || k_end == p)
                        return -EBADMSG;
                i = keyset_find(&ks, p, (size_t) (k_end - p));
                v = k_end + 1;
                while (kb_suffix && v < eol && *v == ' ')
                        v++;
                /* Values of other keys are checked, not converted. */
                v = i >= 0 ? scan_u64(v, eol, &val) : skip_u64(v, eol);
                if (!v)
                        return -EBADMSG;
                if (kb_suffix && eol - v == 3 && memcmp(v, " kB", 3) == 0)
                        mult = 1024;
                else if (v != eol)
                        return -EBADMSG;
                if (i >= 0) {
                        if (val > UINT64_MAX / mult)
                                return -EBADMSG;
                        values[i] = val * mult;
                        found |= UINT64_C(1) << i;
                        if (found == all)
                                break;
                }
                p = eol + 1;
        }
        if (ret_found)
                *ret_found = found;
        return 0;
}

int cg_parse_flat_keyed(const char *buf, size_t len, const char *const *keys, size_t n_keys,
                        uint64_t *values, uint64_t *ret_found) {
        return parse_keyed(buf, len, keys, n_keys, values, ret_found, ' ', false);
}

int cg_parse_meminfo(const char *buf, size_t len, const char *const *keys, size_t n_keys,
                     uint64_t *values, uint64_t *ret_found) {
        return parse_keyed(buf, len, keys, n_keys, values, ret_found, ':', true);
}

/* "avg10=1.23" → 123 */
/* Consumes the character c at p, never reading at or past end. */
static const char *expect(const char *p, const char *end, char c) {
        return p && p < end && *p == c ? p + 1 : NULL;
}

static const char *scan_avg(const char *p, const char *end, const char *name, uint16_t *ret) {
        size_t nl = strlen(name);
        uint64_t whole, frac;
        const char *q;

        if ((size_t) (end - p) < nl + 1 || memcmp(p, name, nl) != 0 || p[nl] != '=')
                return NULL;
        q = scan_u64(p + nl + 1, end, &whole);
        if (!q || q + 3 > end || *q != '.' || !(q[1] >= '0' && q[1] <= '9') || !(q[2] >= '0' && q[2] <= '9'))
                return NULL;
        frac = (uint64_t) (q[1] - '0') * 10 + (uint64_t) (q[2] - '0');
        if (whole > 100 || (whole == 100 && frac > 0))
                return NULL;
        *ret = (uint16_t) (whole * 100 + frac);
        return q + 3;
}

static int parse_psi_line(const char *p, const char *end, PsiLine *ret) {
        PsiLine l;

        if (!(p = expect(scan_avg(p, end, "avg10", &l.avg10), end, ' ')) ||
            !(p = expect(scan_avg(p, end, "avg60", &l.avg60), end, ' ')) ||
            !(p = expect(scan_avg(p, end, "avg300", &l.avg300), end, ' ')))
                return -EBADMSG;
        if ((size_t) (end - p) < 6 || memcmp(p, "total=", 6) != 0)
                return -EBADMSG;
        p = scan_u64(p + 6, end, &l.total);
        if (!p || p != end)
                return -EBADMSG;
        *ret = l;
        return 0;
}

int cg_parse_psi(const char *buf, size_t len, PsiStats *ret) {
        const char *p = buf, *end = buf + len;
        PsiStats s = {};
        bool has_some = false;

        while (p < end) {
                const char *eol = line_end(p, end);
                int r;

                if (eol - p > 5 && memcmp(p, "some ", 5) == 0) {
                        r = parse_psi_line(p + 5, eol, &s.some);
                        has_some = true;
                } else if (eol - p > 5 && memcmp(p, "full ", 5) == 0) {
                        r = parse_psi_line(p + 5, eol, &s.full);
                        s.has_full = true;
                } else
                        r = -EBADMSG;
                if (r < 0)
                        return r;
                p = eol + 1;
        }
        if (!has_some)
                return -EBADMSG;
        *ret = s;
        return 0;
}

static int parse_io_stat_line(const char *p, const char *end, IoStatDev *d) {
        static const char *const keys[] = { "rbytes", "wbytes", "rios", "wios" };
        uint64_t *dest[] = { &d->rbytes, &d->wbytes, &d->rios, &d->wios };
        uint64_t maj, min;

        *d = (IoStatDev) {};
        if (!(p = expect(scan_u64(p, end, &maj), end, ':')) || !(p = scan_u64(p, end, &min)) ||
            maj > UINT32_MAX || min > UINT32_MAX)
                return -EBADMSG;
        d->major = (uint32_t) maj;
        d->minor = (uint32_t) min;
        while (p < end) {
                const char *eq, *tok_end;
                uint64_t v;

                if (*p++ != ' ')
                        return -EBADMSG;
                /* A device the cgroup has a blkg on (io.max or io.weight set there) and no io yet: the
                 * kernel prints its name and a space, then no figures, and a controller's own stats
                 * begin with a space of their own ("8:0  cost.usage=0" with io.cost on). Zeros. */
                while (p < end && *p == ' ')
                        p++;
                if (p == end)
                        break;
                tok_end = memchr(p, ' ', (size_t) (end - p));
                tok_end = tok_end ? tok_end : end;
                eq = memchr(p, '=', (size_t) (tok_end - p));
                if (!eq)
                        return -EBADMSG;
                for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                        if ((size_t) (eq - p) == strlen(keys[i]) && memcmp(p, keys[i], (size_t) (eq - p)) == 0) {
                                const char *q = scan_u64(eq + 1, tok_end, &v);
                                if (!q || q != tok_end)
                                        return -EBADMSG;
                                *dest[i] = v;
                        }
                p = tok_end;  /* other keys (dbytes, cost.*) are skipped */
        }
        return 0;
}

int cg_parse_io_stat(const char *buf, size_t len, IoStatDev *devs, size_t max, size_t *ret_n) {
        const char *p = buf, *end = buf + len;
        size_t n = 0;

        while (p < end) {
                const char *eol = line_end(p, end);
                IoStatDev d;
                int r;

                if (eol > p) {
                        r = parse_io_stat_line(p, eol, &d);
                        if (r < 0)
                                return r;
                        if (n >= max) {
                                *ret_n = n;
                                return -E2BIG;
                        }
                        devs[n++] = d;
                }
                p = eol + 1;
        }
        *ret_n = n;
        return 0;
}
