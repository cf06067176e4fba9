/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A policy's values with the daemon's defaults filled in: the keys whose
 * default is a daemon setting, as `mdctl policy show` prints them. Above
 * both the key table (conf.h) and the value formats (policy-format.h), so
 * that neither needs the other.
 */
#pragma once

#include <stdbool.h>

#include "conf.h"
#include "policy-format.h"
#include "policy.h"

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
