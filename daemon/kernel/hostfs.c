/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "hostfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "cgparse.h"
#include "fileio.h"
#include "util.h"

static const char *const host_file_names[_HOST_FILE_MAX] = {
        [HOST_PRESSURE_MEMORY] = "pressure/memory",
        [HOST_PRESSURE_IO] = "pressure/io",
        [HOST_MEMINFO] = "meminfo",
        [HOST_VMSTAT] = "vmstat",
};

int host_root_open(const char *proc_path, const char *sys_path, HostRoot **ret) {
        HostRoot *h = calloc(1, sizeof(HostRoot));

        if (!h)
                return -ENOMEM;
        h->sys_fd = -1;
        for (size_t i = 0; i < _HOST_FILE_MAX; i++)
                h->fds[i] = -1;
        h->proc_fd = open(proc_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (h->proc_fd < 0) {
                int r = negative_errno();
                free(h);
                return r;
        }
        h->sys_fd = open(sys_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        h->proc_path = strdup(proc_path);
        h->sys_path = strdup(sys_path);
        if (!h->proc_path || !h->sys_path) {
                host_root_free(h);
                return -ENOMEM;
        }
        *ret = h;
        return 0;
}

HostRoot *host_root_free(HostRoot *h) {
        if (!h)
                return NULL;
        for (size_t i = 0; i < _HOST_FILE_MAX; i++)
                closep(&h->fds[i]);
        closep(&h->proc_fd);
        closep(&h->sys_fd);
        free(h->proc_path);
        free(h->sys_path);
        free(h);
        return NULL;
}

int host_read(HostRoot *h, HostFile f, char *buf, size_t size, size_t *ret_len) {
        if (f >= _HOST_FILE_MAX)
                return -EINVAL;
        return kept_read(h->proc_fd, host_file_names[f], &h->fds[f], buf, size, ret_len);
}

uint32_t host_read_dirty_ratio(const HostRoot *h) {
        _cleanup_close_ int fd = -1;
        char buf[32];
        uint64_t v;

        if (kept_read(h->proc_fd, "sys/vm/dirty_ratio", &fd, buf, sizeof(buf), NULL) >= 0 &&
            cg_parse_u64(buf, strlen(buf), &v) >= 0 && v > 0 && v <= 100)
                return (uint32_t) v;
        return 20;
}

/* "NAME:   VALUE kB" in meminfo's text, in bytes. */
static int meminfo_field(const char *text, const char *name, uint64_t *ret) {
        const char *p = strstr(text, name);
        uint64_t kb;

        if (!p || (p != text && p[-1] != '\n'))
                return -EBADMSG;
        p += strlen(name);
        p += strspn(p, " ");
        if (cg_parse_u64(p, strcspn(p, " \n"), &kb) < 0 || kb > UINT64_MAX / 1024)
                return -EBADMSG;
        *ret = kb * 1024;
        return 0;
}

int host_read_dirty_bytes(HostRoot *h, uint64_t *ret) {
        char buf[8192];
        uint64_t dirty, writeback;
        int r = host_read(h, HOST_MEMINFO, buf, sizeof(buf), NULL);

        if (r < 0)
                return r;
        if (meminfo_field(buf, "Dirty:", &dirty) < 0 || meminfo_field(buf, "Writeback:", &writeback) < 0)
                return -EBADMSG;
        *ret = dirty + writeback;
        return 0;
}

char *host_read_own_cgroup(const HostRoot *h) {
        _cleanup_close_ int fd = -1;
        char buf[512], *p;

        if (kept_read(h->proc_fd, "self/cgroup", &fd, buf, sizeof(buf), NULL) < 0 || !(p = strstr(buf, "0::")))
                return NULL;
        return strndup(p + 3, strcspn(p + 3, "\n"));
}

int host_count_own_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int n = 0;

        if (!d)
                return negative_errno();
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n - 1;   /* less the one opendir() held */
}
