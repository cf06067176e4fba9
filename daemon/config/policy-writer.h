/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Policy changes written off the event loop. A change fsyncs a file and a
 * directory, which can take seconds on a disk that a writer saturates, so it
 * runs on its own task queue (taskq.h): bounded, one at a time, the result
 * handed back on the loop. A change in progress is finished at stop, never
 * interrupted; queued ones are dropped.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "policy-store.h"
#include "taskq.h"

#define POLICY_WRITER_QUEUE_MAX 8

typedef struct PolicyJob PolicyJob;

struct PolicyJob {
        Task task;                      /* the engine's */
        PolicyChange *change;           /* owned */
        void *userdata;                 /* the caller's, e.g. the request to reply to */
        int result;                     /* of policy_store_apply() */
        char *path;
        char *message;
};

typedef void (*PolicyJobDone)(PolicyJob *job, void *userdata);

typedef struct PolicyWriter PolicyWriter;

/*
 * `done` runs on the loop for every job, in order; `drop` (may be NULL) for
 * the jobs a stop leaves without a result. The job is freed after either.
 */
int policy_writer_new(sd_event *event, PolicyJobDone done, void (*drop)(PolicyJob *job), void *userdata,
                      PolicyWriter **ret);

/* Frees the writer: waits for the change in progress (a file is never left half-done), drops the rest. */
PolicyWriter *policy_writer_free(PolicyWriter *w);

/* Queues a change (taking ownership of it). -EBUSY if the queue is full. */
int policy_writer_submit(PolicyWriter *w, PolicyChange *change, void *job_userdata);
