/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The *.conf files of a configuration folder as the three directories give
 * them (conf.h: a later directory's file replaces an earlier one of the same
 * name), in name order, and the paths around them. Private to the config
 * layer: conf.c reads the daemon's drop-ins and the policies through it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "conf-file.h"

typedef struct ConfFile {
        char *name;             /* "x.conf" */
        char *path;             /* where the directory of highest priority that has it keeps it */
} ConfFile;

typedef struct ConfFileList {
        ConfFile *files;
        size_t n;
} ConfFileList;

/* "a/b/c" of the parts given; an empty or NULL b or c is left out with its slash. NULL: out of memory. */
char *conf_path_join(const char *a, const char *b, const char *c);

/* Whether `path` is a link to /dev/null: it masks the file of the same name in a lower directory. */
bool conf_file_is_masked(const char *path);

void conf_file_list_clear(ConfFileList *l);

/*
 * The *.conf files of `subdir` below each of `dirs` (absolute, lowest
 * priority first) under `root`, sorted by name. A directory that does not
 * exist adds nothing; one that cannot be read, or holds more than
 * CONFIG_DIR_FILES_MAX of them, is reported in `diag` and adds what was read
 * before. Returns 0, or -ENOMEM (nothing returned then).
 */
int conf_file_list_collect(const char *root, const char *const *dirs, size_t n_dirs, const char *subdir,
                           ConfFileList *ret, ConfDiag *diag);

/* Points the file of policy `name` at `path` (NULL: drops it), as if the directories said so. */
int conf_file_list_override(ConfFileList *l, const char *name, const char *path);
