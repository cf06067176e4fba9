/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GetHistory(): the sample history of one governed cgroup, or of the host
 * ("/"), since a time, for anyone who can reach the socket. A cgroup keeps
 * its history after it is gone (the history is kept by path), so it is found
 * among the history's tracks first, then among the cgroups watched.
 */
#include <errno.h>
#include <string.h>

#include "api-internal.h"
#include "name-escape.h"
#include "util.h"

/* At most this many samples in one reply (the newest), about 1.8 MB: within what a client may hold. */
#define HISTORY_REPLY_MAX 20000
#define HISTORY_SAMPLE_SIGNATURE "(ttttttttttt)"

static const char *last_component(const char *path) {
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

/* The track `what` names by its path or, for a unit name, by its last component; NULL if none or several. */
static const HistoryTrack *find_by_name(const History *h, const char *what, size_t *ret_found) {
        const HistoryTrack *hit = NULL;

        *ret_found = 0;
        for (size_t i = 0; i < h->n_tracks; i++) {
                const char *p = h->tracks[i].path;

                if (what[0] == '/' ? streq(p, what) : streq(last_component(p), what)) {
                        hit = &h->tracks[i];
                        (*ret_found)++;
                }
        }
        return *ret_found == 1 ? hit : NULL;
}

/* `what` is in the escaped form of names, as every answer gives them; the tracks hold the kernel's bytes. */
static int resolve_track(Manager *m, const char *what, const HistoryTrack **ret, sd_bus_error *error) {
        _cleanup_free_ char *raw = NULL, *path = NULL;
        const History *h = m->history;
        CgEntry *e;
        size_t found;
        int r;

        if (streq(what, "/")) {
                *ret = &h->host;
                return 0;
        }
        r = api_unescape_name(what, &raw, error);
        if (r < 0)
                return r;
        *ret = find_by_name(h, raw, &found);
        if (*ret)
                return 0;
        if (found > 1)
                return sd_bus_error_setf(error, BUS_ERROR_AMBIGUOUS,
                                         "Unit '%s' names %zu cgroups with a history; give the cgroup path", what,
                                         found);
        /* Another way of naming a watched cgroup (below the mount point, say). */
        r = api_resolve(m, what, &e, error);
        if (r < 0)
                return r;
        *ret = history_find(h, e->cg->path);
        if (*ret)
                return 0;
        path = name_escape(e->cg->path);
        if (!path)
                return -ENOMEM;
        return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_CGROUP,
                                 "%s has no sample history: only the host ('/') and cgroups under a policy have one "
                                 "(at most [History] Cgroups=%zu of them)", path, h->max_cgroups);
}

static int append_samples(sd_bus_message *r, const History *h, const HistoryTrack *t, size_t first) {
        int k = sd_bus_message_open_container(r, 'a', HISTORY_SAMPLE_SIGNATURE);

        for (size_t i = first; k >= 0 && i < history_track_count(t); i++) {
                HistorySample s = history_track_get(h, t, i);

                k = sd_bus_message_append(r, HISTORY_SAMPLE_SIGNATURE, s.realtime_usec, s.interval_usec,
                                          s.memory_bytes, s.file_bytes, s.dirty_bytes, s.slab_reclaimable_bytes,
                                          s.memory_stall_usec, s.io_stall_usec, s.write_rate, s.memory_high,
                                          s.wbps_cap);
        }
        return k < 0 ? k : sd_bus_message_close_container(r);
}

/* The first sample taken at or after since_usec. */
static size_t first_since(const History *h, const HistoryTrack *t, uint64_t since_usec) {
        size_t n = history_track_count(t);

        for (size_t i = 0; i < n; i++)
                if (history_track_get(h, t, i).realtime_usec >= since_usec)
                        return i;
        return n;
}

int method_get_history(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        _cleanup_free_ char *path = NULL;
        Manager *m = api_of(userdata)->manager;
        const HistoryTrack *t;
        const char *what;
        uint64_t since;
        size_t first;
        bool truncated;
        int k;

        k = sd_bus_message_read(msg, "st", &what, &since);
        if (k < 0)
                return k;
        if (!m->history)
                return sd_bus_error_set(error, BUS_ERROR_NOT_SUPPORTED,
                                        "The daemon keeps no sample history ([History] Samples=0)");
        k = resolve_track(m, what, &t, error);
        if (k < 0 || !t)
                return k < 0 ? k : -ENOENT;
        first = first_since(m->history, t, since);
        truncated = history_track_count(t) - first > HISTORY_REPLY_MAX;
        if (truncated)
                first = history_track_count(t) - HISTORY_REPLY_MAX;
        path = name_escape(t->path ?: "/");
        if (!path)
                return -ENOMEM;
        k = sd_bus_message_new_method_return(msg, &r);
        if (k >= 0)
                k = sd_bus_message_append(r, "sb", path, truncated);
        if (k >= 0)
                k = append_samples(r, m->history, t, first);
        if (k < 0)
                return k;
        return sd_bus_send(NULL, r, NULL);
}
