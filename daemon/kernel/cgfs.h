/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cgroupfs access layer: the one place that opens files under the cgroup
 * root. It takes a root directory (the cgroup2 mount in production, a
 * fixture tree in tests), opens cgroups relative to it with openat, keeps the
 * files it reads open and rereads them with pread, and reports a cgroup that
 * went away as -ENOENT or -ENODEV. It follows no symbolic link below the
 * root: a link where an interface file should be is -ELOOP, one where a
 * cgroup directory should be -ENOTDIR.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum CgFile {
        CG_MEMORY_CURRENT,
        CG_MEMORY_STAT,
        CG_MEMORY_EVENTS,
        CG_MEMORY_HIGH,
        CG_MEMORY_MAX,
        CG_MEMORY_LOW,
        CG_MEMORY_MIN,
        CG_MEMORY_PRESSURE,
        CG_IO_PRESSURE,
        CG_IO_STAT,
        CG_IO_MAX,
        CG_MEMORY_SWAP_MAX,
        CG_CGROUP_CONTROLLERS,
        _CG_FILE_MAX,
} CgFile;

const char *cg_file_name(CgFile f);

/* Bound on cgroups one walk visits, and on nesting depth. */
#define CG_WALK_MAX 200000
#define CG_DEPTH_MAX 64

typedef struct CgRoot {
        int fd;
        char *path;
        bool is_cgroup2;        /* a cgroup2 mount, not a fixture tree or a wrong path */
} CgRoot;

/* Opens the root; one that is not a cgroup2 file system is opened all the
 * same (fixture trees) with a warning naming it, and ->is_cgroup2 false. */
int cg_root_open(const char *path, CgRoot **ret);
CgRoot *cg_root_free(CgRoot *root);
static inline void cg_root_freep(CgRoot **r) {
        if (*r)
                cg_root_free(*r);
}

typedef struct Cgroup {
        uint64_t id;            /* inode number of the cgroup's directory */
        int dirfd;
        unsigned absent;        /* bit per CgFile the sampler found missing */
        int *fds;               /* _CG_FILE_MAX files kept open (-1: not), allocated with the first kept:
                                 * most of a large tree is read now and then and keeps none */
        char path[];            /* relative to the root, "/" for the root; in the same allocation */
} Cgroup;

/* Opens the cgroup at `path` ("/" or "/a/b"). -ENOENT if it does not exist,
 * -ENOTDIR if a link stands anywhere on the way, -EINVAL for "." or "..". */
int cgroup_open(const CgRoot *root, const char *path, Cgroup **ret);
Cgroup *cgroup_free(Cgroup *cg);
static inline void cgroup_freep(Cgroup **c) {
        if (*c)
                cgroup_free(*c);
}

/*
 * Reads file `f` whole into buf (NUL-terminated; *ret_len excludes the NUL).
 * The file stays open for the next read. -ENOENT: the cgroup has no such
 * file (controller not enabled, root cgroup); -ENODEV or -ENOENT: the cgroup
 * was removed; -EFBIG: it did not fit.
 */
int cgroup_read(Cgroup *cg, CgFile f, char *buf, size_t size, size_t *ret_len);

/* Like cgroup_read, for files read once per rescan: the file is closed again,
 * since an open cgroupfs file that has been read holds a page of kernel
 * memory (its seq_file buffer), charged to the reader's cgroup. */
int cgroup_read_once(Cgroup *cg, CgFile f, char *buf, size_t size, size_t *ret_len);

/* Closes every file kept open for the cgroup (its directory fd stays). */
void cgroup_close_files(Cgroup *cg);
/* The descriptor kept open for file f, or -1. */
static inline int cgroup_kept_fd(const Cgroup *cg, CgFile f) {
        return cg->fds && f < _CG_FILE_MAX ? cg->fds[f] : -1;
}

/* Closes the cgroup's files and directory: a cgroup read now and then holds no fd in between. */
void cgroup_detach(Cgroup *cg);
/* Opens a detached cgroup's directory again (nothing to do if open). -ENODEV if it is gone, or if
 * another cgroup took its path (its inode is not the id). */
int cgroup_attach(const CgRoot *root, Cgroup *cg);
static inline bool cgroup_attached(const Cgroup *cg) {
        return cg->dirfd >= 0;
}

/*
 * Files a live cgroup lacks (a controller not enabled there), as the sampler
 * found them: it skips them at each tick instead of looking them up again,
 * and the observer forgets them at each rescan, so that a controller enabled
 * since is seen within one rescan interval.
 */
static inline bool cgroup_file_absent(const Cgroup *cg, CgFile f) {
        return cg->absent & (1u << f);
}

static inline void cgroup_mark_absent(Cgroup *cg, CgFile f) {
        cg->absent |= 1u << f;
}

static inline void cgroup_forget_absent(Cgroup *cg) {
        cg->absent = 0;
}

/* Writes `data` to the named file in one write() and checks its length.
 * The errno is the kernel's: -EAGAIN from memory.reclaim is an outcome. */
int cgroup_write(Cgroup *cg, const char *file, const char *data);

/* Writes `data` to `file` below a cgroup directory fd in one write() and
 * checks its length; for workers that hold a duplicate of a cgroup's fd. */
int cg_dir_write(int dirfd, const char *file, const char *data);

/* Reads a single-value file ("123" or "max") below a cgroup directory fd. */
int cg_dir_read_u64(int dirfd, const char *file, uint64_t *ret);

/* file_dirty + file_writeback of memory.stat below a cgroup directory fd, in bytes. */
int cg_dir_read_dirty(int dirfd, uint64_t *ret);
/* memory.stat's anon (what reclaim could only swap out), from the cgroup's directory. */
int cg_dir_read_anon(int dirfd, uint64_t *ret);

/* Whether any process is in the cgroup or below it (cgroup.events "populated"):
 * 1 or 0, or a negative errno (-ENOENT: no such key or file, as on a fixture). */
int cgroup_populated(Cgroup *cg);

/*
 * Adds a watch of the cgroup's cgroup.events to `inotify_fd`: the kernel
 * signals each change of the file (populated, frozen) as IN_MODIFY, and
 * IN_IGNORED once the cgroup is removed. Returns the watch descriptor, or a
 * negative errno.
 */
int cgroup_watch_events(Cgroup *cg, int inotify_fd);

/* Whether the cgroup's path still leads to it (opened afresh, its inode checked): 1 or 0, or a negative
 * errno (-EMFILE). */
int cgroup_path_holds(const CgRoot *root, const Cgroup *cg);

/* Whether the cgroup was removed since it was opened. (One recreated under
 * the same path is another cgroup, with another id.) */
bool cgroup_gone(const Cgroup *cg);

/*
 * Visits the root and every cgroup below it, parents before children, with
 * paths relative to the root. Children that vanish during the walk are
 * skipped. Returns the number visited, or a negative errno if the root
 * itself cannot be read or the callback fails. A subtree that exists but
 * cannot be opened (EMFILE/ENFILE, EACCES) is not visited: nothing is
 * logged, and *ret_skipped counts them. The caller says so (a warning: their
 * cgroups are missing from this scan, not removed; out of descriptors, raise
 * LimitNOFILE=).
 */
typedef int (*CgWalkFn)(const char *path, uint64_t id, void *userdata);
int cg_root_walk_full(const CgRoot *root, CgWalkFn fn, void *userdata, unsigned *ret_skipped);
/* The same from the cgroup at `from` ("/a/b") and below it: -ENOENT or -ENOTDIR if it is not there. */
int cg_root_walk_below(const CgRoot *root, const char *from, CgWalkFn fn, void *userdata, unsigned *ret_skipped);
