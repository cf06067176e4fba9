/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What every fuzz target shares: the libFuzzer entry point, and a check that
 * stays on under -DNDEBUG and aborts, so libFuzzer and the replay driver
 * both see a broken invariant as a crash.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline _Noreturn void fuzz_fail(const char *file, int line, const char *expr) {
        fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, expr);
        abort();
}

#define fuzz_check(expr)                                                \
        do {                                                            \
                if (!(expr))                                            \
                        fuzz_fail(__FILE__, __LINE__, #expr);           \
        } while (0)

/* The input as a NUL-terminated heap string (an embedded NUL ends it early). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);

        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

/*
 * The input in a heap block of exactly `size` bytes and no terminator, so
 * that ASan catches a read one past the end. `data` is never NULL: libFuzzer
 * and replay-main.c both pass a heap block, even for an empty input (glibc
 * and ASan return a unique pointer for malloc(0)).
 */
static inline char *fuzz_memdup(const uint8_t *data, size_t size) {
        char *b = malloc(size);

        if (!b)
                abort();
        memcpy(b, data, size);
        return b;
}
