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
#include "util.h"

#define PLOT_UNITS_MAX 8
#define PLOT_COLUMNS 10                 /* in each unit's figures: the time and nine figures (put_row) */
#define MIB 1048576.0
/* An action taken this long before the oldest sample drawn is marked too (it made the first sample what it is). */
#define PLOT_EVENTS_BEFORE_USEC (2 * USEC_PER_SEC)

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
        uint64_t first_usec;            /* the oldest sample drawn */
        uint64_t from_usec, to_usec;    /* the time axis: every sample and mark drawn */
        bool have_events;
        Drawn has[PLOT_UNITS_MAX][PLOT_COLUMNS + 1];    /* what a unit's column has to draw */
} Plot;

/* A figure gnuplot reads, "?" (missing) for none, into what column `*has` holds. */
static void put_value(FILE *f, bool missing, double v, Drawn *has) {
        if (missing) {
                fputs(" ?", f);
                return;
        }
        fprintf(f, " %.3f", v);
        *has = MAX(*has, v > 0 ? DRAWN_FIGURES : DRAWN_ZEROS);
}

static void put_figure(FILE *f, uint64_t v, double scale, Drawn *has) {
        put_value(f, v == UINT64_MAX, (double) v / scale, has);
}

static void put_stall(FILE *f, uint64_t stall_usec, uint64_t interval_usec, Drawn *has) {
        bool missing = stall_usec == UINT64_MAX || interval_usec == 0;

        put_value(f, missing, missing ? 0 : 100.0 * (double) MIN(stall_usec, interval_usec) / (double) interval_usec,
                  has);
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
static void put_row(FILE *f, const HistoryRow *h, Drawn has[static PLOT_COLUMNS + 1]) {
        const uint64_t *v = h->v;

        fprintf(f, "%.3f", local_seconds(v[HROW_TIME]));
        put_stall(f, v[HROW_MEMORY_STALL], v[HROW_INTERVAL], &has[2]);
        put_stall(f, v[HROW_IO_STALL], v[HROW_INTERVAL], &has[3]);
        put_figure(f, v[HROW_DIRTY], MIB, &has[4]);
        put_figure(f, v[HROW_INTERVAL] ? v[HROW_WRITE_RATE] : UINT64_MAX, MIB, &has[5]);
        put_figure(f, v[HROW_HIGH], MIB, &has[6]);
        put_figure(f, v[HROW_WBPS], MIB, &has[7]);
        put_figure(f, v[HROW_MEMORY], MIB, &has[8]);
        put_figure(f, v[HROW_FILE], MIB, &has[9]);
        put_figure(f, v[HROW_SLAB], MIB, &has[10]);
        fputc('\n', f);
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
        HistoryRow h;
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
                put_row(f, &h, p->has[i]);
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

/* The daemon's events on the cgroups drawn, within the time drawn, into events.dat: time and action. */
static int write_events(sd_bus *bus, Plot *p, char *const *paths) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_fclose_ FILE *f = plot_file(p, "events.dat", "w");
        const char *action, *cgroup, *unit, *message;
        uint64_t seq, t;
        int32_t prio;
        int r;

        if (!f)
                return client_fail("cannot write the events for gnuplot", -errno);
        r = client_call_raw(bus, "cannot list the events", "ListEvents", &reply, "t", UINT64_C(0));
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ttissss)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(ttissss)", &seq, &t, &prio, &action, &cgroup, &unit,
                                                  &message)) > 0) {
                if (t + PLOT_EVENTS_BEFORE_USEC < p->first_usec || !drawn(paths, p->n, cgroup))
                        continue;
                fprintf(f, "%.3f ", local_seconds(t));
                p->from_usec = MIN(p->from_usec, t);
                p->to_usec = MAX(p->to_usec, t);
                put_label(f, action);
                fputc('\n', f);
                p->have_events = true;
        }
        if (r < 0)
                return client_fail("cannot read the events", r);
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

/* Unit i's column `col` as one series of a plot command, unless the unit never had that figure. */
static void put_series(FILE *f, const Plot *p, size_t i, int col, const char *what, bool steps, size_t *n) {
        char title[300];

        if (p->has[i][col] == DRAWN_NONE)
                return;
        fprintf(f, "%s'%s/%zu.dat' using 1:%d with %s lw 1.5 title ", (*n)++ ? ", " : "", p->dir, i, col,
                steps ? "steps" : "lines");
        snprintf(title, sizeof(title), "%s %s", p->names[i], what);
        put_quoted(f, title);
}

/*
 * One panel: for each unit, the columns `a` (lines) and `b` of its data, titled with `what_a`, `what_b`; `b` is
 * drawn as steps when it is a limit (a cap or memory.high, which hold from one sample to the next). A figure a
 * unit never had (no cap) is left out, so that the key lists only what is drawn.
 */
static void put_panel(FILE *f, const Plot *p, const char *ylabel, int a, const char *what_a, int b,
                      const char *what_b, bool b_steps, bool events) {
        Drawn panel = DRAWN_NONE;
        size_t n = 0;

        for (size_t i = 0; i < p->n; i++)
                panel = MAX(panel, MAX(p->has[i][a], p->has[i][b]));
        /* Zeros only would make an empty y range: 0 to 1 then. */
        fprintf(f, "set ylabel '%s'\nset yrange [0:%s]\n", ylabel, panel == DRAWN_FIGURES ? "*" : "1");
        if (panel == DRAWN_NONE && !(events && p->have_events)) {
                /* Nothing to draw: an empty panel keeps its place on the time axis. */
                fputs("plot 1/0 notitle\n", f);
                return;
        }
        fputs("plot ", f);
        for (size_t i = 0; i < p->n; i++) {
                put_series(f, p, i, a, what_a, false, &n);
                put_series(f, p, i, b, what_b, b_steps, &n);
        }
        if (events && p->have_events)
                fprintf(f, "%s'%s/events.dat' using 1:(0):2 with labels rotate left offset 0,0.6 point pt 9 ps 1.2 "
                        "lc rgb 'black' font ',8' title 'actions'", n++ ? ", " : "", p->dir);
        fputc('\n', f);
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
        fputs("\nset datafile missing '?'\nset xdata time\nset timefmt '%s'\nset format x '%H:%M:%S'\n"
              "set grid\nset key top left opaque\nset lmargin 12\nset rmargin 4\n"
              "set multiplot layout 3,1 title ",
              f);
        put_quoted(f, memory_view ? "mdreclaim: stalls, memory, file cache and slab, with memory.high in force" :
                   "mdreclaim: stalls, dirty data and write rates, with the caps in force");
        fputc('\n', f);
        put_panel(f, p, "stalled (% of the interval)", 2, "memory stall", 3, "io stall", false, true);
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
        static const char *const files[] = { "plot.gp", "events.dat" };
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

int check_plot_args(const Args *a) {
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

        for (size_t i = 0; i < p.n; i++)
                p.names[i] = a->argv[i + 1];
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
