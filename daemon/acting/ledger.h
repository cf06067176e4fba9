/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The throttle ledger: every memory.high and io.max wbps= the daemon sets,
 * with the value it replaced and which point asked for what and why. It is
 * written to disk (atomically) before a throttle is applied, read back at
 * start so that nothing is left behind by a crash, and it settles how the two
 * points share one file: for memory.high the lower request wins.
 *
 * Pure bookkeeping: applying values to cgroup files is the caller's job.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum ThrottleKind {
        THROTTLE_MEMORY_HIGH,   /* bytes */
        THROTTLE_IO_WBPS,       /* bytes per second, on one device */
        _THROTTLE_KIND_MAX,
} ThrottleKind;

typedef enum ThrottlePoint {
        POINT_WRITE,
        POINT_ALLOCATION,
        _POINT_MAX,
} ThrottlePoint;

const char *throttle_kind_to_string(ThrottleKind k);
const char *throttle_point_to_string(ThrottlePoint p);

#define THROTTLE_NONE UINT64_MAX        /* no request / "max" */
#define LEDGER_MAX 4096                 /* bound on entries */
#define LEDGER_REASON_MAX 160

typedef struct ThrottleEntry {
        char *path;                     /* cgroup, relative to the cgroup root */
        uint64_t cgroup_id;
        ThrottleKind kind;
        uint32_t major, minor;          /* THROTTLE_IO_WBPS only */
        uint64_t original;              /* value before the daemon touched it (THROTTLE_NONE = "max") */
        uint64_t applied;               /* value the daemon last wrote */
        uint64_t requested[_POINT_MAX]; /* THROTTLE_NONE: that point asks nothing */
        char reason[_POINT_MAX][LEDGER_REASON_MAX];
} ThrottleEntry;

typedef struct Ledger {
        ThrottleEntry *entries;
        size_t n;
        char *file;                     /* where it is kept; NULL: memory only */
} Ledger;

void ledger_init(Ledger *l, const char *file);
void ledger_clear(Ledger *l);

/* The entry for (path, kind, device), or NULL. */
ThrottleEntry *ledger_find(Ledger *l, const char *path, ThrottleKind kind, uint32_t major, uint32_t minor);

/* The value the entry should have now: the lowest request, or the original if none. */
uint64_t throttle_effective(const ThrottleEntry *e);
static inline bool throttle_requested(const ThrottleEntry *e) {
        for (int p = 0; p < _POINT_MAX; p++)
                if (e->requested[p] != THROTTLE_NONE)
                        return true;
        return false;
}

/*
 * Point `p` asks for `value` on (path, kind, device). A new entry records
 * `current` (what the file holds now) as the original. Returns the entry; the
 * caller compares throttle_effective() with ->applied to know whether to
 * write. -E2BIG when the ledger is full, -ENOMEM.
 */
int ledger_request(Ledger *l, const char *path, uint64_t cgroup_id, ThrottleKind kind, uint32_t major,
                   uint32_t minor, ThrottlePoint p, uint64_t value, const char *reason, uint64_t current,
                   ThrottleEntry **ret);

/* Point `p` withdraws its request. The caller then writes throttle_effective()
 * and, once nothing is requested and the original is back, calls ledger_remove(). */
ThrottleEntry *ledger_release(Ledger *l, const char *path, ThrottleKind kind, uint32_t major, uint32_t minor,
                              ThrottlePoint p);

void ledger_remove(Ledger *l, ThrottleEntry *e);

/*
 * Someone else wrote `found` where we had written e->applied: theirs wins. It
 * becomes the new original, every request is dropped, and the entry is left
 * for the caller to remove. Returns true if that happened.
 */
bool ledger_adopt_foreign(ThrottleEntry *e, uint64_t found);

/* Writes the ledger to its file atomically (temporary file, fsync, rename,
 * fsync of the directory). No file: nothing to do. */
int ledger_save(const Ledger *l);

/* Reads the ledger file; a missing file is an empty ledger. Lines that do not
 * parse are reported through *ret_bad_line (first one) and skipped. */
int ledger_load(Ledger *l, unsigned *ret_bad_line);

/* One entry as text, for logs: "io.max 8:0 wbps" or "memory.high". */
const char *throttle_describe(const ThrottleEntry *e, char *buf, size_t size);
