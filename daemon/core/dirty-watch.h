/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A writer's first burst, between two ticks. While a protected cgroup runs,
 * the host's dirty data (meminfo's Dirty: and Writeback:) is read every
 * DIRTY_WATCH_PERIOD_USEC, and a rise of DIRTY_WATCH_RISE over what the last
 * tick saw brings the next tick forward: a cp or a dd dirties hundreds of
 * MiB in its first second, and the flusher queues them on the device ahead
 * of the protected service's next sync. One read of one kept file each time;
 * off while nothing is protected.
 */
#pragma once

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "hostfs.h"

#define DIRTY_WATCH_PERIOD_USEC (UINT64_C(100) * 1000)
#define DIRTY_WATCH_RISE (UINT64_C(16) << 20)   /* the write point's WP_GUARD_DIRTY_MIN: a writer */

typedef struct DirtyWatch {
        sd_event_source *timer;
        HostRoot *host;
        uint64_t base;                  /* what the last tick saw; a rise over it wakes (once) */
        void (*wake)(void *userdata);
        void *userdata;
        bool failed;                    /* meminfo could not be read: off until the next arming */
        uint64_t reads, wakes;
} DirtyWatch;

/* The watch, off until dirty_watch_set() arms it. */
int dirty_watch_init(DirtyWatch *w, sd_event *event, HostRoot *host, void (*wake)(void *userdata), void *userdata);
/* At every tick: armed or not; armed, what the host holds now is what a rise is measured from. */
void dirty_watch_set(DirtyWatch *w, bool armed);
void dirty_watch_free(DirtyWatch *w);
