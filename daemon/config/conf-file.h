/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reads one INI-style file through libinih and turns its conventions into
 * ours: the file is read whole first, and only if it is a regular file of a
 * bounded size (a FIFO, a device or a runaway file would block or never end);
 * every key reaches the handler with its file and line, every problem
 * (syntax, unknown section, a line libinih would truncate, a '#' comment
 * where libinih only knows ';') is recorded with file:line in a ConfDiag,
 * and errors are negative errno values.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The libinih Debian ships keeps 200 bytes per line, terminator included. */
#define CONF_LINE_MAX 200
/* Bound on recorded diagnostics; further ones are only counted. */
#define CONF_DIAG_MAX 256
/* Bound on the size of one configuration or policy file (docs/configuration.md). */
#define CONF_FILE_SIZE_MAX (1024 * 1024)

typedef struct ConfDiag {
        char **messages;
        size_t n_messages;
        size_t n_dropped;
} ConfDiag;

void conf_diag_add(ConfDiag *d, const char *file, unsigned line, const char *format, ...)
        __attribute__((format(printf, 4, 5)));
size_t conf_diag_count(const ConfDiag *d);
/* Whether further diagnostics are only counted (in n_dropped). */
bool conf_diag_full(const ConfDiag *d);
void conf_diag_clear(ConfDiag *d);

typedef struct ConfLocation {
        const char *file;
        unsigned line;
} ConfLocation;

/*
 * Called for each key. Returns 0, or a negative errno after adding a
 * diagnostic itself; parsing continues either way so that all errors of a
 * file are reported at once.
 */
typedef int (*ConfKeyHandler)(void *userdata, const ConfLocation *loc, const char *section,
                              const char *key, const char *value, ConfDiag *diag);

/*
 * Reads `path` whole without ever blocking: it must be a regular file, named
 * directly or through links, of at most `max` bytes. Anything else is looked
 * at but not opened for reading. Returns 0 with the text in *ret_text (NUL
 * added; NUL bytes of the file are kept and counted in *ret_size), or a
 * negative errno after adding "path: why" to `diag`: -EISDIR, -EBADFD for a
 * FIFO, device or socket, -EFBIG, or the error of stat, open or read.
 */
int conf_file_read(const char *path, size_t max, char **ret_text, size_t *ret_size, ConfDiag *diag);

/*
 * Parses the `size` bytes at `text`, read from `path` (which messages name).
 * `sections` is a NULL-terminated list of the sections the file may hold.
 * Returns 0 if it parsed without any diagnostic, -EINVAL if diagnostics were
 * added.
 */
int conf_file_parse_text(const char *path, const char *text, size_t size, const char *const *sections,
                         ConfKeyHandler handler, void *userdata, ConfDiag *diag);

/*
 * conf_file_read() of at most CONF_FILE_SIZE_MAX bytes, then
 * conf_file_parse_text(). Returns 0, -EINVAL if diagnostics were added, or
 * the error of conf_file_read().
 */
int conf_file_parse(const char *path, const char *const *sections,
                    ConfKeyHandler handler, void *userdata, ConfDiag *diag);
