/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device queues the write point keeps shallow ([WritePoint]
 * ManageQueueDepth=): a disk's nr_requests and max_sectors_kb, lowered on
 * request and put back exactly. Every value is recorded before it is written,
 * in a ledger of its own (the cgroups' throttles have theirs; these name a
 * device, not a cgroup), so that a lift, a stop and the start after a crash
 * restore what was there; each tick checks the values are still ours, and
 * someone else's wins. nr_requests goes through a worker thread: the kernel
 * drains the device's queue before it takes a new depth, seconds behind a
 * writer's backlog. A knob the kernel refuses on a device (EINVAL from a
 * scheduler or driver that will not take that depth) is said once and left
 * alone there; the rest goes on.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "event-log.h"
#include "ledger.h"

typedef struct QueueDepthArgs {
        sd_event *event;
        const char *ledger_file;        /* NULL: the ledger is kept in memory only */
        int sys_fd;                     /* /sys (duplicated: the caller keeps its own) */
        EventLog *events;
        void (*changed)(void *userdata); /* the values or the records changed; may be NULL */
        void *userdata;
} QueueDepthArgs;

typedef struct QueueDepth QueueDepth;

int queue_depth_new(const QueueDepthArgs *args, QueueDepth **ret);
QueueDepth *queue_depth_free(QueueDepth *q);
static inline void queue_depth_freep(QueueDepth **q) {
        if (*q)
                queue_depth_free(*q);
}

/* What the write point asks for one device. */
typedef struct QueueRequest {
        uint32_t major, minor;          /* as io.stat names it (a partition: its disk's queue) */
        uint64_t nr_requests;
        uint64_t max_sectors_kb;
        const char *reason;
        const char *lifts_when;
} QueueRequest;

/*
 * Lowers the device's queue to what q asks (never raises a knob: one already
 * at or under it is left alone), recorded first. 0: done or on its way (a
 * knob the kernel refused before is skipped; it was said once). -ENOENT: no
 * such device, or one without a queue; an -EIO-like error: the ledger could
 * not be written, and nothing was.
 */
int queue_depth_set(QueueDepth *q, const QueueRequest *req);

/* The device's knobs back to their originals. Returns 1 if any was held, 0 if none. */
int queue_depth_lift(QueueDepth *q, uint32_t major, uint32_t minor, const char *reason);

/* Every tick: our values still in place? Someone else's wins and is not fought over. */
void queue_depth_verify(QueueDepth *q);
/* At start: reads the ledger a previous run left and restores what still holds its values. */
int queue_depth_recover(QueueDepth *q);
/* At stop, before queue_depth_restore_all(): the worker's writes told to stop, without waiting. */
void queue_depth_stop_jobs(QueueDepth *q);
/* At stop: every knob back to its original. */
void queue_depth_restore_all(QueueDepth *q);

const Ledger *queue_depth_ledger(const QueueDepth *q);

/* nr_requests writes submitted and not yet reported back. */
size_t queue_depth_jobs_pending(const QueueDepth *q);
