/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The little JSON the daemon prints: quoted, escaped strings and numbers or
 * null. Enough for --sample-once; not a general JSON library. Whatever the
 * bytes, the output is valid JSON: a name is written in its escaped form
 * (name-escape.h), and in text a byte that is not UTF-8 is written the same way.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Text: JSON's escapes for quotes, backslashes and control characters. */
void json_string(FILE *f, const char *s);
/* A cgroup path or unit name as the kernel gives it, in its escaped form. */
void json_name(FILE *f, const char *s);
/* A string or null. */
void json_string_or_null(FILE *f, const char *s);
/* Numbers in decimal, as printf would write them, without its parsing of a format (a list of 50,000
 * cgroups writes a million). */
void json_u64(FILE *f, uint64_t v);
void json_i64(FILE *f, int64_t v);
/* A number, or null if !have. */
void json_u64_or_null(FILE *f, bool have, uint64_t v);
