/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * history UNIT [--since DURATION]: the daemon's sample history of a cgroup
 * (or the host, "/"), GetHistory; and its reading, which plot shares.
 */
#include "mdctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "client.h"
#include "json-out.h"
#include "parse-util.h"
#include "util.h"

#define SAMPLE_SIGNATURE "ttttttttttt"
#define NONE UINT64_MAX

/* The JSON names of a sample's figures. */
static const char *const row_names[_HROW_MAX] = {
        "realtime_usec", "interval_usec", "memory_bytes", "file_bytes", "dirty_bytes", "slab_reclaimable_bytes",
        "memory_stall_usec", "io_stall_usec", "write_rate", "memory_high", "wbps_cap",
};

int history_next(sd_bus_message *reply, HistoryRow *ret) {
        uint64_t *v = ret->v;
        int r = sd_bus_message_read(reply, "(" SAMPLE_SIGNATURE ")", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                                    &v[6], &v[7], &v[8], &v[9], &v[10]);

        return r < 0 ? client_fail("cannot read the history", r) : r;
}

int history_get(sd_bus *bus, const Args *a, const char *unit, sd_bus_message **ret, const char **ret_path,
                bool *ret_truncated) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *name = client_name_arg(unit);
        uint64_t since = a->have_since ? a->since_usec : 0;
        int truncated, r;

        if (!name)
                return client_fail("cannot get the history", -ENOMEM);
        r = client_call_raw(bus, "cannot get the history", "GetHistory", &reply, "st", name, since);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "sb", ret_path, &truncated);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(" SAMPLE_SIGNATURE ")");
        if (r < 0)
                return client_fail("cannot read the history", r);
        *ret_truncated = truncated;
        *ret = TAKE_PTR(reply);
        return 0;
}

static const char *cell_bytes(char buf[static FORMAT_SIZE_MAX], uint64_t v, const char *none) {
        return v == NONE ? none : format_size(buf, v);
}

/* A stall as a share of its interval: "12.5%"; "-" when unknown. */
static const char *cell_stall(char buf[static 16], uint64_t stall_usec, uint64_t interval_usec) {
        if (stall_usec == NONE || interval_usec == 0)
                return "-";
        snprintf(buf, 16, "%.1f%%", 100.0 * (double) MIN(stall_usec, interval_usec) / (double) interval_usec);
        return buf;
}

static const char *cell_clock(char buf[static 16], uint64_t realtime_usec) {
        time_t t = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, 16, "%H:%M:%S", &tm) == 0)
                snprintf(buf, 16, "?");
        return buf;
}

/* 78 columns: TIME, four sizes, two stalls, the write rate and the two throttles (the host has none). */
static void row_print(const HistoryRow *h, bool host) {
        char t[16], mem[FORMAT_SIZE_MAX], file[FORMAT_SIZE_MAX], dirty[FORMAT_SIZE_MAX], slab[FORMAT_SIZE_MAX],
             ms[16], io[16], wr[FORMAT_SIZE_MAX], high[FORMAT_SIZE_MAX], wbps[FORMAT_SIZE_MAX];

        const uint64_t *v = h->v;

        printf("%-8s %7s %7s %7s %7s %6s %6s %7s %7s %7s\n", cell_clock(t, v[HROW_TIME]),
               cell_bytes(mem, v[HROW_MEMORY], "-"), cell_bytes(file, v[HROW_FILE], "-"),
               cell_bytes(dirty, v[HROW_DIRTY], "-"), cell_bytes(slab, v[HROW_SLAB], "-"),
               cell_stall(ms, v[HROW_MEMORY_STALL], v[HROW_INTERVAL]),
               cell_stall(io, v[HROW_IO_STALL], v[HROW_INTERVAL]),
               v[HROW_INTERVAL] ? cell_bytes(wr, v[HROW_WRITE_RATE], "-") : "-",
               cell_bytes(high, v[HROW_HIGH], host ? "-" : "max"), cell_bytes(wbps, v[HROW_WBPS], "-"));
}

static void row_json(const HistoryRow *h) {
        const uint64_t *v = h->v;

        for (size_t i = 0; i < _HROW_MAX; i++) {
                printf("%s\"%s\":", i ? "," : "{", row_names[i]);
                /* memory_high's "none" is "max", which JSON says as null as well. */
                json_u64_or_null(stdout, v[i] != NONE, v[i]);
        }
        putchar('}');
}

static int history_print(sd_bus_message *reply, const char *path, bool truncated, const Args *a) {
        HistoryRow h;
        size_t n = 0;
        int r;

        if (a->json) {
                fputs("{\"path\":", stdout);
                json_string(stdout, path);
                printf(",\"truncated\":%s,\"samples\":[", truncated ? "true" : "false");
        } else if (a->legend)
                printf("%-8s %7s %7s %7s %7s %6s %6s %7s %7s %7s\n", "TIME", "MEMORY", "FILE", "DIRTY", "SLAB",
                       "MEM%", "IO%", "WRITE/s", "HIGH", "WBPS");
        while ((r = history_next(reply, &h)) > 0) {
                if (a->json) {
                        if (n)
                                putchar(',');
                        row_json(&h);
                } else
                        row_print(&h, streq(path, "/"));
                n++;
        }
        if (r < 0)
                return r;
        if (a->json)
                fputs("]}\n", stdout);
        else if (truncated)
                fprintf(stderr, "mdctl: only the newest %zu samples were sent; ask for less with --since\n", n);
        return 0;
}

int verb_history(sd_bus *bus, const Args *a) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *path = NULL;
        bool truncated = false;
        int r;

        r = history_get(bus, a, a->argv[1], &reply, &path, &truncated);
        if (r < 0)
                return r;
        return history_print(reply, path, truncated, a);
}
