/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cgroup-view.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parse-util.h"
#include "util.h"

static const char *const sort_names[_SORT_MAX] = {
        [SORT_NAME] = "name",
        [SORT_DIRTY] = "dirty",
        [SORT_PRESSURE] = "pressure",
        [SORT_MEMORY] = "memory",
};

int sort_key_from_string(const char *s) {
        for (int i = 0; i < _SORT_MAX; i++)
                if (streq(s, sort_names[i]))
                        return i;
        return -EINVAL;
}

const char *sort_key_to_string(SortKey k) {
        return k < _SORT_MAX ? sort_names[k] : NULL;
}

static uint64_t figure(const Value *c, SortKey k) {
        uint64_t a = 0, b = 0;

        switch (k) {
        case SORT_DIRTY:
                (void) value_get_u64(c, "dirty", &a);
                return a;
        case SORT_MEMORY:
                (void) value_get_u64(c, "memory_current", &a);
                return a;
        case SORT_PRESSURE:
                (void) value_get_u64(c, "signals.memory_stall.some_ppm", &a);
                (void) value_get_u64(c, "signals.io_stall.some_ppm", &b);
                return a + b;
        default:
                return 0;
        }
}

/* A row's sort key, looked up once: a list of 50,000 rows is compared some 800,000 times. */
typedef struct SortRow {
        uint64_t figure;
        const char *path;
        Value row;
} SortRow;

static int compare(const void *x, const void *y) {
        const SortRow *a = x, *b = y;

        if (a->figure != b->figure)
                return a->figure > b->figure ? -1 : 1;
        return strcmp(a->path, b->path);
}

void cgroups_sort(Value *list, SortKey k) {
        SortRow *rows;

        if (list->kind != VALUE_ARRAY || list->n < 2)
                return;
        rows = calloc(list->n, sizeof(SortRow));
        if (!rows)
                return;         /* left in the daemon's order */
        for (size_t i = 0; i < list->n; i++) {
                const char *path = value_get_str(&list->items[i], "path");

                rows[i] = (SortRow) { .figure = k == SORT_NAME ? 0 : figure(&list->items[i], k),
                                      .path = path ? path : "", .row = list->items[i] };
        }
        qsort(rows, list->n, sizeof(SortRow), compare);
        for (size_t i = 0; i < list->n; i++)
                list->items[i] = rows[i].row;
        free(rows);
}

const char *cell_size(char buf[static 32], const Value *v, const char *path) {
        const Value *x = value_get(v, path);

        if (x && x->kind == VALUE_STRING)
                snprintf(buf, 32, "%s", x->s);         /* "max" */
        else if (x && x->kind == VALUE_UINT)
                format_size(buf, x->u);
        else
                return NULL;
        return buf;
}

const char *cell_ppm(char buf[static 32], const Value *v, const char *path) {
        uint64_t ppm;

        if (!value_get_u64(v, path, &ppm))
                return NULL;
        snprintf(buf, 32, "%" PRIu64 ".%02" PRIu64 "%%", ppm / 10000, ppm / 100 % 100);
        return buf;
}

static const char *cell_rate(char buf[static 32], const Value *v, const char *path) {
        if (!cell_size(buf, v, path))
                return NULL;
        strcat(buf, "/s");
        return buf;
}

const char *text_rate(char buf[static 32], uint64_t bytes_per_sec) {
        snprintf(buf, 32, "%" PRIu64 ".%" PRIu64 " MiB/s", bytes_per_sec >> 20, (bytes_per_sec & 0xFFFFF) * 10 >> 20);
        return buf;
}

const char *text_device(char buf[static 64], const Value *v) {
        const char *dev = value_get_str(v, "device"), *name = value_get_str(v, "device_name");

        if (!dev)
                return NULL;
        if (name && !streq(name, dev))
                snprintf(buf, 64, "%s (%s)", name, dev);
        else
                snprintf(buf, 64, "%s", dev);
        return buf;
}

/* A run of digits at s that is a figure in bytes (six digits or more), and how many bytes of s it takes. */
static bool byte_figure(const char *s, uint64_t *ret, size_t *ret_len) {
        size_t n = strspn(s, "0123456789");
        char digits[24];

        if (n < 6 || n >= sizeof(digits))
                return false;
        memcpy(digits, s, n);
        digits[n] = '\0';
        *ret_len = n;
        return parse_uint_range(digits, 0, UINT64_MAX, ret) >= 0;
}

const char *text_humanize(char *buf, size_t size, const char *s) {
        size_t off = 0;

        buf[0] = '\0';
        while (s && *s && off + 1 < size) {
                uint64_t v;
                size_t n;
                char h[32];

                /* Within a word ("id123456") a number is a name's, not a figure. */
                if ((off == 0 || !isalnum((unsigned char) s[-1])) && byte_figure(s, &v, &n)) {
                        s += n;
                        if (strncmp(s, " B/s", 4) == 0) {
                                s += 4;
                                text_rate(h, v);
                        } else {
                                format_size(h, v);
                                if (strncmp(s, " bytes", 6) == 0)
                                        s += 6;
                        }
                        off += (size_t) snprintf(buf + off, size - off, "%s", h);
                } else
                        buf[off++] = *s++;
                if (off >= size)
                        off = size - 1;
                buf[off] = '\0';
        }
        return buf;
}

const char *cell_throttle(char buf[static 48], const Value *t, bool device) {
        const char *knob = value_get_str(t, "knob");
        const char *dev = value_get_str(t, "device_name") ?: value_get_str(t, "device");
        char v[32];

        if (!knob || !cell_size(v, t, "value"))
                return NULL;
        /* A device queue's knob (its path names the device): a count or KiB, as sysfs has it. */
        if (streq(knob, "nr_requests") || streq(knob, "max_sectors_kb")) {
                uint64_t n = 0;

                (void) value_get_u64(t, "value", &n);
                snprintf(buf, 48, "%s %" PRIu64, knob, n);
        } else if (!streq(knob, "io.max wbps"))
                snprintf(buf, 48, "high %s", v);
        else
                snprintf(buf, 48, "io%s%s %s/s", device && dev ? " " : "", device && dev ? dev : "", v);
        return buf;
}

const char *cell_throttled(char buf[static 64], const Value *throttles, const char *path) {
        size_t off = 0;
        bool released = false;

        buf[0] = '\0';
        for (size_t i = 0; throttles && path && i < throttles->n && off < 64; i++) {
                const Value *t = &throttles->items[i];
                char one[48];

                if (!streq_ptr(value_get_str(t, "path"), path))
                        continue;
                if (cell_throttle(one, t, false))
                        off += (size_t) snprintf(buf + off, 64 - off, "%s%s", off ? "," : "", one);
                else
                        released = true;
        }
        if (off == 0 && released)
                snprintf(buf, 64, "released");
        return buf[0] ? buf : NULL;
}

const char *const cgroup_columns[] = { "/CGROUP", "2POLICY", "THROTTLED", ">1MEMORY", ">3FILE", ">DIRTY", ">5SLAB",
                                       ">4RECLAIM~", ">WRITE", ">MEM_STALL", ">IO_STALL", NULL };

/* The row of the nearest ancestor of `path` in the table's rows (paths in `list`' order). */
static bool find_ancestor(const Value *list, const char *path, size_t *ret) {
        size_t n = strlen(path);

        while (n > 1) {
                while (n > 1 && path[n - 1] != '/')
                        n--;
                n = n > 1 ? n - 1 : 1;          /* "/a/b" -> "/a" -> "/" */
                for (size_t i = 0; i < list->n; i++) {
                        const char *p = value_get_str(&list->items[i], "path");
                        if (p && strlen(p) == n && strncmp(p, path, n) == 0) {
                                *ret = i;
                                return true;
                        }
                }
        }
        return false;
}

/* The tree's name of a cgroup: its last component, the root whole. */
static const char *tree_name(const char *path) {
        const char *slash = path ? strrchr(path, '/') : NULL;

        return slash && slash[1] ? slash + 1 : path;
}

static int link_tree(const Value *list, Table *t) {
        int r = 0;

        for (size_t i = 0; r >= 0 && i < list->n; i++) {
                const char *path = value_get_str(&list->items[i], "path");
                size_t parent;

                if (path && find_ancestor(list, path, &parent) && parent != i)
                        r = table_set_parent(t, i, parent);
        }
        return r;
}

int cgroups_table(const Value *list, const Value *throttles, bool tree, Table *ret) {
        int r = 0;

        table_init(ret, cgroup_columns);
        for (size_t i = 0; r >= 0 && i < list->n; i++) {
                const Value *c = &list->items[i];
                const char *path = value_get_str(c, "path");
                char thr[64], mem[32], file[32], dirty[32], slab[32], recl[32], wr[32], ms[32], is[32];
                const char *cells[] = {
                        tree ? tree_name(path) : path, value_get_str(c, "policy"),
                        cell_throttled(thr, throttles, path),
                        cell_size(mem, c, "memory_current"), cell_size(file, c, "file"),
                        cell_size(dirty, c, "dirty"), cell_size(slab, c, "slab_reclaimable"),
                        cell_size(recl, c, "reclaimable_estimate"), cell_rate(wr, c, "signals.write_rate"),
                        cell_ppm(ms, c, "signals.memory_stall.some_ppm"),
                        cell_ppm(is, c, "signals.io_stall.some_ppm"),
                };
                r = table_add_row(ret, cells);
        }
        return r >= 0 && tree ? link_tree(list, ret) : r;
}

/* How far from now a time may be for a table to show it as a time of day. */
#define CLOCK_SPAN_USEC (20 * 3600 * USEC_PER_SEC)

const char *cell_time(char buf[static 32], const Value *v, const char *path) {
        uint64_t usec, now = now_usec(CLOCK_REALTIME);
        time_t s;
        struct tm tm;

        if (!value_get_u64(v, path, &usec))
                return NULL;
        s = (time_t) (usec / USEC_PER_SEC);
        if (!localtime_r(&s, &tm) ||
            strftime(buf, 32, MAX(usec, now) - MIN(usec, now) < CLOCK_SPAN_USEC ? "%H:%M:%S" : "%Y-%m-%d", &tm) == 0)
                return NULL;
        return buf;
}

/* "db.service, pg.service and 3 more": the names an array holds of `n`. */
static const char *names_text(char *buf, size_t size, const Value *names, uint64_t n) {
        size_t off = 0, shown = names && names->kind == VALUE_ARRAY ? names->n : 0;

        buf[0] = '\0';
        for (size_t i = 0; i < shown && off < size; i++)
                off += (size_t) snprintf(buf + off, size - off, "%s%s",
                                         i == 0 ? "" : i + 1 == shown && n == shown ? " and " : ", ",
                                         names->items[i].s ? names->items[i].s : "-");
        if (n > shown && off < size)
                snprintf(buf + off, size - off, " and %" PRIu64 " more", n - shown);
        return buf;
}

const char *protection_text(char *buf, size_t size, const Value *st) {
        uint64_t np = 0, nc = 0, held = 0;
        char prot[256], capped[256], devs[128];

        (void) value_get_u64(st, "protected_cgroups", &np);
        (void) value_get_u64(st, "writers_capped", &nc);
        (void) value_get_u64(st, "throttles_held", &held);
        if (!value_get(st, "protected_cgroups"))
                snprintf(buf, size, "- (this mdreclaimd does not say)");
        else if (np == 0)
                snprintf(buf, size, "nothing (no cgroup has a Protect=yes policy); %" PRIu64 " throttle%s "
                         "held", held, held == 1 ? "" : "s");
        else if (nc == 0)
                snprintf(buf, size, "%s; no writer capped; %" PRIu64 " throttle%s held",
                         names_text(prot, sizeof(prot), value_get(st, "protected_units"), np), held,
                         held == 1 ? "" : "s");
        else {
                const Value *d = value_get(st, "capped_devices");
                snprintf(buf, size, "%s; %" PRIu64 " writer%s capped on %s: %s; %" PRIu64 " throttle%s held",
                         names_text(prot, sizeof(prot), value_get(st, "protected_units"), np), nc, nc == 1 ? "" : "s",
                         names_text(devs, sizeof(devs), d, d ? d->n : 0),
                         names_text(capped, sizeof(capped), value_get(st, "capped_writers"), nc), held,
                         held == 1 ? "" : "s");
        }
        return buf;
}
