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
#include "util.h"

#define LEDGER_HEADER "# mdreclaim throttle ledger v1"

static const char *const kind_names[_THROTTLE_KIND_MAX] = {
        [THROTTLE_MEMORY_HIGH] = "memory.high",
        [THROTTLE_IO_WBPS] = "io.max",
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
        free(l->entries);
        free(l->file);
        *l = (Ledger) {};
}

ThrottleEntry *ledger_find(Ledger *l, const char *path, ThrottleKind kind, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < l->n; i++) {
                ThrottleEntry *e = &l->entries[i];
                if (e->kind == kind && streq(e->path, path) &&
                    (kind != THROTTLE_IO_WBPS || (e->major == major && e->minor == minor)))
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

/* Appends a copy of `src` with its own copy of `path`; the caller checks LEDGER_MAX. NULL: no memory. */
static ThrottleEntry *ledger_append(Ledger *l, const ThrottleEntry *src, const char *path) {
        ThrottleEntry *e;

        if (l->n >= l->allocated) {
                size_t want = MIN(MAX(l->allocated * 2, (size_t) 16), (size_t) LEDGER_MAX);
                ThrottleEntry *n = reallocarray(l->entries, want, sizeof(ThrottleEntry));

                if (!n)
                        return NULL;
                l->entries = n;
                l->allocated = want;
        }
        e = &l->entries[l->n];
        *e = *src;
        e->path = strdup(path);
        if (!e->path)
                return NULL;
        l->n++;
        return e;
}

int ledger_request(Ledger *l, const char *path, uint64_t cgroup_id, ThrottleKind kind, uint32_t major,
                   uint32_t minor, ThrottlePoint p, uint64_t value, const char *reason, uint64_t current,
                   ThrottleEntry **ret) {
        ThrottleEntry *e = ledger_find(l, path, kind, major, minor);

        if (!e) {
                ThrottleEntry n = {
                        .cgroup_id = cgroup_id, .kind = kind, .major = major, .minor = minor,
                        .original = current, .applied = current,
                };

                if (l->n >= LEDGER_MAX)
                        return -E2BIG;
                for (int i = 0; i < _POINT_MAX; i++)
                        n.requested[i] = THROTTLE_NONE;
                e = ledger_append(l, &n, path);
                if (!e)
                        return -ENOMEM;
        }
        e->requested[p] = value;
        snprintf(e->reason[p], sizeof(e->reason[p]), "%s", reason ? reason : "");
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
        return e;
}

void ledger_remove(Ledger *l, ThrottleEntry *e) {
        size_t i = (size_t) (e - l->entries);

        if (i >= l->n)
                return;
        entry_free(e);
        l->entries[i] = l->entries[--l->n];
}

bool ledger_adopt_foreign(ThrottleEntry *e, uint64_t found) {
        if (found == e->applied)
                return false;
        e->original = found;
        e->applied = found;
        for (int p = 0; p < _POINT_MAX; p++) {
                e->requested[p] = THROTTLE_NONE;
                e->reason[p][0] = '\0';
        }
        return true;
}

bool throttle_original_plausible(const ThrottleEntry *e, uint64_t page_size) {
        if (e->kind == THROTTLE_IO_WBPS)
                return (e->major != 0 || e->minor != 0) && e->original != 0;
        if (e->original == THROTTLE_NONE)
                return true;
        return e->original >= LEDGER_HIGH_FLOOR && (page_size == 0 || e->original % page_size == 0);
}

const char *throttle_describe(const ThrottleEntry *e, char *buf, size_t size) {
        if (e->kind == THROTTLE_IO_WBPS)
                snprintf(buf, size, "io.max %" PRIu32 ":%" PRIu32 " wbps", e->major, e->minor);
        else
                snprintf(buf, size, "memory.high");
        return buf;
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
        for (int p = 0; p < _POINT_MAX; p++) {
                fputc('\t', f);
                put_value(f, e->requested[p]);
                fputc('\t', f);
                put_escaped(f, e->reason[p]);
        }
        fputc('\t', f);
        put_escaped(f, e->path);
        fputc('\n', f);
}

/* Writes the entries to a new file `name` in dfd, fsynced: created afresh, never through a link. */
static int write_new_file(const Ledger *l, int dfd, const char *name) {
        _cleanup_fclose_ FILE *f = NULL;
        int fd;

        fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return negative_errno();
        f = fdopen(fd, "w");
        if (!f) {
                int r = negative_errno();
                close(fd);
                return r;
        }
        fprintf(f, "%s\n", LEDGER_HEADER);
        for (size_t i = 0; i < l->n; i++)
                write_entry(f, &l->entries[i]);
        if (fflush(f) != 0 || fsync(fileno(f)) < 0)
                return negative_errno();
        return fclose(TAKE_PTR(f)) != 0 ? negative_errno() : 0;
}

int ledger_save(const Ledger *l) {
        _cleanup_free_ char *dir = NULL, *tmp = NULL;
        _cleanup_close_ int dfd = -1;
        const char *slash, *base;
        int r;

        if (!l->file)
                return 0;
        slash = strrchr(l->file, '/');
        base = slash ? slash + 1 : l->file;
        dir = slash ? strndup(l->file, MAX((size_t) (slash - l->file), (size_t) 1)) : strdup(".");
        if (!dir || asprintf(&tmp, "%s.tmp", base) < 0)
                return -ENOMEM;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        /* What a crashed save left there, or a link someone put there: removed, not written through. */
        if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
                return negative_errno();
        r = write_new_file(l, dfd, tmp);
        if (r >= 0 && renameat(dfd, tmp, dfd, base) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        return fsync(dfd) < 0 ? negative_errno() : 0;
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

/* Parses one line (no newline) in place; *ret_path points into it. */
static int parse_entry(char *line, ThrottleEntry *e, const char **ret_path) {
        char *fld[6 + 2 * _POINT_MAX];
        unsigned maj, min;
        int kind = -1;

        if (split_tabs(line, fld, ELEMENTSOF(fld)) != ELEMENTSOF(fld))
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
        for (int p = 0; p < _POINT_MAX; p++) {
                if (get_value(fld[5 + 2 * p], &e->requested[p]) < 0)
                        return -EBADMSG;
                unescape(fld[6 + 2 * p]);
                snprintf(e->reason[p], sizeof(e->reason[p]), "%s", fld[6 + 2 * p]);
        }
        unescape(fld[5 + 2 * _POINT_MAX]);
        if (fld[5 + 2 * _POINT_MAX][0] != '/')
                return -EBADMSG;
        *ret_path = fld[5 + 2 * _POINT_MAX];
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

/* One line that fit: a comment, an entry added, an entry past the bound, or garbage. */
static int load_line(Ledger *l, LineReader *r, unsigned lineno, uint64_t page_size, LedgerLoadReport *rep) {
        ThrottleEntry e;
        const char *path;

        if (r->len == 0 || r->line[0] == '#')
                return 0;
        if (strlen(r->line) != r->len || parse_entry(r->line, &e, &path) < 0) {
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
                log_warning("%s: entries past the bound of %d dropped: %u", l->file, LEDGER_MAX, rep.n_dropped);
        if (rep.n_implausible > 0)
                log_warning("%s: entries with an implausible original value (a corrupt ledger?), for which "
                            "\"max\" is restored instead: %u", l->file, rep.n_implausible);
        if (rep.truncated)
                log_warning("%s is larger than any ledger the daemon writes; the rest past %" PRIu64
                            " bytes is not read", l->file, LEDGER_FILE_MAX);
        return r;
}
