/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A policy's effective settings written back in the syntax its file takes
 * (sizes as "256M", percentages as "0.1%"), so that `mdctl policy show` can
 * print every key, defaults included, and each value reads back the same.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "policy.h"

#define POLICY_VALUE_MAX 64

/* Exact size: the largest K/M/G/T/P/E unit that divides it, else plain bytes. */
const char *format_size_exact(char buf[static POLICY_VALUE_MAX], uint64_t bytes);
/* Parts per million as a percentage with no trailing zeros: "10%", "0.1%". */
const char *format_percent(char buf[static POLICY_VALUE_MAX], uint32_t ppm);

/*
 * The value of `key` (any key of [Policy] but Match=) in `p`, or "" when it
 * is unset and its default means "none". -ENOENT: not a key formatted here.
 */
int policy_format_value(const Policy *p, const char *key, char buf[static POLICY_VALUE_MAX]);

/*
 * policy_format_value(), with the keys whose default is a daemon setting
 * (IOPressureLimit=, WriteRateMin= and IOLatencyTarget= from [WritePoint]) given
 * that default when the policy leaves them unset.
 */
int policy_format_effective(const Policy *p, const DaemonSettings *d, const char *key,
                            char buf[static POLICY_VALUE_MAX]);

/*
 * Whether a policy that leaves IOLatencyTarget= unset takes it from IOLatencyTargetByFilesystem=
 * (nothing in [WritePoint], the queue not managed, a filesystem named): then its effective value is
 * "" and buf holds those targets in file syntax ("btrfs:10ms").
 */
bool latency_by_filesystem(const DaemonSettings *d, char buf[static POLICY_VALUE_MAX]);
