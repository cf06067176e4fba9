/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reads one INI-style file through libinih and turns its conventions into
 * ours: every key reaches the handler with its file and line, every problem
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

typedef struct ConfDiag {
        char **messages;
        size_t n_messages;
        size_t n_dropped;
} ConfDiag;

void conf_diag_add(ConfDiag *d, const char *file, unsigned line, const char *format, ...)
        __attribute__((format(printf, 4, 5)));
size_t conf_diag_count(const ConfDiag *d);
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
 * Parses `path`. `sections` is a NULL-terminated list of the sections the
 * file may hold. Returns 0 if the file parsed without any diagnostic,
 * -EINVAL if diagnostics were added, or another negative errno if the file
 * could not be read (also recorded).
 */
int conf_file_parse(const char *path, const char *const *sections,
                    ConfKeyHandler handler, void *userdata, ConfDiag *diag);
