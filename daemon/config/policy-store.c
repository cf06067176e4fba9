/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "policy-store.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "conf.h"
#include "log.h"
#include "policy.h"
#include "util.h"
#include "unit-name.h"

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@"

bool policy_name_settable(const char *name, const char **ret_why) {
        const char *why = NULL;
        size_t l = strlen(name);

        if (l == 0)
                why = "a policy name cannot be empty";
        else if (l > POLICY_NAME_MAX)
                why = "a policy name is at most 128 characters";
        else if (strspn(name, NAME_CHARS) != l)
                why = "a policy name may hold only letters, digits and '-_.@' (no '/')";
        else if (name[0] == '.')
                why = "a policy name cannot start with '.'";
        else if (strstr(name, ".."))
                why = "a policy name cannot contain '..'";
        if (ret_why)
                *ret_why = why;
        return !why;
}

/* ---- a growable list of owned strings ---- */

typedef struct Lines {
        char **v;
        size_t n;
} Lines;

static void lines_clear(Lines *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
        *l = (Lines) {};
}

static int lines_insert(Lines *l, size_t at, const char *s, size_t len) {
        char **n = realloc(l->v, (l->n + 1) * sizeof(char *)), *copy;

        if (!n)
                return -ENOMEM;
        l->v = n;
        copy = strndup(s, len);
        if (!copy)
                return -ENOMEM;
        memmove(l->v + at + 1, l->v + at, (l->n - at) * sizeof(char *));
        l->v[at] = copy;
        l->n++;
        return 0;
}

static int lines_push(Lines *l, const char *s) {
        return lines_insert(l, l->n, s, strlen(s));
}

static int lines_split(Lines *l, const char *text) {
        while (text && *text) {
                const char *nl = strchr(text, '\n');
                size_t len = nl ? (size_t) (nl - text) : strlen(text);
                int r = lines_insert(l, l->n, text, len);

                if (r < 0)
                        return r;
                text += len + (nl ? 1 : 0);
        }
        return 0;
}

static char *lines_join(const Lines *l) {
        size_t size = 1;
        char *s, *p;

        for (size_t i = 0; i < l->n; i++)
                size += strlen(l->v[i]) + 1;
        s = p = malloc(size);
        if (!s)
                return NULL;
        for (size_t i = 0; i < l->n; i++)
                p = stpcpy(stpcpy(p, l->v[i]), "\n");
        *p = '\0';
        return s;
}

/* ---- the edit ---- */

static bool key_syntax_ok(const char *k, size_t len) {
        if (len == 0 || !isalpha((unsigned char) k[0]))
                return false;
        for (size_t i = 0; i < len; i++)
                if (!isalnum((unsigned char) k[i]))
                        return false;
        return true;
}

static bool key_known(const char *k, size_t len) {
        const char *known;

        for (size_t i = 0; (known = config_policy_key(i)); i++)
                if (strlen(known) == len && strncmp(known, k, len) == 0)
                        return true;
        return false;
}

static char *known_keys(void) {
        char buf[512];
        size_t off = 0;
        const char *k;

        buf[0] = '\0';
        for (size_t i = 0; (k = config_policy_key(i)) && off < sizeof(buf); i++)
                off += (size_t) snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? ", " : "", k);
        return strdup(buf);
}

static int fail(char **ret_error, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int fail(char **ret_error, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        if (vasprintf(ret_error, format, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return -EINVAL;
}

/* Checks every assignment and key; on error says which and why. */
static int edit_check(const char *const *set, size_t n_set, const char *const *unset, size_t n_unset, char **ret_error) {
        for (size_t i = 0; i < n_set; i++) {
                const char *eq = strchr(set[i], '=');

                if (!eq || !key_syntax_ok(set[i], (size_t) (eq - set[i])))
                        return fail(ret_error, "'%s': expected KEY=VALUE, KEY made of letters and digits", set[i]);
                if (strpbrk(eq + 1, "\r\n"))
                        return fail(ret_error, "'%.*s=': a value cannot contain a line break",
                                    (int) (eq - set[i]), set[i]);
        }
        for (size_t i = 0; i < n_unset; i++)
                if (!key_syntax_ok(unset[i], strlen(unset[i])) || !key_known(unset[i], strlen(unset[i]))) {
                        _cleanup_free_ char *keys = known_keys();
                        return fail(ret_error, "unknown key %s= in [Policy] (known keys: %s)", unset[i],
                                    strna(keys));
                }
        return 0;
}

/* The key a line assigns (libinih: up to '=' or ':', right-trimmed), or length 0. */
static size_t line_key(const char *t, const char **ret_key) {
        size_t len = strcspn(t, "=:");

        if (t[len] == '\0')
                return 0;
        while (len > 0 && isspace((unsigned char) t[len - 1]))
                len--;
        *ret_key = t;
        return len;
}

static bool assignment_has_key(const char *a, const char *key, size_t len) {
        return strncmp(a, key, len) == 0 && a[len] == '=';
}

static bool list_has_key(const char *const *list, size_t n, const char *key, size_t len, bool assignments) {
        for (size_t i = 0; i < n; i++)
                if (assignments ? assignment_has_key(list[i], key, len)
                                : (strlen(list[i]) == len && strncmp(list[i], key, len) == 0))
                        return true;
        return false;
}

typedef struct Edit {
        const char *const *set;
        size_t n_set;
        const char *const *unset;
        size_t n_unset;
        bool *emitted;          /* per assignment */
        Lines out;
        size_t policy_end;      /* where assignments of new keys go */
        bool policy_seen;
} Edit;

/* Emits every assignment of `key` where its first old line was. */
static int edit_emit_key(Edit *e, const char *key, size_t len) {
        for (size_t i = 0; i < e->n_set; i++) {
                int r;

                if (e->emitted[i] || !assignment_has_key(e->set[i], key, len))
                        continue;
                r = lines_push(&e->out, e->set[i]);
                if (r < 0)
                        return r;
                e->emitted[i] = true;
        }
        e->policy_end = e->out.n;
        return 0;
}

static int edit_push(Edit *e, const char *line, bool in_policy) {
        int r = lines_push(&e->out, line);

        if (r >= 0 && in_policy)
                e->policy_end = e->out.n;
        return r;
}

/*
 * Goes through the old lines as libinih reads them: after a key, an indented
 * line that is not a comment continues that key's value (even after blank
 * lines, and even if it starts with '['), so it goes or stays with its key.
 */
static int edit_lines(Edit *e, const Lines *old) {
        bool in_policy = false, after_key = false, skipping = false;
        int r;

        for (size_t i = 0; i < old->n; i++) {
                const char *line = old->v[i], *t = line, *key;
                size_t klen;

                while (isspace((unsigned char) *t))
                        t++;
                if (!*t || strchr(";#", *t))
                        r = lines_push(&e->out, line);          /* blank or comment: kept, changes nothing */
                else if (t != line && after_key)
                        r = skipping ? 0 : edit_push(e, line, in_policy);
                else if (*t == '[') {
                        in_policy = strncmp(t, "[Policy]", 8) == 0;
                        e->policy_seen |= in_policy;
                        after_key = skipping = false;
                        r = edit_push(e, line, in_policy);
                } else {
                        after_key = true;
                        klen = line_key(t, &key);
                        skipping = in_policy && klen > 0 &&
                                   (list_has_key(e->set, e->n_set, key, klen, true) ||
                                    list_has_key(e->unset, e->n_unset, key, klen, false));
                        r = skipping ? edit_emit_key(e, key, klen) : edit_push(e, line, in_policy);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Whether the first line from `at` that is not blank or a comment is indented. */
static bool next_is_indented(const Lines *l, size_t at) {
        for (size_t i = at; i < l->n; i++) {
                const char *t = l->v[i];

                while (isspace((unsigned char) *t))
                        t++;
                if (*t && !strchr(";#", *t))
                        return t != l->v[i];
        }
        return false;
}

/* Assignments of keys the old text did not have go to the end of [Policy], grouped by key. */
static int edit_append_new(Edit *e) {
        int r;

        for (size_t i = 0; i < e->n_set; i++) {
                if (e->emitted[i])
                        continue;
                /* An indented line right after the insertion point would turn into a continuation
                 * of what is inserted: then the new keys go to a [Policy] of their own at the end. */
                if (e->policy_seen && next_is_indented(&e->out, e->policy_end))
                        e->policy_seen = false;
                if (!e->policy_seen) {
                        if (e->out.n > 0 && e->out.v[e->out.n - 1][0] != '\0' && (r = lines_push(&e->out, "")) < 0)
                                return r;
                        if ((r = lines_push(&e->out, "[Policy]")) < 0)
                                return r;
                        e->policy_seen = true;
                        e->policy_end = e->out.n;
                }
                /* All assignments of one key together, as a later edit will put them. */
                for (size_t j = i; j < e->n_set; j++) {
                        if (e->emitted[j] || !assignment_has_key(e->set[j], e->set[i], strcspn(e->set[i], "=")))
                                continue;
                        r = lines_insert(&e->out, e->policy_end++, e->set[j], strlen(e->set[j]));
                        if (r < 0)
                                return r;
                        e->emitted[j] = true;
                }
        }
        return 0;
}

static int edit_new_file(Lines *l, const char *name, bool has_match) {
        _cleanup_free_ char *match = NULL;
        int r;

        r = lines_push(l, "# Written by mdreclaimd for 'mdctl policy set'. Edits by hand are kept:");
        if (r >= 0)
                r = lines_push(l, "# set and unset replace only the lines of the keys they name.");
        if (r >= 0)
                r = lines_push(l, "[Policy]");
        if (r < 0 || has_match || !cgroup_path_unit(name))
                return r;
        if (asprintf(&match, "Match=%s", name) < 0)
                return -ENOMEM;
        return lines_push(l, match);
}

int policy_text_edit(const char *old, const char *name, const char *const *set, size_t n_set,
                     const char *const *unset, size_t n_unset, char **ret_text, char **ret_error) {
        _cleanup_free_ bool *emitted = NULL;
        Lines old_lines = {};
        Edit e = { .set = set, .n_set = n_set, .unset = unset, .n_unset = n_unset };
        char *text = NULL;
        int r;

        *ret_error = NULL;
        r = edit_check(set, n_set, unset, n_unset, ret_error);
        if (r < 0)
                return r;
        e.emitted = emitted = calloc(n_set + 1, sizeof(bool));
        if (!emitted)
                return -ENOMEM;
        if (old)
                r = lines_split(&old_lines, old);
        else
                r = edit_new_file(&old_lines, name, list_has_key(set, n_set, "Match", 5, true));
        if (r >= 0)
                r = edit_lines(&e, &old_lines);
        if (r >= 0)
                r = edit_append_new(&e);
        if (r >= 0 && !(text = lines_join(&e.out)))
                r = -ENOMEM;
        lines_clear(&old_lines);
        lines_clear(&e.out);
        if (r < 0)
                return r;
        *ret_text = text;
        return 0;
}

void policy_change_free(PolicyChange *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n_set; i++)
                free(c->set[i]);
        for (size_t i = 0; i < c->n_unset; i++)
                free(c->unset[i]);
        free(c->set);
        free(c->unset);
        free(c->root);
        free(c->name);
        free(c);
}

/* ---- the files ---- */

typedef enum FileState { FILE_ABSENT, FILE_MASKED, FILE_PRESENT } FileState;

static FileState file_state(const char *path) {
        struct stat st;

        if (stat(path, &st) < 0)
                return errno == ENOENT ? FILE_ABSENT : FILE_PRESENT; /* present: let the loader say what is wrong */
        if ((S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) || (S_ISREG(st.st_mode) && st.st_size == 0))
                return FILE_MASKED;
        return FILE_PRESENT;
}

static char *policy_path(const char *root, size_t dir, const char *name) {
        char *p;

        if (asprintf(&p, "%s%s/" CONFIG_POLICY_DIR "/%s.conf", root, config_dirs[dir], name) < 0)
                return NULL;
        return p;
}

/*
 * The file that defines the policy, looking from directory `top` down (a
 * higher directory masks a lower one), or NULL if none does.
 */
static int policy_locate(const char *root, const char *name, size_t top, char **ret_path) {
        *ret_path = NULL;
        for (size_t i = top + 1; i > 0; i--) {
                _cleanup_free_ char *p = policy_path(root, i - 1, name);
                FileState s;

                if (!p)
                        return -ENOMEM;
                s = file_state(p);
                if (s == FILE_ABSENT)
                        continue;
                if (s == FILE_PRESENT)
                        *ret_path = TAKE_PTR(p);
                return 0;
        }
        return 0;
}

#define DIR_ETC (ELEMENTSOF(config_dirs) - 1)

/* Sets *ret_message and returns r (errno is read before anything can change it). */
static int failf(int r, char **ret_message, const char *format, ...) __attribute__((format(printf, 3, 4)));
static int failf(int r, char **ret_message, const char *format, ...) {
        va_list ap;

        errno = -r;
        va_start(ap, format);
        if (vasprintf(ret_message, format, ap) < 0)
                *ret_message = NULL;
        va_end(ap);
        return r;
}

/* Reads a policy file to edit; the loader's reader refuses what is not a small regular file. */
static int read_small(const char *path, char **ret, char **ret_message) {
        _cleanup_free_ char *buf = NULL;
        ConfDiag d = {};
        size_t n;
        int r;

        r = conf_file_read(path, POLICY_FILE_MAX, &buf, &n, &d);
        if (r < 0 && d.n_messages > 0)
                r = failf(r, ret_message, "%s, not edited", d.messages[0]);
        conf_diag_clear(&d);
        if (r < 0)
                return r;
        if (memchr(buf, 0, n))
                return failf(-EINVAL, ret_message, "%s: holds a NUL byte, not edited", path);
        *ret = TAKE_PTR(buf);
        return 0;
}

static int mkdir_parents(const char *path) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; ; s++) {
                if (*s != '/' && *s != '\0')
                        continue;
                char c = *s;
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return negative_errno();
                if (c == '\0')
                        return 0;
                *s = c;
        }
}

/* Replaces every `from` in `s` by `to`. */
static char *str_replace_all(const char *s, const char *from, const char *to) {
        size_t fl = strlen(from), tl = strlen(to), n = 0;
        char *out, *o;

        for (const char *p = s; (p = strstr(p, from)); p += fl)
                n++;
        out = o = malloc(strlen(s) + n * (tl > fl ? tl - fl : 0) + 1);
        if (!out)
                return NULL;
        for (const char *p = s, *q; ; p = q + fl) {
                q = strstr(p, from);
                if (!q) {
                        strcpy(o, p);
                        break;
                }
                memcpy(o, p, (size_t) (q - p));
                o = stpcpy(o + (q - p), to);
        }
        return out;
}

/* The loader's messages, one per line, naming the real file instead of the candidate. */
static char *diag_text(const ConfDiag *d, const char *candidate, const char *final) {
        Lines l = {};
        char *s = NULL;

        for (size_t i = 0; i < d->n_messages; i++) {
                _cleanup_free_ char *m = candidate ? str_replace_all(d->messages[i], candidate, final)
                                                   : strdup(d->messages[i]);
                if (!m || lines_push(&l, m) < 0)
                        goto out;
        }
        if (d->n_dropped) {
                char more[64];
                snprintf(more, sizeof(more), "... and %zu more errors", d->n_dropped);
                if (lines_push(&l, more) < 0)
                        goto out;
        }
        s = lines_join(&l);
        if (s && *s)
                s[strlen(s) - 1] = '\0';
out:
        lines_clear(&l);
        return s;
}

/* Loads the whole configuration as it would be with the candidate; -EINVAL with messages if refused. */
static int validate(const PolicyChange *c, const char *candidate, const char *final, char **ret_message) {
        _cleanup_(config_freep) Config *config = NULL;
        ConfDiag diag = {};
        int r;

        r = config_load_with_policy(c->root, c->name, candidate, &config, &diag);
        if (r < 0 && r != -ENOMEM) {
                *ret_message = diag_text(&diag, candidate, final);
                r = -EINVAL;
        }
        conf_diag_clear(&diag);
        return r;
}

/*
 * A candidate of NAME is ".NAME.conf." and 16 lower-case hex digits: hidden
 * and not ending in ".conf", so that the loader never takes it for a policy,
 * and recognisable, so that one a crash left behind can be removed.
 */
#define TEMP_INFIX ".conf."
#define TEMP_HEX_DIGITS 16
#define TEMP_NAME_MAX (1 + POLICY_NAME_MAX + sizeof(TEMP_INFIX) + TEMP_HEX_DIGITS)

/* A new name in `dirfd` for a candidate of `name`. */
static void temp_name(char buf[static TEMP_NAME_MAX], const char *name) {
        uint64_t rnd = 0;

        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
                rnd ^= (uint64_t) getpid() << 32 ^ (uint64_t) (uintptr_t) buf;
        snprintf(buf, TEMP_NAME_MAX, ".%s" TEMP_INFIX "%0*llx", name, TEMP_HEX_DIGITS, (unsigned long long) rnd);
}

/* Whether `file` is a name temp_name() gives. */
static bool temp_name_match(const char *file) {
        const size_t tail = strlen(TEMP_INFIX) + TEMP_HEX_DIGITS, l = strlen(file);
        char name[POLICY_NAME_MAX + 1];

        if (file[0] != '.' || l <= 1 + tail || l - 1 - tail > POLICY_NAME_MAX)
                return false;
        if (strncmp(file + l - tail, TEMP_INFIX, strlen(TEMP_INFIX)) != 0 ||
            strspn(file + l - TEMP_HEX_DIGITS, "0123456789abcdef") != TEMP_HEX_DIGITS)
                return false;
        memcpy(name, file + 1, l - 1 - tail);
        name[l - 1 - tail] = '\0';
        return policy_name_settable(name, NULL);
}

static int write_all(int fd, const char *text) {
        size_t left = strlen(text);

        while (left > 0) {
                ssize_t k = write(fd, text, left);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                text += k;
                left -= (size_t) k;
        }
        return 0;
}

/* Writes `text` to a new hidden file in dirfd, fsynced. */
static int write_candidate(int dirfd, const char *name, const char *text, char ret_name[static TEMP_NAME_MAX]) {
        _cleanup_close_ int fd = -1;
        int r;

        for (int tries = 0; fd < 0; tries++) {
                temp_name(ret_name, name);
                fd = openat(dirfd, ret_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
                if (fd < 0 && (errno != EEXIST || tries > 8))
                        return negative_errno();
        }
        r = write_all(fd, text);
        if (r >= 0 && fchmod(fd, 0644) < 0)
                r = negative_errno();
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r < 0)
                (void) unlinkat(dirfd, ret_name, 0);
        return r;
}

/* Puts the candidate in place: rename over the old file, then fsync the directory. */
static int commit(int dirfd, const char *tmp, const char *final_name) {
        if (renameat(dirfd, tmp, dirfd, final_name) < 0) {
                int r = negative_errno();
                (void) unlinkat(dirfd, tmp, 0);
                return r;
        }
        return fsync(dirfd) < 0 ? negative_errno() : 0;
}

typedef struct Target {
        char *dir;              /* root/etc/mdreclaim/policies.d */
        char *path;             /* dir/NAME.conf */
        char *file;             /* NAME.conf */
        int dirfd;
} Target;

static void target_clear(Target *t) {
        free(t->dir);
        free(t->path);
        free(t->file);
        closep(&t->dirfd);
}

/* root/etc/mdreclaim/policies.d, the one the writer writes in. */
static char *writable_dir(const char *root) {
        char *s;

        if (asprintf(&s, "%s%s/" CONFIG_POLICY_DIR, root, config_dirs[DIR_ETC]) < 0)
                return NULL;
        return s;
}

static int target_open(const PolicyChange *c, Target *t, char **ret_message) {
        int r;

        *t = (Target) { .dirfd = -1 };
        if (!(t->dir = writable_dir(c->root)) ||
            asprintf(&t->file, "%s.conf", c->name) < 0 || asprintf(&t->path, "%s/%s", t->dir, t->file) < 0)
                return -ENOMEM;
        r = mkdir_parents(t->dir);
        if (r >= 0) {
                t->dirfd = open(t->dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
                if (t->dirfd < 0)
                        r = negative_errno();
        }
        if (r < 0)
                return failf(r, ret_message, "%s: cannot create or open the directory: %m", t->dir);
        return r;
}

static int apply_edit(const PolicyChange *c, Target *t, char **ret_message) {
        _cleanup_free_ char *current = NULL, *old = NULL, *text = NULL, *candidate = NULL;
        char tmp[TEMP_NAME_MAX];
        int r;

        r = policy_locate(c->root, c->name, DIR_ETC, &current);
        if (r < 0)
                return r;
        if (!current && c->n_unset > 0)
                return failf(-ENOENT, ret_message, "no policy '%s'", c->name);
        if (current && (r = read_small(current, &old, ret_message)) < 0)
                return r;
        r = policy_text_edit(old, c->name, (const char *const *) c->set, c->n_set,
                             (const char *const *) c->unset, c->n_unset, &text, ret_message);
        if (r < 0)
                return r;
        r = write_candidate(t->dirfd, c->name, text, tmp);
        if (r < 0)
                return failf(r, ret_message, "%s: cannot write a new file: %m", t->dir);
        if (asprintf(&candidate, "%s/%s", t->dir, tmp) < 0) {
                (void) unlinkat(t->dirfd, tmp, 0);
                return -ENOMEM;
        }
        r = validate(c, candidate, t->path, ret_message);
        if (r < 0) {
                (void) unlinkat(t->dirfd, tmp, 0);
                return r;
        }
        r = commit(t->dirfd, tmp, t->file);
        if (r < 0)
                return failf(r, ret_message, "%s: cannot put the new file in place: %m", t->path);
        return 0;
}

/* Removes the policy: the /etc file goes; a file of a lower directory is masked. */
static int apply_remove(const PolicyChange *c, Target *t, char **ret_message) {
        _cleanup_free_ char *current = NULL, *lower = NULL;
        char tmp[TEMP_NAME_MAX];
        int r;

        r = policy_locate(c->root, c->name, DIR_ETC, &current);
        if (r >= 0)
                r = policy_locate(c->root, c->name, DIR_ETC - 1, &lower);
        if (r < 0)
                return r;
        if (!current)
                return failf(-ENOENT, ret_message, "no policy '%s'", c->name);
        r = validate(c, NULL, NULL, ret_message);
        if (r < 0)
                return r;
        if (!lower) {
                if (unlinkat(t->dirfd, t->file, 0) < 0 && errno != ENOENT)
                        return failf(negative_errno(), ret_message, "%s: cannot remove: %m", t->path);
                if (fsync(t->dirfd) < 0)
                        return failf(negative_errno(), ret_message, "%s: cannot sync: %m", t->dir);
                return 0;
        }
        temp_name(tmp, c->name);
        if (symlinkat("/dev/null", t->dirfd, tmp) < 0)
                return failf(negative_errno(), ret_message, "%s: cannot create a mask: %m", t->dir);
        r = commit(t->dirfd, tmp, t->file);
        if (r < 0)
                return failf(r, ret_message, "%s: cannot mask %s: %m", t->path, lower);
        return 0;
}

int policy_store_apply(const PolicyChange *c, char **ret_path, char **ret_message) {
        Target t;
        const char *why;
        int r;

        *ret_message = NULL;
        if (!policy_name_settable(c->name, &why))
                return failf(-EINVAL, ret_message, "invalid policy name '%s': %s", c->name, why);
        r = target_open(c, &t, ret_message);
        if (r >= 0)
                r = c->remove ? apply_remove(c, &t, ret_message) : apply_edit(c, &t, ret_message);
        if (r >= 0)
                *ret_path = TAKE_PTR(t.path);
        target_clear(&t);
        return r;
}

/* Whether `file` in dirfd is a candidate left over: a regular file, or a mask link not renamed yet. */
static bool is_leftover(int dirfd, const char *file) {
        char target[sizeof("/dev/null")];
        struct stat st;
        ssize_t n;

        if (!temp_name_match(file) || fstatat(dirfd, file, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return false;
        if (S_ISREG(st.st_mode))
                return true;
        if (!S_ISLNK(st.st_mode))
                return false;
        n = readlinkat(dirfd, file, target, sizeof(target));
        return n == (ssize_t) strlen("/dev/null") && memcmp(target, "/dev/null", (size_t) n) == 0;
}

int policy_store_clean_stale(const char *config_root) {
        _cleanup_free_ char *dir = NULL;
        struct dirent *de;
        DIR *d;
        int removed = 0, r = 0;

        if (!config_root || streq(config_root, "/"))
                config_root = "";
        dir = writable_dir(config_root);
        if (!dir)
                return -ENOMEM;
        d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : log_debug_errno(errno, "%s: cannot open: %m", dir);
        while ((de = readdir(d))) {
                if (!is_leftover(dirfd(d), de->d_name))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
                        r = log_debug_errno(errno, "%s/%s: cannot remove: %m", dir, de->d_name);
                        continue;
                }
                log_info("%s/%s: removed, left over by an interrupted policy change", dir, de->d_name);
                removed++;
        }
        closedir(d);
        return r < 0 ? r : removed;
}

int policy_store_read_text(const char *path, char **ret_text) {
        _cleanup_free_ char *text = NULL;
        ConfDiag diag = {};
        size_t size;
        int r;

        r = conf_file_read(path, POLICY_FILE_MAX, &text, &size, &diag);
        conf_diag_clear(&diag);
        if (r < 0)
                return r;
        if (memchr(text, 0, size))
                return -EBADMSG;
        *ret_text = TAKE_PTR(text);
        return 0;
}
