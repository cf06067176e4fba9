/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point's state read, never changed, for those who explain it
 * (mdctl explain and show): the caps it holds on a writer or for a protected
 * cgroup, what it last measured of a protected cgroup's stall, and when a
 * device last saw a stall or a protected cgroup's io.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wp-types.h"

/* The caps on writer `id` (`for_protected` false), or held for protected cgroup `id` (true): how many
 * there are; the first `max` of them in ret (may be NULL). */
size_t write_point_caps(const WritePointState *s, uint64_t id, bool for_protected, const WpCap **ret, size_t max);

/* What the point last measured of protected cgroup `id`: its smoothed io stall and the baseline learnt
 * (0: none). False when it has measured nothing of it yet. */
bool write_point_stall_seen(const WritePointState *s, uint64_t id, uint32_t *ret_smooth_ppm,
                            uint32_t *ret_baseline_ppm);

/* When device major:minor last saw a protected cgroup stall, and last saw one do io there (0: never).
 * False when the point keeps nothing of the device. */
bool write_point_device_seen(const WritePointState *s, uint32_t major, uint32_t minor, uint64_t *ret_stall_usec,
                             uint64_t *ret_guarded_usec);
