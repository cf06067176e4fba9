/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one thread that writes policy files. A policy change fsyncs a file and
 * a directory, which can take seconds on a disk that a writer saturates, so
 * it never runs on the event loop: changes queue here (bounded), run one at a
 * time in a thread, and come back to the loop through an eventfd.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "policy-store.h"

#define POLICY_WRITER_QUEUE_MAX 8

typedef struct PolicyJob PolicyJob;
typedef void (*PolicyJobDone)(PolicyJob *job, void *userdata);

struct PolicyJob {
        PolicyChange *change;           /* owned */
        void *userdata;                 /* the caller's, e.g. the request to reply to */
        int result;                     /* of policy_store_apply() */
        char *path;
        char *message;
        PolicyJob *next;
};

typedef struct PolicyWriter PolicyWriter;

/* `done` runs on the loop for every job, in order; the job is freed after it. */
int policy_writer_new(sd_event *event, PolicyJobDone done, void *userdata, PolicyWriter **ret);

/*
 * Frees the writer: waits for the change in progress (so that a file is
 * never left half-done), then calls `done` for no further job; queued jobs are
 * handed to `drop` (may be NULL) and freed.
 */
PolicyWriter *policy_writer_free(PolicyWriter *w, void (*drop)(PolicyJob *job));

/* Queues a change (taking ownership of it). -EBUSY if the queue is full. */
int policy_writer_submit(PolicyWriter *w, PolicyChange *change, void *job_userdata);

size_t policy_writer_pending(const PolicyWriter *w);
