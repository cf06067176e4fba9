/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "json-out.h"

#include <inttypes.h>

void json_string(FILE *f, const char *s) {
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                switch (*p) {
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                case '\t':
                        fputs("\\t", f);
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f)
                                fprintf(f, "\\u%04x", *p);
                        else
                                fputc(*p, f);
                }
        }
        fputc('"', f);
}

void json_string_or_null(FILE *f, const char *s) {
        if (s)
                json_string(f, s);
        else
                fputs("null", f);
}

void json_u64_or_null(FILE *f, bool have, uint64_t v) {
        if (have)
                fprintf(f, "%" PRIu64, v);
        else
                fputs("null", f);
}
