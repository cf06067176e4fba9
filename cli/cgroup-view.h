/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cgroup table of `mdctl list` and `mdctl top`: ListCgroups' entries
 * sorted by dirty data, pressure, memory or name, as human-sized cells, with
 * what ListThrottles says holds each back.
 */
#pragma once

#include "bus-value.h"
#include "table.h"

typedef enum SortKey {
        SORT_NAME,
        SORT_DIRTY,
        SORT_PRESSURE,
        SORT_MEMORY,
        _SORT_MAX,
} SortKey;

int sort_key_from_string(const char *s);
const char *sort_key_to_string(SortKey k);

/* Sorts an array of cgroup objects in place: sizes and stalls largest first, names A to Z. */
void cgroups_sort(Value *list, SortKey k);

/* The columns of the cgroup table, in table_init()'s form (for -o). */
extern const char *const cgroup_columns[];

/*
 * One row per cgroup of `list`; THROTTLED from `throttles` (ListThrottles'
 * array; NULL: none known). `tree`: each row under its nearest ancestor, named
 * by its last component.
 */
int cgroups_table(const Value *list, const Value *throttles, bool tree, Table *ret);

/* One throttle of ListThrottles: "io 6.0M/s" ("io 8:0 6.0M/s" with the device), "high 88.0M"; NULL for a release. */
const char *cell_throttle(char buf[static 48], const Value *t, bool device);
/* What holds the cgroup at `path` back: its throttles joined by ",", or "released"; NULL: nothing. */
const char *cell_throttled(char buf[static 64], const Value *throttles, const char *path);

/* Human cells. */
const char *cell_size(char buf[static 32], const Value *v, const char *path);
/* A time (microseconds since the epoch at `path`): "14:02:11" within 20 hours of now, "2024-05-01" otherwise. */
const char *cell_time(char buf[static 32], const Value *v, const char *path);
const char *cell_ppm(char buf[static 32], const Value *v, const char *path);

/* Text for people: "12.0 MiB/s". */
const char *text_rate(char buf[static 32], uint64_t bytes_per_sec);
/* The device of a throttle or cap (its "device" and "device_name"): "vda (8:0)", "8:0"; NULL: none. */
const char *text_device(char buf[static 64], const Value *v);
/* A daemon's reason with its figures for people: "12582912 B/s" as "12.0 MiB/s", "16777216 bytes" and
 * other figures of six digits or more as "16.0M". */
const char *text_humanize(char *buf, size_t size, const char *s);
/* What GetStatus says is protected and capped, in a line: "db.service; 1 writer capped on vda:
 * writer.service; 2 throttles held", "nothing (no cgroup has a Protect=yes policy); ...". */
const char *protection_text(char *buf, size_t size, const Value *st);
