/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading and writing the throttle files the daemon manages, in the
 * ledger's terms: memory.high and memory.swap.max (bytes or "max") and one
 * device's wbps= in io.max ("MAJ:MIN wbps=N"; a device absent from io.max is
 * unlimited).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cgfs.h"
#include "ledger.h"

/* The current value, THROTTLE_NONE for "max". -ENOENT: no such file (for
 * io.max: the io controller is not enabled for the cgroup; for
 * memory.swap.max: no swap accounting, or the root cgroup). */
int throttle_read(Cgroup *cg, ThrottleKind kind, uint32_t major, uint32_t minor, uint64_t *ret);

/* What to write to set `value`, and the file name. */
const char *throttle_format(ThrottleKind kind, uint32_t major, uint32_t minor, uint64_t value, char *buf,
                            size_t size);
const char *throttle_file(ThrottleKind kind);

/* wbps= of device major:minor in io.max content (exposed for tests). */
int throttle_parse_io_max(const char *buf, uint32_t major, uint32_t minor, uint64_t *ret);
