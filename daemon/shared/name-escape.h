/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Names as the kernel gives them (cgroup paths, unit names) made fit for
 * D-Bus, JSON, tables and the shell, reversibly; docs/control-api.md
 * ("Names") is the reference for clients. A byte that does not belong to
 * valid UTF-8 (overlong forms, surrogates and code points past U+10FFFF are
 * not valid), a control character (01 to 1f, 7f) and a backslash that would
 * read as an escape become a backslash and three octal digits: \351, \012,
 * \134. An escape is a backslash followed by three octal digits, the first
 * 0 to 3; everything else stands for itself. So a valid, printable name is
 * its own escaped form, systemd's \x2d escapes included, and reading the
 * escapes back gives the kernel's bytes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One character of a name in escaped form: \ooo, or up to 4 bytes of UTF-8; NUL-terminated. */
#define NAME_PIECE_MAX 5

/* The escaped form of the character at `s` (not its end) into `piece`; returns how many bytes of `s` it stands for. */
size_t name_escape_piece(const char *s, char piece[static NAME_PIECE_MAX]);

/* Whether `s` is its own escaped form (nothing to allocate). */
bool name_is_plain(const char *s);

/* The escaped form of `s`, newly allocated; NULL when out of memory. */
char *name_escape(const char *s);

/* The escaped form of `s` written to f. */
void name_fputs(const char *s, FILE *f);

/* The escaped form of `s` into buf (size > 0), cut at a character's end if it does not fit. */
void name_escape_into(char *buf, size_t size, const char *s);

/* The bytes the escaped form `s` stands for, newly allocated. -EINVAL for \000 (no name holds NUL), -ENOMEM. */
int name_unescape(const char *s, char **ret);
