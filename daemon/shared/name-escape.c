/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "name-escape.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Whether s starts with an escape: a backslash, then three octal digits, the first 0 to 3. */
static bool is_escape(const char *s) {
        return s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
               s[3] >= '0' && s[3] <= '7';
}

size_t name_escape_piece(const char *s, char piece[static NAME_PIECE_MAX]) {
        const unsigned char *p = (const unsigned char *) s;
        size_t n = utf8_sequence_len(p);

        if (n == 0 || *p < 0x20 || *p == 0x7f || is_escape(s)) {
                snprintf(piece, NAME_PIECE_MAX, "\\%03o", *p);
                return 1;
        }
        memcpy(piece, s, n);
        piece[n] = '\0';
        return n;
}

bool name_is_plain(const char *s) {
        char piece[NAME_PIECE_MAX];

        while (*s) {
                size_t n;

                /* Printable ASCII but the backslash stands for itself: most names are nothing else. */
                if ((unsigned char) *s >= 0x20 && (unsigned char) *s < 0x7f && *s != '\\') {
                        s++;
                        continue;
                }
                n = name_escape_piece(s, piece);

                if (strncmp(piece, s, n) != 0 || piece[n] != '\0')
                        return false;
                s += n;
        }
        return true;
}

/* Writes the escaped form of s into buf (when not NULL) as far as `size` allows; returns its whole length. */
static size_t escape_to(char *buf, size_t size, const char *s) {
        char piece[NAME_PIECE_MAX];
        size_t len = 0;
        bool fits = true;

        while (*s) {
                size_t k;

                s += name_escape_piece(s, piece);
                k = strlen(piece);
                fits = fits && len + k < size;
                if (buf && fits)
                        memcpy(buf + len, piece, k);
                len += k;
                if (buf && fits)
                        buf[len] = '\0';
        }
        return len;
}

char *name_escape(const char *s) {
        size_t len = escape_to(NULL, 0, s);
        char *buf = malloc(len + 1);

        if (!buf)
                return NULL;
        buf[0] = '\0';
        escape_to(buf, len + 1, s);
        return buf;
}

void name_fputs(const char *s, FILE *f) {
        char piece[NAME_PIECE_MAX];

        while (*s) {
                s += name_escape_piece(s, piece);
                fputs(piece, f);
        }
}

void name_escape_into(char *buf, size_t size, const char *s) {
        buf[0] = '\0';
        escape_to(buf, size, s);
}

int name_unescape(const char *s, char **ret) {
        char *buf = malloc(strlen(s) + 1), *q = buf;

        if (!buf)
                return -ENOMEM;
        while (*s) {
                if (!is_escape(s)) {
                        *q++ = *s++;
                        continue;
                }
                *q = (char) ((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
                if (*q++ == '\0') {
                        free(buf);
                        return -EINVAL;
                }
                s += 4;
        }
        *q = '\0';
        *ret = buf;
        return 0;
}
