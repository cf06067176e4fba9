/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "devstat.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "derived.h"
#include "log.h"
#include "new-file.h"
#include "util.h"

#define DEVSTAT_FILE_HEADER "# mdreclaimd: device write capacities learnt, bytes/s (MAJOR:MINOR BYTES)"

static DevCapacity *known_find(DevStatTable *t, uint32_t major, uint32_t minor, bool create) {
        for (size_t i = 0; i < t->n_known; i++)
                if (t->known[i].major == major && t->known[i].minor == minor)
                        return &t->known[i];
        if (!create || t->n_known >= DEVSTAT_MAX)
                return NULL;
        t->known[t->n_known] = (DevCapacity) { .major = major, .minor = minor };
        return &t->known[t->n_known++];
}

static void remember(DevStatTable *t, const DevStat *d) {
        DevCapacity *k;
        uint64_t diff;

        if (d->capacity == 0 || !(k = known_find(t, d->major, d->minor, true)))
                return;
        diff = k->capacity > d->capacity ? k->capacity - d->capacity : d->capacity - k->capacity;
        if (diff > k->capacity / 16)
                t->known_changed = true;
        k->capacity = d->capacity;
}

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
                const DevCapacity *k = known_find(t, major, minor, false);

                d = &t->dev[t->n++];
                *d = (DevStat) { .major = major, .minor = minor, .fd = -1, .capacity = k ? k->capacity : 0 };
        }
        d->seen = true;
        return d;
}

static uint64_t add_capped(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Saturated time into the estimate's sums; the estimate is their ratio once they hold enough. */
static void capacity_add(DevStat *d, uint64_t bytes, uint64_t usec) {
        const double life = (double) DEVSTAT_CAPACITY_LIFE_USEC;
        double keep, r;
        uint64_t rate;

        if (d->sum_usec <= 0 && d->capacity > 0) {
                d->sum_usec = (double) DEVSTAT_CAPACITY_SEED_USEC;
                d->sum_bytes = (double) d->capacity * ((double) DEVSTAT_CAPACITY_SEED_USEC / USEC_PER_SEC);
        }
        keep = life / (life + (double) usec);
        d->sum_bytes = d->sum_bytes * keep + (double) bytes;
        d->sum_usec = d->sum_usec * keep + (double) usec;
        r = d->sum_bytes / d->sum_usec * USEC_PER_SEC;
        rate = r >= (double) UINT64_MAX ? UINT64_MAX : (uint64_t) r;

        if (d->sum_usec >= (double) DEVSTAT_CAPACITY_MIN_USEC)
                /* 0 means "never measured": a device that completes next to nothing is at 1 B/s. */
                d->capacity = MAX(rate, UINT64_C(1));
        else if (d->capacity == 0)
                /* The first figure from here on leaves the flood's first seconds out too. */
                d->provisional = rate >= DEVSTAT_PROVISIONAL_MIN ? rate : 0;
}

/*
 * A device shows its capacity only while it is saturated: in flight for most
 * of the tick (io_ticks). What those ticks complete, over the time they took,
 * goes into decayed sums (DEVSTAT_CAPACITY_LIFE_USEC), and the estimate is
 * their ratio: a mean over the last minute or so of saturated time, in which
 * no one burst weighs much (the eighth-of-the-way moving average of 2 s
 * windows this replaces read 0-10 % high after 24 s of dd alone and up to 15 %
 * high after the burst that follows a lifted io.max, over six recorded boots;
 * the sums 1 % low to 9 % high, and within 5 % after it: docs/lab,
 * "The capacity estimate"). The first seconds of each flood are left out
 * (DEVSTAT_CAPACITY_SKIP_USEC). A saturated tick that completed no write
 * counts, as time without bytes, when writes were waiting at its end and a
 * completion follows within DEVSTAT_CAPACITY_STUCK_USEC: a device that
 * completes its writes in bursts spends the ticks between them so (btrfs
 * under qemu), and the bursts alone came to twice the disk's rate. One busy
 * with reads alone says nothing of writes. A device never seen busy has no
 * estimate (0); before its first (about 4 s into its first flood), the
 * flood's rate so far is a first figure (devstat_capacity()).
 */
void devstat_capacity_tick(DevStat *d, uint64_t bytes, uint64_t span_usec, uint32_t busy_ppm, bool writes_waiting) {
        bool skipped;

        if (busy_ppm < DEVSTAT_BUSY_PPM || span_usec == 0 || (bytes == 0 && !writes_waiting)) {
                d->unsaturated_usec = add_capped(d->unsaturated_usec, span_usec);
                d->waiting_usec = 0;
                /* The next flood is measured afresh, its first figure with it. */
                if (d->unsaturated_usec >= DEVSTAT_PROVISIONAL_HOLD_USEC)
                        d->provisional = d->flood_bytes = d->flood_usec = 0;
                return;
        }
        d->unsaturated_usec = 0;
        skipped = d->flood_usec < DEVSTAT_CAPACITY_SKIP_USEC;
        d->flood_bytes = add_capped(d->flood_bytes, bytes);
        d->flood_usec = add_capped(d->flood_usec, span_usec);
        if (d->capacity == 0 && d->flood_usec >= DEVSTAT_PROVISIONAL_USEC) {
                uint64_t rate = rate_per_sec(d->flood_bytes, d->flood_usec);

                d->provisional = rate >= DEVSTAT_PROVISIONAL_MIN ? rate : 0;
        }
        if (skipped)
                return;
        if (bytes == 0) {
                d->waiting_usec = add_capped(d->waiting_usec, span_usec);
                return;
        }
        /* After a stuck device, the tick that ends the wait completes what queued meanwhile:
         * neither counts. */
        if (d->waiting_usec >= DEVSTAT_CAPACITY_STUCK_USEC) {
                d->waiting_usec = 0;
                return;
        }
        capacity_add(d, bytes, add_capped(span_usec, d->waiting_usec));
        d->waiting_usec = 0;
}

/* The kernel prints the time fields as 32-bit milliseconds: they wrap (a deep queue's write ticks
 * within a day). */
static uint64_t ms_delta(uint64_t now, uint64_t before) {
        return (uint32_t) ((uint32_t) now - (uint32_t) before);
}

/* Whether the device has writes in flight now (its inflight file: "reads writes"); field 9 of
 * stat counts reads too. */
static bool writes_in_flight(HostRoot *h, const DevStat *d) {
        _cleanup_close_ int fd = -1;
        char path[64], buf[64];
        unsigned long long reads, writes;

        snprintf(path, sizeof(path), "dev/block/%" PRIu32 ":%" PRIu32 "/inflight", d->major, d->minor);
        return kept_read(h->sys_fd, path, &fd, buf, sizeof(buf), NULL) >= 0 &&
               sscanf(buf, "%llu %llu", &reads, &writes) == 2 && writes > 0;
}

bool devstat_congested(const DevStat *d) {
        return d->n_samples > 0 && d->busy_ppm >= DEVSTAT_BUSY_PPM && d->write_wait_usec >= DEVSTAT_CONGESTED_WAIT_USEC;
}

bool devstat_congested_lately(const DevStat *d, uint64_t now_usec) {
        return d->congested_usec > 0 && now_usec >= d->congested_usec &&
               now_usec - d->congested_usec < DEVSTAT_CONGESTED_HOLD_USEC;
}

void devstat_sample(HostRoot *h, DevStatTable *t, uint64_t now_usec) {
        size_t kept = 0;

        t->sampled_usec = now_usec;

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
                                uint64_t busy_usec = ms_delta(f[9], d->io_ticks_ms) * 1000;
                                uint64_t written = u64_delta(f[6], d->sectors_written) * 512;
                                bool stuck;

                                d->write_rate = rate_per_sec(written, span);
                                d->busy_ppm = (uint32_t) MIN(busy_usec >= UINT64_MAX / 1000000 ? 1000000 :
                                                             busy_usec * 1000000 / span, UINT64_C(1000000));
                                /* Saturated, nothing written (or no write completed), writes waiting:
                                 * the inflight file is read once, for both figures below. */
                                stuck = d->busy_ppm >= DEVSTAT_BUSY_PPM && (written == 0 || f[4] <= d->writes) &&
                                        writes_in_flight(h, d);
                                devstat_capacity_tick(d, written, span, d->busy_ppm, written == 0 && stuck);
                                remember(t, d);
                                /* Fields 5 and 8: writes completed, and the milliseconds they took. */
                                if (f[4] > d->writes)
                                        d->write_wait_usec = ms_delta(f[7], d->write_ticks_ms) * 1000 /
                                                             (f[4] - d->writes);
                                else
                                        d->write_wait_usec = stuck ? span : 0;
                                if (devstat_congested(d))
                                        d->congested_usec = now_usec;
                        }
                        d->sectors_written = f[6];
                        d->io_ticks_ms = f[9];
                        d->writes = f[4];
                        d->write_ticks_ms = f[7];
                        d->sample_usec = now_usec;
                        d->n_samples = 1;
                }
                t->dev[kept++] = *d;
        }
        t->n = kept;
}

/* Digits at *p up to `end` (a character that must follow them), no more than max; *p moves past `end`. */
static int scan_number(const char **p, char end, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;
        const char *q = *p;

        if (*q < '0' || *q > '9')
                return -EBADMSG;
        for (; *q >= '0' && *q <= '9'; q++) {
                if (v > (max - (uint64_t) (*q - '0')) / 10)
                        return -EBADMSG;
                v = v * 10 + (uint64_t) (*q - '0');
        }
        if (*q != end)
                return -EBADMSG;
        *p = end ? q + 1 : q;
        *ret = v;
        return 0;
}

/* One "MAJOR:MINOR BYTES" line, nothing else on it, the capacity above 0. */
static int parse_capacity_line(const char *line, DevCapacity *ret) {
        uint64_t major, minor, bytes;

        if (scan_number(&line, ':', UINT32_MAX, &major) < 0 || scan_number(&line, ' ', UINT32_MAX, &minor) < 0 ||
            scan_number(&line, '\0', UINT64_MAX, &bytes) < 0 || bytes == 0)
                return -EBADMSG;
        *ret = (DevCapacity) { .major = (uint32_t) major, .minor = (uint32_t) minor, .capacity = bytes };
        return 0;
}

int devstat_load_text(DevStatTable *t, char *text, size_t size, const char *path) {
        DevCapacity read[DEVSTAT_MAX];
        size_t n = 0, lineno = 0;
        char *line, *save = NULL;

        if (strlen(text) != size)
                return log_warning_errno(-EBADMSG, "Ignoring the device capacities in %s: it holds NUL bytes", path);
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                lineno++;
                if (line[0] == '#')
                        continue;
                if (n >= DEVSTAT_MAX || parse_capacity_line(line, &read[n]) < 0)
                        return log_warning_errno(-EBADMSG, "Ignoring the device capacities in %s: line %zu is not "
                                                 "\"MAJOR:MINOR BYTES_PER_SEC\"%s", path, lineno,
                                                 n >= DEVSTAT_MAX ? " (too many lines)" : "");
                n++;
        }
        for (size_t i = 0; i < n; i++) {
                DevCapacity *k = known_find(t, read[i].major, read[i].minor, true);
                DevStat *d = devstat_find(t, read[i].major, read[i].minor);

                if (k)
                        k->capacity = read[i].capacity;
                if (d && d->capacity == 0)
                        d->capacity = read[i].capacity;
        }
        log_debug("%zu device capacities read from %s", n, path);
        return 0;
}

static int write_capacities(FILE *f, void *userdata) {
        const DevStatTable *t = userdata;

        fprintf(f, "%s\n", DEVSTAT_FILE_HEADER);
        for (size_t i = 0; i < t->n_known; i++)
                fprintf(f, "%" PRIu32 ":%" PRIu32 " %" PRIu64 "\n", t->known[i].major, t->known[i].minor,
                        t->known[i].capacity);
        return 0;
}

int devstat_save(DevStatTable *t, const char *path) {
        int r = file_replace(path, 0644, write_capacities, t);

        if (r < 0)
                return log_warning_errno(r, "Cannot save the device capacities to %s: %m", path);
        t->known_changed = false;
        return 0;
}
