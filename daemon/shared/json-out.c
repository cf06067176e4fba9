/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "json-out.h"

#include <inttypes.h>

#include "name-escape.h"

/* One byte as it stands between JSON's quotes. */
static void json_char(FILE *f, unsigned char c) {
        switch (c) {
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
                if (c < 0x20 || c == 0x7f)
                        fprintf(f, "\\u%04x", c);
                else
                        fputc(c, f);
        }
}

static void json_chars(FILE *f, const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                json_char(f, *p);
}

/* How many bytes from s stand as they are in JSON and in names: printable ASCII but '"' and '\\'. */
static size_t plain_run(const char *s) {
        size_t n = 0;

        while ((unsigned char) s[n] >= 0x20 && (unsigned char) s[n] < 0x7f && s[n] != '"' && s[n] != '\\')
                n++;
        return n;
}

void json_string(FILE *f, const char *s) {
        fputc('"', f);
        while (*s) {
                char piece[NAME_PIECE_MAX];
                size_t n = plain_run(s);

                if (n > 0) {
                        fwrite(s, 1, n, f);
                        s += n;
                        continue;
                }
                n = name_escape_piece(s, piece);

                /* Text keeps its backslashes and control characters (JSON has its own escapes for
                 * them); only a byte that is not UTF-8 takes the escape of names. */
                if ((unsigned char) *s < 0x80)
                        json_char(f, (unsigned char) *s);
                else
                        json_chars(f, piece);
                s += n;
        }
        fputc('"', f);
}

void json_name(FILE *f, const char *s) {
        fputc('"', f);
        while (*s) {
                char piece[NAME_PIECE_MAX];
                size_t n = plain_run(s);

                if (n > 0) {
                        fwrite(s, 1, n, f);
                        s += n;
                        continue;
                }
                s += name_escape_piece(s, piece);
                json_chars(f, piece);
        }
        fputc('"', f);
}

void json_string_or_null(FILE *f, const char *s) {
        if (s)
                json_string(f, s);
        else
                fputs("null", f);
}

void json_u64(FILE *f, uint64_t v) {
        char buf[20];
        size_t at = sizeof(buf);

        do
                buf[--at] = (char) ('0' + v % 10);
        while ((v /= 10) > 0);
        fwrite(buf + at, 1, sizeof(buf) - at, f);
}

void json_i64(FILE *f, int64_t v) {
        if (v < 0)
                fputc('-', f);
        /* -(v + 1) + 1: the magnitude of INT64_MIN too, without an overflow. */
        json_u64(f, v < 0 ? (uint64_t) -(v + 1) + 1 : (uint64_t) v);
}

void json_u64_or_null(FILE *f, bool have, uint64_t v) {
        if (have)
                json_u64(f, v);
        else
                fputs("null", f);
}
