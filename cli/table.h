/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Text tables for people, printed by libsmartcols (what lsblk and findmnt
 * use): columns sized to their widest cell, numbers right-aligned, an
 * optional header line (--no-legend drops it), the columns the operator
 * chose with -o, and rows as a tree when each names its parent (--tree).
 *
 * Fitting a width (the terminal's, or $COLUMNS): the path column is
 * shortened in the middle ("/system.slice/…/foo.service") down to a floor;
 * when that is not enough and the caller allows it, the columns with the
 * highest drop rank go first. Without a terminal and without $COLUMNS
 * nothing is cut, so `mdctl list | grep` sees every name whole.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define TABLE_COLUMNS_MAX 16
/* The narrowest a path column is shortened to. */
#define TABLE_PATH_MIN 24

typedef struct Table {
        size_t n_columns;
        const char *headers[TABLE_COLUMNS_MAX];
        bool right[TABLE_COLUMNS_MAX];
        bool path[TABLE_COLUMNS_MAX];           /* shortened in the middle to fit; the tree's column */
        unsigned drop[TABLE_COLUMNS_MAX];       /* 0: kept; else dropped to fit, highest first */
        size_t shown[TABLE_COLUMNS_MAX];        /* the columns printed, in order */
        size_t n_shown;
        bool chosen;                            /* shown comes from -o: nothing is dropped */
        char **cells;                           /* row-major */
        size_t *parents;                        /* per row: parent row + 1, 0 for a root; NULL: no tree */
        size_t n_rows;
} Table;

typedef struct TableLayout {
        bool legend;
        size_t width;           /* 0: unlimited */
        size_t max_rows;        /* 0: all */
} TableLayout;

/*
 * Columns named in `headers` (NULL-terminated), each name after its flag
 * characters: '>' right-aligned, '/' a path, a digit 1-9 its drop rank.
 * ">3SLAB" is a right-aligned SLAB column dropped before those ranked 1 and 2.
 */
void table_init(Table *t, const char *const *headers);
/* Appends a row of n_columns strings (copied; NULL prints as "-"). */
int table_add_row(Table *t, const char *const *cells);
/* Makes row `row` a child of row `parent` (both already added): the table prints as a tree. */
int table_set_parent(Table *t, size_t row, size_t parent);
/*
 * Shows only the columns of `list` ("CGROUP,DIRTY", case does not matter), in
 * its order. An unknown name: -EINVAL after saying which and the valid ones.
 */
int table_choose(Table *t, const char *list);
/* Says on stderr, for the `-o` check before connecting, whether `list` names only columns of `headers`. */
int table_check_choice(const char *const *headers, const char *list);
/* Prints the table; 0 or a negative errno (nothing is said). */
int table_print(const Table *t, FILE *f, const TableLayout *l);
void table_clear(Table *t);

/* The width tables fit on stdout: the terminal's ($COLUMNS first), $COLUMNS without one, else 0 (unlimited). */
size_t table_output_width(void);
/* `s` shortened in the middle to `width` columns, keeping its last path component when it can. */
const char *table_shorten(char *buf, size_t size, const char *s, size_t width);
