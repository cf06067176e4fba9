/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "devstat.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "derived.h"
#include "util.h"

void devstat_clear(DevStatTable *t) {
        for (size_t i = 0; i < t->n; i++)
                closep(&t->dev[i].fd);
        t->n = 0;
}

DevStat *devstat_find(DevStatTable *t, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < t->n; i++)
                if (t->dev[i].major == major && t->dev[i].minor == minor)
                        return &t->dev[i];
        return NULL;
}

DevStat *devstat_want(DevStatTable *t, uint32_t major, uint32_t minor) {
        DevStat *d = devstat_find(t, major, minor);

        if (!d) {
                if (t->n >= DEVSTAT_MAX)
                        return NULL;
                d = &t->dev[t->n++];
                *d = (DevStat) { .major = major, .minor = minor, .fd = -1 };
        }
        d->seen = true;
        return d;
}

/*
 * A device shows its capacity only while it is saturated: in flight for most
 * of the tick (io_ticks). Those ticks feed a moving average (an eighth each);
 * the peak of single ticks would take in the bursts a virtual or cached device
 * absorbs (measured under qemu: twice the 16 MiB/s it sustains). A device
 * never seen busy has no estimate (0).
 */
uint64_t devstat_capacity_step(uint64_t capacity, uint64_t rate, uint32_t busy_ppm) {
        if (busy_ppm < DEVSTAT_BUSY_PPM || rate == 0)
                return capacity;
        if (capacity == 0)
                return rate;
        if (rate >= capacity)
                return capacity + (rate - capacity) / 8;
        return capacity - (capacity - rate) / 8;
}

void devstat_sample(HostRoot *h, DevStatTable *t, uint64_t now_usec) {
        size_t kept = 0;

        for (size_t i = 0; i < t->n; i++) {
                DevStat *d = &t->dev[i];
                char path[64], buf[512];
                unsigned long long f[10];

                if (!d->seen) {
                        closep(&d->fd);
                        continue;
                }
                d->seen = false;
                snprintf(path, sizeof(path), "dev/block/%" PRIu32 ":%" PRIu32 "/stat", d->major, d->minor);
                if (h->sys_fd >= 0 && kept_read(h->sys_fd, path, &d->fd, buf, sizeof(buf), NULL) >= 0 &&
                    sscanf(buf, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3],
                           &f[4], &f[5], &f[6], &f[7], &f[8], &f[9]) == 10) {
                        if (d->n_samples > 0 && now_usec > d->sample_usec) {
                                uint64_t span = now_usec - d->sample_usec;
                                uint64_t busy_usec = u64_delta(f[9], d->io_ticks_ms) * 1000;

                                d->write_rate = rate_per_sec(u64_delta(f[6], d->sectors_written) * 512, span);
                                d->busy_ppm = (uint32_t) MIN(busy_usec >= UINT64_MAX / 1000000 ? 1000000 :
                                                             busy_usec * 1000000 / span, UINT64_C(1000000));
                                d->capacity = devstat_capacity_step(d->capacity, d->write_rate, d->busy_ppm);
                        }
                        d->sectors_written = f[6];
                        d->io_ticks_ms = f[9];
                        d->sample_usec = now_usec;
                        d->n_samples = 1;
                }
                t->dev[kept++] = *d;
        }
        t->n = kept;
}
