/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int ledger_request(Ledger *l, const char *path, uint64_t cgroup_id, ThrottleKind kind, uint32_t major,
                   uint32_t minor, ThrottlePoint p, uint64_t value, const char *reason, uint64_t current,
                   ThrottleEntry **ret) {
        ThrottleEntry *e = ledger_find(l, path, kind, major, minor), *n;

        if (!e) {
                if (l->n >= LEDGER_MAX)
                        return -E2BIG;
                n = realloc(l->entries, (l->n + 1) * sizeof(ThrottleEntry));
                if (!n)
                        return -ENOMEM;
                l->entries = n;
                e = &l->entries[l->n];
                *e = (ThrottleEntry) {
                        .path = strdup(path), .cgroup_id = cgroup_id, .kind = kind,
                        .major = major, .minor = minor, .original = current, .applied = current,
                };
                if (!e->path)
                        return -ENOMEM;
                for (int i = 0; i < _POINT_MAX; i++)
                        e->requested[i] = THROTTLE_NONE;
                l->n++;
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

int ledger_save(const Ledger *l) {
        _cleanup_free_ char *tmp = NULL, *dircopy = NULL;
        _cleanup_close_ int dfd = -1;
        FILE *f;
        int fd, r = 0;

        if (!l->file)
                return 0;
        if (asprintf(&tmp, "%s.tmpXXXXXX", l->file) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        f = fdopen(fd, "w");
        if (!f) {
                r = negative_errno();
                close(fd);
                unlink(tmp);
                return r;
        }
        fprintf(f, "%s\n", LEDGER_HEADER);
        for (size_t i = 0; i < l->n; i++)
                write_entry(f, &l->entries[i]);
        if (fflush(f) != 0 || fsync(fileno(f)) < 0)
                r = negative_errno();
        if (fclose(f) != 0 && r == 0)
                r = negative_errno();
        if (r == 0 && rename(tmp, l->file) < 0)
                r = negative_errno();
        if (r < 0) {
                unlink(tmp);
                return r;
        }
        dircopy = strdup(l->file);
        if (!dircopy)
                return -ENOMEM;
        dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd) < 0)
                return negative_errno();
        return 0;
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

static int parse_entry(char *line, ThrottleEntry *e) {
        char *fld[6 + 2 * _POINT_MAX];
        unsigned maj, min;
        int kind = -1;

        line[strcspn(line, "\n")] = '\0';
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
        e->path = strdup(fld[5 + 2 * _POINT_MAX]);
        return e->path ? 0 : -ENOMEM;
}

int ledger_load(Ledger *l, unsigned *ret_bad_line) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        unsigned lineno = 0;

        *ret_bad_line = 0;
        if (!l->file)
                return 0;
        f = fopen(l->file, "re");
        if (!f)
                return errno == ENOENT ? 0 : negative_errno();
        while (getline(&line, &cap, f) > 0) {
                ThrottleEntry e, *n;
                int r;

                lineno++;
                if (line[0] == '#' || line[0] == '\n')
                        continue;
                r = parse_entry(line, &e);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || l->n >= LEDGER_MAX) {
                        if (!*ret_bad_line)
                                *ret_bad_line = lineno;
                        continue;
                }
                n = realloc(l->entries, (l->n + 1) * sizeof(ThrottleEntry));
                if (!n) {
                        free(e.path);
                        return -ENOMEM;
                }
                l->entries = n;
                l->entries[l->n++] = e;
        }
        return 0;
}
