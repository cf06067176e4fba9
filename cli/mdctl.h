/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What mdctl's command files share: the parsed command line, the verbs, and
 * the helpers that print for people (aligned "Label: value" fields, times)
 * and for programs (JSON).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "bus-value.h"
#include "cgroup-view.h"

#define EXIT_USAGE 2
#define PLOT_MARKS_MAX 8

typedef struct Args {
        const char *socket;
        bool json;
        bool legend;
        bool follow;
        bool wait;
        bool have_timeout;
        uint64_t timeout_usec;  /* reclaim, writeback --wait --timeout */
        bool cache_only;
        bool have_bytes;
        uint64_t bytes;
        bool have_sort;
        SortKey sort;
        uint64_t delay_usec;
        bool have_top_opts;
        uint64_t iterations;
        bool all;               /* release --all */
        bool end;               /* release --end */
        bool yes;               /* reclaim --yes: no question for a protected cgroup */
        bool tree;              /* list --tree */
        bool have_for;
        uint64_t for_usec;      /* release --for */
        bool have_n;            /* -n: top's --iterations, events' --lines */
        bool have_events_opts;
        const char *events_unit;        /* events --unit */
        const char *events_action;      /* events --action, comma-separated */
        const char *journal_directory;  /* events --journal-directory: the journal files read (NULL: the system's) */
        bool have_since;
        uint64_t since_usec;            /* events, history, plot --since: CLOCK_REALTIME */
        bool have_lines;
        uint64_t lines;                 /* events --lines: the last N that match */
        const char *output;             /* -o: the columns shown (list, top, throttles); plot's file */
        bool memory_view;               /* plot --view memory: the allocation point's figures */
        const char *marks[PLOT_MARKS_MAX];      /* plot --mark TIME=LABEL, as given */
        size_t n_marks;
        bool have_view;
        char **argv;            /* the verb and its arguments */
        int argc;
} Args;

int usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

void print_json(const Value *v);
/* "3d 4h", "2h 5min", "3min 2s", "12s". */
const char *format_span(char buf[static 32], uint64_t usec);
const char *format_time(char buf[static 32], uint64_t realtime_usec);
const char *or_dash(const char *s);
/* "  Label: text" with labels right-aligned to one column, as systemctl status does. */
void field(const char *label, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Prints the daemon's one-line answer (JSON: {"result": ...}). */
int print_result(sd_bus_message *reply, const Args *a);

/* The verbs: 0, or a negative errno after saying what failed. */
int verb_status(sd_bus *bus, const Args *a);
int verb_list(sd_bus *bus, const Args *a);
int verb_show(sd_bus *bus, const Args *a);
int verb_explain(sd_bus *bus, const Args *a);
int verb_top(sd_bus *bus, const Args *a);
int verb_reclaim(sd_bus *bus, const Args *a);
int verb_writeback(sd_bus *bus, const Args *a);
int verb_action(sd_bus *bus, const Args *a);
int verb_actions(sd_bus *bus, const Args *a);
/* Checks `action ID` before connecting. */
int check_action_args(const Args *a);
int verb_reload(sd_bus *bus, const Args *a);
int verb_policy(sd_bus *bus, const Args *a);
/* Checks `policy SUB ...` before connecting. */
int check_policy_args(const Args *a);
int verb_events(sd_bus *bus, const Args *a);
/* Checks `events --action` before connecting: each a name the daemon records, else the nearest. */
int check_events_args(const Args *a);
/*
 * events --since: "DURATION ago" or "-DURATION" (DURATION as in 90s, 10min, 2h), "now",
 * "today", "yesterday", "YYYY-MM-DD [HH:MM[:SS]]" (or with T), "HH:MM[:SS]" (today),
 * "@SECONDS" (since the epoch); local time. `now` is CLOCK_REALTIME µs.
 */
int parse_since(const char *s, uint64_t now, uint64_t *ret_usec);
int verb_metrics(sd_bus *bus, const Args *a);
int verb_throttles(sd_bus *bus, const Args *a);
int verb_history(sd_bus *bus, const Args *a);
int verb_plot(sd_bus *bus, const Args *a);
/* Checks `plot UNIT... -o FILE` before connecting. */
int check_plot_args(const Args *a);

/* A sample of GetHistory: its figures in the order of the reply; UINT64_MAX is none (or "max"). */
enum {
        HROW_TIME, HROW_INTERVAL, HROW_MEMORY, HROW_FILE, HROW_DIRTY, HROW_SLAB, HROW_MEMORY_STALL, HROW_IO_STALL,
        HROW_WRITE_RATE, HROW_HIGH, HROW_WBPS, _HROW_MAX,
};

typedef struct HistoryRow {
        uint64_t v[_HROW_MAX];
} HistoryRow;

/* GetHistory of `unit` since the command line's --since: the reply, ready for history_next(). */
int history_get(sd_bus *bus, const Args *a, const char *unit, sd_bus_message **ret, const char **ret_path,
                bool *ret_truncated);
/* The reply's next sample: 1, 0 after the last, or negative errno (said). */
int history_next(sd_bus_message *reply, HistoryRow *ret);
int verb_release(sd_bus *bus, const Args *a);
/* Checks `release UNIT | --all` before connecting. */
int check_release_args(const Args *a);
/* The columns of `mdctl throttles`, in table_init()'s form (for -o). */
extern const char *const throttle_columns[];
extern const char *const action_columns[];
/* Prints a table fitted to stdout's width with the chosen columns: 0, or a negative errno after saying why. */
int print_table(Table *t, const Args *a);
/* show's lines on the cgroup `c`'s throttles and release, from ListThrottles' array. */
void show_throttles(const Value *c, const Value *throttles);
