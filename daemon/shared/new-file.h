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
