/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "promtext.h"

#include <inttypes.h>
#include <stdbool.h>

#include "name-escape.h"
#include "util.h"

static const char *type_name(PromType t) {
        return t == PROM_COUNTER ? "counter" : "gauge";
}

void prom_family(FILE *f, const PromFamily *fam) {
        fprintf(f, "# HELP %s %s\n", fam->name, fam->help);
        fprintf(f, "# TYPE %s %s\n", fam->name, type_name(fam->type));
}

void prom_label_value(FILE *f, const char *value) {
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

static void sample_name(FILE *f, const PromFamily *fam, const PromLabel *labels, size_t n_labels) {
        bool first = true;

        fputs(fam->name, f);
        for (size_t i = 0; i < n_labels; i++) {
                if (!labels[i].value)
                        continue;
                fprintf(f, "%c%s=\"", first ? '{' : ',', labels[i].name);
                prom_label_value(f, labels[i].value);
                fputc('"', f);
                first = false;
        }
        if (!first)
                fputc('}', f);
}

void prom_sample(FILE *f, const PromFamily *fam, const PromLabel *labels, size_t n_labels, uint64_t value) {
        sample_name(f, fam, labels, n_labels);
        fprintf(f, " %" PRIu64 "\n", value);
}

void prom_sample_micro(FILE *f, const PromFamily *fam, const PromLabel *labels, size_t n_labels,
                       uint64_t millionths) {
        sample_name(f, fam, labels, n_labels);
        fprintf(f, " %" PRIu64 ".%06" PRIu64 "\n", millionths / 1000000, millionths % 1000000);
}
