/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The OpenMetrics text format, written to a FILE: a family's metadata
 * (# TYPE, # UNIT, # HELP), its samples with their labels, and the # EOF that
 * ends an exposition. Pure: strings in, text out.
 *
 * A label value is written in the escaped form of names (name-escape.h:
 * valid UTF-8 without control characters, reversibly), then escaped as the
 * format wants (backslash, double quote).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum OmType {
        OM_GAUGE,
        OM_COUNTER,             /* samples are named NAME_total */
} OmType;

typedef struct OmFamily {
        const char *name;       /* without _total; ends in _UNIT when there is a unit */
        OmType type;
        const char *unit;       /* NULL: none */
        const char *help;       /* no backslash, no newline */
} OmFamily;

typedef struct OmLabel {
        const char *name;
        const char *value;      /* NULL: the label is left out of this sample */
} OmLabel;

/* The family's metadata lines; its samples follow, before any other family's. */
void om_family(FILE *f, const OmFamily *fam);

/* One sample of an integer value. */
void om_sample(FILE *f, const OmFamily *fam, const OmLabel *labels, size_t n_labels, uint64_t value);

/* One sample of a duration given in µs, written in seconds (exactly: six decimals). */
void om_sample_usec(FILE *f, const OmFamily *fam, const OmLabel *labels, size_t n_labels, uint64_t usec);

/* A label value as it stands between the quotes (see above). */
void om_label_value(FILE *f, const char *value);

/* The last line of an exposition. */
void om_eof(FILE *f);
