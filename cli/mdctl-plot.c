/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * plot UNIT... [--since TIME] [--view write|memory] -o FILE.svg|FILE.png: the
 * sample history of cgroups drawn by gnuplot on one time axis, in three
 * panels: the stalls (with the daemon's actions on them as marks), dirty +
 * writeback with memory.high as steps, and the write rate with the io.max
 * wbps caps as steps; --view memory, for the allocation point: the stalls,
 * memory.current with memory.high as steps, and the file cache beside the
 * reclaimable slab. mdctl writes the figures and a script to a temporary
 * directory and runs gnuplot ($MDCTL_GNUPLOT, else the one in PATH) on them.
 *
 * For a reader at a glance: one colour per cgroup (its limit dashed), every
 * series inside its panel (room above the highest figure and below zero, so
 * no line hides under the frame), a gap in the samples left blank rather than
 * drawn across, the actions' labels gathered where they would overprint, the
 * PSI wake-ups as small dots rather than labels, and the operator's --mark
 * phases as dashed lines across the panels, shaded in turn.
 */
#include "mdctl.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "parse-util.h"
#include "util.h"

#define PLOT_UNITS_MAX 8
#define PLOT_COLUMNS 10                 /* in each unit's figures: the time and nine figures (put_row) */
#define MIB 1048576.0
/* An action taken this long before the oldest sample drawn is marked too (it made the first sample what it is). */
#define PLOT_EVENTS_BEFORE_USEC (2 * USEC_PER_SEC)
#define PLOT_EVENTS_MAX 1024
/* The picture's width, a character's of the 10-point font (both in pixels), and how far apart two labels'
 * anchors must be not to overprint: a rotated label of the 8-point font is about 10 pixels thick. */
#define PLOT_WIDTH_PIXELS 1100.0
#define PLOT_CHAR_PIXELS 7.0
#define PLOT_LMARGIN 12
#define PLOT_LABEL_PIXELS 14.0
/* The key's longest title besides the cgroup's name ("slab reclaimable"), its sample and spaces. */
#define PLOT_KEY_EXTRA 26
/* A longer title is cut by the picture's edge rather than the panels squeezed. */
#define PLOT_RMARGIN_MAX 60
/* A sample further than this many of its interval from the one before starts a new line: the gap stays blank. */
#define PLOT_GAP_INTERVALS 3
#define PLOT_GAP_MIN_USEC (2 * USEC_PER_SEC)
/* Room above the highest figure and below zero, as a share of the highest. */
#define PLOT_HEADROOM 0.08
#define PLOT_FOOTROOM 0.05

/* One colour per cgroup (Okabe and Ito's, told apart by most readers), none of them the actions' black. */
static const char *const unit_colours[PLOT_UNITS_MAX] = {
        "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#882255", "#999933",
};

extern char **environ;

/* What a column of figures holds: gnuplot warns of a series with none, and of a panel of zeros only. */
typedef enum Drawn {
        DRAWN_NONE,
        DRAWN_ZEROS,
        DRAWN_FIGURES,
} Drawn;

typedef struct Plot {
        char dir[64];                   /* the temporary directory */
        const char *names[PLOT_UNITS_MAX];
        size_t n;
        size_t rmargin;                 /* in characters: room for the key beside the panels */
        uint64_t first_usec;            /* the oldest sample drawn */
        uint64_t from_usec, to_usec;    /* the time axis: every sample and mark drawn */
        bool have_events, have_wakeups;
        Drawn has[PLOT_UNITS_MAX][PLOT_COLUMNS + 1];    /* what a unit's column has to draw */
        double max[PLOT_UNITS_MAX][PLOT_COLUMNS + 1];   /* its highest figure */
        uint64_t marks_usec[PLOT_MARKS_MAX];            /* --mark, in order */
        const char *marks_label[PLOT_MARKS_MAX];
        size_t n_marks;
} Plot;

/* What a column of one unit drew: whether it had figures, and its highest. */
typedef struct Column {
        Drawn *has;
        double *max;
} Column;

/* A figure gnuplot reads, "?" (missing) for none, into what its column holds. */
static void put_value(FILE *f, bool missing, double v, Column c) {
        if (missing) {
                fputs(" ?", f);
                return;
        }
        fprintf(f, " %.3f", v);
        *c.has = MAX(*c.has, v > 0 ? DRAWN_FIGURES : DRAWN_ZEROS);
        *c.max = MAX(*c.max, v);
}

static void put_figure(FILE *f, uint64_t v, double scale, Column c) {
        put_value(f, v == UINT64_MAX, (double) v / scale, c);
}

static void put_stall(FILE *f, uint64_t stall_usec, uint64_t interval_usec, Column c) {
        bool missing = stall_usec == UINT64_MAX || interval_usec == 0;

        put_value(f, missing, missing ? 0 : 100.0 * (double) MIN(stall_usec, interval_usec) / (double) interval_usec,
                  c);
}

/* Seconds gnuplot shows as the local time of `realtime_usec` (it reads times as UTC). */
static double local_seconds(uint64_t realtime_usec) {
        time_t t = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;

        if (!localtime_r(&t, &tm))
                return (double) realtime_usec / USEC_PER_SEC;
        return (double) realtime_usec / USEC_PER_SEC + (double) tm.tm_gmtoff;
}

/*
 * One line: time, memory and io stall (%), dirty (MiB), write rate (MiB/s), memory.high (MiB), wbps cap
 * (MiB/s), memory.current, file cache and slab_reclaimable (MiB): columns 1 to 10.
 */
static void put_row(FILE *f, const HistoryRow *h, Plot *p, size_t i) {
        const uint64_t *v = h->v;
#define COL(n) ((Column) { &p->has[i][n], &p->max[i][n] })

        fprintf(f, "%.3f", local_seconds(v[HROW_TIME]));
        put_stall(f, v[HROW_MEMORY_STALL], v[HROW_INTERVAL], COL(2));
        put_stall(f, v[HROW_IO_STALL], v[HROW_INTERVAL], COL(3));
        put_figure(f, v[HROW_DIRTY], MIB, COL(4));
        put_figure(f, v[HROW_INTERVAL] ? v[HROW_WRITE_RATE] : UINT64_MAX, MIB, COL(5));
        put_figure(f, v[HROW_HIGH], MIB, COL(6));
        put_figure(f, v[HROW_WBPS], MIB, COL(7));
        put_figure(f, v[HROW_MEMORY], MIB, COL(8));
        put_figure(f, v[HROW_FILE], MIB, COL(9));
        put_figure(f, v[HROW_SLAB], MIB, COL(10));
#undef COL
        fputc('\n', f);
}

/* Whether a sample comes after a gap (the daemon stopped, the cgroup gone for a while) in the one before's terms. */
static bool after_gap(const HistoryRow *prev, const HistoryRow *h) {
        uint64_t interval = prev->v[HROW_INTERVAL] == UINT64_MAX ? 0 : prev->v[HROW_INTERVAL];

        return h->v[HROW_TIME] > prev->v[HROW_TIME] + MAX(interval * PLOT_GAP_INTERVALS, PLOT_GAP_MIN_USEC);
}

static FILE *plot_file(const Plot *p, const char *name, const char *mode) {
        char path[128];

        snprintf(path, sizeof(path), "%s/%s", p->dir, name);
        return fopen(path, mode);
}

/* The history of unit i into i.dat; its path (for the events) into paths[i]. */
static int write_unit(sd_bus *bus, const Args *a, Plot *p, size_t i, char **ret_path) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        const char *path = NULL;
        char name[32];
        bool truncated = false;
        HistoryRow h, prev;
        size_t n = 0;
        int r;

        r = history_get(bus, a, p->names[i], &reply, &path, &truncated);
        if (r < 0)
                return r;
        snprintf(name, sizeof(name), "%zu.dat", i);
        f = plot_file(p, name, "w");
        if (!f)
                return client_fail("cannot write the figures for gnuplot", -errno);
        while ((r = history_next(reply, &h)) > 0) {
                /* A blank line: gnuplot draws no line across it. */
                if (n > 0 && after_gap(&prev, &h))
                        fputc('\n', f);
                put_row(f, &h, p, i);
                prev = h;
                if (n++ == 0)
                        p->first_usec = MIN(p->first_usec, h.v[HROW_TIME]);
                p->to_usec = MAX(p->to_usec, h.v[HROW_TIME]);
        }
        if (r < 0)
                return r;
        if (n == 0) {
                fprintf(stderr, "mdctl: %s has no samples%s\n", p->names[i], a->have_since ? " in that time" : " yet");
                return -ENODATA;
        }
        if (fclose(TAKE_PTR(f)) != 0)
                return client_fail("cannot write the figures for gnuplot", -errno);
        *ret_path = strdup(path);
        return *ret_path ? 0 : client_fail("cannot plot", -ENOMEM);
}

/* An action's name as a label: letters and dashes only (it goes into gnuplot's data). */
static void put_label(FILE *f, const char *action) {
        for (const char *c = action; *c; c++)
                fputc((*c >= 'a' && *c <= 'z') || *c == '-' ? *c : '_', f);
}

static bool drawn(char *const *paths, size_t n, const char *cgroup) {
        for (size_t i = 0; i < n; i++)
                if (streq(paths[i], cgroup))
                        return true;
        return false;
}

typedef struct PlotEvent {
        uint64_t usec;
        char action[32];
} PlotEvent;

/*
 * The actions near one another (closer than a label is thick, on the time axis drawn) as one label: "a,b"
 * for the actions it gathers (each named once, in order), "x3" after them when it gathers more than it
 * names. Each label at its first action's time.
 */
static void put_clusters(FILE *f, const Plot *p, const PlotEvent *ev, size_t n) {
        double span = (double) MAX(p->to_usec - p->from_usec, USEC_PER_SEC);
        double panel = PLOT_WIDTH_PIXELS - (double) (PLOT_LMARGIN + p->rmargin) * PLOT_CHAR_PIXELS;
        uint64_t near = (uint64_t) (span * PLOT_LABEL_PIXELS / MAX(panel, 100.0));

        for (size_t i = 0, j; i < n; i = j) {
                size_t named = 0;

                fprintf(f, "%.3f \"", local_seconds(ev[i].usec));
                for (j = i; j < n && ev[j].usec <= ev[i].usec + near; j++) {
                        bool again = false;

                        for (size_t k = i; k < j && !again; k++)
                                again = streq(ev[k].action, ev[j].action);
                        if (again)
                                continue;
                        if (named++)
                                fputc(',', f);
                        put_label(f, ev[j].action);
                }
                if (j - i > named)
                        fprintf(f, " x%zu", j - i);
                fputs("\"\n", f);
        }
}

/* The daemon's events on the cgroups drawn, within the time drawn: the actions into events.dat (gathered,
 * put_clusters), the PSI wake-ups (pressure) into wakeups.dat, each a time only. */
static int write_events(sd_bus *bus, Plot *p, char *const *paths) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_fclose_ FILE *f = plot_file(p, "events.dat", "w"), *w = plot_file(p, "wakeups.dat", "w");
        _cleanup_free_ PlotEvent *ev = calloc(PLOT_EVENTS_MAX, sizeof(PlotEvent));
        const char *action, *cgroup, *unit, *message;
        uint64_t seq, t;
        size_t n = 0;
        int32_t prio;
        int r;

        if (!f || !w || !ev)
                return client_fail("cannot write the events for gnuplot", ev ? -errno : -ENOMEM);
        r = client_call_raw(bus, "cannot list the events", "ListEvents", &reply, "t", UINT64_C(0));
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ttissss)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(ttissss)", &seq, &t, &prio, &action, &cgroup, &unit,
                                                  &message)) > 0) {
                if (t + PLOT_EVENTS_BEFORE_USEC < p->first_usec || !drawn(paths, p->n, cgroup))
                        continue;
                p->from_usec = MIN(p->from_usec, t);
                p->to_usec = MAX(p->to_usec, t);
                if (streq(action, "pressure")) {
                        fprintf(w, "%.3f\n", local_seconds(t));
                        p->have_wakeups = true;
                } else if (n < PLOT_EVENTS_MAX) {
                        ev[n].usec = t;
                        snprintf(ev[n++].action, sizeof(ev[0].action), "%s", action);
                }
        }
        if (r < 0)
                return client_fail("cannot read the events", r);
        p->have_events = n > 0;
        put_clusters(f, p, ev, n);
        if (fclose(TAKE_PTR(w)) != 0)
                return client_fail("cannot write the events for gnuplot", -errno);
        return fclose(TAKE_PTR(f)) != 0 ? client_fail("cannot write the events for gnuplot", -errno) : 0;
}

/* A gnuplot string in single quotes, in which a quote is written twice. */
static void put_quoted(FILE *f, const char *s) {
        fputc('\'', f);
        for (; *s; s++) {
                if (*s == '\'')
                        fputc('\'', f);
                fputc(*s == '\n' ? ' ' : *s, f);
        }
        fputc('\'', f);
}

/* Unit i's column `col` as one series of a plot command, in its colour (dashed: `dt`), unless the unit never
 * had that figure. */
static void put_series(FILE *f, const Plot *p, size_t i, int col, const char *what, bool steps, int dt, size_t *n) {
        char title[300];

        if (p->has[i][col] == DRAWN_NONE)
                return;
        fprintf(f, "%s'%s/%zu.dat' using 1:%d with %s lw 1.5 lc rgb '%s' dt %d title ", (*n)++ ? ", " : "", p->dir, i,
                col, steps ? "steps" : "lines", unit_colours[i], dt);
        snprintf(title, sizeof(title), "%s %s", p->names[i], what);
        put_quoted(f, title);
}

/* The actions as labels (and a mark each) at zero; the PSI wake-ups as small grey dots below it, no text. */
static void put_events(FILE *f, const Plot *p, double low, size_t *n) {
        if (p->have_events)
                fprintf(f, "%s'%s/events.dat' using 1:(0):2 with labels rotate left offset 0,0.6 point pt 9 ps 1.2 "
                        "lc rgb 'black' font ',8' title 'actions'", (*n)++ ? ", " : "", p->dir);
        if (p->have_wakeups)
                fprintf(f, "%s'%s/wakeups.dat' using 1:(%.4f) with points pt 7 ps 0.35 lc rgb 'gray50' "
                        "title 'PSI wake-ups'", (*n)++ ? ", " : "", p->dir, low / 2);
}

/*
 * One panel: for each unit, the columns `a` (lines) and `b` of its data, titled with `what_a`, `what_b`; `b` is
 * drawn dashed, as steps when it is a limit (a cap or memory.high, which hold from one sample to the next). A
 * figure a unit never had (no cap) is left out, so that the key lists only what is drawn. The y range has room
 * above the highest figure and below zero, so that no series runs along the frame.
 */
static void put_panel(FILE *f, const Plot *p, const char *ylabel, int a, const char *what_a, int b,
                      const char *what_b, bool b_steps, bool events) {
        bool marks = events && (p->have_events || p->have_wakeups);
        Drawn panel = DRAWN_NONE;
        double top = 0;
        size_t n = 0;

        for (size_t i = 0; i < p->n; i++) {
                panel = MAX(panel, MAX(p->has[i][a], p->has[i][b]));
                top = MAX(top, MAX(p->max[i][a], p->max[i][b]));
        }
        /* Zeros only would make an empty y range: 0 to 1 then. */
        if (top <= 0)
                top = 1;
        fprintf(f, "set ylabel '%s'\nset yrange [%.4f:%.4f]\n", ylabel, -top * PLOT_FOOTROOM, top * (1 + PLOT_HEADROOM));
        if (panel == DRAWN_NONE && !marks) {
                /* Nothing to draw: an empty panel keeps its place on the time axis. */
                fputs("plot 1/0 notitle\n", f);
                return;
        }
        fputs("plot ", f);
        for (size_t i = 0; i < p->n; i++) {
                put_series(f, p, i, a, what_a, false, 1, &n);
                put_series(f, p, i, b, what_b, b_steps, 2, &n);
        }
        if (events)
                put_events(f, p, -top * PLOT_FOOTROOM, &n);
        fputc('\n', f);
}

/* The operator's phases: a dashed line across the panels at each, the span to the next shaded in turn, and
 * its label at the top of the first panel (unset after it by the caller). */
static void put_marks(FILE *f, const Plot *p) {
        for (size_t i = 0; i < p->n_marks; i++) {
                double x = local_seconds(p->marks_usec[i]);
                double end = i + 1 < p->n_marks ? local_seconds(p->marks_usec[i + 1]) : local_seconds(p->to_usec);

                fprintf(f, "set arrow %zu from %.3f, graph 0 to %.3f, graph 1 nohead dt 3 lw 1.2 lc rgb 'gray30' front\n",
                        i + 1, x, x);
                if (i % 2 == 0 && end > x)
                        fprintf(f, "set object %zu rect from %.3f, graph 0 to %.3f, graph 1 fc rgb '#eeeeee' "
                                "fs solid noborder behind\n", i + 1, x, end);
                fprintf(f, "set label %zu ", i + 1);
                put_quoted(f, p->marks_label[i]);
                fprintf(f, " at %.3f, graph 1 offset 0.4,-0.9 left font ',9' front\n", x);
        }
}

static int write_script(const Plot *p, const char *output, bool png, bool memory_view) {
        _cleanup_fclose_ FILE *f = plot_file(p, "plot.gp", "w");

        if (!f)
                return client_fail("cannot write the script for gnuplot", -errno);
        fprintf(f, "set terminal %s noenhanced size 1100,900 font ',10'\nset output ",
                png ? "pngcairo" : "svg dynamic background rgb 'white'");
        put_quoted(f, output);
        /* One time axis for the three panels. */
        fprintf(f, "\nset xrange [%.3f:%.3f]", local_seconds(p->from_usec), local_seconds(p->to_usec) + 0.001);
        /* Tenths of a second on a short axis, where whole seconds would repeat. */
        fprintf(f, "\nset format x '%s'", p->to_usec - p->from_usec < 20 * USEC_PER_SEC ? "%H:%M:%.1S" : "%H:%M:%S");
        fputs("\nset datafile missing '?'\nset xdata time\nset timefmt '%s'\n"
              /* The key beside the panels, where it hides no figure; one margin for all, so that the
               * panels share their time axis. */
              "set grid\nset key outside right top reverse Left samplen 2\n", f);
        fprintf(f, "set lmargin %d\nset rmargin %zu\nset multiplot layout 3,1 title ", PLOT_LMARGIN, p->rmargin);
        put_quoted(f, memory_view ? "mdreclaim: stalls, memory, file cache and slab, with memory.high in force" :
                   "mdreclaim: stalls, dirty data and write rates, with the caps in force");
        fputc('\n', f);
        put_marks(f, p);
        put_panel(f, p, "stalled (% of the interval)", 2, "memory stall", 3, "io stall", false, true);
        fputs("unset label\n", f);
        if (memory_view) {
                put_panel(f, p, "memory (MiB)", 8, "memory.current", 6, "memory.high", true, false);
                put_panel(f, p, "cache (MiB)", 9, "file cache", 10, "slab reclaimable", false, false);
        } else {
                put_panel(f, p, "dirty + writeback (MiB)", 4, "dirty", 6, "memory.high", true, false);
                put_panel(f, p, "writes (MiB/s)", 5, "write rate", 7, "io.max wbps cap", true, false);
        }
        fputs("unset multiplot\n", f);
        return fclose(TAKE_PTR(f)) != 0 ? client_fail("cannot write the script for gnuplot", -errno) : 0;
}

static int run_gnuplot(const Plot *p, const char *output) {
        const char *gnuplot = getenv("MDCTL_GNUPLOT");
        char script[128];
        char *argv[] = { NULL, script, NULL };
        pid_t pid;
        int status, r;

        if (!gnuplot || !*gnuplot)
                gnuplot = "gnuplot";
        argv[0] = (char *) gnuplot;
        snprintf(script, sizeof(script), "%s/plot.gp", p->dir);
        r = posix_spawnp(&pid, gnuplot, NULL, NULL, argv, environ);
        if (r == ENOENT) {
                fprintf(stderr, "mdctl: plot needs gnuplot, and '%s' was not found (Debian: apt install "
                        "gnuplot-nox)\n", gnuplot);
                return -ENOENT;
        }
        if (r != 0)
                return client_fail("cannot run gnuplot", -r);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return client_fail("cannot wait for gnuplot", -errno);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && access(output, F_OK) == 0)
                return 0;
        (void) unlink(output);
        fprintf(stderr, "mdctl: gnuplot failed (%s %d); nothing was drawn to %s\n",
                WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) :
                WTERMSIG(status), output);
        return -EIO;
}

static void plot_cleanup(Plot *p) {
        static const char *const files[] = { "plot.gp", "events.dat", "wakeups.dat" };
        char path[128];

        for (size_t i = 0; i < p->n; i++) {
                snprintf(path, sizeof(path), "%s/%zu.dat", p->dir, i);
                (void) unlink(path);
        }
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                snprintf(path, sizeof(path), "%s/%s", p->dir, files[i]);
                (void) unlink(path);
        }
        (void) rmdir(p->dir);
}

/* Whether FILE names a PNG (else an SVG); -EINVAL for neither. */
static int output_kind(const char *output) {
        size_t n = strlen(output);

        if (n > 4 && strcmp(output + n - 4, ".png") == 0)
                return 1;
        if (n > 4 && strcmp(output + n - 4, ".svg") == 0)
                return 0;
        return -EINVAL;
}

/* --mark TIME=LABEL: TIME as --since reads it (a point in time, or a duration back from now). */
static int parse_mark(const char *s, uint64_t now, uint64_t *ret_usec, const char **ret_label) {
        const char *eq = strchr(s, '=');
        char when[64];
        uint64_t back;

        if (!eq || eq == s || !eq[1] || (size_t) (eq - s) >= sizeof(when))
                return -EINVAL;
        snprintf(when, sizeof(when), "%.*s", (int) (eq - s), s);
        if (parse_since(when, now, ret_usec) < 0) {
                if (parse_duration(when, &back) < 0 || back == 0)
                        return -EINVAL;
                *ret_usec = u64_delta(now, back);
        }
        *ret_label = eq + 1;
        return 0;
}

int check_plot_args(const Args *a) {
        uint64_t t;
        const char *label;

        for (size_t i = 0; i < a->n_marks; i++)
                if (parse_mark(a->marks[i], now_usec(CLOCK_REALTIME), &t, &label) < 0)
                        return usage_error("invalid --mark '%s': expected TIME=LABEL, TIME as --since takes it "
                                           "(e.g. '@1765000000=alone', '2min ago=mdreclaimd')", a->marks[i]);
        if (!a->output)
                return usage_error("plot needs -o FILE.svg or -o FILE.png");
        if (output_kind(a->output) < 0)
                return usage_error("invalid -o '%s': expected a file ending in .svg or .png", a->output);
        if (a->argc - 1 > PLOT_UNITS_MAX)
                return usage_error("plot draws at most %d units at once", PLOT_UNITS_MAX);
        return 0;
}

static int plot_draw(sd_bus *bus, const Args *a, Plot *p, char **paths) {
        int r;

        for (size_t i = 0; i < p->n; i++) {
                r = write_unit(bus, a, p, i, &paths[i]);
                if (r < 0)
                        return r;
        }
        p->from_usec = p->first_usec;
        if (p->n_marks > 0) {
                p->from_usec = MIN(p->from_usec, p->marks_usec[0]);
                p->to_usec = MAX(p->to_usec, p->marks_usec[p->n_marks - 1]);
        }
        r = write_events(bus, p, paths);
        if (r < 0)
                return r;
        r = write_script(p, a->output, output_kind(a->output) == 1, a->memory_view);
        if (r < 0)
                return r;
        return run_gnuplot(p, a->output);
}

int verb_plot(sd_bus *bus, const Args *a) {
        Plot p = { .n = (size_t) a->argc - 1, .first_usec = UINT64_MAX };
        char *paths[PLOT_UNITS_MAX] = {};
        const char *tmp = getenv("TMPDIR");
        int r;

        for (size_t i = 0; i < p.n; i++) {
                p.names[i] = a->argv[i + 1];
                p.rmargin = MIN(MAX(p.rmargin, strlen(p.names[i]) + PLOT_KEY_EXTRA), PLOT_RMARGIN_MAX);
        }
        /* The marks in time order (checked before connecting). */
        for (size_t i = 0; i < a->n_marks; i++) {
                size_t j = p.n_marks++;
                uint64_t t = 0;
                const char *label = "";

                (void) parse_mark(a->marks[i], now_usec(CLOCK_REALTIME), &t, &label);
                for (; j > 0 && p.marks_usec[j - 1] > t; j--) {
                        p.marks_usec[j] = p.marks_usec[j - 1];
                        p.marks_label[j] = p.marks_label[j - 1];
                }
                p.marks_usec[j] = t;
                p.marks_label[j] = label;
        }
        /* A short directory name: the script names its files, and gnuplot's strings are kept plain. */
        snprintf(p.dir, sizeof(p.dir), "%s/mdctl-plot-XXXXXX",
                 tmp && *tmp && strlen(tmp) < 32 && !strchr(tmp, '\'') ? tmp : "/tmp");
        if (!mkdtemp(p.dir))
                return client_fail("cannot make a directory for gnuplot's files", -errno);
        r = plot_draw(bus, a, &p, paths);
        plot_cleanup(&p);
        for (size_t i = 0; i < p.n; i++)
                free(paths[i]);
        if (r >= 0 && !a->json)
                printf("Plotted %zu cgroup%s to %s\n", p.n, p.n == 1 ? "" : "s", a->output);
        return r;
}
