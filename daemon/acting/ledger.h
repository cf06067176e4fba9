/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The throttle ledger: every memory.high and io.max wbps= the daemon sets
 * (and memory.swap.max, held at 0 while a cache-only reclaim runs),
 * with the value it replaced, since when, and which point asked for what, why
 * and until when; and the cgroups an operator released (no throttle until a
 * time). It is written to disk (atomically) before a throttle is applied,
 * read back at start so that nothing is left behind by a crash and a release
 * outlives a restart, and it settles how the two points share one file: for
 * memory.high the lower request wins.
 *
 * Pure bookkeeping: applying values to cgroup files is the caller's job.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum ThrottleKind {
        THROTTLE_MEMORY_HIGH,   /* bytes */
        THROTTLE_IO_WBPS,       /* bytes per second, on one device */
        THROTTLE_NR_REQUESTS,   /* a device's queue depth; `path` names the device, not a cgroup */
        THROTTLE_MAX_SECTORS_KB,/* the largest request on a device, KiB; `path` as above */
        THROTTLE_SWAP_MAX,      /* memory.swap.max, bytes: held at 0 for the length of a cache-only reclaim */
        _THROTTLE_KIND_MAX,
} ThrottleKind;

typedef enum ThrottlePoint {
        POINT_WRITE,
        POINT_ALLOCATION,
        _POINT_MAX,
} ThrottlePoint;

const char *throttle_kind_to_string(ThrottleKind k);
const char *throttle_point_to_string(ThrottlePoint p);

/* Whether the kind is one device's (io.max wbps=, a device queue's knobs): entries differ by device too. */
static inline bool throttle_kind_has_device(ThrottleKind k) {
        return k == THROTTLE_IO_WBPS || k == THROTTLE_NR_REQUESTS || k == THROTTLE_MAX_SECTORS_KB;
}
/* A device queue's knob: kept by the queue-depth actuator, not the cgroups' one. */
static inline bool throttle_kind_is_queue(ThrottleKind k) {
        return k == THROTTLE_NR_REQUESTS || k == THROTTLE_MAX_SECTORS_KB;
}

#define THROTTLE_NONE UINT64_MAX        /* no request / "max" */
#define LEDGER_MAX 4096                 /* bound on entries */
#define LEDGER_REASON_MAX 160
#define LEDGER_LIFTS_MAX 128            /* a point's "lifts when" text */
#define LEDGER_HOLDS_MAX 1024           /* bound on released cgroups */
#define LEDGER_WHO_MAX 64               /* who released a cgroup: "uid 0 (pid 123)" */
#define LEDGER_HOLD_ALL "*"             /* the path of a release of every cgroup */

/* What a point asks of one throttle. */
typedef struct ThrottleRequest {
        ThrottleKind kind;
        uint32_t major, minor;          /* a device's kind only (throttle_kind_has_device) */
        ThrottlePoint point;
        uint64_t value;                 /* a set only; THROTTLE_NONE: "max" */
        uint64_t drain;                 /* io.max only: the rate it rises to while an ended writer's
                                         * leftovers are written (0: lifted at once) */
        const char *reason;
        const char *lifts_when;         /* a set only: the point's condition for lifting it, short */
} ThrottleRequest;

/*
 * Bounds on reading the file back. The longest line ledger_save writes holds
 * a cgroup path of PATH_MAX bytes and each point's reason and "lifts when",
 * each escaped to at most twice its length, and a few numbers (256 bytes is
 * plenty for those); a longer line is not one of ours. The file holds at most
 * LEDGER_MAX such lines, LEDGER_HOLDS_MAX shorter ones and the header: about
 * 48 MB, read as a stream, one line in memory.
 */
#define LEDGER_LINE_MAX (2 * PATH_MAX + 2 * _POINT_MAX * (LEDGER_REASON_MAX + LEDGER_LIFTS_MAX) + 256)
#define LEDGER_FILE_MAX ((uint64_t) (LEDGER_MAX + LEDGER_HOLDS_MAX + 1) * LEDGER_LINE_MAX)

/*
 * A memory.high original under this is taken for corruption: 256 KiB, a
 * quarter of the least the allocation point ever asks for (AP_STEP_MIN,
 * 1 MiB), and under what the write point asks for unless DirtyLimit= is set
 * below about 50 KiB (it asks for the cgroup's non-file memory plus
 * 100/vm.dirty_ratio times the budget). An original may be a value a previous
 * run set, so the floor stays below the daemon's own requests; a service held
 * under it would do nothing but reclaim.
 */
#define LEDGER_HIGH_FLOOR (UINT64_C(256) << 10)

typedef struct ThrottleEntry {
        char *path;                     /* cgroup, relative to the cgroup root */
        uint64_t cgroup_id;
        ThrottleKind kind;
        uint32_t major, minor;          /* a device's kind only (throttle_kind_has_device) */
        uint64_t original;              /* value before the daemon touched it (THROTTLE_NONE = "max") */
        uint64_t applied;               /* value the daemon last wrote */
        uint64_t since_usec;            /* CLOCK_REALTIME: when it was first recorded; 0: unknown (a v1 line) */
        uint64_t requested[_POINT_MAX]; /* THROTTLE_NONE: that point asks nothing */
        char reason[_POINT_MAX][LEDGER_REASON_MAX];
        char lifts_when[_POINT_MAX][LEDGER_LIFTS_MAX];
        bool original_replaced;         /* loaded with an implausible original, now THROTTLE_NONE */
        bool swap_deferred;             /* not kept on disk: memory.high held at the usage while a swap disk
                                         * is congested; asked again once it is not */
        uint64_t drain;                 /* not kept on disk: ThrottleRequest's, from the last set */
        uint64_t drain_since_usec;      /* not kept on disk: CLOCK_MONOTONIC, when the cap began to drain an
                                         * ended writer's leftovers; 0: it does not */
        bool drain_emptied;             /* not kept on disk: ... and its cgroup was found empty since */
} ThrottleEntry;

/* A cgroup an operator released: the points may not throttle it before until_usec. */
typedef struct LedgerHold {
        char *path;                     /* relative to the cgroup root, or LEDGER_HOLD_ALL */
        uint64_t cgroup_id;             /* when released (0 for LEDGER_HOLD_ALL); the path is what counts */
        uint64_t since_usec, until_usec;        /* CLOCK_REALTIME */
        char who[LEDGER_WHO_MAX];
        bool refusal_logged;            /* not kept on disk: a refused request was logged */
} LedgerHold;

typedef struct Ledger {
        ThrottleEntry *entries;
        size_t n;
        size_t allocated;
        LedgerHold *holds;
        size_t n_holds;
        size_t allocated_holds;
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
 * Point q->point asks for q->value on (path, q->kind, device), for q->reason,
 * to be lifted on q->lifts_when. A new entry records `current` (what the file
 * holds now) as the original and `now_usec` (CLOCK_REALTIME) as its since.
 * Returns the entry; the caller compares throttle_effective() with ->applied
 * to know whether to write. -E2BIG when the ledger is full, -ENOMEM.
 */
int ledger_request(Ledger *l, const char *path, uint64_t cgroup_id, const ThrottleRequest *q, uint64_t current,
                   uint64_t now_usec, ThrottleEntry **ret);

/* Point `p` withdraws its request. The caller then writes throttle_effective()
 * and, once nothing is requested and the original is back, calls ledger_remove(). */
ThrottleEntry *ledger_release(Ledger *l, const char *path, ThrottleKind kind, uint32_t major, uint32_t minor,
                              ThrottlePoint p);

void ledger_remove(Ledger *l, ThrottleEntry *e);

/* Every point's request on the entry withdrawn, with its reason and "lifts when". */
void throttle_clear_requests(ThrottleEntry *e);

/*
 * Records that `path` (LEDGER_HOLD_ALL: every cgroup) is released from
 * `since_usec` to `until_usec` by `who`; a hold on the same path is replaced.
 * -E2BIG when LEDGER_HOLDS_MAX are held, -ENOMEM.
 */
int ledger_hold(Ledger *l, const char *path, uint64_t cgroup_id, uint64_t since_usec, uint64_t until_usec,
                const char *who, LedgerHold **ret);

/* The release recorded for exactly `path` (LEDGER_HOLD_ALL: the one of every cgroup), ended or not; NULL. */
LedgerHold *ledger_find_hold(const Ledger *l, const char *path);

/* The hold that keeps `path` released at `now_usec`: its own, or one of every cgroup; NULL if none. */
LedgerHold *ledger_held(const Ledger *l, const char *path, uint64_t now_usec);

void ledger_unhold(Ledger *l, LedgerHold *h);

/*
 * Someone else wrote `found` where we had written e->applied: theirs wins. It
 * becomes the new original, every request is dropped, and the entry is left
 * for the caller to remove. Returns true if that happened.
 */
bool ledger_adopt_foreign(ThrottleEntry *e, uint64_t found);

/*
 * Whether the entry's original can be a value read from the kernel: for
 * memory.high "max" or a whole number of pages (page_size 0: not checked) of
 * at least LEDGER_HIGH_FLOOR; for memory.swap.max "max" or a whole number of
 * pages (0 included); for io.max a device other than 0:0 and a wbps other
 * than 0; for a device queue's knob a device other than 0:0 and a number
 * (not "max") other than 0. An entry that fails this came from a corrupt ledger:
 * restoring its original (memory.high=1) would cripple a live cgroup.
 */
bool throttle_original_plausible(const ThrottleEntry *e, uint64_t page_size);

/* Writes the ledger to its file atomically: a new FILE.tmp beside it (created
 * afresh, never written through a link left there), fsync, rename, fsync of
 * the directory. No file: nothing to do. */
int ledger_save(const Ledger *l);

/* What loading the file met, for the caller to log. */
typedef struct LedgerLoadReport {
        unsigned bad_line;      /* first line skipped as unreadable; 0: none */
        unsigned n_bad;         /* lines skipped as unreadable: garbage, or longer than LEDGER_LINE_MAX */
        unsigned n_dropped;     /* entries past LEDGER_MAX or releases past LEDGER_HOLDS_MAX, not loaded */
        unsigned n_implausible; /* entries loaded with original = THROTTLE_NONE (->original_replaced) */
        bool truncated;         /* larger than LEDGER_FILE_MAX: the rest was not read */
} LedgerLoadReport;

/*
 * Reads the ledger file into l; a missing file is an empty ledger. The file is
 * opened without following a link (-ELOOP) or waiting on a FIFO, and must be a
 * regular file (-EISDIR, -EBADFD for a FIFO, socket or device). It is read
 * as a stream within the bounds above. Entries of a v1 file (no since, no
 * "lifts when") are read as well; releases are read whether ended or not.
 * Unreadable lines are skipped; entries past LEDGER_MAX and releases past
 * LEDGER_HOLDS_MAX are dropped; an entry whose original is implausible (see
 * throttle_original_plausible) is kept with THROTTLE_NONE, so that "max" is
 * restored instead. The caller logs, from the report, each of: the first bad
 * line (file:line) and how many there were; how many entries were dropped;
 * which entries had their original replaced (a warning: the ledger was
 * corrupt, the cgroup gets memory.high or wbps "max" back); a truncated file.
 */
int ledger_load_full(Ledger *l, LedgerLoadReport *ret_report);

/* ledger_load_full() for callers that take only the first bad line: the rest
 * of the report it logs as warnings itself. */
int ledger_load(Ledger *l, unsigned *ret_bad_line);

/* The knob of a kind, for events and the control API: "io.max wbps", "memory.high", "memory.swap.max",
 * "nr_requests", "max_sectors_kb". */
const char *throttle_knob(ThrottleKind k);

/* One entry as text, for logs: "io.max 8:0 wbps", "memory.high", "memory.swap.max", "8:0 queue nr_requests". */
const char *throttle_describe(const ThrottleEntry *e, char *buf, size_t size);
