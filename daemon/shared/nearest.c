/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "nearest.h"

#include <stdint.h>
#include <string.h>

#include "util.h"

size_t name_distance_within(const char *a, const char *b, size_t max) {
        size_t la = strlen(a), lb = strlen(b);
        /* Three rows of the table: two back (for a swap), the last, this one. */
        size_t rows[3][NEAREST_NAME_MAX + 1];
        size_t *back2 = rows[0], *back1 = rows[1], *cur = rows[2];
        size_t least_back = SIZE_MAX;

        if (la > NEAREST_NAME_MAX || lb > NEAREST_NAME_MAX)
                return SIZE_MAX;
        if ((la > lb ? la - lb : lb - la) > max)
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                back1[j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t *t, least = SIZE_MAX;

                cur[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t cost = a[i - 1] != b[j - 1];

                        cur[j] = MIN(MIN(back1[j] + 1, cur[j - 1] + 1), back1[j - 1] + cost);
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                                cur[j] = MIN(cur[j], back2[j - 2] + 1);
                }
                for (size_t j = 0; j <= lb; j++)
                        least = MIN(least, cur[j]);
                /* Every later cell comes from this row or the one before (a swap), at no less cost. */
                if (least > max && least_back > max)
                        return SIZE_MAX;
                least_back = least;
                t = back2;
                back2 = back1;
                back1 = cur;
                cur = t;
        }
        return back1[lb] <= max ? back1[lb] : SIZE_MAX;
}

size_t name_distance(const char *a, const char *b) {
        return name_distance_within(a, b, SIZE_MAX - 1);
}

void nearest_names_init(NearestNames *n, const char *want) {
        size_t len = strlen(want);

        *n = (NearestNames) { .want = want, .want_len = len, .limit = MAX(len / 3, (size_t) 2) };
}

/* Whether (d, name) goes before entry i. */
static bool nearer(const NearestNames *n, size_t i, size_t d, const char *name) {
        return d < n->distances[i] || (d == n->distances[i] && strcmp(name, n->names[i]) < 0);
}

void nearest_names_offer(NearestNames *n, const char *name) {
        /* Once full, only a name nearer than the furthest kept (or as near and before it) can get in. */
        size_t limit = n->n == NEAREST_MAX ? MIN(n->limit, n->distances[NEAREST_MAX - 1]) : n->limit;
        size_t d = name_distance_within(n->want, name, limit), at;

        if (d == 0 || d == SIZE_MAX)
                return;
        for (size_t i = 0; i < n->n; i++)
                if (streq(n->names[i], name))
                        return;
        for (at = n->n; at > 0 && nearer(n, at - 1, d, name); at--)
                ;
        if (at == NEAREST_MAX)
                return;
        if (n->n < NEAREST_MAX)
                n->n++;
        memmove(n->names + at + 1, n->names + at, (n->n - 1 - at) * sizeof(n->names[0]));
        memmove(n->distances + at + 1, n->distances + at, (n->n - 1 - at) * sizeof(n->distances[0]));
        n->names[at] = name;
        n->distances[at] = d;
}
