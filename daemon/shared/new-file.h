/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A file created afresh below a directory fd, for the files the daemon
 * writes whole and then renames into place (the ledger, the metrics
 * textfile, the sample history): never through a link someone put there,
 * never over a file that exists (O_EXCL), close-on-exec.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Creates `name` below `dfd` with `mode` and returns it as a stream for writing. Negative errno. */
int new_file_at(int dfd, const char *name, mode_t mode, FILE **ret);

/* Fills a stream; negative errno. */
typedef int (*FileWriter)(FILE *f, void *userdata);

/*
 * Writes dir/name whole through a new dir/tmp (what a stop in the middle or
 * someone else left there is removed first) with `mode`, fsynced if `sync`,
 * renamed over dir/name: a reader sees the old file or the new one. On
 * failure the temporary file is removed. Negative errno.
 */
int replace_file(const char *dir, const char *name, const char *tmp, mode_t mode, bool sync, FileWriter write,
                 void *userdata);
