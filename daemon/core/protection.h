/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the daemon protects right now, in a few words: the cgroups under a
 * Protect=yes policy, the writers the write point holds an io.max cap on and
 * on which devices, and how many throttles it holds. The service manager's
 * STATUS= line and the control API's status say it from here.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "manager-state.h"

#define PROTECTION_NAMES_MAX 3
#define PROTECTION_DEVICES_MAX 4

typedef struct ProtectionSummary {
        size_t n_protected;             /* cgroups under a Protect=yes policy that is not off */
        const char *protected[PROTECTION_NAMES_MAX];    /* their units, else their paths (raw) */
        size_t n_capped;                /* cgroups with an io.max cap the write point holds in force */
        const char *capped[PROTECTION_NAMES_MAX];
        size_t n_devices;               /* the devices of those caps */
        struct { uint32_t major, minor; } devices[PROTECTION_DEVICES_MAX];
        size_t n_throttles;             /* every throttle held: the cgroups' and the device queues' */
} ProtectionSummary;

void protection_summary(Manager *m, ProtectionSummary *ret);

/*
 * The summary in one line, for people: "protecting db.service; 1 writer
 * capped on vda (writer.service)", "nothing protected (no policy with
 * Protect=yes governs a cgroup)". Device names from sysfs. NULL: out of memory.
 */
char *protection_line(Manager *m, const ProtectionSummary *s);
