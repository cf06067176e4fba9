/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The metrics for node_exporter's textfile collector: every [Metrics]
 * TextfileInterval= the exposition (metrics.h) is rendered on the loop and
 * written off it, on a task queue of its own, as TextfileDirectory=/
 * mdreclaim.prom: a temporary file beside it, fsync, rename, so that a
 * reader sees the whole old file or the whole new one. An fsync can take
 * seconds on a disk a writer saturates; the loop never waits for it, and a
 * write still running when the next one is due makes that one skip. The
 * file goes when the daemon stops, or when a reload moves or unsets the
 * directory; without TextfileDirectory= nothing is written.
 */
#pragma once

#include "manager.h"

#define METRICS_FILE_NAME "mdreclaim.prom"

typedef struct MetricsFile MetricsFile;

/* Its timer fires first as soon as the loop runs, then at every TextfileInterval= in force. */
int metrics_file_new(Manager *m, MetricsFile **ret);
/* Interrupts a write in progress and removes the file. */
MetricsFile *metrics_file_free(MetricsFile *f);
static inline void metrics_file_freep(MetricsFile **f) {
        if (*f)
                metrics_file_free(*f);
}
