/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "openmetrics.h"

#include <inttypes.h>
#include <stdbool.h>

#include "name-escape.h"
#include "util.h"

static const char *type_name(OmType t) {
        return t == OM_COUNTER ? "counter" : "gauge";
}

void om_family(FILE *f, const OmFamily *fam) {
        fprintf(f, "# TYPE %s %s\n", fam->name, type_name(fam->type));
        if (fam->unit)
                fprintf(f, "# UNIT %s %s\n", fam->name, fam->unit);
        fprintf(f, "# HELP %s %s\n", fam->name, fam->help);
}

void om_label_value(FILE *f, const char *value) {
        while (*value) {
                char piece[NAME_PIECE_MAX];

                value += name_escape_piece(value, piece);
                for (const char *c = piece; *c; c++)
                        if (*c == '\\')
                                fputs("\\\\", f);
                        else if (*c == '"')
                                fputs("\\\"", f);
                        else
                                fputc(*c, f);
        }
}

static void sample_name(FILE *f, const OmFamily *fam, const OmLabel *labels, size_t n_labels) {
        bool first = true;

        fputs(fam->name, f);
        if (fam->type == OM_COUNTER)
                fputs("_total", f);
        for (size_t i = 0; i < n_labels; i++) {
                if (!labels[i].value)
                        continue;
                fprintf(f, "%c%s=\"", first ? '{' : ',', labels[i].name);
                om_label_value(f, labels[i].value);
                fputc('"', f);
                first = false;
        }
        if (!first)
                fputc('}', f);
}

void om_sample(FILE *f, const OmFamily *fam, const OmLabel *labels, size_t n_labels, uint64_t value) {
        sample_name(f, fam, labels, n_labels);
        fprintf(f, " %" PRIu64 "\n", value);
}

void om_sample_usec(FILE *f, const OmFamily *fam, const OmLabel *labels, size_t n_labels, uint64_t usec) {
        sample_name(f, fam, labels, n_labels);
        fprintf(f, " %" PRIu64 ".%06" PRIu64 "\n", usec / USEC_PER_SEC, usec % USEC_PER_SEC);
}

void om_eof(FILE *f) {
        fputs("# EOF\n", f);
}
