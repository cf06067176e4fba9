/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The worker: a thread that does what may block in the kernel (writes to
 * memory.reclaim and memory.high, which reclaim in the writer's context;
 * sync_file_range over a cgroup's files) off the event loop. Its queue is
 * bounded; each job has a time budget after which the thread is interrupted
 * with a signal (the kernel's reclaim loops stop on a pending signal), and
 * results come back to the loop as events.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#define WORKER_QUEUE_MAX 64

typedef enum JobKind {
        JOB_WRITE,              /* write `data` to `file` below the cgroup */
        JOB_RECLAIM,            /* write `bytes` to memory.reclaim, measure memory.current around it */
        JOB_WRITEBACK,          /* start writeback of the files the cgroup's tasks hold open for
                                 * writing, and a commit of each btrfs they are on */
} JobKind;

typedef struct Job {
        JobKind kind;
        uint64_t cookie;        /* the submitter's: comes back with the result */
        int dirfd;              /* the worker's own duplicate of the cgroup's fd */
        char file[32];
        char data[96];
        uint64_t bytes;
        uint64_t step;          /* JOB_RECLAIM: at most this much per write (0: all at once) */
        bool swappiness0;       /* JOB_RECLAIM: add " swappiness=0" (cache only) */
        uint64_t budget_usec;
        char path[256];         /* for messages */

        /* results */
        int result;             /* 0 or negative errno (-EAGAIN from memory.reclaim is an outcome) */
        uint64_t duration_usec;
        uint64_t before, after; /* memory.current around a reclaim */
        uint64_t files;         /* files a writeback touched */
        uint64_t commits;       /* btrfs transaction commits a writeback started */
        bool interrupted;       /* stopped at its time budget */
} Job;

typedef struct Worker Worker;
typedef void (*WorkerDone)(const Job *job, void *userdata);

int worker_new(sd_event *event, WorkerDone done, void *userdata, Worker **ret);
Worker *worker_free(Worker *w);

/*
 * Queues a job; the worker takes its own duplicate of cgroup_dirfd. -EBUSY
 * when the queue is full (the caller tries again at a later tick), -ENOMEM.
 */
int worker_submit(Worker *w, const Job *job, int cgroup_dirfd);

/* Jobs queued or running. */
unsigned worker_pending(const Worker *w);

/* Proc root for JOB_WRITEBACK's walk of /proc/PID/fd ("/proc" outside tests). */
void worker_set_proc_root(Worker *w, const char *proc_root);
