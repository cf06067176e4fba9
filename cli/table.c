/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void table_init(Table *t, const char *const *headers) {
        *t = (Table) {};
        for (size_t i = 0; headers[i] && i < TABLE_COLUMNS_MAX; i++) {
                t->right[i] = headers[i][0] == '>';
                t->headers[i] = headers[i] + t->right[i];
                t->n_columns++;
        }
}

int table_add_row(Table *t, const char *const *cells) {
        char **n = realloc(t->cells, (t->n_rows + 1) * t->n_columns * sizeof(char *));

        if (!n)
                return -ENOMEM;
        t->cells = n;
        for (size_t i = 0; i < t->n_columns; i++) {
                char *c = strdup(cells[i] ? cells[i] : "-");
                if (!c) {
                        for (size_t j = 0; j < i; j++)
                                free(n[t->n_rows * t->n_columns + j]);
                        return -ENOMEM;
                }
                n[t->n_rows * t->n_columns + i] = c;
        }
        t->n_rows++;
        return 0;
}

static void print_line(const Table *t, FILE *f, const char *const *cells, const size_t *width, size_t max_width) {
        char line[4096];
        size_t off = 0;

        for (size_t i = 0; i < t->n_columns && off < sizeof(line); i++) {
                bool last = i + 1 == t->n_columns;
                int w = last && !t->right[i] ? 0 : (int) width[i];

                off += (size_t) snprintf(line + off, sizeof(line) - off, "%s%*s", i ? "  " : "",
                                         t->right[i] ? w : -w, cells[i]);
        }
        off = MIN(off, sizeof(line) - 1);
        if (max_width > 0 && off > max_width)
                off = max_width;
        /* No trailing blanks. */
        while (off > 0 && line[off - 1] == ' ')
                off--;
        fprintf(f, "%.*s\n", (int) off, line);
}

void table_print(const Table *t, FILE *f, bool legend, size_t max_width, size_t max_rows) {
        size_t width[TABLE_COLUMNS_MAX] = {};

        for (size_t i = 0; i < t->n_columns; i++) {
                width[i] = legend ? strlen(t->headers[i]) : 0;
                for (size_t r = 0; r < t->n_rows; r++)
                        width[i] = MAX(width[i], strlen(t->cells[r * t->n_columns + i]));
        }
        if (legend)
                print_line(t, f, t->headers, width, max_width);
        for (size_t r = 0; r < t->n_rows && (max_rows == 0 || r < max_rows); r++)
                print_line(t, f, (const char *const *) t->cells + r * t->n_columns, width, max_width);
}

void table_clear(Table *t) {
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->cells);
        t->cells = NULL;
        t->n_rows = 0;
}
