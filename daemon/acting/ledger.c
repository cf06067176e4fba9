/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "new-file.h"
#include "util.h"

/* v2 adds to each entry its since and each point's "lifts when", and the
 * release lines; v1 entries are read as they are (since unknown). */
#define LEDGER_HEADER "# mdreclaim throttle ledger v2"
#define HOLD_TAG "release"

static const char *const kind_names[_THROTTLE_KIND_MAX] = {
        [THROTTLE_MEMORY_HIGH] = "memory.high",
        [THROTTLE_IO_WBPS] = "io.max",
        [THROTTLE_NR_REQUESTS] = "nr_requests",
        [THROTTLE_MAX_SECTORS_KB] = "max_sectors_kb",
        [THROTTLE_SWAP_MAX] = "memory.swap.max",
};

static const char *const point_names[_POINT_MAX] = {
        [POINT_WRITE] = "write",
        [POINT_ALLOCATION] = "allocation",
};

const char *throttle_kind_to_string(ThrottleKind k) {
        return k < _THROTTLE_KIND_MAX ? kind_names[k] : NULL;
}

const char *throttle_point_to_string(ThrottlePoint p) {
        return p < _POINT_MAX ? point_names[p] : NULL;
}

void ledger_init(Ledger *l, const char *file) {
        *l = (Ledger) { .file = file ? strdup(file) : NULL };
}

static void entry_free(ThrottleEntry *e) {
        free(e->path);
}

void ledger_clear(Ledger *l) {
        for (size_t i = 0; i < l->n; i++)
                entry_free(&l->entries[i]);
        for (size_t i = 0; i < l->n_holds; i++)
                free(l->holds[i].path);
        free(l->entries);
        free(l->holds);
        free(l->file);
        *l = (Ledger) {};
}

ThrottleEntry *ledger_find(Ledger *l, const char *path, ThrottleKind kind, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < l->n; i++) {
                ThrottleEntry *e = &l->entries[i];
                if (e->kind == kind && streq(e->path, path) &&
                    (!throttle_kind_has_device(kind) || (e->major == major && e->minor == minor)))
                        return e;
        }
        return NULL;
}

uint64_t throttle_effective(const ThrottleEntry *e) {
        uint64_t v = THROTTLE_NONE;

        for (int p = 0; p < _POINT_MAX; p++)
                v = MIN(v, e->requested[p]);
        return v == THROTTLE_NONE ? e->original : MIN(v, e->original);
}

/* `array` of n items of `size` bytes with room for one more (at most `max` in all): itself, or a larger
 * copy; NULL: no memory, and the old one stays. */
static void *array_reserve(void *array, size_t *allocated, size_t n, size_t size, size_t first, size_t max) {
        size_t want = MIN(MAX(*allocated * 2, first), max);
        void *p;

        if (n < *allocated)
                return array;
        p = reallocarray(array, want, size);
        if (p)
                *allocated = want;
        return p;
}

/* Appends a copy of `src` with its own copy of `path`; the caller checks LEDGER_MAX. NULL: no memory. */
static ThrottleEntry *ledger_append(Ledger *l, const ThrottleEntry *src, const char *path) {
        ThrottleEntry *e = array_reserve(l->entries, &l->allocated, l->n, sizeof(ThrottleEntry), 16, LEDGER_MAX);

        if (!e)
                return NULL;
        l->entries = e;
        e = &l->entries[l->n];
        *e = *src;
        e->path = strdup(path);
        if (!e->path)
                return NULL;
        l->n++;
        return e;
}

int ledger_request(Ledger *l, const char *path, uint64_t cgroup_id, const ThrottleRequest *q, uint64_t current,
                   uint64_t now_usec, ThrottleEntry **ret) {
        ThrottleEntry *e = ledger_find(l, path, q->kind, q->major, q->minor);

        if (!e) {
                ThrottleEntry n = {
                        .cgroup_id = cgroup_id, .kind = q->kind, .major = q->major, .minor = q->minor,
                        .original = current, .applied = current, .since_usec = now_usec,
                };

                if (l->n >= LEDGER_MAX)
                        return -E2BIG;
                for (int i = 0; i < _POINT_MAX; i++)
                        n.requested[i] = THROTTLE_NONE;
                e = ledger_append(l, &n, path);
                if (!e)
                        return -ENOMEM;
        }
        e->requested[q->point] = q->value;
        snprintf(e->reason[q->point], sizeof(e->reason[q->point]), "%s", q->reason ?: "");
        snprintf(e->lifts_when[q->point], sizeof(e->lifts_when[q->point]), "%s", q->lifts_when ?: "");
        *ret = e;
        return 0;
}

ThrottleEntry *ledger_release(Ledger *l, const char *path, ThrottleKind kind, uint32_t major, uint32_t minor,
                              ThrottlePoint p) {
        ThrottleEntry *e = ledger_find(l, path, kind, major, minor);

        if (!e)
                return NULL;
        e->requested[p] = THROTTLE_NONE;
        e->reason[p][0] = '\0';
        e->lifts_when[p][0] = '\0';
        return e;
}

void ledger_remove(Ledger *l, ThrottleEntry *e) {
        size_t i = (size_t) (e - l->entries);

        if (i >= l->n)
                return;
        entry_free(e);
        l->entries[i] = l->entries[--l->n];
}

void throttle_clear_requests(ThrottleEntry *e) {
        for (int p = 0; p < _POINT_MAX; p++) {
                e->requested[p] = THROTTLE_NONE;
                e->reason[p][0] = '\0';
                e->lifts_when[p][0] = '\0';
        }
}

bool ledger_adopt_foreign(ThrottleEntry *e, uint64_t found) {
        if (found == e->applied)
                return false;
        e->original = found;
        e->applied = found;
        throttle_clear_requests(e);
        return true;
}

/* ---- released cgroups ---- */

LedgerHold *ledger_find_hold(const Ledger *l, const char *path) {
        for (size_t i = 0; i < l->n_holds; i++)
                if (streq(l->holds[i].path, path))
                        return &l->holds[i];
        return NULL;
}

/* A new hold on `path` with its own copy of the path, the rest zeroed; the caller checks LEDGER_HOLDS_MAX. */
static LedgerHold *hold_append(Ledger *l, const char *path) {
        LedgerHold *h = array_reserve(l->holds, &l->allocated_holds, l->n_holds, sizeof(LedgerHold), 4,
                                      LEDGER_HOLDS_MAX);

        if (!h)
                return NULL;
        l->holds = h;
        h = &l->holds[l->n_holds];
        *h = (LedgerHold) { .path = strdup(path) };
        if (!h->path)
                return NULL;
        l->n_holds++;
        return h;
}

int ledger_hold(Ledger *l, const char *path, uint64_t cgroup_id, uint64_t since_usec, uint64_t until_usec,
                const char *who, LedgerHold **ret) {
        LedgerHold *h = ledger_find_hold(l, path);

        if (!h) {
                if (l->n_holds >= LEDGER_HOLDS_MAX)
                        return -E2BIG;
                h = hold_append(l, path);
                if (!h)
                        return -ENOMEM;
        }
        h->cgroup_id = cgroup_id;
        h->since_usec = since_usec;
        h->until_usec = until_usec;
        h->refusal_logged = false;
        snprintf(h->who, sizeof(h->who), "%s", who ?: "");
        if (ret)
                *ret = h;
        return 0;
}

LedgerHold *ledger_held(const Ledger *l, const char *path, uint64_t now_usec) {
        LedgerHold *h = ledger_find_hold(l, path);

        if (!h || h->until_usec <= now_usec)
                h = ledger_find_hold(l, LEDGER_HOLD_ALL);
        return h && h->until_usec > now_usec ? h : NULL;
}

void ledger_unhold(Ledger *l, LedgerHold *h) {
        size_t i = (size_t) (h - l->holds);

        if (i >= l->n_holds)
                return;
        free(h->path);
        l->holds[i] = l->holds[--l->n_holds];
}

bool throttle_original_plausible(const ThrottleEntry *e, uint64_t page_size) {
        if (e->kind == THROTTLE_IO_WBPS)
                return (e->major != 0 || e->minor != 0) && e->original != 0;
        if (throttle_kind_is_queue(e->kind))
                return (e->major != 0 || e->minor != 0) && e->original != 0 && e->original != THROTTLE_NONE;
        if (e->original == THROTTLE_NONE)
                return true;
        /* Any size of swap, none included, is a cgroup's own choice; the kernel keeps it in pages. */
        if (e->kind == THROTTLE_SWAP_MAX)
                return page_size == 0 || e->original % page_size == 0;
        return e->original >= LEDGER_HIGH_FLOOR && (page_size == 0 || e->original % page_size == 0);
}

const char *throttle_describe(const ThrottleEntry *e, char *buf, size_t size) {
        if (e->kind == THROTTLE_IO_WBPS)
                snprintf(buf, size, "io.max %" PRIu32 ":%" PRIu32 " wbps", e->major, e->minor);
        else if (throttle_kind_is_queue(e->kind))
                snprintf(buf, size, "%" PRIu32 ":%" PRIu32 " queue %s", e->major, e->minor, kind_names[e->kind]);
        else
                snprintf(buf, size, "%s", throttle_knob(e->kind));
        return buf;
}

const char *throttle_knob(ThrottleKind k) {
        switch (k) {
        case THROTTLE_IO_WBPS:
                return "io.max wbps";
        case THROTTLE_SWAP_MAX:
                return "memory.swap.max";
        case THROTTLE_NR_REQUESTS:
        case THROTTLE_MAX_SECTORS_KB:
                return kind_names[k];
        default:
                return "memory.high";
        }
}

/* ---- on disk: one line per entry, tab-separated, text fields escaped ---- */

static void put_escaped(FILE *f, const char *s) {
        for (; *s; s++)
                switch (*s) {
                case '\t':
                        fputs("\\t", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                case '\\':
                        fputs("\\\\", f);
                        break;
                default:
                        fputc(*s, f);
                }
}

static void put_value(FILE *f, uint64_t v) {
        if (v == THROTTLE_NONE)
                fputs("max", f);
        else
                fprintf(f, "%" PRIu64, v);
}

static void write_entry(FILE *f, const ThrottleEntry *e) {
        fprintf(f, "%" PRIu64 "\t%s\t%" PRIu32 ":%" PRIu32 "\t", e->cgroup_id, kind_names[e->kind], e->major, e->minor);
        put_value(f, e->original);
        fputc('\t', f);
        put_value(f, e->applied);
        fprintf(f, "\t%" PRIu64, e->since_usec);
        for (int p = 0; p < _POINT_MAX; p++) {
                fputc('\t', f);
                put_value(f, e->requested[p]);
                fputc('\t', f);
                put_escaped(f, e->reason[p]);
                fputc('\t', f);
                put_escaped(f, e->lifts_when[p]);
        }
        fputc('\t', f);
        put_escaped(f, e->path);
        fputc('\n', f);
}

/* "release", until, since, cgroup id, who, path. */
static void write_hold(FILE *f, const LedgerHold *h) {
        fprintf(f, HOLD_TAG "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t", h->until_usec, h->since_usec,
                h->cgroup_id);
        put_escaped(f, h->who);
        fputc('\t', f);
        put_escaped(f, h->path);
        fputc('\n', f);
}

/* Writes the entries to a new file `name` in dfd, fsynced: created afresh, never through a link. */
static int write_ledger(FILE *f, void *userdata) {
        const Ledger *l = userdata;

        fprintf(f, "%s\n", LEDGER_HEADER);
        for (size_t i = 0; i < l->n; i++)
                write_entry(f, &l->entries[i]);
        for (size_t i = 0; i < l->n_holds; i++)
                write_hold(f, &l->holds[i]);
        return 0;
}

int ledger_save(const Ledger *l) {
        if (!l->file)
                return 0;
        return file_replace(l->file, 0600, write_ledger, (void *) l);
}

static int get_value(const char *s, uint64_t *ret) {
        char *end;

        if (streq(s, "max")) {
                *ret = THROTTLE_NONE;
                return 0;
        }
        if (*s < '0' || *s > '9')
                return -EBADMSG;
        errno = 0;
        *ret = strtoull(s, &end, 10);
        return errno || *end ? -EBADMSG : 0;
}

static void unescape(char *s) {
        char *w = s;

        for (; *s; s++) {
                if (*s == '\\' && s[1]) {
                        s++;
                        *w++ = *s == 't' ? '\t' : *s == 'n' ? '\n' : *s;
                } else
                        *w++ = *s;
        }
        *w = '\0';
}

/* Splits a line on tabs in place; returns the number of fields. */
static size_t split_tabs(char *line, char **fields, size_t max) {
        size_t n = 0;

        while (n < max) {
                fields[n++] = line;
                line = strchr(line, '\t');
                if (!line)
                        break;
                *line++ = '\0';
        }
        return n;
}

/* Fields of an entry line: v1 has a value and a reason per point, v2 its since and a "lifts when" too. */
#define V1_FIELDS (6 + 2 * _POINT_MAX)
#define V2_FIELDS (7 + 3 * _POINT_MAX)
#define HOLD_FIELDS 6

static void copy_text(char *dst, size_t size, char *field) {
        unescape(field);
        snprintf(dst, size, "%s", field);
}

/* The points' requests, from `first` on, `stride` fields each (v1: value, reason; v2: and "lifts when"). */
static int parse_requests(char **fld, size_t first, size_t stride, ThrottleEntry *e) {
        for (int p = 0; p < _POINT_MAX; p++) {
                char **f = fld + first + stride * (size_t) p;

                if (get_value(f[0], &e->requested[p]) < 0)
                        return -EBADMSG;
                copy_text(e->reason[p], sizeof(e->reason[p]), f[1]);
                if (stride > 2)
                        copy_text(e->lifts_when[p], sizeof(e->lifts_when[p]), f[2]);
        }
        return 0;
}

/* One entry from its n fields (split in place); *ret_path points into the last. */
static int parse_entry(char **fld, size_t n, ThrottleEntry *e, const char **ret_path) {
        bool v2 = n == V2_FIELDS;
        unsigned maj, min;
        int kind = -1;

        if (n != V1_FIELDS && !v2)
                return -EBADMSG;
        for (int k = 0; k < _THROTTLE_KIND_MAX; k++)
                if (streq(fld[1], kind_names[k]))
                        kind = k;
        if (kind < 0 || sscanf(fld[2], "%u:%u", &maj, &min) != 2)
                return -EBADMSG;
        *e = (ThrottleEntry) { .kind = (ThrottleKind) kind, .major = maj, .minor = min };
        if (get_value(fld[0], &e->cgroup_id) < 0 || get_value(fld[3], &e->original) < 0 ||
            get_value(fld[4], &e->applied) < 0)
                return -EBADMSG;
        if (v2 && (get_value(fld[5], &e->since_usec) < 0 || e->since_usec == THROTTLE_NONE))
                return -EBADMSG;
        if (parse_requests(fld, v2 ? 6 : 5, v2 ? 3 : 2, e) < 0)
                return -EBADMSG;
        unescape(fld[n - 1]);
        if (fld[n - 1][0] != '/')
                return -EBADMSG;
        *ret_path = fld[n - 1];
        return 0;
}

/* One release from its fields: "release", until, since, cgroup id, who, path. */
static int parse_hold(char **fld, size_t n, LedgerHold *h, const char **ret_path) {
        *h = (LedgerHold) {};
        if (n != HOLD_FIELDS || get_value(fld[1], &h->until_usec) < 0 || get_value(fld[2], &h->since_usec) < 0 ||
            get_value(fld[3], &h->cgroup_id) < 0)
                return -EBADMSG;
        copy_text(h->who, sizeof(h->who), fld[4]);
        unescape(fld[5]);
        if (fld[5][0] != '/' && !streq(fld[5], LEDGER_HOLD_ALL))
                return -EBADMSG;
        *ret_path = fld[5];
        return 0;
}

/* The file, if it is a regular one: opened without following a link or waiting for a FIFO's writer. */
static int ledger_open(const char *file, FILE **ret) {
        _cleanup_close_ int fd = open(file, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        *ret = fdopen(fd, "r");
        if (!*ret)
                return negative_errno();
        TAKE_FD(fd);
        return 0;
}

/* Reads the file a line at a time, never more than LEDGER_FILE_MAX bytes in all. */
typedef struct LineReader {
        FILE *f;
        uint64_t left;
        size_t len;
        char line[LEDGER_LINE_MAX + 1];
} LineReader;

/*
 * The next line into r->line, without its newline. Returns 1; 0 at the end;
 * -E2BIG for a line longer than LEDGER_LINE_MAX (read past, not kept);
 * -EFBIG once the bound is reached (the line it cut is not kept); -EIO.
 */
static int line_next(LineReader *r) {
        bool any = false, too_long = false;
        int c;

        r->len = 0;
        for (;;) {
                if (r->left == 0)
                        return getc_unlocked(r->f) == EOF && !any ? 0 : -EFBIG;
                c = getc_unlocked(r->f);
                if (c == EOF || c == '\n')
                        break;
                r->left--;
                any = true;
                if (r->len < LEDGER_LINE_MAX)
                        r->line[r->len++] = (char) c;
                else
                        too_long = true;
        }
        if (ferror(r->f))
                return -EIO;
        if (c == '\n')
                r->left--;
        r->line[r->len] = '\0';
        if (c == EOF && !any)
                return 0;
        return too_long ? -E2BIG : 1;
}

static void report_bad(LedgerLoadReport *rep, unsigned lineno) {
        if (!rep->bad_line)
                rep->bad_line = lineno;
        rep->n_bad++;
}

/* A release read back: kept, or past the bound. */
static int load_hold(Ledger *l, char **fld, size_t n, unsigned lineno, LedgerLoadReport *rep) {
        LedgerHold h;
        const char *path;

        if (parse_hold(fld, n, &h, &path) < 0) {
                report_bad(rep, lineno);
                return 0;
        }
        if (l->n_holds >= LEDGER_HOLDS_MAX) {
                rep->n_dropped++;
                return 0;
        }
        return ledger_hold(l, path, h.cgroup_id, h.since_usec, h.until_usec, h.who, NULL);
}

/* An entry read back: added, past the bound, or garbage. */
static int load_entry(Ledger *l, char **fld, size_t n, unsigned lineno, uint64_t page_size, LedgerLoadReport *rep) {
        ThrottleEntry e;
        const char *path;

        if (parse_entry(fld, n, &e, &path) < 0) {
                report_bad(rep, lineno);
                return 0;
        }
        if (l->n >= LEDGER_MAX) {
                rep->n_dropped++;
                return 0;
        }
        if (!throttle_original_plausible(&e, page_size)) {
                e.original = THROTTLE_NONE;
                e.original_replaced = true;
                rep->n_implausible++;
        }
        return ledger_append(l, &e, path) ? 0 : -ENOMEM;
}

/* One line that fit: a comment, an entry or a release, or garbage. */
static int load_line(Ledger *l, LineReader *r, unsigned lineno, uint64_t page_size, LedgerLoadReport *rep) {
        char *fld[V2_FIELDS];
        size_t n;

        if (r->len == 0 || r->line[0] == '#')
                return 0;
        if (strlen(r->line) != r->len) {
                report_bad(rep, lineno);
                return 0;
        }
        n = split_tabs(r->line, fld, ELEMENTSOF(fld));
        if (streq(fld[0], HOLD_TAG))
                return load_hold(l, fld, n, lineno, rep);
        return load_entry(l, fld, n, lineno, page_size, rep);
}

int ledger_load_full(Ledger *l, LedgerLoadReport *ret_report) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ LineReader *r = NULL;
        long ps = sysconf(_SC_PAGESIZE);
        uint64_t page_size = ps > 0 ? (uint64_t) ps : 0;
        unsigned lineno = 0;
        int k;

        *ret_report = (LedgerLoadReport) {};
        if (!l->file)
                return 0;
        k = ledger_open(l->file, &f);
        if (k < 0)
                return k == -ENOENT ? 0 : k;
        r = malloc(sizeof(LineReader));
        if (!r)
                return -ENOMEM;
        *r = (LineReader) { .f = f, .left = LEDGER_FILE_MAX };
        while ((k = line_next(r)) != 0) {
                lineno++;
                if (k == -EFBIG) {
                        ret_report->truncated = true;
                        break;
                }
                if (k == -E2BIG) {
                        report_bad(ret_report, lineno);
                        continue;
                }
                if (k < 0)
                        return k;
                k = load_line(l, r, lineno, page_size, ret_report);
                if (k < 0)
                        return k;
        }
        return 0;
}

int ledger_load(Ledger *l, unsigned *ret_bad_line) {
        LedgerLoadReport rep;
        int r = ledger_load_full(l, &rep);

        *ret_bad_line = rep.bad_line;
        if (r == -EISDIR || r == -EBADFD)
                log_warning("%s is not a regular file; not read as the throttle ledger", l->file);
        if (rep.n_dropped > 0)
                log_warning("%s: entries past the bound of %d (or releases past %d) dropped: %u", l->file,
                            LEDGER_MAX, LEDGER_HOLDS_MAX, rep.n_dropped);
        if (rep.n_implausible > 0)
                log_warning("%s: entries with an implausible original value (a corrupt ledger?), for which "
                            "\"max\" is restored instead: %u", l->file, rep.n_implausible);
        if (rep.truncated)
                log_warning("%s is larger than any ledger the daemon writes; the rest past %" PRIu64
                            " bytes is not read", l->file, LEDGER_FILE_MAX);
        return r;
}
