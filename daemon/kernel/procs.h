/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which processes a cgroup holds and which files they write: cgroup.procs
 * below a cgroup's directory fd, and /proc/PID/fdinfo's open flags. Used by
 * the writeback job to find the files to start writing back.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The cgroup's pids (cgroup.procs below dirfd), at most `max`. Returns how many, or a negative errno. */
int cg_read_procs(int dirfd, pid_t *pids, size_t max);

/* Whether fd `name` of a process is open for writing, from its fdinfo directory ("flags:\t0100001"). */
bool proc_fd_writable(int fdinfo_dirfd, const char *name);
