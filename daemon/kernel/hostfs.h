/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host's files outside the cgroup tree: /proc/pressure, /proc/meminfo,
 * /proc/vmstat, and /sys/fs for filesystem metadata. Like the cgroupfs layer
 * it takes root directories (the real /proc and /sys in production, fixture
 * trees in tests) and keeps the files it rereads open.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef enum HostFile {
        HOST_PRESSURE_MEMORY,
        HOST_PRESSURE_IO,
        HOST_MEMINFO,
        HOST_VMSTAT,
        _HOST_FILE_MAX,
} HostFile;

typedef struct HostRoot {
        int proc_fd;
        int sys_fd;             /* -1 if unavailable */
        char *proc_path;
        char *sys_path;
        int fds[_HOST_FILE_MAX];
} HostRoot;

/* proc_path must open; a missing sys_path only disables metadata providers. */
int host_root_open(const char *proc_path, const char *sys_path, HostRoot **ret);
HostRoot *host_root_free(HostRoot *h);
static inline void host_root_freep(HostRoot **h) {
        if (*h)
                host_root_free(*h);
}

int host_read(HostRoot *h, HostFile f, char *buf, size_t size, size_t *ret_len);

/* vm.dirty_ratio in percent (what the kernel's per-cgroup dirty limit is a share of); 20 if unreadable. */
uint32_t host_read_dirty_ratio(const HostRoot *h);

/* The host's dirty data and data under writeback (meminfo's Dirty: and Writeback:), in bytes;
 * -EBADMSG if meminfo lacks either. */
int host_read_dirty_bytes(HostRoot *h, uint64_t *ret);

/* The calling process's cgroup v2 path ("0::/path" in /proc/self/cgroup), newly allocated; NULL if unknown. */
char *host_read_own_cgroup(const HostRoot *h);

/* How many file descriptors this process has open, from the real /proc/self/fd (never a fixture's:
 * the figure is the daemon's own), or a negative errno. */
int host_count_own_fds(void);
