/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A file created afresh below a directory fd, for the files the daemon
 * writes whole and then renames into place (the ledger, the metrics
 * textfile): never through a link someone put there, never over a file that
 * exists (O_EXCL), close-on-exec.
 */
#pragma once

#include <stdio.h>
#include <sys/types.h>

/* Creates `name` below `dfd` with `mode` and returns it as a stream for writing. Negative errno. */
int new_file_at(int dfd, const char *name, mode_t mode, FILE **ret);

/*
 * Replaces `path` whole: `write` fills a new file "PATH.tmp" (a stale one, or
 * a link someone put there, is removed first, never written through), which
 * is synced and renamed over `path`, and the directory synced. Nothing is
 * left behind on failure. Returns 0 or a negative errno (`write`'s own).
 */
int file_replace(const char *path, mode_t mode, int (*write)(FILE *f, void *userdata), void *userdata);
