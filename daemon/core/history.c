/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "history.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "new-file.h"
#include "util.h"

/*
 * The file, in the host's byte order (it lives in /run and is read by the
 * same machine):
 *
 *   header   "MDRHIST" NUL, u32 version, u32 sizeof(HistoryPacked), u32 tracks, u32 0
 *   track    u32 path length (0: the host), u32 merged samples, u32 samples in the partial one (0: none),
 *            u32 samples as taken, the path (no NUL), the merged samples oldest first, the partial one
 *            (if any), those as taken oldest first
 *   trailer  u64 FNV-1a of every byte before it
 *
 * Version 2, before the coarse tier, had no count of merged samples; it is
 * read as samples taken, and the older part of them merged as they come.
 */
#define HISTORY_FILE_VERSION_UNTIERED 2
static const char history_magic[8] = "MDRHIST";
#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

/* The largest file a history of these bounds writes: a longer one is not ours. */
static uint64_t history_file_max(const History *h) {
        uint64_t per_track = 16 + PATH_MAX + (uint64_t) (h->capacity + 1) * sizeof(HistorySample);

        return 24 + (h->max_cgroups + 1) * per_track + 8;
}

/* A track's rings, empty. */
static int track_alloc(const History *h, HistoryTrack *t) {
        t->ring = calloc(h->fine, sizeof(HistoryPacked));
        t->coarse = h->coarse ? calloc(h->coarse, sizeof(HistoryPacked)) : NULL;
        if (!t->ring || (h->coarse && !t->coarse)) {
                free(t->ring);
                free(t->coarse);
                t->ring = t->coarse = NULL;
                return -ENOMEM;
        }
        return 0;
}

int history_new_tiered(size_t capacity, size_t fine, size_t factor, size_t max_cgroups, History **ret) {
        History *h;

        if (capacity == 0 || capacity > HISTORY_SAMPLES_MAX || max_cgroups > HISTORY_CGROUPS_MAX || fine == 0 ||
            fine > capacity || factor < 2)
                return -EINVAL;
        h = calloc(1, sizeof(History));
        if (!h)
                return -ENOMEM;
        /* The coarse tier covers what the fine one leaves of the span, rounded up. */
        *h = (History) { .capacity = capacity, .fine = fine, .factor = factor,
                         .coarse = (capacity - fine + factor - 1) / factor, .max_cgroups = max_cgroups };
        h->tracks = calloc(MAX(max_cgroups, (size_t) 1), sizeof(HistoryTrack));
        if (!h->tracks || track_alloc(h, &h->host) < 0) {
                history_free(h);
                return -ENOMEM;
        }
        *ret = h;
        return 0;
}

int history_new(size_t capacity, size_t max_cgroups, History **ret) {
        return history_new_tiered(capacity, MIN(capacity, (size_t) HISTORY_FINE_DEFAULT), HISTORY_FACTOR_DEFAULT,
                                  max_cgroups, ret);
}

int history_new_for_tick(size_t capacity, size_t max_cgroups, uint64_t interval_usec, History **ret) {
        /* A merged sample's span, in µs, must fit the 32 bits its interval and stalls are kept in. */
        uint64_t factor = MIN((uint64_t) HISTORY_FACTOR_DEFAULT, (UINT32_MAX - 1) / MAX(interval_usec, (uint64_t) 1));

        if (capacity == 0)
                return -EINVAL;
        if (factor < 2)
                return history_new_tiered(capacity, capacity, 2, max_cgroups, ret);
        return history_new_tiered(capacity, MIN(capacity, (size_t) HISTORY_FINE_DEFAULT), (size_t) factor,
                                  max_cgroups, ret);
}

static void track_clear(HistoryTrack *t) {
        sample_done(&t->cursor.cgroup);
        free(t->path);
        free(t->ring);
        free(t->coarse);
        *t = (HistoryTrack) {};
}

/* A track with no sample, its rings kept. */
static void track_empty(HistoryTrack *t) {
        t->oldest = t->n = 0;
        t->coarse_oldest = t->n_coarse = t->n_partial = 0;
        t->cursor.valid = false;
}

/* Drops every sample and every cgroup's track; the host's ring stays allocated. */
static void history_empty(History *h) {
        for (size_t i = 0; i < h->n_tracks; i++)
                track_clear(&h->tracks[i]);
        h->n_tracks = 0;
        track_empty(&h->host);
}

History *history_free(History *h) {
        if (!h)
                return NULL;
        history_empty(h);
        track_clear(&h->host);
        free(h->tracks);
        free(h);
        return NULL;
}

static HistoryTrack *find_track(History *h, const char *path) {
        if (!path)
                return &h->host;
        for (size_t i = 0; i < h->n_tracks; i++)
                if (streq(h->tracks[i].path, path))
                        return &h->tracks[i];
        return NULL;
}

const HistoryTrack *history_find(const History *h, const char *path) {
        return find_track((History *) h, path);
}

HistoryCursor *history_cursor(History *h, const char *path) {
        HistoryTrack *t = find_track(h, path);

        return t ? &t->cursor : NULL;
}

/* A figure in 32 bits: `unit` to one, rounded to the nearest, held under UINT32_MAX (which is HISTORY_NONE). */
static uint32_t pack(uint64_t v, uint64_t unit) {
        if (v == HISTORY_NONE)
                return UINT32_MAX;
        v = v / unit + (v % unit >= (unit + 1) / 2);
        return (uint32_t) MIN(v, (uint64_t) UINT32_MAX - 1);
}

static uint64_t unpack(uint32_t v, uint64_t unit) {
        return v == UINT32_MAX ? HISTORY_NONE : (uint64_t) v * unit;
}

static HistoryPacked sample_pack(const HistorySample *s) {
        return (HistoryPacked) {
                .realtime_usec = s->realtime_usec,
                .interval_usec = pack(s->interval_usec, 1),
                .memory_kib = pack(s->memory_bytes, 1024),
                .file_kib = pack(s->file_bytes, 1024),
                .dirty_kib = pack(s->dirty_bytes, 1024),
                .slab_reclaimable_kib = pack(s->slab_reclaimable_bytes, 1024),
                .memory_stall_usec = pack(s->memory_stall_usec, 1),
                .io_stall_usec = pack(s->io_stall_usec, 1),
                .write_rate_kib = pack(s->write_rate, 1024),
                .memory_high_kib = pack(s->memory_high, 1024),
                .wbps_cap_kib = pack(s->wbps_cap, 1024),
        };
}

static HistorySample sample_unpack(const HistoryPacked *p) {
        return (HistorySample) {
                .realtime_usec = p->realtime_usec,
                .interval_usec = unpack(p->interval_usec, 1),
                .memory_bytes = unpack(p->memory_kib, 1024),
                .file_bytes = unpack(p->file_kib, 1024),
                .dirty_bytes = unpack(p->dirty_kib, 1024),
                .slab_reclaimable_bytes = unpack(p->slab_reclaimable_kib, 1024),
                .memory_stall_usec = unpack(p->memory_stall_usec, 1),
                .io_stall_usec = unpack(p->io_stall_usec, 1),
                .write_rate = unpack(p->write_rate_kib, 1024),
                .memory_high = unpack(p->memory_high_kib, 1024),
                .wbps_cap = unpack(p->wbps_cap_kib, 1024),
        };
}

static const HistoryPacked *slot(const History *h, const HistoryTrack *t, size_t i) {
        return &t->ring[(t->oldest + i) % h->fine];
}

static const HistoryPacked *coarse_slot(const History *h, const HistoryTrack *t, size_t i) {
        return &t->coarse[(t->coarse_oldest + i) % h->coarse];
}

HistorySample history_track_get(const History *h, const HistoryTrack *t, size_t i) {
        if (i < t->n_coarse)
                return sample_unpack(coarse_slot(h, t, i));
        i -= t->n_coarse;
        if (t->n_partial > 0 && i-- == 0)
                return sample_unpack(&t->partial);
        return sample_unpack(slot(h, t, i));
}

static const HistoryPacked *track_newest(const History *h, const HistoryTrack *t) {
        if (t->n > 0)
                return slot(h, t, t->n - 1);
        if (t->n_partial > 0)
                return &t->partial;
        return t->n_coarse > 0 ? coarse_slot(h, t, t->n_coarse - 1) : NULL;
}

/* Drops a track's newest sample, of whichever tier holds it (there is one). */
static void track_drop_newest(HistoryTrack *t) {
        if (t->n > 0)
                t->n--;
        else if (t->n_partial > 0)
                t->n_partial = 0;
        else
                t->n_coarse--;
}

/* Figures held in 32 bits with UINT32_MAX for "none" (HISTORY_NONE), merged. */
static uint32_t add_u32(uint32_t a, uint32_t b) {
        if (a == UINT32_MAX || b == UINT32_MAX)
                return a == UINT32_MAX ? b : a;
        return (uint32_t) MIN((uint64_t) a + b, (uint64_t) UINT32_MAX - 1);
}

static uint32_t peak_u32(uint32_t a, uint32_t b) {
        if (a == UINT32_MAX || b == UINT32_MAX)
                return a == UINT32_MAX ? b : a;
        return MAX(a, b);
}

/* The mean of two rates over the time each covers (a tick with no interval yet weighs as one µs). */
static uint32_t mean_u32(uint32_t a, uint64_t a_usec, uint32_t b, uint64_t b_usec) {
        if (a == UINT32_MAX || b == UINT32_MAX)
                return a == UINT32_MAX ? b : a;
        a_usec = MAX(a_usec, (uint64_t) 1);
        b_usec = MAX(b_usec, (uint64_t) 1);
        return (uint32_t) (((uint64_t) a * a_usec + (uint64_t) b * b_usec + (a_usec + b_usec) / 2) /
                           (a_usec + b_usec));
}

/* `s`, which is newer, merged into `m`: one sample that covers both spans (HistoryTrack says how). */
static void sample_merge(HistoryPacked *m, const HistoryPacked *s) {
        /* The rate's weight is the merged interval, unless no part's rate was known (then none): parts of
         * unknown rate among known ones count as time, an approximation (history.h). */
        uint64_t m_usec = m->write_rate_kib == UINT32_MAX ? 0 : m->interval_usec;

        m->write_rate_kib = mean_u32(m->write_rate_kib, m_usec, s->write_rate_kib, s->interval_usec);
        m->realtime_usec = s->realtime_usec;
        m->interval_usec = add_u32(m->interval_usec, s->interval_usec);
        m->memory_kib = peak_u32(m->memory_kib, s->memory_kib);
        m->file_kib = peak_u32(m->file_kib, s->file_kib);
        m->dirty_kib = peak_u32(m->dirty_kib, s->dirty_kib);
        m->slab_reclaimable_kib = peak_u32(m->slab_reclaimable_kib, s->slab_reclaimable_kib);
        m->memory_stall_usec = add_u32(m->memory_stall_usec, s->memory_stall_usec);
        m->io_stall_usec = add_u32(m->io_stall_usec, s->io_stall_usec);
        /* "None" is UINT32_MAX, so the lowest in force wins over it. */
        m->memory_high_kib = MIN(m->memory_high_kib, s->memory_high_kib);
        m->wbps_cap_kib = MIN(m->wbps_cap_kib, s->wbps_cap_kib);
}

/* A merged sample as the newest of the coarse ring, the oldest falling out of a full one. */
static void coarse_push(const History *h, HistoryTrack *t, const HistoryPacked *s) {
        if (t->n_coarse < h->coarse) {
                t->coarse[(t->coarse_oldest + t->n_coarse) % h->coarse] = *s;
                t->n_coarse++;
                return;
        }
        t->coarse[t->coarse_oldest] = *s;
        t->coarse_oldest = (t->coarse_oldest + 1) % h->coarse;
}

/* A sample that leaves the fine ring: merged into the partial one, which joins the coarse ring once whole;
 * with no coarse tier, it goes. */
static void track_retire(const History *h, HistoryTrack *t, const HistoryPacked *s) {
        if (h->coarse == 0)
                return;
        if (t->n_partial == 0)
                t->partial = *s;
        else
                sample_merge(&t->partial, s);
        if (++t->n_partial < h->factor)
                return;
        coarse_push(h, t, &t->partial);
        t->n_partial = 0;
}

static void track_push(History *h, HistoryTrack *t, const HistoryPacked *s) {
        if (t->n < h->fine) {
                t->ring[(t->oldest + t->n) % h->fine] = *s;
                t->n++;
                return;
        }
        track_retire(h, t, &t->ring[t->oldest]);
        t->ring[t->oldest] = *s;
        t->oldest = (t->oldest + 1) % h->fine;
}

/*
 * Drops the samples of `t` dated after `usec`, newest first. A track is kept
 * in time order, so these are its last ones: samples taken while the clock
 * was ahead, which it has since been set back from. Kept, they would sit in
 * front of every new sample, and hold their track against a new cgroup
 * until the clock caught up with them.
 */
static void track_drop_after(const History *h, HistoryTrack *t, uint64_t usec) {
        const HistoryPacked *s;

        while ((s = track_newest(h, t)) && s->realtime_usec > usec)
                track_drop_newest(t);
}

/* Adds `s` as the newest sample of `t`, after dropping any that claim to be newer. */
static void track_add(History *h, HistoryTrack *t, const HistoryPacked *s) {
        track_drop_after(h, t, s->realtime_usec);
        track_push(h, t, s);
}

/* The track to give up for a new cgroup: the one whose newest sample is the oldest, if older than `now`. */
static HistoryTrack *track_to_reuse(History *h, uint64_t now_usec) {
        HistoryTrack *best = NULL;
        uint64_t best_usec = UINT64_MAX;

        for (size_t i = 0; i < h->n_tracks; i++) {
                const HistoryPacked *s;

                /* A track dated ahead of now (a clock set back) is judged by what it holds up to now. */
                track_drop_after(h, &h->tracks[i], now_usec);
                s = track_newest(h, &h->tracks[i]);
                uint64_t usec = s ? s->realtime_usec : 0;

                if (usec < best_usec) {
                        best = &h->tracks[i];
                        best_usec = usec;
                }
        }
        return best && best_usec < now_usec ? best : NULL;
}

/* A track for `path`: a new one while there is room, else one given up. */
static int track_new(History *h, const char *path, uint64_t now_usec, HistoryTrack **ret) {
        _cleanup_free_ char *copy = strdup(path);
        HistoryTrack *t;

        if (!copy)
                return -ENOMEM;
        if (h->n_tracks < h->max_cgroups) {
                t = &h->tracks[h->n_tracks];
                if (track_alloc(h, t) < 0)
                        return -ENOMEM;
                h->n_tracks++;
        } else {
                t = track_to_reuse(h, now_usec);
                if (!t)
                        return -ENOSPC;
                free(t->path);
        }
        t->path = TAKE_PTR(copy);
        track_empty(t);
        *ret = t;
        return 0;
}

int history_append(History *h, const char *path, const HistorySample *s) {
        HistoryTrack *t = find_track(h, path);
        HistoryPacked p = sample_pack(s);
        int r;

        if (!t) {
                r = track_new(h, path, s->realtime_usec, &t);
                if (r < 0)
                        return r;
        }
        track_add(h, t, &p);
        return 0;
}

/* ---- the file ---- */

/* A stream that sums what passes through it and never reads past `left` bytes. */
typedef struct Stream {
        FILE *f;
        uint64_t sum;
        uint64_t left;
        bool failed;
        uint32_t version;       /* of the file being read */
} Stream;

static void sum_bytes(Stream *st, const void *p, size_t size) {
        const uint8_t *b = p;

        for (size_t i = 0; i < size; i++)
                st->sum = (st->sum ^ b[i]) * FNV_PRIME;
}

static void put(Stream *st, const void *p, size_t size) {
        sum_bytes(st, p, size);
        if (!st->failed && fwrite(p, 1, size, st->f) != size)
                st->failed = true;
}

static void put_u32(Stream *st, uint32_t v) {
        put(st, &v, sizeof(v));
}

static void put_track(Stream *st, const History *h, const HistoryTrack *t) {
        size_t len = t->path ? strlen(t->path) : 0;

        put_u32(st, (uint32_t) len);
        put_u32(st, (uint32_t) t->n_coarse);
        put_u32(st, (uint32_t) t->n_partial);
        put_u32(st, (uint32_t) t->n);
        put(st, t->path ?: "", len);
        for (size_t i = 0; i < t->n_coarse; i++)
                put(st, coarse_slot(h, t, i), sizeof(HistoryPacked));
        if (t->n_partial > 0)
                put(st, &t->partial, sizeof(HistoryPacked));
        for (size_t i = 0; i < t->n; i++)
                put(st, slot(h, t, i), sizeof(HistoryPacked));
}

int history_save(const History *h, FILE *f) {
        Stream st = { .f = f, .sum = FNV_OFFSET };
        uint64_t sum;

        put(&st, history_magic, sizeof(history_magic));
        put_u32(&st, HISTORY_FILE_VERSION);
        put_u32(&st, sizeof(HistoryPacked));
        put_u32(&st, (uint32_t) (h->n_tracks + 1));
        put_u32(&st, 0);
        put_track(&st, h, &h->host);
        for (size_t i = 0; i < h->n_tracks; i++)
                put_track(&st, h, &h->tracks[i]);
        sum = st.sum;
        put(&st, &sum, sizeof(sum));
        return st.failed || fflush(f) != 0 ? negative_errno() : 0;
}

static int get(Stream *st, void *p, size_t size) {
        if (size > st->left || fread(p, 1, size, st->f) != size)
                return -EBADMSG;
        st->left -= size;
        sum_bytes(st, p, size);
        return 0;
}

static int get_u32(Stream *st, uint32_t *ret) {
        return get(st, ret, sizeof(*ret));
}

static int get_header(Stream *st, uint32_t *ret_tracks) {
        char magic[sizeof(history_magic)];
        uint32_t version, sample_size, reserved;

        if (get(st, magic, sizeof(magic)) < 0 || memcmp(magic, history_magic, sizeof(magic)) != 0)
                return -EBADMSG;
        if (get_u32(st, &version) < 0 || get_u32(st, &sample_size) < 0 || get_u32(st, ret_tracks) < 0 ||
            get_u32(st, &reserved) < 0)
                return -EBADMSG;
        if ((version != HISTORY_FILE_VERSION && version != HISTORY_FILE_VERSION_UNTIERED) ||
            sample_size != sizeof(HistoryPacked))
                return -EPROTONOSUPPORT;
        st->version = version;
        return *ret_tracks >= 1 && *ret_tracks <= HISTORY_CGROUPS_MAX + 1 ? 0 : -EBADMSG;
}

/* A cgroup path as history_save() writes it: starting with '/', no NUL, not yet seen. */
static int get_path(Stream *st, const History *h, uint32_t len, char **ret) {
        _cleanup_free_ char *p = NULL;

        if (len > PATH_MAX || !(p = malloc(len + 1)))
                return len > PATH_MAX ? -EBADMSG : -ENOMEM;
        if (get(st, p, len) < 0)
                return -EBADMSG;
        p[len] = 0;
        if (p[0] != '/' || strlen(p) != len || history_find(h, p))
                return -EBADMSG;
        *ret = TAKE_PTR(p);
        return 0;
}

/*
 * A merged sample of `parts` read back: to the coarse ring, or as the
 * partial one while it has fewer parts than this configuration merges. A
 * configuration without a coarse tier takes it as a sample.
 */
static void track_add_merged(History *h, HistoryTrack *t, const HistoryPacked *s, size_t parts) {
        if (h->coarse == 0) {
                track_add(h, t, s);
                return;
        }
        track_drop_after(h, t, s->realtime_usec);
        if (parts < h->factor) {
                t->partial = *s;
                t->n_partial = parts;
        } else
                coarse_push(h, t, s);
}

/* n samples into t, each merged of `parts` (0: as taken), the oldest dropped past the capacity; t NULL:
 * read and dropped. */
static int get_samples(Stream *st, History *h, HistoryTrack *t, uint32_t n, uint32_t parts) {
        HistoryPacked s;

        for (uint32_t i = 0; i < n; i++) {
                if (get(st, &s, sizeof(s)) < 0)
                        return -EBADMSG;
                if (t && parts > 0)
                        track_add_merged(h, t, &s, parts);
                else if (t)
                        track_add(h, t, &s);
        }
        return 0;
}

static int get_track(Stream *st, History *h, bool *have_host) {
        _cleanup_free_ char *path = NULL;
        HistoryTrack *t = NULL;
        uint32_t len, n, n_merged = 0, partial_parts = 0;
        int r;

        if (get_u32(st, &len) < 0 ||
            (st->version != HISTORY_FILE_VERSION_UNTIERED &&
             (get_u32(st, &n_merged) < 0 || get_u32(st, &partial_parts) < 0)) ||
            get_u32(st, &n) < 0 || n > HISTORY_SAMPLES_MAX || n_merged > HISTORY_SAMPLES_MAX ||
            partial_parts > HISTORY_SAMPLES_MAX)
                return -EBADMSG;
        if (len == 0) {
                if (*have_host)
                        return -EBADMSG;
                *have_host = true;
                t = &h->host;
        } else {
                r = get_path(st, h, len, &path);
                if (r < 0)
                        return r;
                /* A track past this configuration's bound is read (the sum covers it) and dropped. */
                if (h->n_tracks < h->max_cgroups && (r = track_new(h, path, UINT64_MAX, &t)) < 0)
                        return r;
        }
        /* The merged samples count as whole ones whatever this configuration's factor. */
        r = get_samples(st, h, t, n_merged, UINT32_MAX);
        if (r >= 0 && partial_parts > 0)
                r = get_samples(st, h, t, 1, partial_parts);
        return r < 0 ? r : get_samples(st, h, t, n, 0);
}

static int history_load_stream(History *h, Stream *st) {
        bool have_host = false;
        uint32_t n_tracks;
        uint64_t sum, found;
        int r;

        r = get_header(st, &n_tracks);
        if (r < 0)
                return r;
        for (uint32_t i = 0; i < n_tracks; i++) {
                r = get_track(st, h, &have_host);
                if (r < 0)
                        return r;
        }
        sum = st->sum;
        if (!have_host || get(st, &found, sizeof(found)) < 0 || found != sum || fgetc(st->f) != EOF)
                return -EBADMSG;
        return 0;
}

int history_load(History *h, FILE *f) {
        Stream st = { .f = f, .sum = FNV_OFFSET, .left = history_file_max(h) };
        int r = history_load_stream(h, &st);

        if (r < 0)
                history_empty(h);
        return r;
}

static int put_history(FILE *f, void *userdata) {
        return history_save(userdata, f);
}

int history_write_file(const History *h, const char *dir) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s", dir, HISTORY_FILE_NAME) < 0)
                return -ENOMEM;
        return file_replace(path, 0600, put_history, (void *) h);
}

int history_remove_file(const char *dir) {
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (dfd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (unlinkat(dfd, HISTORY_FILE_NAME, 0) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        return 1;
}

int history_read_file(History *h, const char *dir) {
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int fd = -1;
        _cleanup_fclose_ FILE *f = NULL;
        struct stat st;

        if (dfd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        fd = openat(dfd, HISTORY_FILE_NAME, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size > history_file_max(h))
                return -EBADMSG;
        f = fdopen(fd, "r");
        if (!f)
                return negative_errno();
        TAKE_FD(fd);
        return history_load(h, f);
}
