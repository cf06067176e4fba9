/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's picture of the host: every cgroup's newest samples and the
 * signals derived from them, and the same for the host as a whole. Cgroups
 * are found by events: every cgroup directory is watched (cgfs-watch.h), a
 * new cgroup is added and sampled once as its mkdir is read, a removed one
 * dropped. The tree is walked at the start, when events were lost or a
 * watch refused (then as before: when the root's count of descendants
 * changed, a cgroup was found removed, or a minute passed), and when the
 * root's count of descendants differs from the table in a way the events do
 * not explain (observer-scan.c). A rescan reads limits; a sample pass rereads
 * counters and derives rates. Cgroups come in two tiers: hot ones (those a
 * point governs) are sampled every pass from files kept open; the others
 * once per cold interval, in turn, from files opened and closed again, so
 * that they hold no fds and cost nothing in between. A
 * cold cgroup that writes is sampled every pass while it does (and one cold
 * interval after): the write point's device figures need the writers.
 * Files are kept open only within an fd budget taken from RLIMIT_NOFILE; a
 * governed cgroup past it is still sampled every pass, opening and closing.
 * Steady-state passes allocate nothing.
 */
#pragma once

#include <stdint.h>

#include "cgfs.h"
#include "cgtable.h"
#include "devstat.h"
#include "hostfs.h"
#include "metadata.h"
#include "sampler.h"
#include "swaps.h"
#include "derived.h"

/* New cgroups remembered for the manager between two looks (it attaches their policies). */
#define OBSERVER_NEWS_MAX 64
/* Events taken at one call of observer_take_events(): a burst is taken over several turns of the loop
 * (each new cgroup is opened, watched and sampled at once: a turn stays short). */
#define OBSERVER_EVENTS_MAX 32
/* ... and at a rescan, which catches up with what the loop has not read yet. */
#define OBSERVER_RESCAN_EVENTS_MAX 1024

typedef struct ColdDevice {
        uint32_t major, minor;
        uint64_t until_pass;
} ColdDevice;

typedef struct Observer {
        CgRoot *root;
        HostRoot *host;
        CgTable cgroups;
        CgroupSample scratch;           /* where a cgroup is read before it replaces the entry's sample;
                                         * its device buffer kept from one read to the next */
        uint64_t page_size;

        SystemSample system[2];
        uint64_t system_usec[2];
        uint8_t system_cur, system_n;
        SystemSignals system_signals;
        MetadataView metadata;
        DevStatTable devices;
        SwapDisk swap_disks[SWAPS_MAX]; /* the disks of the active swap areas, sampled each pass */
        size_t n_swap_disks;
        size_t swap_unknown;            /* swap areas whose disk is not known (said when it changes) */

        size_t gone_last_pass;          /* cgroups found removed by the last sample pass */

        uint64_t passes;                /* sample passes so far */
        unsigned cold_every;            /* a cold cgroup is sampled every this many passes (1: every pass) */
        uint64_t descendants;           /* the root's nr_descendants at the last walk; UINT64_MAX: unknown */
        uint64_t walked_usec;           /* CLOCK_MONOTONIC of the last walk */
        uint64_t walks;                 /* walks done (a rescan may skip its walk) */
        size_t out_of_fds;              /* cgroups the last pass could not open: out of fds */
        size_t keep_max;                /* cgroups that may keep their files open (the fd budget) */
        size_t n_kept;                  /* ... and that do */
        bool gone_since_walk;           /* a cgroup was found removed: the next rescan walks */

        int watch_fd;                   /* inotify on every cgroup directory; -1: none (walks find cgroups) */
        bool rewalk;                    /* events were lost, or a directory moved: the next rescan walks */
        uint64_t news[OBSERVER_NEWS_MAX];       /* ids of cgroups the events added, for the manager */
        size_t n_news;
        bool news_lost;                 /* more were added than news holds: look at every entry */
        size_t removed_with_policy;     /* entries under a policy the events dropped (the manager's count) */
        uint64_t events_added, events_removed;  /* cgroups added and dropped by events, all told */

        /* What a pass samples: first the cgroups on `every` (hot, warm and new ones, by id), then cold
         * ones in turn, each once per cold interval: a pass touches no other entry. */
        uint64_t *every;                /* sorted ids; may hold some no longer due (they leave it as seen) */
        size_t n_every, n_every_alloc;
        bool every_stale;               /* it could not grow: made again at the next pass */
        uint64_t cold_interval_usec;    /* the cold interval, from the manager; 0: cold_every passes */
        uint64_t cold_credit;           /* cold samples owed, in µs of it (or in passes) times cgroups */
        uint64_t cold_pass_usec;        /* when the last pass began (its cold share counts from there) */
        uint64_t cold_next_id;          /* where the turn of the cold cgroups goes on */
        /* What cold samples may cost: a share of one core (ColdSampleBudget=). Past it the rest of a
         * pass's cold quota is put off, so a big tree stretches the cold round, not the daemon's CPU. */
        uint64_t cold_budget_ppm;       /* 0: no bound */
        uint64_t tick_usec;             /* the manager's tick (a pass's span, for the budget); 0: unknown */
        int64_t cold_budget_left;       /* CPU not spent yet, in µs times ppm (so that no fraction of a
                                         * µs is lost at each pass): accrues with time, spent by samples */
        uint64_t cold_budget_usec;      /* when it last accrued */
        uint64_t cold_deferred;         /* cold samples it put off, all told */
        uint64_t cold_round_began;      /* when the turn last went round the table; 0: not yet */
        uint64_t cold_round_usec;       /* how long the last whole round took; 0: none done yet */
        ColdDevice cold_devs[DEVSTAT_MAX];      /* devices cold cgroups wrote to, followed between turns */
        size_t n_cold_devs;

        /* The sample pass in progress, done in steps (observer_pass_begin, observer_pass_step). */
        bool pass_open;
        bool pass_cold;                 /* its first part is done: cold cgroups now */
        size_t pass_quota;              /* cold cgroups it still samples */
        size_t pass_looked;             /* cold cgroups it looked at (at most once round the table) */
        uint64_t pass_next_id;          /* the first id on `every` its next step samples */
        size_t pass_gone;               /* cgroups it found removed so far */
        unsigned pass_steps;            /* steps it took so far (the last pass's, once it is done) */
} Observer;

/* Fds kept back from RLIMIT_NOFILE for all but cgroup files (control clients, worker, triggers, walks). */
#define OBSERVER_FD_RESERVE 96
/* What a cgroup sampled from kept files holds: its directory, five files, two PSI triggers. */
#define OBSERVER_FDS_PER_KEPT 8

/* The most cold-sample time that can be saved up (µs), or two passes' share where that is more: a
 * burst after a quiet spell stays short; a debt (a sample that took long) is owed no further back. */
#define OBSERVER_COLD_BURST_USEC (25 * USEC_PER_MSEC)

/* A cold cgroup's limits are reread with every this many of its samples (two minutes at 30s). */
#define OBSERVER_COLD_LIMITS_EVERY 4

/* A rescan walks the tree at least this often, even if the root's count of descendants did not change. */
#define OBSERVER_WALK_MAX_USEC (60 * USEC_PER_SEC)
/* ... and, while every directory is watched, this often if the count of descendants and the table
 * disagree (a safety net: the events say what changes). */
#define OBSERVER_WALK_WATCHED_USEC (600 * USEC_PER_SEC)

int observer_new(const char *cgroup_root, const char *proc_root, const char *sys_root, Observer **ret);
Observer *observer_free(Observer *o);
static inline void observer_freep(Observer **o) {
        if (*o)
                observer_free(*o);
}

/* The first disk of an active swap area found congested (devstat_congested) within
 * DEVSTAT_CONGESTED_HOLD_USEC of the last pass (a disk whose stat stopped reading ages out too);
 * NULL: none. */
const DevStat *observer_swap_congested(const Observer *o);

/* Reads a cgroup's limits now (attached for it, released after). */
void observer_read_limits(Observer *o, CgEntry *e);

/* Drops an entry from the table, its share of the fd budget and the manager's count with it. CgEntry
 * pointers taken before may move. */
void observer_drop(Observer *o, CgEntry *e, bool dir_gone);

/* Samples one cgroup at now_usec and derives its signals. -ENODEV: it is gone. */
int observer_sample_entry(Observer *o, CgEntry *e, uint64_t now_usec);

/* Samples the host's files alone (a host PSI trigger fired) and derives its signals. */
void observer_sample_host(Observer *o, uint64_t now_usec);

/* Samples the host, every hot cgroup, and the cold cgroups whose turn it is: a whole pass at once. */
int observer_sample(Observer *o, uint64_t now_usec);

/*
 * The same pass in steps, so that a caller can let other work run between
 * them. The begin samples the host (a pass still open is given up: its
 * cgroups sampled so far keep their samples). Each step samples at most
 * max_cgroups cgroups, and stops early once max_usec of CLOCK_MONOTONIC have
 * passed (after one cgroup at least). A step resumes at the cgroup id where
 * the last one stopped, so that a rescan in between neither repeats nor skips
 * a cgroup (one found by it below that id waits for the next pass). Returns 1
 * when the pass is done (device figures sampled, the pass counted), 0 when
 * cgroups remain, -ENOMEM (the pass stays open). A step with no pass open
 * begins one.
 */
void observer_pass_begin(Observer *o, uint64_t now_usec);
int observer_pass_step(Observer *o, uint64_t now, size_t max_cgroups, uint64_t max_usec);

/* The list of what each pass samples first, made afresh from the table (after a walk). */
void observer_every_rebuild(Observer *o);

/* Moves a cgroup between the tiers; a cgroup that turns cold lets go of its fds. */
void observer_set_hot(Observer *o, CgEntry *e, bool hot);
/*
 * The governed cgroups (hot, not found gone), in id order, without a look at
 * any other entry: `*cursor` from 0, NULL after the last. Pointers stay good
 * until the table changes. The loop's body must not warm a cgroup nor make
 * one hot (observer_warm(), observer_set_hot()): the list it walks would
 * shift under the cursor.
 */
CgEntry *observer_next_hot(const Observer *o, size_t *cursor);

/*
 * Every cold cgroup is sampled at each of the next two passes, as a writer
 * is (then those that write stay warm): for a device that completes writes
 * no cgroup in view accounts for, so that the writer among the cold ones is
 * found within two passes, not at its turn of the cold interval.
 */
void observer_warm_all(Observer *o);
/* One cold cgroup sampled at the next two passes (again and again, while someone asks). */
void observer_warm(Observer *o, CgEntry *e);

/*
 * Opens a cgroup's directory for use (a cold cgroup holds none between its
 * samples): 0, -ENODEV if it is gone (marked so), -EMFILE when out of fds
 * (counted in out_of_fds for this pass).
 */
int observer_attach(Observer *o, CgEntry *e);

/* How fresh a cgroup's newest sample is at now_usec, in µs (UINT64_MAX before the first). */
uint64_t observer_sample_age(const CgEntry *e, uint64_t now_usec);

/* The newest system sample, or NULL before the first. */
const SystemSample *observer_system_sample(const Observer *o);
