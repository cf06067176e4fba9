/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one engine for blocking work: a thread that runs tasks one at a time
 * off the event loop, a bounded queue in front of it, and each result handed
 * back on the loop through an eventfd. A task may carry a time budget, after
 * which its thread is interrupted with a signal (a blocked write returns
 * EINTR; the kernel's reclaim loops stop on a pending signal). The worker
 * runs two (throttle writes; reclaim and writeback: worker.h), the policy
 * writer and the metrics textfile (serving/metrics-file.c) one each.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

typedef struct Task Task;

struct Task {
        void (*run)(Task *t);                   /* in the thread */
        void (*done)(Task *t, void *userdata);  /* on the loop, with the queue's userdata; frees the task */
        void (*drop)(Task *t, void *userdata);  /* at stop, for a task whose result nobody takes; frees it */
        uint64_t budget_usec;                   /* 0: none */
        bool cancelled;                         /* the queue's: taskq_cancel() */
        Task *next;                             /* the queue's */
};

typedef struct TaskQueue TaskQueue;

/*
 * A queue of at most `max` tasks (queued, running or waiting to be handed
 * back) with its thread. At stop the running task is interrupted if
 * `interrupt_at_stop` and waited for at most 1.5 s (then abandoned with the
 * queue: the process is ending); otherwise waited for (a file half-written is
 * worse than a stop a moment later). Every task not handed back is dropped.
 */
int taskq_new(sd_event *event, const char *name, size_t max, bool interrupt_at_stop, void *userdata,
              TaskQueue **ret);
TaskQueue *taskq_free(TaskQueue *q);

/*
 * The first half of taskq_free(): tells the thread to stop and interrupts
 * its running task, without waiting. The 1.5 s a later taskq_free() waits
 * count from here, so that queues stopped together are waited for together,
 * not one after the other. Idempotent; NULL is a no-op.
 */
void taskq_stop(TaskQueue *q);

/* Queues a task (the queue owns it on success). -EBUSY when full: the caller keeps it. */
int taskq_submit(TaskQueue *q, Task *t);

/*
 * Cancels the tasks `match` picks among those queued or running: a queued one
 * is handed back without being run, the running one is interrupted (a blocked
 * write returns early) and should not start what it has not started
 * (taskq_cancelled()). Each is handed back through `done` as usual. Returns
 * how many were cancelled.
 */
size_t taskq_cancel(TaskQueue *q, bool (*match)(const Task *t, void *arg), void *arg);

/* Whether t was cancelled (in its run function: before each step that writes). */
bool taskq_cancelled(const Task *t);

/* Tasks queued, running or waiting to be handed back. */
size_t taskq_pending(TaskQueue *q);

/*
 * The task running now (NULL: none), for the loop to tell "queued" from
 * "running"; only to compare or to read what the submitter set before it
 * queued the task (the loop alone frees a task, after handing it back).
 */
const Task *taskq_running(TaskQueue *q);

/* In a run function: whether the queue is stopping (a long task returns at its next step). */
bool taskq_stopping(void);
