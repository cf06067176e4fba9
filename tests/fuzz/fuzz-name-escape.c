/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target for the escaped form of names (name-escape.c). The input, cut
 * at its first NUL, is a name: its escaped form holds no control character,
 * reads back to it, equals it exactly when name_is_plain() says so, and cut
 * to a buffer is a prefix of it ending at a character. The input read as an
 * escaped form is refused only for \000, and its bytes escaped read back the same.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "name-escape.h"
#include "util.h"

static void check_name(const char *name) {
        char *escaped = name_escape(name), *back = NULL, cut[16];
        size_t len;

        fuzz_check(escaped);
        for (const char *p = escaped; *p; p++)
                fuzz_check((unsigned char) *p >= 0x20 && *p != 0x7f);
        fuzz_check(name_unescape(escaped, &back) == 0);
        fuzz_check(streq(back, name));
        fuzz_check(name_is_plain(name) == streq(escaped, name));
        name_escape_into(cut, sizeof(cut), name);
        len = strlen(cut);
        fuzz_check(strncmp(cut, escaped, len) == 0);
        /* Cut at a character: what was left out does not start inside one. */
        fuzz_check(escaped[len] == '\0' || len + NAME_PIECE_MAX > sizeof(cut));
        free(back);
        free(escaped);
}

static void check_escaped(const char *text) {
        char *bytes = NULL, *again = NULL, *back = NULL;
        int r = name_unescape(text, &bytes);

        if (r < 0) {
                fuzz_check(r == -EINVAL && strstr(text, "\\000"));
                return;
        }
        again = name_escape(bytes);
        fuzz_check(again);
        fuzz_check(name_unescape(again, &back) == 0);
        fuzz_check(streq(back, bytes));
        free(back);
        free(again);
        free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_strndup(data, size);

        check_name(s);
        check_escaped(s);
        free(s);
        return 0;
}
