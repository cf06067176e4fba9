/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's metrics in the Prometheus text format (docs/metrics.md): the
 * cgroups with a policy and the top others by [Metrics] TopBy=, the throttles
 * the ledger holds, what each point did, and the daemon's own counters. One
 * rendering serves both GetMetrics() and the textfile for node_exporter.
 */
#pragma once

#include <stddef.h>

#include "manager.h"

/* The exposition as a new NUL-terminated string (*ret_size leaves the NUL out). */
int metrics_render(Manager *m, char **ret, size_t *ret_size);
