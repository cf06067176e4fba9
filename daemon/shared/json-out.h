/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The little JSON the daemon prints: quoted, escaped strings and numbers or
 * null. Enough for --sample-once; not a general JSON library.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

void json_string(FILE *f, const char *s);
/* A string or null. */
void json_string_or_null(FILE *f, const char *s);
/* A number, or null if !have. */
void json_u64_or_null(FILE *f, bool have, uint64_t v);
