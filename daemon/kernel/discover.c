/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "discover.h"

#include <errno.h>
#include <libcgroup.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>

#include "log.h"
#include "util.h"

int cg_errno_from_libcgroup(int ecg) {
        int e;

        switch (ecg) {
        case 0:
                return 0;
        case ECGOTHER:
                e = cgroup_get_last_errno();
                return e > 0 ? -e : -EIO;
        case ECGROUPNOTMOUNTED:
        case ECGROUPNOTEXIST:
                return -ENOENT;
        case ECGINVAL:
                return -EINVAL;
        default:
                log_debug("libcgroup: %s (%d)", cgroup_strerror(ecg), ecg);
                return -EIO;
        }
}

static void libcgroup_logger(void *userdata, int level, const char *fmt, va_list ap)
        __attribute__((format(printf, 3, 0)));

static void libcgroup_logger(void *userdata, int level, const char *fmt, va_list ap) {
        char buf[512];
        size_t n;

        vsnprintf(buf, sizeof(buf), fmt, ap);
        n = strlen(buf);
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        log_debug("libcgroup: %s", buf);
}

const char *cg_discover_explain(CgDiscoverResult result) {
        switch (result) {
        case CG_DISCOVER_NO_CGROUPS:
                return "no cgroup file system is mounted. mdreclaimd needs the unified cgroup v2 "
                       "hierarchy: boot with systemd.unified_cgroup_hierarchy=1, or give --cgroup-root";
        case CG_DISCOVER_NO_MEMORY:
                return "no cgroup hierarchy has the memory controller. Enable CONFIG_MEMCG and the "
                       "unified cgroup v2 hierarchy (systemd.unified_cgroup_hierarchy=1)";
        case CG_DISCOVER_MEMORY_ON_V1:
                return "the memory controller is bound to a cgroup v1 hierarchy (hybrid mode). "
                       "mdreclaimd works on cgroup v2 only: boot with "
                       "systemd.unified_cgroup_hierarchy=1 (and without cgroup_no_v1 exceptions for memory)";
        default:
                return "cgroup v2 with the memory controller is available";
        }
}

int cg_discover(char **ret_mount, CgDiscoverResult *ret_result) {
        _cleanup_free_ char *mount = NULL;
        struct statfs sfs;
        int r;

        *ret_mount = NULL;
        cgroup_set_logger(libcgroup_logger, CGROUP_LOG_DEBUG, NULL);

        r = cg_errno_from_libcgroup(cgroup_init());
        if (r < 0) {
                *ret_result = CG_DISCOVER_NO_CGROUPS;
                return log_debug_errno(r, "libcgroup found no cgroup mount: %m");
        }
        r = cg_errno_from_libcgroup(cgroup_get_subsys_mount_point("memory", &mount));
        if (r < 0 || !mount) {
                *ret_result = CG_DISCOVER_NO_MEMORY;
                return r < 0 ? r : -ENOENT;
        }
        if (statfs(mount, &sfs) < 0) {
                *ret_result = CG_DISCOVER_NO_MEMORY;
                return negative_errno();
        }
        if (sfs.f_type != CGROUP2_SUPER_MAGIC) {
                *ret_result = CG_DISCOVER_MEMORY_ON_V1;
                *ret_mount = TAKE_PTR(mount);
                return -EMEDIUMTYPE;
        }
        *ret_result = CG_DISCOVER_OK;
        *ret_mount = TAKE_PTR(mount);
        return 0;
}
