/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "table.h"

#include <errno.h>
#include <langinfo.h>
#include <libsmartcols/libsmartcols.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "parse-util.h"
#include "util.h"

#define SEPARATOR "  "
#define SEPARATOR_WIDTH 2
/* What a tree adds per level before a name ("├─", "│ "). */
#define TREE_INDENT 2

void table_init(Table *t, const char *const *headers) {
        *t = (Table) {};
        for (size_t i = 0; headers[i] && i < TABLE_COLUMNS_MAX; i++) {
                const char *h = headers[i];

                for (;; h++)
                        if (*h == '>')
                                t->right[i] = true;
                        else if (*h == '/')
                                t->path[i] = true;
                        else if (*h >= '1' && *h <= '9')
                                t->drop[i] = (unsigned) (*h - '0');
                        else
                                break;
                t->headers[i] = h;
                t->shown[i] = i;
                t->n_columns++;
        }
        t->n_shown = t->n_columns;
}

int table_add_row(Table *t, const char *const *cells) {
        char **n = realloc(t->cells, (t->n_rows + 1) * t->n_columns * sizeof(char *));

        if (!n)
                return -ENOMEM;
        t->cells = n;
        if (t->parents) {
                size_t *p = realloc(t->parents, (t->n_rows + 1) * sizeof(size_t));
                if (!p)
                        return -ENOMEM;
                t->parents = p;
                p[t->n_rows] = 0;
        }
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

int table_set_parent(Table *t, size_t row, size_t parent) {
        if (row >= t->n_rows || parent >= t->n_rows || row == parent)
                return -EINVAL;
        if (!t->parents) {
                t->parents = calloc(MAX(t->n_rows, (size_t) 1), sizeof(size_t));
                if (!t->parents)
                        return -ENOMEM;
        }
        t->parents[row] = parent + 1;
        return 0;
}

/* ---- choosing columns ---- */

static const char *header_name(const char *h) {
        while (*h == '>' || *h == '/' || (*h >= '1' && *h <= '9'))
                h++;
        return h;
}

static void say_valid(const char *const *headers) {
        fputs("; valid columns: ", stderr);
        for (size_t i = 0; headers[i]; i++)
                fprintf(stderr, "%s%s", i ? "," : "", header_name(headers[i]));
        fputs(". Try 'mdctl --help'.\n", stderr);
}

/* Calls `found(index, userdata)` for each name of `list`; -EINVAL after saying which name is unknown. */
static int each_choice(const char *const *headers, const char *list, void (*found)(size_t, void *), void *userdata) {
        const char *p = list;

        if (!*list) {
                fputs("mdctl: -o needs at least one column", stderr);
                say_valid(headers);
                return -EINVAL;
        }
        while (*p) {
                size_t n = strcspn(p, ","), i;

                for (i = 0; headers[i]; i++)
                        if (strlen(header_name(headers[i])) == n && strncasecmp(header_name(headers[i]), p, n) == 0)
                                break;
                if (!headers[i]) {
                        fprintf(stderr, "mdctl: unknown column '%.*s' in -o '%s'", (int) n, p, list);
                        say_valid(headers);
                        return -EINVAL;
                }
                if (found)
                        found(i, userdata);
                p += n + (p[n] == ',');
        }
        return 0;
}

int table_check_choice(const char *const *headers, const char *list) {
        return each_choice(headers, list, NULL, NULL);
}

static void add_shown(size_t i, void *userdata) {
        Table *t = userdata;

        if (t->n_shown < TABLE_COLUMNS_MAX)
                t->shown[t->n_shown++] = i;
}

int table_choose(Table *t, const char *list) {
        const char *headers[TABLE_COLUMNS_MAX + 1] = {};

        memcpy(headers, t->headers, t->n_columns * sizeof(char *));
        t->n_shown = 0;
        t->chosen = true;
        return each_choice(headers, list, add_shown, t);
}

/* ---- fitting a width ---- */

/* Columns on a terminal: UTF-8 continuation bytes take none. */
static size_t text_width(const char *s) {
        size_t w = 0;

        for (; *s; s++)
                w += ((unsigned char) *s & 0xC0) != 0x80;
        return w;
}

/* The byte offset where the first `cols` columns of `s` end. */
static size_t text_prefix(const char *s, size_t cols) {
        size_t i = 0;

        for (size_t w = 0; s[i]; i++) {
                if (((unsigned char) s[i] & 0xC0) != 0x80 && w++ == cols)
                        break;
        }
        return i;
}

static bool utf8_locale(void) {
        return streq(nl_langinfo(CODESET), "UTF-8");
}

/*
 * A unit's name too long for the width, cut where it stays recognisable: its
 * head, then its suffix with the character before it ("postgresql@15-m…e.service").
 * False when it has no suffix, or the suffix leaves no room for a head.
 */
static bool shorten_name(char *buf, size_t size, const char *name, size_t width, const char *ell) {
        const char *dot = strrchr(name, '.');
        size_t w = text_width(name), tail_w, head;

        if (!dot || dot == name)
                return false;
        tail_w = text_width(dot) + 1;
        if (tail_w + text_width(ell) + 4 > width || tail_w >= w)
                return false;
        head = text_prefix(name, width - text_width(ell) - tail_w);
        snprintf(buf, size, "%.*s%s%s", (int) head, name, ell, name + text_prefix(name, w - tail_w));
        return true;
}

const char *table_shorten(char *buf, size_t size, const char *s, size_t width) {
        const char *ell = utf8_locale() ? "…" : "...";
        size_t ell_w = text_width(ell), w = text_width(s), tail_w, head;
        const char *slash = strrchr(s, '/');

        if (w <= width || width <= ell_w + 1) {
                snprintf(buf, size, "%.*s", (int) (w <= width ? strlen(s) : text_prefix(s, width)), s);
                return buf;
        }
        /* Keep the last component ("/foo.service") and the start up to a '/', when they fit. */
        tail_w = slash && slash != s ? text_width(slash) : 0;
        if (tail_w > 0 && tail_w + ell_w + 1 <= width) {
                head = text_prefix(s, width - ell_w - tail_w);
                for (size_t i = head; i > 1; i--)
                        if (s[i - 1] == '/') {
                                head = i;
                                break;
                        }
        } else if (shorten_name(buf, size, slash ? slash + 1 : s, width, ell))
                return buf;
        else {
                tail_w = (width - ell_w) / 2;
                head = text_prefix(s, width - ell_w - tail_w);
        }
        snprintf(buf, size, "%.*s%s%s", (int) head, s, ell, s + text_prefix(s, w - tail_w));
        return buf;
}

size_t table_output_width(void) {
        const char *env = getenv("COLUMNS");
        uint64_t cols;
        struct winsize ws;

        if (env && parse_uint_range(env, 1, 100000, &cols) >= 0)
                return (size_t) cols;
        if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
                return ws.ws_col;
        return 0;
}

static size_t depth_of(const Table *t, size_t row) {
        size_t d = 0;

        for (size_t p = t->parents ? t->parents[row] : 0; p && d < t->n_rows; p = t->parents[p - 1])
                d++;
        return d;
}

/* Each shown column's width unshortened (a path column: its longest cell with the tree's indent). */
static void measure(const Table *t, const bool *shown, const TableLayout *l, size_t *width) {
        for (size_t i = 0; i < t->n_columns; i++) {
                width[i] = l->legend ? text_width(t->headers[i]) : 0;
                for (size_t r = 0; shown[i] && r < t->n_rows; r++)
                        width[i] = MAX(width[i], text_width(t->cells[r * t->n_columns + i]) +
                                                         (t->path[i] ? TREE_INDENT * depth_of(t, r) : 0));
        }
}

/* The width left to the path columns when every other shown column is whole. */
static size_t path_budget(const Table *t, const bool *shown, const size_t *width, size_t total, size_t *n_paths) {
        size_t others = 0, n = 0;

        for (size_t i = 0; i < t->n_columns; i++)
                if (shown[i]) {
                        others += t->path[i] ? 0 : width[i];
                        n++;
                        *n_paths += t->path[i];
                }
        others += n > 1 ? (n - 1) * SEPARATOR_WIDTH : 0;
        return total > others ? total - others : 0;
}

/*
 * Decides which columns show and how wide a path column may be: drops ranked
 * columns (unless chosen by -o) while the paths would get less than their floor.
 */
static size_t fit(const Table *t, const TableLayout *l, bool *shown) {
        size_t width[TABLE_COLUMNS_MAX];

        for (;;) {
                size_t n_paths = 0, budget, worst = TABLE_COLUMNS_MAX, sum = 0;

                measure(t, shown, l, width);
                budget = path_budget(t, shown, width, l->width, &n_paths);
                for (size_t i = 0; i < t->n_columns; i++)
                        sum += shown[i] && t->path[i] ? width[i] : 0;
                if (n_paths == 0 || sum <= budget)
                        return SIZE_MAX;
                if (budget / n_paths >= TABLE_PATH_MIN || t->chosen) {
                        return MAX(budget / n_paths, (size_t) TABLE_PATH_MIN);
                }
                for (size_t i = 0; i < t->n_columns; i++)
                        if (shown[i] && t->drop[i] && (worst == TABLE_COLUMNS_MAX || t->drop[i] > t->drop[worst]))
                                worst = i;
                if (worst == TABLE_COLUMNS_MAX)
                        return TABLE_PATH_MIN;
                shown[worst] = false;
        }
}

/* ---- printing ---- */

typedef struct Printing {
        const Table *t;
        struct libscols_table *tb;
        struct libscols_line **lines;
        size_t path_width;
        const bool *shown;
} Printing;

static int set_cells(Printing *p, size_t row, struct libscols_line *ln) {
        const Table *t = p->t;
        size_t col = 0;

        for (size_t k = 0; k < t->n_shown; k++) {
                size_t i = t->shown[k];
                const char *cell = t->cells[row * t->n_columns + i];
                char buf[1024];
                int r;

                if (!p->shown[i])
                        continue;
                if (t->path[i] && p->path_width != SIZE_MAX) {
                        size_t indent = TREE_INDENT * depth_of(t, row);
                        size_t limit = p->path_width > indent + 4 ? p->path_width - indent : 4;

                        if (text_width(cell) > limit)   /* a cut one fits the buffer: limit < the width */
                                cell = table_shorten(buf, sizeof(buf), cell, MIN(limit, sizeof(buf) / 4));
                }
                r = scols_line_set_data(ln, col++, cell);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The line of `row`, its parent's made first. */
static struct libscols_line *line_of(Printing *p, size_t row, unsigned depth) {
        struct libscols_line *parent = NULL;
        size_t up = p->t->parents ? p->t->parents[row] : 0;

        if (p->lines[row])
                return p->lines[row];
        if (up && depth < p->t->n_rows && !(parent = line_of(p, up - 1, depth + 1)))
                return NULL;
        p->lines[row] = scols_table_new_line(p->tb, parent);
        if (p->lines[row] && set_cells(p, row, p->lines[row]) < 0)
                return NULL;
        return p->lines[row];
}

static int add_columns(Printing *p) {
        const Table *t = p->t;

        for (size_t k = 0; k < t->n_shown; k++) {
                size_t i = t->shown[k];
                int flags = (t->right[i] ? SCOLS_FL_RIGHT : 0) | (t->path[i] && t->parents ? SCOLS_FL_TREE : 0);

                if (p->shown[i] && !scols_table_new_column(p->tb, t->headers[i], 0, flags))
                        return -ENOMEM;
        }
        return 0;
}

static void print_headers(const Printing *p, FILE *f) {
        size_t n = 0;

        for (size_t k = 0; k < p->t->n_shown; k++)
                if (p->shown[p->t->shown[k]])
                        fprintf(f, "%s%s", n++ ? SEPARATOR : "", p->t->headers[p->t->shown[k]]);
        fputc('\n', f);
}

int table_print(const Table *t, FILE *f, const TableLayout *l) {
        bool shown[TABLE_COLUMNS_MAX] = {};
        Printing p = { .t = t, .shown = shown };
        size_t rows = l->max_rows ? MIN(l->max_rows, t->n_rows) : t->n_rows;
        int r;

        for (size_t k = 0; k < t->n_shown; k++)
                shown[t->shown[k]] = true;
        p.path_width = l->width ? fit(t, l, shown) : SIZE_MAX;
        p.tb = scols_new_table();
        p.lines = calloc(MAX(t->n_rows, (size_t) 1), sizeof(*p.lines));
        r = p.tb && p.lines ? 0 : -ENOMEM;
        if (r >= 0) {
                scols_table_set_stream(p.tb, f);
                scols_table_set_column_separator(p.tb, SEPARATOR);
                scols_table_enable_noheadings(p.tb, !l->legend);
                scols_table_enable_ascii(p.tb, !utf8_locale());
                /* Names come escaped already ("caf\\351"): their backslashes stay as they are. */
                scols_table_enable_noencoding(p.tb, true);
                /* The cells are cut to fit already; libsmartcols must not wrap or cut them again. */
                scols_table_set_termforce(p.tb, SCOLS_TERMFORCE_NEVER);
                r = add_columns(&p);
        }
        for (size_t row = 0; r >= 0 && row < rows; row++)
                if (!line_of(&p, row, 0))
                        r = -ENOMEM;
        if (r >= 0 && rows == 0 && l->legend)
                print_headers(&p, f);   /* libsmartcols prints nothing for no rows */
        else if (r >= 0)
                r = scols_print_table(p.tb);
        free(p.lines);
        scols_unref_table(p.tb);
        return r;
}

void table_clear(Table *t) {
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t->parents);
        t->cells = NULL;
        t->parents = NULL;
        t->n_rows = 0;
}
