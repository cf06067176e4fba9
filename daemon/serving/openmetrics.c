/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "openmetrics.h"

#include <inttypes.h>
#include <stdbool.h>

#include "util.h"

static const char *type_name(OmType t) {
        return t == OM_COUNTER ? "counter" : "gauge";
}

void om_family(FILE *f, const OmFamily *fam) {
        fprintf(f, "# TYPE %s %s\n", fam->name, type_name(fam->type));
        if (fam->unit)
                fprintf(f, "# UNIT %s %s\n", fam->name, fam->unit);
        fprintf(f, "# HELP %s %s\n", fam->name, fam->help);
}

/* The length of the valid UTF-8 sequence at s (1 to 4 bytes), or 0 if it is not one: overlong
 * forms, surrogates and code points past U+10FFFF are not. A NUL ends any sequence. */
static size_t utf8_sequence_len(const unsigned char *s) {
        unsigned lo = 0x80, hi = 0xbf;  /* what the second byte may be */
        size_t n;

        if (s[0] < 0x80)
                return 1;
        if (s[0] < 0xc2 || s[0] > 0xf4)
                return 0;
        n = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
        if (s[0] == 0xe0)
                lo = 0xa0;
        else if (s[0] == 0xed)
                hi = 0x9f;
        else if (s[0] == 0xf0)
                lo = 0x90;
        else if (s[0] == 0xf4)
                hi = 0x8f;
        if (s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < n; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
        return n;
}

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Whether the backslash at s would read as one of our escapes: \x5c, or \xHH of 80..ff. */
static bool reads_as_escape(const char *s) {
        int hi, lo;

        if (s[1] != 'x' || (hi = hex_value(s[2])) < 0 || (lo = hex_value(s[3])) < 0)
                return false;
        return hi >= 8 || (hi == 5 && lo == 12);
}

void om_label_value(FILE *f, const char *value) {
        const unsigned char *p = (const unsigned char *) value;

        while (*p) {
                size_t n = utf8_sequence_len(p);

                if (n == 0)
                        fprintf(f, "\\\\x%02x", *p);
                else if (*p == '\\')
                        fputs(reads_as_escape((const char *) p) ? "\\\\x5c" : "\\\\", f);
                else if (*p == '"')
                        fputs("\\\"", f);
                else if (*p == '\n')
                        fputs("\\n", f);
                else
                        fwrite(p, 1, n, f);
                p += n ?: 1;
        }
}

static void sample_name(FILE *f, const OmFamily *fam, const OmLabel *labels, size_t n_labels) {
        bool first = true;

        fputs(fam->name, f);
        if (fam->type == OM_COUNTER)
                fputs("_total", f);
        for (size_t i = 0; i < n_labels; i++) {
                if (!labels[i].value)
                        continue;
                fprintf(f, "%c%s=\"", first ? '{' : ',', labels[i].name);
                om_label_value(f, labels[i].value);
                fputc('"', f);
                first = false;
        }
        if (!first)
                fputc('}', f);
}

void om_sample(FILE *f, const OmFamily *fam, const OmLabel *labels, size_t n_labels, uint64_t value) {
        sample_name(f, fam, labels, n_labels);
        fprintf(f, " %" PRIu64 "\n", value);
}

void om_sample_usec(FILE *f, const OmFamily *fam, const OmLabel *labels, size_t n_labels, uint64_t usec) {
        sample_name(f, fam, labels, n_labels);
        fprintf(f, " %" PRIu64 ".%06" PRIu64 "\n", usec / USEC_PER_SEC, usec % USEC_PER_SEC);
}

void om_eof(FILE *f) {
        fputs("# EOF\n", f);
}
