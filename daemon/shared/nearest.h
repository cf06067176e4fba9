/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * "Did you mean": the names nearest to one that matched nothing, by edit
 * distance (insertions, deletions, substitutions and swaps of two neighbours
 * count one each, so "ngnix" is one from "nginx"). Pure string work; the
 * caller offers the names it sees one by one.
 */
#pragma once

#include <stddef.h>

#define NEAREST_MAX 3
/* Names longer than this are never near anything (and cost nothing to compare). */
#define NEAREST_NAME_MAX 255

/* The optimal string alignment distance of a and b; SIZE_MAX when either is longer than NEAREST_NAME_MAX. */
size_t name_distance(const char *a, const char *b);
/* The same where it is at most `max`, SIZE_MAX otherwise: stops as soon as nothing nearer can come, so
 * that a name of another length, or one far off from its first characters, costs next to nothing. */
size_t name_distance_within(const char *a, const char *b, size_t max);

/*
 * The up to NEAREST_MAX names nearest to `want`, nearest first (equal
 * distances in name order), each at most a third of want's length away (2
 * at least): further ones are not what was meant. The names are the
 * caller's: they must outlive the struct.
 */
typedef struct NearestNames {
        const char *want;
        size_t want_len, limit;
        const char *names[NEAREST_MAX];
        size_t distances[NEAREST_MAX];
        size_t n;
} NearestNames;

void nearest_names_init(NearestNames *n, const char *want);
/* Considers one name; the same name twice, or `want` itself, counts once or not at all. */
void nearest_names_offer(NearestNames *n, const char *name);
