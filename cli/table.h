/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Aligned text tables for people: columns sized to their widest cell,
 * numbers right-aligned, an optional header line (--no-legend drops it), and
 * a width limit that cuts the last column rather than wrapping (for top).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define TABLE_COLUMNS_MAX 16

typedef struct Table {
        size_t n_columns;
        const char *headers[TABLE_COLUMNS_MAX];
        bool right[TABLE_COLUMNS_MAX];
        char **cells;           /* row-major */
        size_t n_rows;
} Table;

/* Columns named in `headers` (NULL-terminated); a name starting with '>' is right-aligned. */
void table_init(Table *t, const char *const *headers);
/* Appends a row of n_columns strings (copied; NULL prints as "-"). */
int table_add_row(Table *t, const char *const *cells);
/* Prints the rows in order; max_width 0: unlimited, max_rows 0: all. */
void table_print(const Table *t, FILE *f, bool legend, size_t max_width, size_t max_rows);
void table_clear(Table *t);
