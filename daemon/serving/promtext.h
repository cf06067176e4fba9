/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Prometheus text exposition format (version 0.0.4), written to a FILE:
 * a family's # HELP and # TYPE, then its samples with their labels. It is
 * what node_exporter's textfile collector, promtool and a Prometheus scrape
 * all read. Pure: strings in, text out.
 *
 * A label value is written in the escaped form of names (name-escape.h:
 * valid UTF-8 without control characters, reversibly), then escaped as the
 * format wants (backslash, double quote).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum PromType {
        PROM_GAUGE,
        PROM_COUNTER,
} PromType;

typedef struct PromFamily {
        const char *name;       /* the samples' name: a counter's ends in _total, a unit's suffix before it */
        PromType type;
        const char *help;       /* no backslash, no newline */
} PromFamily;

typedef struct PromLabel {
        const char *name;
        const char *value;      /* NULL: the label is left out of this sample */
} PromLabel;

/* The family's metadata lines; its samples follow, before any other family's. */
void prom_family(FILE *f, const PromFamily *fam);

/* One sample of an integer value. */
void prom_sample(FILE *f, const PromFamily *fam, const PromLabel *labels, size_t n_labels, uint64_t value);

/* One sample of a value given in millionths (µs as seconds, ppm as a ratio), written exactly:
 * six decimals. */
void prom_sample_micro(FILE *f, const PromFamily *fam, const PromLabel *labels, size_t n_labels,
                       uint64_t millionths);

/* A label value as it stands between the quotes (see above). */
void prom_label_value(FILE *f, const char *value);
