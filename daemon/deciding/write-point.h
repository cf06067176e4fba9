/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write point, as a pure function: from this tick's view of the cgroups
 * that have a policy, the devices they write to and its own state, it
 * decides a plan of actions. It never touches a file.
 *
 * - Write-rate caps: while a protected cgroup's io stall is over its limit,
 *   the heaviest writers on the devices it uses (not protected, not of higher
 *   priority, not its ancestors or descendants) get an io.max wbps= cap
 *   derived from the device's completed rate; the cap steps down while the
 *   stall lasts, creeps up when it is gone, and is lifted after a quiet hold
 *   time. Never below the writer's WriteRateMin=.
 *   The limit counts the stall the neighbours add: what the protected cgroup
 *   stalls with nobody else writing to its devices (its baseline, learnt
 *   while it is active and uncontended) comes on top of IOPressureLimit=. A
 *   cap steps down at most once per WP_STEP_USEC (the device queue in front
 *   of the victim takes that long to drain), only while the smoothed stall
 *   is over the limit too, and holds once a second step since the stall
 *   began has not brought the smoothed stall down by a tenth: the rest is
 *   not the writer's. It holds until the stall goes under the limit.
 *   With GuardRate=, the writers beside a protected cgroup are capped from
 *   the first tick it does io on their device, at that share of the
 *   device's capacity, before any stall (a cgroup with 16 MiB dirty counts
 *   as a writer on every guarded device before it has written to one): a
 *   stall steps them down, one step at most, from there, they creep back up
 *   to it (never past it) while the protected cgroup does not stall, and the
 *   cap goes once it has done no io there for the hold time. The cgroups
 *   that could be capped but do not write yet get the guard's cap too, so
 *   that a writer starting beside an active protected cgroup is held from
 *   its first bio; a backlog budget comes only once they write.
 *   With IOLatencyTarget= on the protected cgroup, its io wait per request
 *   (PSI "some" time over the requests io.stat counted in the tick; the
 *   whole wait when it completed none) rules instead of its stall share: a
 *   cap over the target is cut in proportion (half at most) every
 *   WP_LATENCY_STEP_USEC, but within WP_STEP_USEC of the last cut only if
 *   the tick's latency has grown since (the requests queued before a cut
 *   keep it high until they complete); one under three quarters of it is
 *   raised by a twentieth of the device (a tenth under half of it), up to the device's
 *   capacity (nine tenths of it unless ManageQueueDepth= bounds the queue),
 *   only once the writer has used three quarters of its cap for WP_STEP_USEC,
 *   and never past an eighth under the cap the last spell of cuts began at
 *   (the knee; a limit that climbs back to it in WP_KNEE_RETURN_SEC, and on
 *   at that pace): the cap follows the
 *   latency both ways, the guard's first cap is where it starts, not a
 *   ceiling, and WriteRateMin= stays its floor.
 * - Dirty budgets: over DirtyLimit= (dirty + writeback) the writer's
 *   memory.high is lowered to the level whose per-cgroup dirty limit matches
 *   the budget; it is restored once the writer is back under DirtyBackground=.
 * - Targeted writeback: over DirtyBackground=, while its devices have headroom
 *   and nobody protected is stalling on them.
 * - Global dirty guard: near the host's dirty threshold, the largest dirtiers
 *   are bounded through their budgets before the kernel throttles everyone.
 * - Device queues (ManageQueueDepth=, off by default): from the first tick a
 *   protected cgroup does io on a device (or waits on it), the device's queue
 *   is made shallow (WP_QUEUE_NR_REQUESTS requests of WP_QUEUE_MAX_SECTORS_KB
 *   at most), so that each of its dependent writes waits behind a few of the
 *   writers' requests, not hundreds; it is restored once no protected cgroup
 *   has done io there for the hold time, or the setting is turned off.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"
#include "device-rate.h"

#define WP_CGROUPS_MAX 4096
#define WP_CAPS_MAX 256
#define WP_BUDGETS_MAX 256
#define WP_ACTIONS_MAX 512
#define WP_CAPPED_PER_DEVICE 4
#define WP_BASELINES_MAX 256
#define WP_STEP_USEC (1000 * 1000)
#define WP_LATENCY_STEP_USEC (500 * 1000) /* IOLatencyTarget=: a change of the cap shows within this */
#define WP_KNEE_RETURN_SEC 100          /* IOLatencyTarget=: the limit under the knee climbs back to it in this */
#define WP_GUARD_DIRTY_MIN (UINT64_C(16) << 20)        /* dirty data that makes a writer of a cgroup */
#define WP_GUARD_WAIT_MIN_PPM 10000     /* an io stall that keeps a protected cgroup active on its devices */
#define WP_CAP_BACKLOG_USEC (1000 * 1000) /* a capped writer's dirty+writeback: this long at its cap... */
#define WP_CAP_BACKLOG_MIN (UINT64_C(16) << 20)        /* ...but at least this much */
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
        bool protect;
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
        uint64_t guard_wbps;            /* the first cap, set by a guard: where creeping stops (0: none) */
        uint64_t knee_wbps;             /* IOLatencyTarget=: the cap the latency last went over at (0: none) */
        uint64_t knee_usec;             /* ... and when it was cut from there */
        uint64_t cut_latency_usec;      /* IOLatencyTarget=: the tick's latency its last cut answered (0: its last
                                           step was a raise, a guard's first cap or a cut by stall share) */
        uint64_t busy_since_usec;       /* IOLatencyTarget=: since when its writer uses three quarters of it, as
                                           the raises saw it (0: it does not) */
        bool observed;                  /* decided while its policy only observed: not written */
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

typedef enum WpActionKind {
        WP_SET_CAP,             /* io.max wbps = value on (major:minor) */
        WP_LIFT_CAP,
        WP_SET_BUDGET,          /* memory.high = value */
        WP_LIFT_BUDGET,
        WP_WRITEBACK,
        WP_SET_QUEUE,           /* the queue of device (major:minor): nr_requests = value, max_sectors_kb = queue_kb */
        WP_LIFT_QUEUE,
} WpActionKind;

const char *wp_action_to_string(WpActionKind k);

typedef struct WpAction {
        WpActionKind kind;
        uint64_t cgroup_id;
        const char *path;
        bool observe;                   /* Mode=observe: log, do not write */
        uint32_t major, minor;
        uint64_t value;
        uint64_t queue_kb;              /* WP_SET_QUEUE: max_sectors_kb */
        uint64_t drain;                 /* WP_SET_CAP: the rate the cap rises to once the writer is gone
                                         * or stopping, while what it left is written (0: lifted at once) */
        uint64_t previous;              /* value before, UINT64_MAX: none */
        uint64_t protected_id;
        uint32_t stall_ppm;             /* the protected cgroup's, when it matters */
        char reason[160];
        char lifts_when[128];           /* a cap or budget set: what lifts it */
} WpAction;

typedef struct WpPlan {
        WpAction actions[WP_ACTIONS_MAX];
        size_t n;
        bool truncated;
} WpPlan;

/*
 * Decides this tick's plan. `cgroups` are those with a policy whose mode is
 * not off (their order does not matter); `devices` the devices they use. The
 * state is updated as if every action of the plan succeeded; an actuator that
 * fails calls write_point_forget() so that it is tried again.
 */
void write_point_decide(const WpCgroup *cgroups, size_t n_cgroups, const WpDevice *devices, size_t n_devices,
                        const WpSettings *settings, uint64_t now_usec, WritePointState *state, WpPlan *ret);

/* The action failed: forget what it would have changed in the state. */
void write_point_forget(WritePointState *state, const WpAction *a);

/* A writeback job for the cgroup finished. */
void write_point_writeback_done(WritePointState *state, uint64_t cgroup_id);

/* memory.high level whose per-cgroup dirty limit is `budget` (exposed for tests). */
uint64_t write_point_budget_high(const WpCgroup *c, uint64_t budget, uint32_t dirty_ratio_pct);

/* The io stall a protected cgroup has alone, learnt so far; 0: none yet. */
uint32_t write_point_baseline(const WritePointState *state, uint64_t cgroup_id);

