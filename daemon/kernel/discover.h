/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Finding the cgroup2 mount that holds the memory controller, through
 * libcgroup, with its positive ECG* codes turned into negative errno here.
 */
#pragma once

typedef enum CgDiscoverResult {
        CG_DISCOVER_OK,
        CG_DISCOVER_NO_CGROUPS,         /* nothing mounted */
        CG_DISCOVER_NO_MEMORY,          /* no hierarchy has the memory controller */
        CG_DISCOVER_MEMORY_ON_V1,       /* hybrid mode: memory is bound to v1 */
} CgDiscoverResult;

/*
 * On success returns 0 with the mount point in *ret_mount. Otherwise returns
 * a negative errno, and *ret_result says what is wrong and *ret_mount (may be
 * NULL) where the memory controller was found.
 */
int cg_discover(char **ret_mount, CgDiscoverResult *ret_result);

/* Converts a libcgroup return code to 0 or a negative errno. */
int cg_errno_from_libcgroup(int ecg);

/* What an operator should read about a failed discovery: problem and fix. */
const char *cg_discover_explain(CgDiscoverResult result);
