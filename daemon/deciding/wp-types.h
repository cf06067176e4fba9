/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point's types: what it is given each tick (cgroups, devices,
 * settings), what it keeps between ticks (its state), and their bounds; the
 * plan it returns is plan.h's. write-point.h says how it decides.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device-rate.h"
#include "plan.h"
#include "policy.h"

#define WP_CGROUPS_MAX 4096
#define WP_CAPS_MAX 256
#define WP_BUDGETS_MAX 256
#define WP_ACTIONS_MAX 512             /* actions in a plan of the write point */
#define WP_CAPPED_PER_DEVICE 4
#define WP_BASELINES_MAX 256
#define WP_STEP_USEC (1000 * 1000)
#define WP_LATENCY_STEP_USEC (500 * 1000) /* IOLatencyTarget=: a change of the cap shows within this */
#define WP_KNEE_RETURN_SEC 100          /* IOLatencyTarget=: the limit under the knee climbs back to it in this */
#define WP_GUARD_DIRTY_MIN (UINT64_C(16) << 20)        /* dirty data that makes a writer of a cgroup */
#define WP_WRITING_RATE_MIN (UINT64_C(1) << 20)        /* ... as does this many bytes a second to devices */
#define WP_UNMANAGED_WRITERS_MAX 64     /* cgroups under no policy in view at once (CapWritersWithoutPolicy=) */
#define WP_GUARD_WAIT_MIN_PPM 10000     /* an io stall that keeps a protected cgroup active on its devices */
#define WP_CAP_BACKLOG_USEC (1000 * 1000) /* a capped writer's dirty+writeback: this long at its cap... */
#define WP_CAP_BACKLOG_MIN (UINT64_C(16) << 20)        /* ...but at least this much */
/* A cgroup made while the daemon runs is new for this long: made beside a running protected cgroup,
 * it is capped on the guarded devices before its first write (a writer's cgroup is made, then its
 * process starts), and the cap goes at the end of this time if it has not written. */
#define WP_NEWBORN_USEC (10 * 1000 * 1000)
/* A capped writer counts as one that wants all of its part of GuardRate= this long after it last used half
 * its cap: a writer held by io.max completes its writeback in bursts, and a tick between two shows none. */
#define WP_SHARE_HOLD_USEC (3 * 1000 * 1000)
/* A search for who holds dirty data not in view, at most this often (core/runner-write.c). */
#define WP_SEARCH_USEC (500 * 1000)
/* A shallow device queue. 4 is the least nr_requests the kernel takes (BLKDEV_MIN_RQ). Each of a
 * protected cgroup's dependent writes waits behind up to that many of the writers' requests, so
 * their size is the wait: on the reference kernel's 16 MiB/s disk a request of 128 KiB is 8 ms
 * of the device, one of 32 KiB 2 ms, and on btrfs, whose fsync is a chain of such waits, the
 * victim's worst op with 32 KiB requests was 101 ms against 211 with the same queue of 128 KiB
 * requests set by hand, the writer's rate within 2 % (medians of three boots, docs/write-point.md). */
#define WP_QUEUE_NR_REQUESTS 4
#define WP_QUEUE_MAX_SECTORS_KB 32
#define WP_QUEUES_MAX 64

typedef struct WpCgroup {
        uint64_t id;
        const char *path;
        const Policy *policy;           /* never NULL, mode never off */
        bool implicit;                  /* under no policy: `policy` is the daemon's default for writers
                                         * (CapWritersWithoutPolicy=); only gathered while it writes or
                                         * is capped */
        bool protect;
        bool newborn;                   /* made while the daemon runs, WP_NEWBORN_USEC ago or less */
        bool above_writers;             /* under no policy and capped, with writers below it in view: its
                                         * dirty data and io are theirs, counted once, with theirs */
        bool superseded;                /* ... and one of them is capped in its stead: its cap is never
                                         * cut, rises to what the caps below it let through, and goes at
                                         * the hold time's end (keep_deepest() of core/runner-write.c,
                                         * wp_relax_caps()) */
        bool running;                   /* protected: a process is in it (cgroup.events "populated"); the
                                         * devices its io.stat lists are guarded while it runs */
        uint32_t io_limit_ppm;          /* effective IOPressureLimit= */
        bool have_io_stall;
        uint32_t io_stall_ppm;          /* "some", over the last tick */
        uint64_t io_stall_usec;         /* the same, in time */
        uint64_t io_latency_target_usec; /* effective IOLatencyTarget=; 0: the stall share rules */
        bool have_memory;
        uint64_t memory_current;
        uint64_t file;                  /* page cache, dirty included */
        uint64_t dirty;                 /* file_dirty + file_writeback */
        uint64_t memory_limit;          /* memory.max, else memory.high, else host memory */
        const DeviceRate *devices;
        uint8_t n_devices;
} WpCgroup;

typedef struct WpDevice {
        uint32_t major, minor;
        uint64_t write_rate;            /* completed, bytes/s */
        uint64_t capacity;              /* estimate, bytes/s */
} WpDevice;

typedef struct WpSettings {
        uint64_t hold_usec;             /* quiet time before a cap is lifted */
        uint32_t write_rate_min_ppm;    /* default floor, share of device capacity */
        uint32_t dirty_ratio_pct;       /* vm.dirty_ratio, for the memory.high of a budget */
        uint32_t global_guard_ppm;      /* share of nr_dirty_threshold that starts the guard */
        uint32_t guard_rate_ppm;        /* writers' cap from the first tick a protected cgroup does io on
                                         * their device, share of its capacity; 0: wait for a stall */
        uint64_t host_dirty;            /* nr_dirty + nr_writeback, bytes */
        uint64_t host_dirty_threshold;  /* bytes; 0: unknown */
        bool manage_queue_depth;        /* a shallow device queue while a protected cgroup is active there */
} WpSettings;

typedef struct WpCap {
        uint64_t cgroup_id;
        uint32_t major, minor;
        uint64_t wbps;
        uint64_t protected_id;          /* the cgroup it protects */
        uint64_t stepped_usec;          /* when it last stepped down */
        uint32_t stall_at_step;         /* the protected cgroup's smoothed stall then */
        uint8_t no_gain;                /* steps since the stall began that did not lower it */
        uint64_t guard_wbps;            /* the writer's part of GuardRate=, set by a guard: where creeping
                                           stops (0: none) */
        uint64_t guard_level;           /* the whole of GuardRate= on the device when a guard first set it:
                                           a part never grows past it */
        uint64_t active_usec;           /* when its writer last used half its cap or held WP_GUARD_DIRTY_MIN
                                           of dirty data (wp_track_busy()); the cap's making counts */
        uint64_t knee_wbps;             /* IOLatencyTarget=: the cap the latency last went over at (0: none) */
        uint64_t knee_usec;             /* ... and when it was cut from there */
        uint64_t cut_latency_usec;      /* IOLatencyTarget=: the tick's latency its last cut answered (0: its last
                                           step was a raise, a guard's first cap or a cut by stall share) */
        uint64_t busy_since_usec;       /* IOLatencyTarget=: since when its writer uses three quarters of it, as
                                           the raises saw it (0: it does not) */
        bool observed;                  /* decided while its policy only observed: not written */
        bool ahead;                     /* set on a new cgroup before it wrote; false once it writes */
} WpCap;

/* A protected cgroup's io stall: what it has with nobody else writing to its
 * devices, and a smoothed figure that steps of a cap are judged by. */
typedef struct WpBaseline {
        uint64_t cgroup_id;
        uint32_t ppm;                   /* baseline: moving average of "some", per tick */
        uint32_t n;                     /* ticks learnt from; 0: no baseline yet */
        uint32_t smooth_ppm;            /* half of each new figure, whether contended or not */
        bool have_smooth;
        uint64_t latency_usec;          /* io wait per request, smoothed the same way */
        uint64_t latency_now_usec;      /* ... and as this tick measured it */
        bool have_latency;
        bool latency_fresh;             /* this tick said something of it (it did io, or waited) */
} WpBaseline;

typedef struct WpBudget {
        uint64_t cgroup_id;
        uint64_t high;                  /* memory.high asked for */
        uint64_t limit;                 /* the dirty limit it was sized for (0: the guard's) */
        bool guard;                     /* set by the global dirty guard */
        bool cap;                       /* sized from the writer's io.max cap (its backlog) */
        bool observed;                  /* decided while its policy only observed: not written */
} WpBudget;

typedef struct WpDeviceQuiet {
        uint32_t major, minor;
        uint64_t last_stall_usec;
        uint64_t last_guarded_usec;     /* a protected cgroup did io there (GuardRate= on) */
} WpDeviceQuiet;

/* A device whose queue is kept shallow. */
typedef struct WpQueue {
        uint32_t major, minor;
        uint64_t protected_id;          /* the protected cgroup that last made it so */
        uint64_t last_active_usec;      /* a protected cgroup did io (or waited) there */
        bool observed;                  /* decided while that cgroup's policy only observed: not written */
} WpQueue;

typedef struct WritePointState {
        WpCap caps[WP_CAPS_MAX];
        size_t n_caps;
        WpBudget budgets[WP_BUDGETS_MAX];
        size_t n_budgets;
        WpDeviceQuiet quiet[WP_CAPS_MAX];
        size_t n_quiet;
        WpBaseline baselines[WP_BASELINES_MAX];
        size_t n_baselines;
        uint64_t writeback_inflight[WP_BUDGETS_MAX];    /* cgroup ids with a writeback job out */
        size_t n_writeback_inflight;
        WpQueue queues[WP_QUEUES_MAX];
        size_t n_queues;
} WritePointState;
