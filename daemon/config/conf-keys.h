/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One file's keys read against a table of the keys it may hold: each value
 * converted into its place (conf-values.h), a key given twice or unknown and
 * a value refused each reported with the file and line, a policy's Match=
 * patterns collected. Private to the config layer: conf.c holds the tables
 * and hands conf_key_handler() to the parser of conf-file.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf-file.h"
#include "conf-values.h"
#include "policy.h"

/* Keys a table may hold: the keys seen in one file are a mask of 64 bits. */
#define CONF_KEYS_MAX 64

/* One key: where it goes in the settings (offset from KeyParse.base), how its value reads, and the
 * words a refusal uses. */
typedef struct ConfKeyDef {
        const char *section;
        const char *key;
        ConfValueParser parse;
        size_t offset;
        const char *expected;
        uint64_t min;           /* the smallest size taken (sizes only) */
        const char *min_why;    /* what a smaller one would do */
} ConfKeyDef;

/* What one file's parse needs: where values go and which keys it has seen. */
typedef struct KeyParse {
        const ConfKeyDef *table;
        size_t n_table;
        void *base;
        uint64_t seen;
        unsigned seen_line[CONF_KEYS_MAX];
        Policy *policy;         /* set for policy files: Match= goes here */
        bool has_section;
} KeyParse;

/* A ConfKeyHandler of conf-file.h; `userdata` is a KeyParse. Returns 0, -ENOMEM, or another negative
 * errno after a diagnostic. */
int conf_key_handler(void *userdata, const ConfLocation *loc, const char *section,
                     const char *key, const char *value, ConfDiag *diag);

/* The line `key` was given on in the file kp parsed; 0 if it was not. */
unsigned conf_key_line(const KeyParse *kp, const char *key);
