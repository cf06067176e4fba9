/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cgfs.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "cgparse.h"
#include "fileio.h"
#include "log.h"
#include "util.h"

static const char *const file_names[_CG_FILE_MAX] = {
        [CG_MEMORY_CURRENT] = "memory.current",
        [CG_MEMORY_STAT] = "memory.stat",
        [CG_MEMORY_EVENTS] = "memory.events",
        [CG_MEMORY_HIGH] = "memory.high",
        [CG_MEMORY_MAX] = "memory.max",
        [CG_MEMORY_LOW] = "memory.low",
        [CG_MEMORY_MIN] = "memory.min",
        [CG_MEMORY_PRESSURE] = "memory.pressure",
        [CG_IO_PRESSURE] = "io.pressure",
        [CG_IO_STAT] = "io.stat",
        [CG_IO_MAX] = "io.max",
        [CG_MEMORY_SWAP_MAX] = "memory.swap.max",
        [CG_CGROUP_CONTROLLERS] = "cgroup.controllers",
};

const char *cg_file_name(CgFile f) {
        return f < _CG_FILE_MAX ? file_names[f] : NULL;
}

/* Every open below a cgroup directory: never through a link, never a controlling tty. */
static int cg_openat(int dirfd, const char *name, int flags) {
        return openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
}

int cg_root_open(const char *path, CgRoot **ret) {
        _cleanup_free_ CgRoot *root = calloc(1, sizeof(CgRoot));
        struct statfs sfs;

        if (!root)
                return -ENOMEM;
        root->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root->fd < 0)
                return negative_errno();
        root->path = strdup(path);
        if (!root->path || fstatfs(root->fd, &sfs) < 0) {
                int r = root->path ? negative_errno() : -ENOMEM;
                closep(&root->fd);
                free(root->path);
                return r;
        }
        root->is_cgroup2 = sfs.f_type == CGROUP2_SUPER_MAGIC;
        if (!root->is_cgroup2)
                log_warning("%s is not a cgroup2 file system (f_type 0x%llx): its files are ordinary files, "
                            "not the kernel's cgroup interface", path, (unsigned long long) sfs.f_type);
        *ret = TAKE_PTR(root);
        return 0;
}

CgRoot *cg_root_free(CgRoot *root) {
        if (!root)
                return NULL;
        closep(&root->fd);
        free(root->path);
        free(root);
        return NULL;
}

/* The directory at `path` ("/", "/a/b") below the root, opened one component
 * at a time so that no link is followed on the way. No "." or "..". */
static int open_beneath_walk(int rootfd, const char *path) {
        _cleanup_close_ int fd = cg_openat(rootfd, ".", O_RDONLY | O_DIRECTORY);
        char name[NAME_MAX + 1];

        for (;;) {
                size_t n;
                int next;

                if (fd < 0)
                        return negative_errno();
                path += strspn(path, "/");
                n = strcspn(path, "/");
                if (n == 0)
                        return TAKE_FD(fd);
                if (n > NAME_MAX)
                        return -ENAMETOOLONG;
                memcpy(name, path, n);
                name[n] = '\0';
                if (streq(name, ".") || streq(name, ".."))
                        return -EINVAL;
                next = cg_openat(fd, name, O_RDONLY | O_DIRECTORY);
                closep(&fd);
                fd = next;
                path += n;
        }
}

/* The kernel lacks openat2() (before 5.6) or refuses it here (a seccomp filter): walk instead. */
static bool openat2_missing;

/*
 * open_beneath_walk() in one system call where the kernel has openat2():
 * RESOLVE_BENEATH refuses ".." and absolute links out of the root, and
 * RESOLVE_NO_SYMLINKS any link on the way (-ELOOP, as the walk's O_NOFOLLOW
 * gives -ENOTDIR: both are "not a cgroup of this root").
 */
static int open_beneath(int rootfd, const char *path) {
        struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS };
        const char *rel = path + strspn(path, "/");
        long fd;

        if (openat2_missing || strstr(path, "/.") || path[0] != '/')
                return open_beneath_walk(rootfd, path);
        fd = syscall(SYS_openat2, rootfd, *rel ? rel : ".", &how, sizeof(how));
        if (fd >= 0)
                return (int) fd;
        if (errno == ENOSYS || errno == EPERM) {
                openat2_missing = true;
                return open_beneath_walk(rootfd, path);
        }
        return errno == ELOOP || errno == EXDEV ? -ENOTDIR : negative_errno();
}

int cgroup_open(const CgRoot *root, const char *path, Cgroup **ret) {
        _cleanup_(cgroup_freep) Cgroup *cg = NULL;
        struct stat st;

        if (path[0] != '/')
                return -EINVAL;
        cg = calloc(1, sizeof(Cgroup) + strlen(path) + 1);
        if (!cg)
                return -ENOMEM;
        strcpy(cg->path, path);
        cg->dirfd = open_beneath(root->fd, path);
        if (cg->dirfd < 0)
                return cg->dirfd;
        if (fstat(cg->dirfd, &st) < 0)
                return negative_errno();
        cg->id = (uint64_t) st.st_ino;
        *ret = TAKE_PTR(cg);
        return 0;
}

Cgroup *cgroup_free(Cgroup *cg) {
        if (!cg)
                return NULL;
        cgroup_close_files(cg);
        closep(&cg->dirfd);
        free(cg);
        return NULL;
}

/* kept_read() of a file this layer opened itself, without following a link. */
static int read_kept(int dirfd, const char *name, int *fd, char *buf, size_t size, size_t *ret_len) {
        if (*fd < 0) {
                *fd = cg_openat(dirfd, name, O_RDONLY);
                if (*fd < 0)
                        return negative_errno();
        }
        return kept_read(dirfd, name, fd, buf, size, ret_len);
}

int cgroup_read(Cgroup *cg, CgFile f, char *buf, size_t size, size_t *ret_len) {
        if (f >= _CG_FILE_MAX)
                return -EINVAL;
        if (!cg->fds) {
                cg->fds = malloc(_CG_FILE_MAX * sizeof(int));
                if (!cg->fds)
                        return -ENOMEM;
                for (size_t i = 0; i < _CG_FILE_MAX; i++)
                        cg->fds[i] = -1;
        }
        return read_kept(cg->dirfd, file_names[f], &cg->fds[f], buf, size, ret_len);
}

int cg_dir_write(int dirfd, const char *file, const char *data) {
        _cleanup_close_ int fd = -1;
        struct statfs sfs;
        struct stat st;
        size_t len = strlen(data);
        ssize_t n;

        if (strchr(file, '/'))
                return -EINVAL;
        fd = cg_openat(dirfd, file, O_WRONLY);
        if (fd < 0)
                return negative_errno();
        /*
         * A kernfs file takes each write whole. A regular file (a tree that
         * stands in for cgroupfs) is emptied and written under a lock, so that
         * two of the daemon's writes racing in it (the loop's and the worker's)
         * never mix their bytes: "max" over "67108864" would leave "max08864".
         */
        if (fstatfs(fd, &sfs) == 0 && sfs.f_type != CGROUP2_SUPER_MAGIC && fstat(fd, &st) == 0 &&
            S_ISREG(st.st_mode) && (flock(fd, LOCK_EX) < 0 || ftruncate(fd, 0) < 0))
                return negative_errno();
        n = write(fd, data, len);
        if (n < 0)
                return negative_errno();
        if ((size_t) n != len)
                return -EIO;
        return 0;
}

int cgroup_read_once(Cgroup *cg, CgFile f, char *buf, size_t size, size_t *ret_len) {
        _cleanup_close_ int fd = -1;

        if (f >= _CG_FILE_MAX)
                return -EINVAL;
        /* A file kept open until now is read and closed; otherwise nothing is kept, not even the array. */
        if (cg->fds)
                fd = TAKE_FD(cg->fds[f]);
        return read_kept(cg->dirfd, file_names[f], &fd, buf, size, ret_len);
}

void cgroup_close_files(Cgroup *cg) {
        if (!cg->fds)
                return;
        for (size_t f = 0; f < _CG_FILE_MAX; f++)
                closep(&cg->fds[f]);
        free(cg->fds);
        cg->fds = NULL;
}

void cgroup_detach(Cgroup *cg) {
        cgroup_close_files(cg);
        closep(&cg->dirfd);
}

int cgroup_attach(const CgRoot *root, Cgroup *cg) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (cg->dirfd >= 0)
                return 0;
        fd = open_beneath(root->fd, cg->path);
        if (fd == -ENOENT || fd == -ENOTDIR)
                return -ENODEV;
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if ((uint64_t) st.st_ino != cg->id)
                return -ENODEV;
        cg->dirfd = TAKE_FD(fd);
        return 0;
}

int cgroup_path_holds(const CgRoot *root, const Cgroup *cg) {
        _cleanup_close_ int fd = open_beneath(root->fd, cg->path);
        struct stat st;

        if (fd == -ENOENT || fd == -ENOTDIR)
                return 0;
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        return (uint64_t) st.st_ino == cg->id;
}

int cgroup_write(Cgroup *cg, const char *file, const char *data) {
        return cg_dir_write(cg->dirfd, file, data);
}

int cg_dir_read_u64(int dirfd, const char *file, uint64_t *ret) {
        char buf[64];
        size_t len;
        int fd = -1, r;

        if (strchr(file, '/'))
                return -EINVAL;
        r = read_kept(dirfd, file, &fd, buf, sizeof(buf), &len);
        closep(&fd);
        if (r < 0)
                return r;
        return cg_parse_u64(buf, len, ret);
}

/* memory.stat is some 3 KiB on recent kernels. */
#define CG_DIRTY_STAT_MAX (16 * 1024)

/* The sum of memory.stat's values for `keys` (at most 4), each of which must be there. */
static int read_stat_sum(int dirfd, const char *const *keys, size_t n, uint64_t *ret) {
        _cleanup_free_ char *buf = malloc(CG_DIRTY_STAT_MAX);
        uint64_t v[4] = {}, found = 0, sum = 0;
        size_t len;
        int fd = -1, r;

        assert(n <= ELEMENTSOF(v));
        if (!buf)
                return -ENOMEM;
        r = read_kept(dirfd, "memory.stat", &fd, buf, CG_DIRTY_STAT_MAX, &len);
        closep(&fd);
        if (r < 0)
                return r;
        r = cg_parse_flat_keyed(buf, len, keys, n, v, &found);
        if (r < 0)
                return r;
        if (found != (UINT64_C(1) << n) - 1)
                return -ENOENT;
        for (size_t i = 0; i < n; i++)
                sum += v[i];
        *ret = sum;
        return 0;
}

int cg_dir_read_dirty(int dirfd, uint64_t *ret) {
        static const char *const keys[] = { "file_dirty", "file_writeback" };

        return read_stat_sum(dirfd, keys, ELEMENTSOF(keys), ret);
}

int cg_dir_read_anon(int dirfd, uint64_t *ret) {
        static const char *const keys[] = { "anon" };

        return read_stat_sum(dirfd, keys, ELEMENTSOF(keys), ret);
}

int cgroup_populated(Cgroup *cg) {
        static const char *const keys[] = { "populated" };
        char buf[128];
        uint64_t v = 0, found = 0;
        size_t len;
        int fd = -1, r;

        if (cg->dirfd < 0)
                return -EBADF;
        r = read_kept(cg->dirfd, "cgroup.events", &fd, buf, sizeof(buf), &len);
        closep(&fd);
        if (r < 0)
                return r;
        r = cg_parse_flat_keyed(buf, len, keys, 1, &v, &found);
        if (r < 0)
                return r;
        return found ? v != 0 : -ENOENT;
}

int cgroup_watch_events(Cgroup *cg, int inotify_fd) {
        char path[64];
        int wd;

        if (cg->dirfd < 0)
                return -EBADF;
        /* inotify takes a path: the directory this layer opened, through the process's own fd. */
        snprintf(path, sizeof(path), "/proc/self/fd/%d/cgroup.events", cg->dirfd);
        wd = inotify_add_watch(inotify_fd, path, IN_MODIFY | IN_DONT_FOLLOW);
        return wd < 0 ? negative_errno() : wd;
}

bool cgroup_gone(const Cgroup *cg) {
        /* Every cgroup has cgroup.procs, so its absence means removal. */
        return faccessat(cg->dirfd, "cgroup.procs", F_OK, 0) < 0 &&
               (errno == ENOENT || errno == ENODEV);
}

typedef struct Walk {
        CgWalkFn fn;
        void *userdata;
        size_t visited;
        unsigned skipped;       /* subtrees that could not be opened */
} Walk;

/* A child directory of dirfd, or -1 if it is not walked; one that exists but
 * cannot be opened (out of descriptors, no permission) is counted. */
static int open_child(Walk *w, int dirfd, const char *name) {
        int fd = cg_openat(dirfd, name, O_RDONLY | O_DIRECTORY);

        /* Removed since readdir, or no longer a directory: not an error. */
        if (fd < 0 && errno != ENOENT && errno != ENODEV && errno != ENOTDIR && errno != ELOOP)
                w->skipped++;
        return fd;
}

static int walk_dir(Walk *w, int dirfd, char *path, size_t path_len, unsigned depth) {
        DIR *d;
        struct dirent *de;
        struct stat st;
        int r;

        if (fstat(dirfd, &st) < 0) {
                r = negative_errno();
                close(dirfd);
                return r;
        }
        if (++w->visited > CG_WALK_MAX) {
                close(dirfd);
                return -E2BIG;
        }
        r = w->fn(path_len ? path : "/", (uint64_t) st.st_ino, w->userdata);
        if (r < 0 || depth >= CG_DEPTH_MAX) {
                close(dirfd);
                return r;
        }
        d = fdopendir(dirfd);
        if (!d) {
                r = negative_errno();
                close(dirfd);
                return r;
        }
        while ((de = readdir(d))) {
                size_t nl = strlen(de->d_name);
                int child;

                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                if (path_len + 1 + nl >= PATH_MAX)
                        continue;
                child = open_child(w, dirfd, de->d_name);
                if (child < 0)
                        continue;
                path[path_len] = '/';
                memcpy(path + path_len + 1, de->d_name, nl + 1);
                r = walk_dir(w, child, path, path_len + 1 + nl, depth + 1);
                path[path_len] = '\0';
                if (r < 0 && r != -ENOENT && r != -ENODEV)
                        break;
                r = 0;
        }
        closedir(d);
        return r;
}

/* Walks from the cgroup at `from` ("/" for the root, opened without following a link). */
static int walk_from(const CgRoot *root, const char *from, Walk *w) {
        char path[PATH_MAX] = "";
        size_t len = streq(from, "/") ? 0 : strlen(from);
        int fd, r;

        if (len >= sizeof(path))
                return -ENAMETOOLONG;
        fd = len ? open_beneath(root->fd, from) : cg_openat(root->fd, ".", O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return len ? fd : negative_errno();
        memcpy(path, from, len + 1);
        r = walk_dir(w, fd, path, len, 0);
        return r < 0 ? r : (int) MIN(w->visited, (size_t) INT32_MAX);
}

int cg_root_walk_full(const CgRoot *root, CgWalkFn fn, void *userdata, unsigned *ret_skipped) {
        return cg_root_walk_below(root, "/", fn, userdata, ret_skipped);
}

int cg_root_walk_below(const CgRoot *root, const char *from, CgWalkFn fn, void *userdata, unsigned *ret_skipped) {
        Walk w = { .fn = fn, .userdata = userdata };
        int r = walk_from(root, from, &w);

        *ret_skipped = w.skipped;
        return r;
}
