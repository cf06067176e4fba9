/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "conf-file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

typedef struct ConfParse {
        const char *path;
        const char *text;       /* the whole file, read before parsing */
        size_t size;
        size_t pos;
        unsigned line;
        unsigned last_flagged_line;
        bool section_ok;        /* keys of an unknown section were reported already */
        bool after_key;         /* a continuation line is possible */
        const char *const *sections;
        ConfKeyHandler handler;
        void *userdata;
        ConfDiag *diag;
        size_t diag_before;
} ConfParse;

void conf_diag_add(ConfDiag *d, const char *file, unsigned line, const char *format, ...) {
        _cleanup_free_ char *body = NULL;
        char *msg, **n;
        va_list ap;
        int r;

        if (d->n_messages >= CONF_DIAG_MAX) {
                d->n_dropped++;
                return;
        }
        va_start(ap, format);
        r = vasprintf(&body, format, ap);
        va_end(ap);
        if (r < 0)
                goto oom;
        r = line > 0 ? asprintf(&msg, "%s:%u: %s", file, line, body)
                     : asprintf(&msg, "%s: %s", file, body);
        if (r < 0)
                goto oom;
        n = realloc(d->messages, (d->n_messages + 1) * sizeof(char *));
        if (!n) {
                free(msg);
                goto oom;
        }
        d->messages = n;
        d->messages[d->n_messages++] = msg;
        return;
oom:
        /* Still counted, so that a failed parse is never mistaken for a clean one. */
        d->n_dropped++;
}

size_t conf_diag_count(const ConfDiag *d) {
        return d->n_messages + d->n_dropped;
}

bool conf_diag_full(const ConfDiag *d) {
        return d->n_messages >= CONF_DIAG_MAX;
}

void conf_diag_clear(ConfDiag *d) {
        for (size_t i = 0; i < d->n_messages; i++)
                free(d->messages[i]);
        free(d->messages);
        *d = (ConfDiag) {};
}

/* Records a problem with the current line; the line is then hidden from libinih. */
static bool flag(ConfParse *p, const char *what, const char *line) {
        conf_diag_add(p->diag, p->path, p->line, "%s, got '%s'", what, line);
        p->last_flagged_line = p->line;
        return true;
}

static bool section_known(const ConfParse *p, const char *name, size_t len) {
        for (size_t i = 0; p->sections[i]; i++)
                if (strlen(p->sections[i]) == len && strncmp(p->sections[i], name, len) == 0)
                        return true;
        return false;
}

/*
 * Checks one raw line the way we want it read, before libinih sees it.
 * Returns true if the line was reported and must be hidden from libinih.
 */
static bool check_line(ConfParse *p, char *str) {
        char *s = str, *close;
        bool indented = isspace((unsigned char) *s);

        while (isspace((unsigned char) *s))
                s++;
        if (*s == '\0' || *s == ';' || *s == '#')
                return false;
        if (*s == '[') {
                p->after_key = false;
                close = strchr(s, ']');
                if (!close)
                        return flag(p, "section header without closing ']'", s);
                /* An unknown section stays visible to libinih, so that its
                 * keys are not taken for keys of the section before it. */
                p->section_ok = section_known(p, s + 1, (size_t) (close - s - 1));
                if (!p->section_ok) {
                        *close = '\0';
                        conf_diag_add(p->diag, p->path, p->line, "unknown section [%s]", s + 1);
                        *close = ']';
                }
                return false;
        }
        if (indented && p->after_key)
                return false; /* continuation of the previous key */
        if (!strpbrk(s, "=:"))
                return flag(p, "expected Key=Value, [Section] or a comment", s);
        p->after_key = true;
        return false;
}

/* libinih's reader hook: counts lines and catches lines it would cut. */
/* Why a raw line cannot be read as it stands, or NULL. */
static const char *raw_line_problem(bool nul, bool stray_cr) {
        if (nul)
                return "a NUL byte in the line";
        if (stray_cr)
                return "a carriage return in the middle of the line";
        return NULL;
}

/*
 * libinih's reader hook. Reads one whole line byte by byte, so that nothing in
 * it can go unseen: a NUL, a lone carriage return, more than libinih keeps.
 * Such a line is reported and handed over as a comment.
 */
static char *conf_reader(char *str, int num, void *stream) {
        ConfParse *p = stream;
        size_t len = 0;
        bool too_long = false, nul = false, stray_cr = false, any = false;
        const char *problem;
        unsigned char c;

        while (p->pos < p->size) {
                c = (unsigned char) p->text[p->pos++];
                any = true;
                if (c == '\n')
                        break;
                if (c == '\0')
                        nul = true;
                else if (len + 1 < (size_t) num)
                        str[len++] = (char) c;
                else
                        too_long = true;
        }
        if (!any)
                return NULL;
        p->line++;
        str[len] = '\0';
        if (len > 0 && str[len - 1] == '\r')
                str[--len] = '\0';   /* CRLF line ends are fine */
        stray_cr = memchr(str, '\r', len) != NULL;
        /* A UTF-8 byte order mark opening the file is not content. */
        if (p->line == 1 && len >= 3 && memcmp(str, "\xef\xbb\xbf", 3) == 0)
                memmove(str, str + 3, len - 2);
        problem = raw_line_problem(nul, stray_cr);
        if (problem || too_long) {
                if (problem)
                        conf_diag_add(p->diag, p->path, p->line, "%s", problem);
                else
                        conf_diag_add(p->diag, p->path, p->line, "line longer than %d characters, libinih's "
                                      "limit: it would be cut short", num - 1);
                p->last_flagged_line = p->line;
                strcpy(str, ";");
                return str;
        }
        if (check_line(p, str))
                strcpy(str, ";"); /* reported already: keep libinih away from it */
        return str;
}

/* libinih calls this with 1 meaning success; we never stop it early. */
static int conf_ini_handler(void *user, const char *section, const char *name, const char *value) {
        ConfParse *p = user;
        const char *hash;
        ConfLocation loc = { .file = p->path, .line = p->line };

        if (!p->section_ok)
                return 1;
        if (!*section) {
                conf_diag_add(p->diag, p->path, p->line, "%s= outside of any section", name);
                return 1;
        }
        hash = strchr(value, '#');
        if (hash && hash > value && isspace((unsigned char) hash[-1])) {
                conf_diag_add(p->diag, p->path, p->line,
                              "%s=: '#' starts a comment only at the beginning of a line "
                              "(use ';' for a comment after a value), got '%s'", name, value);
                return 1;
        }
        (void) p->handler(p->userdata, &loc, section, name, value, p->diag);
        return 1;
}

/* What a file that is not a regular file is, for messages; NULL for a regular file. */
static const char *file_kind_refused(mode_t mode) {
        if (S_ISREG(mode))
                return NULL;
        if (S_ISDIR(mode))
                return "a directory";
        if (S_ISFIFO(mode))
                return "a FIFO";
        if (S_ISCHR(mode))
                return "a character device";
        if (S_ISBLK(mode))
                return "a block device";
        if (S_ISSOCK(mode))
                return "a socket";
        return "of an unknown type";
}

static int check_regular(const char *path, const struct stat *st, ConfDiag *diag) {
        const char *kind = file_kind_refused(st->st_mode);

        if (!kind)
                return 0;
        conf_diag_add(diag, path, 0, "is %s, not a regular file", kind);
        return S_ISDIR(st->st_mode) ? -EISDIR : -EBADFD;
}

/* Reads `fd` to its end into a new buffer; -EFBIG past `max` bytes. `hint` is the size fstat saw. */
static int read_bounded(int fd, size_t hint, size_t max, char **ret_text, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, room = MIN(hint, max) + 1;    /* one byte more than expected shows the end */
        ssize_t n;

        buf = malloc(room + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (size == room) {
                        char *bigger;

                        if (room > max)
                                return -EFBIG;
                        room = MIN(room * 2, max + 1);
                        bigger = realloc(buf, room + 1);
                        if (!bigger)
                                return -ENOMEM;
                        buf = bigger;
                }
                n = read(fd, buf + size, room - size);
                if (n == 0)
                        break;
                if (n < 0 && errno != EINTR)
                        return negative_errno();
                size += n > 0 ? (size_t) n : 0;
        }
        buf[size] = '\0';
        *ret_text = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

/*
 * Opens `path` for reading if it is a regular file. It is looked at first,
 * because opening a device can act on it (a terminal, a watchdog); what was
 * opened is looked at again, because the path may have changed in between.
 * O_NONBLOCK: should a FIFO get there all the same, neither open nor read waits.
 */
static int open_regular(const char *path, struct stat *ret_st, ConfDiag *diag) {
        _cleanup_close_ int fd = -1;
        int r;

        if (stat(path, ret_st) < 0) {
                r = negative_errno();
                conf_diag_add(diag, path, 0, "cannot open: %s", strerror(-r));
                return r;
        }
        r = check_regular(path, ret_st, diag);
        if (r < 0)
                return r;
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, ret_st) < 0) {
                r = negative_errno();
                conf_diag_add(diag, path, 0, "cannot open: %s", strerror(-r));
                return r;
        }
        r = check_regular(path, ret_st, diag);
        return r < 0 ? r : TAKE_FD(fd);
}

int conf_file_read(const char *path, size_t max, char **ret_text, size_t *ret_size, ConfDiag *diag) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        fd = open_regular(path, &st, diag);
        if (fd < 0)
                return fd;
        r = read_bounded(fd, (size_t) st.st_size, max, ret_text, ret_size);
        if (r == -EFBIG)
                conf_diag_add(diag, path, 0, "is larger than %zu bytes", max);
        else if (r < 0)
                conf_diag_add(diag, path, 0, "read error: %s", strerror(-r));
        return r;
}

int conf_file_parse_text(const char *path, const char *text, size_t size, const char *const *sections,
                         ConfKeyHandler handler, void *userdata, ConfDiag *diag) {
        ConfParse p = {
                .path = path, .text = text, .size = size, .sections = sections, .handler = handler,
                .userdata = userdata, .diag = diag, .section_ok = true,
                .diag_before = conf_diag_count(diag),
        };
        int r;

        r = ini_parse_stream(conf_reader, &p, conf_ini_handler, &p);
        if (r > 0 && (unsigned) r != p.last_flagged_line)
                conf_diag_add(diag, path, (unsigned) r, "syntax error");
        else if (r < 0)
                conf_diag_add(diag, path, 0, "libinih could not parse the file (error %d)", r);
        return conf_diag_count(diag) > p.diag_before ? -EINVAL : 0;
}

int conf_file_parse(const char *path, const char *const *sections,
                    ConfKeyHandler handler, void *userdata, ConfDiag *diag) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        r = conf_file_read(path, CONF_FILE_SIZE_MAX, &text, &size, diag);
        if (r < 0)
                return r;
        return conf_file_parse_text(path, text, size, sections, handler, userdata, diag);
}
