/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cgroup jobs that may block in the kernel, run off the event loop on
 * task queues (taskq.h): writes to memory.high (lowering it reclaims in
 * the writer's context: lowered in steps of at most 8 MiB under the usage),
 * memory.reclaim in measured steps of at most 8 MiB, and writeback of the
 * files a cgroup's tasks hold open for writing, in bounded ranges. Each job
 * has a time budget; at stop the running ones are interrupted, and return
 * once the kernel is done with their current step.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "taskq.h"

/* Jobs queued, running or waiting to be handed back, in each lane. */
#define WORKER_QUEUE_MAX 64
/*
 * Throttle writes (JOB_FILE_WRITE) run in a lane of their own, reclaim and
 * writeback in another, each lane on its own thread in the order queued: a
 * throttle write never waits behind a long job of the other kind.
 */
#define WORKER_LANES 2

typedef enum JobKind {
        JOB_FILE_WRITE,         /* write `data` to `file` below the cgroup */
        JOB_RECLAIM,            /* write `bytes` to memory.reclaim, measure memory.current around it */
        JOB_WRITEBACK,          /* start writeback of the files the cgroup's tasks hold open for
                                 * writing, and a commit of each btrfs they are on; with
                                 * `to_completion`, wait for those writes to finish */
} JobKind;

typedef struct Job {
        Task task;              /* the engine's */
        JobKind kind;
        uint64_t cookie;        /* the submitter's: comes back with the result */
        uint64_t action_id;     /* an operator's one-shot action (actions.h); 0: a point's own */
        int dirfd;              /* the worker's own duplicate of the cgroup's fd */
        char proc_root[128];    /* JOB_WRITEBACK walks /proc/PID/fd below it (a copy: a job abandoned at
                                 * stop must not point into the worker) */
        char file[32];
        char data[96];
        uint64_t bytes;
        uint64_t step;          /* JOB_RECLAIM: at most this much per write (0: all at once) */
        bool swappiness0;       /* JOB_RECLAIM: add " swappiness=0" (cache only) */
        bool swap_held;         /* JOB_RECLAIM: the submitter holds memory.swap.max at 0 for its length */
        bool may_swap;          /* JOB_RECLAIM: asked for more than cache: stops before a write while
                                 * the swap disk is congested (worker_set_swap_congested) */
        bool swap_was_busy;     /* JOB_RECLAIM: an earlier job of this request stopped for it */
        uint64_t freed_earlier; /* JOB_RECLAIM: what earlier jobs of this request freed */
        uint64_t earlier_usec;  /* JOB_RECLAIM: how long they took */
        uint64_t first_started_usec;    /* JOB_RECLAIM: when the first of them started (0: this is it) */
        bool shared;            /* JOB_RECLAIM: a memory.high lowering of its cgroup, one above or one below
                                 * was in the other lane while it was pending, so before - after is not
                                 * its own alone; set by the actuator, carried on by the submitter from an
                                 * earlier job of the request */
        bool to_completion;     /* JOB_WRITEBACK: each range written and waited for, within the budget */
        uint64_t headroom;      /* JOB_FILE_WRITE of memory.high: a value this far over the usage is
                                 * taken without a reclaim (0: none is written in its place) */
        uint64_t ceiling;       /* JOB_FILE_WRITE of memory.high: never written above this (the
                                 * original, or what is asked if higher) */
        uint64_t budget_usec;
        char path[256];         /* for messages */

        /* results */
        int result;             /* 0 or negative errno (-EAGAIN from memory.reclaim is an outcome) */
        uint64_t started_usec;  /* CLOCK_REALTIME, when the thread took it */
        uint64_t duration_usec;
        uint64_t finished_usec; /* CLOCK_MONOTONIC, when its last write returned (0: never run) */
        uint64_t before, after; /* memory.current around a reclaim */
        uint64_t reclaimed;     /* JOB_RECLAIM: what its writes came to (each at least what it asked) */
        uint64_t files;         /* files a writeback touched */
        uint64_t commits;       /* btrfs transaction commits a writeback started */
        uint64_t dirty_before, dirty_after;     /* JOB_WRITEBACK: file_dirty + file_writeback; UINT64_MAX: unknown */
        bool interrupted;       /* stopped at its time budget (or at stop) */
        bool swap_busy;         /* JOB_RECLAIM with may_swap: stopped because the swap disk is congested */
        bool swap_deferred;     /* memory.high: not written under the usage, a swap disk being congested
                                 * and the cgroup holding anon it may swap out; the file holds what it
                                 * held, or the usage with the headroom (see high_written) */
        uint64_t high_written;  /* memory.high: the last value the job wrote (0: none) */
} Job;

/* The lane (0 .. WORKER_LANES - 1) jobs of this kind run in. */
unsigned worker_lane(JobKind kind);

typedef struct Worker Worker;
typedef void (*WorkerDone)(const Job *job, void *userdata);

/* `name`: its threads are called NAME-throttle and NAME-bulk (15 bytes kept). `proc_root`: where
 * JOB_WRITEBACK finds /proc ("/proc" outside tests). Without `bulk_lane`, a worker for throttle
 * writes alone: a job of another kind is refused (-EINVAL). */
int worker_new(sd_event *event, const char *name, const char *proc_root, bool bulk_lane, WorkerDone done,
               void *userdata, Worker **ret);
Worker *worker_free(Worker *w);

/*
 * Tells every lane to stop, interrupting its running job, without waiting:
 * the 1.5 s worker_free() waits at most count from the first call, so that
 * workers stopped together are waited for together. Idempotent; NULL: no-op.
 */
void worker_stop(Worker *w);

/*
 * Queues a copy of `job`; the worker takes its own duplicate of cgroup_dirfd.
 * -EBUSY when its lane is full (the caller tries again at a later tick), -ENOMEM,
 * -EINVAL for a kind it has no lane for, or the errno of the fd's duplicate.
 */
int worker_submit(Worker *w, const Job *job, int cgroup_dirfd);

/*
 * Cancels the jobs with these cookies: one still queued is not run, the one
 * running is interrupted (a memory.high write's reclaim stops; the value it
 * set stays). Each comes back to `done`, with -ECANCELED if its write was
 * never made.
 */
size_t worker_cancel(Worker *w, const uint64_t *cookies, size_t n);

/*
 * Whether a disk that holds swap is congested now (the loop says so each
 * tick; one flag for the process, read by the worker before each write of
 * a reclaim that may swap). A page written to swap waits in that disk's
 * queue, uninterruptibly: a reclaim that swaps there keeps the thread in
 * the kernel for seconds, and adds its writes to a queue others wait in.
 */
void worker_set_swap_congested(bool congested);
bool worker_swap_congested(void);

/* Jobs queued, running or waiting to be handed back. */
size_t worker_pending(Worker *w);

/* The jobs running now, one per lane at most: each one's cookie and when it started
 * (CLOCK_REALTIME; 0: taken by its thread but not begun). Returns how many. */
typedef struct WorkerRunning {
        uint64_t cookie;
        uint64_t started_usec;
} WorkerRunning;
size_t worker_running(Worker *w, WorkerRunning ret[static WORKER_LANES]);
