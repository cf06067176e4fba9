/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mdctl: the control CLI of mdreclaimd, a thin client of its D-Bus API on the
 * control socket. It checks its own arguments only; what a policy means is
 * the daemon's business, and the daemon's error messages are shown verbatim.
 *
 * Exit status: 0 success, 1 failure (said on stderr: what and why), 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "build-config.h"
#include "bus-value.h"
#include "cgroup-view.h"
#include "client.h"
#include "json-out.h"
#include "parse-util.h"
#include "table.h"
#include "top.h"
#include "util.h"

#define EXIT_USAGE 2

typedef struct Args {
        const char *socket;
        bool json;
        bool legend;
        bool follow;
        bool wait;
        bool cache_only;
        bool have_bytes;
        uint64_t bytes;
        bool have_sort;
        SortKey sort;
        uint64_t delay_usec;
        bool have_top_opts;
        uint64_t iterations;
        char **argv;            /* the verb and its arguments */
        int argc;
} Args;

static int usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *format, ...) {
        va_list ap;

        fputs("mdctl: ", stderr);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        fputs(". Try 'mdctl --help'.\n", stderr);
        return -EINVAL;
}

static void help(void) {
        printf("Usage: mdctl [OPTIONS] COMMAND ...\n"
               "\n"
               "Query and steer mdreclaimd, the memory-cgroup-aware reclaim daemon.\n"
               "\n"
               "Commands:\n"
               "  status                        the daemon and the host at a glance\n"
               "  list [--sort KEY]             every cgroup watched (KEY: dirty, pressure, memory, name)\n"
               "  show UNIT|CGROUP              one cgroup in full (a path starting with / is a cgroup)\n"
               "  top [--sort KEY] [--delay T] [-n N]\n"
               "                                live view; q quits, d/p/m/n sort, space refreshes\n"
               "  reclaim UNIT [--bytes SIZE] [--cache-only]\n"
               "                                reclaim memory of a cgroup now\n"
               "  writeback UNIT [--wait]       write back a cgroup's dirty data now\n"
               "  policy list                   the policies loaded\n"
               "  policy show NAME              one policy: its file and every effective setting\n"
               "  policy set NAME KEY=VALUE...  set keys of a policy (created if needed), persisted in\n"
               "                                /etc/mdreclaim/policies.d/NAME.conf and applied at once\n"
               "  policy unset NAME [KEY...]    remove keys, or the whole policy\n"
               "  events [--follow]             recent events (actions and decisions)\n"
               "  reload                        reread the configuration\n"
               "\n"
               "Options:\n"
               "  --json            machine-readable output: one JSON document (one per line with --follow)\n"
               "  --no-legend       no column headers\n"
               "  --socket PATH     the daemon's control socket (default: $MDCTL_SOCKET or\n"
               "                    " CONTROL_SOCKET_DEFAULT ")\n"
               "  --version         print the version\n"
               "  -h, --help        print this help\n"
               "\n"
               "Reading needs access to the socket; changing things needs root or the group named\n"
               "by the daemon's AdminGroup=.\n"
               "Exit status: 0 success, 1 failure, 2 bad usage.\n");
}

enum {
        ARG_JSON = 0x100, ARG_NO_LEGEND, ARG_SOCKET, ARG_VERSION, ARG_SORT, ARG_BYTES, ARG_CACHE_ONLY,
        ARG_WAIT, ARG_FOLLOW, ARG_DELAY,
};

static int parse_option(int c, Args *a) {
        int k;

        switch (c) {
        case ARG_JSON: a->json = true; break;
        case ARG_NO_LEGEND: a->legend = false; break;
        case ARG_SOCKET: a->socket = optarg; break;
        case ARG_CACHE_ONLY: a->cache_only = true; break;
        case ARG_WAIT: a->wait = true; break;
        case 'f': case ARG_FOLLOW: a->follow = true; break;
        case ARG_SORT:
                k = sort_key_from_string(optarg);
                if (k < 0)
                        return usage_error("invalid --sort '%s': expected dirty, pressure, memory or name", optarg);
                a->sort = (SortKey) k;
                a->have_sort = true;
                break;
        case ARG_BYTES:
                if (parse_size(optarg, false, &a->bytes) < 0 || a->bytes == 0)
                        return usage_error("invalid --bytes '%s': expected a size above 0 (e.g. 64M)", optarg);
                a->have_bytes = true;
                break;
        case 'd': case ARG_DELAY:
                if (parse_duration(optarg, &a->delay_usec) < 0 || a->delay_usec < 100 * USEC_PER_MSEC ||
                    a->delay_usec > 3600 * USEC_PER_SEC)
                        return usage_error("invalid --delay '%s': expected a duration from 100ms to 1h", optarg);
                a->have_top_opts = true;
                break;
        case 'n':
                if (parse_uint_range(optarg, 1, UINT32_MAX, &a->iterations) < 0)
                        return usage_error("invalid --iterations '%s': expected a number above 0", optarg);
                a->have_top_opts = true;
                break;
        default:
                return usage_error("unknown option");
        }
        return 0;
}

static int parse_args(int argc, char **argv, Args *a) {
        static const struct option options[] = {
                { "json", no_argument, NULL, ARG_JSON },
                { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
                { "socket", required_argument, NULL, ARG_SOCKET },
                { "sort", required_argument, NULL, ARG_SORT },
                { "bytes", required_argument, NULL, ARG_BYTES },
                { "cache-only", no_argument, NULL, ARG_CACHE_ONLY },
                { "wait", no_argument, NULL, ARG_WAIT },
                { "follow", no_argument, NULL, ARG_FOLLOW },
                { "delay", required_argument, NULL, ARG_DELAY },
                { "iterations", required_argument, NULL, 'n' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        int c, r;

        *a = (Args) { .legend = true, .delay_usec = USEC_PER_SEC, .sort = SORT_NAME };
        a->socket = getenv("MDCTL_SOCKET");
        if (!a->socket || !*a->socket)
                a->socket = CONTROL_SOCKET_DEFAULT;
        opterr = 0;
        for (;;) {
                c = getopt_long(argc, argv, "+hfd:n:", options, NULL);
                if (c < 0) {
                        /* A positional argument: keep it and go on with options after it; after "--" only these. */
                        bool rest = optind > 1 && streq(argv[optind - 1], "--");

                        if (optind >= argc)
                                break;
                        do
                                argv[a->argc++] = argv[optind++];
                        while (rest && optind < argc);
                        continue;
                }
                if (c == 'h') {
                        help();
                        return 0;
                }
                if (c == ARG_VERSION) {
                        printf("mdctl %s\n", PACKAGE_VERSION);
                        return 0;
                }
                if (c == '?')
                        return usage_error("unknown option '%s' or missing argument", argv[optind - 1]);
                r = parse_option(c, a);
                if (r < 0)
                        return r;
        }
        argv[a->argc] = NULL;
        a->argv = argv;
        if (a->argc == 0)
                return usage_error("no command given");
        return 1;
}

/* ---- output helpers ---- */

static void print_json(const Value *v) {
        value_json(v, stdout);
        putchar('\n');
}

/* "3d 4h", "2h 5min", "3min 2s", "12s". */
static const char *format_span(char buf[static 32], uint64_t usec) {
        uint64_t s = usec / USEC_PER_SEC;

        if (s >= 86400)
                snprintf(buf, 32, "%" PRIu64 "d %" PRIu64 "h", s / 86400, s % 86400 / 3600);
        else if (s >= 3600)
                snprintf(buf, 32, "%" PRIu64 "h %" PRIu64 "min", s / 3600, s % 3600 / 60);
        else if (s >= 60)
                snprintf(buf, 32, "%" PRIu64 "min %" PRIu64 "s", s / 60, s % 60);
        else
                snprintf(buf, 32, "%" PRIu64 "s", s);
        return buf;
}

static const char *format_time(char buf[static 32], uint64_t realtime_usec) {
        time_t t = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, 32, "@%" PRIu64, realtime_usec / USEC_PER_SEC);
        return buf;
}

static uint64_t realtime_now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

static const char *or_dash(const char *s) {
        return s ? s : "-";
}

/* "  Label: text" with labels right-aligned to one column, as systemctl status does. */
static void field(const char *label, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void field(const char *label, const char *format, ...) {
        va_list ap;

        printf("%14s: ", label);
        va_start(ap, format);
        vprintf(format, ap);
        va_end(ap);
        putchar('\n');
}

/* ---- status ---- */

static void status_access(const Value *st) {
        uint64_t uid = 0;
        const Value *admin = value_get(st, "caller_is_admin");
        const char *group = value_get_str(st, "admin_group");

        (void) value_get_u64(st, "caller_uid", &uid);
        if (admin && admin->kind == VALUE_BOOL && admin->b)
                field("Access", "read and change (uid %" PRIu64 ")", uid);
        else
                field("Access", "read only (uid %" PRIu64 "); changes need root%s%s%s", uid,
                      group ? " or group '" : "", group ? group : "", group ? "'" : "");
}

static void status_host(const Value *st) {
        char avail[32], total[32], dirty[32], bg[32], thr[32], ms[32], is[32];

        field("Memory", "%s available of %s", or_dash(cell_size(avail, st, "system.meminfo.MemAvailable")),
              or_dash(cell_size(total, st, "system.meminfo.MemTotal")));
        field("Dirty", "%s (background writeback from %s, throttling from %s)",
              or_dash(cell_size(dirty, st, "system.dirty_bytes")),
              or_dash(cell_size(bg, st, "system.dirty_background_threshold_bytes")),
              or_dash(cell_size(thr, st, "system.dirty_threshold_bytes")));
        field("Stall", "memory %s, io %s (some, last interval)",
              or_dash(cell_ppm(ms, st, "system.memory_stall.some_ppm")),
              or_dash(cell_ppm(is, st, "system.io_stall.some_ppm")));
}

static void status_print(const Value *st) {
        uint64_t pid = 0, started = 0, n = 0, np = 0, pol = 0, trig = 0, wake = 0, interval = 0, ticks = 0,
                 first = 0, next = 0, conns = 0;
        const Value *files = value_get(st, "config_files");
        char span[32], iv[32];

        (void) value_get_u64(st, "pid", &pid);
        (void) value_get_u64(st, "started_realtime_usec", &started);
        (void) value_get_u64(st, "cgroups", &n);
        (void) value_get_u64(st, "cgroups_with_policy", &np);
        (void) value_get_u64(st, "policies", &pol);
        (void) value_get_u64(st, "psi_triggers", &trig);
        (void) value_get_u64(st, "psi_trigger_wakeups", &wake);
        (void) value_get_u64(st, "interval_usec", &interval);
        (void) value_get_u64(st, "ticks", &ticks);
        (void) value_get_u64(st, "events_first_seq", &first);
        (void) value_get_u64(st, "events_next_seq", &next);
        (void) value_get_u64(st, "connections", &conns);
        printf("mdreclaimd %s (pid %" PRIu64 "), up %s\n", or_dash(value_get_str(st, "version")), pid,
               format_span(span, u64_delta(realtime_now(), started)));
        field("Cgroup root", "%s", or_dash(value_get_str(st, "cgroup_root")));
        field("Config root", "%s", or_dash(value_get_str(st, "config_root")));
        field("Cgroups", "%" PRIu64 " watched, %" PRIu64 " under a policy", n, np);
        field("Policies", "%" PRIu64 " loaded from %zu file%s", pol, files ? files->n : 0,
              files && files->n == 1 ? "" : "s");
        field("PSI triggers", "%" PRIu64 " armed, %" PRIu64 " wakeups", trig, wake);
        field("Sampling", "every %s, %" PRIu64 " ticks", format_span(iv, interval), ticks);
        field("Events", "%" PRIu64 " recorded, %" PRIu64 " kept", next ? next - 1 : 0, next - first);
        field("Control", "%s, %" PRIu64 " connection%s", or_dash(value_get_str(st, "control_socket")), conns,
              conns == 1 ? "" : "s");
        status_access(st);
        status_host(st);
}

static int verb_status(sd_bus *bus, const Args *a) {
        Value st = {};
        int r = client_call(bus, "cannot get the status", "GetStatus", &st, "");

        if (r < 0)
                return r;
        if (a->json)
                print_json(&st);
        else
                status_print(&st);
        value_clear(&st);
        return 0;
}

/* ---- list, show, top ---- */

static int verb_list(sd_bus *bus, const Args *a) {
        Value list = {};
        Table t = {};
        int r = client_call(bus, "cannot list the cgroups", "ListCgroups", &list, "");

        if (r < 0)
                return r;
        cgroups_sort(&list, a->sort);
        if (a->json) {
                fputs("{\"cgroups\":", stdout);
                value_json(&list, stdout);
                fputs("}\n", stdout);
        } else if ((r = cgroups_table(&list, &t)) >= 0) {
                table_print(&t, stdout, a->legend, 0, 0);
                if (a->legend)
                        printf("\n%zu cgroup%s.\n", list.n, list.n == 1 ? "" : "s");
        }
        table_clear(&t);
        value_clear(&list);
        return r < 0 ? client_fail("cannot build the table", r) : 0;
}

static void show_limits(const Value *c) {
        char h[32], m[32], l[32], n[32];
        uint64_t oom = 0, high = 0;

        field("Limits", "high %s, max %s, low %s, min %s", or_dash(cell_size(h, c, "memory_high")),
              or_dash(cell_size(m, c, "memory_max")), or_dash(cell_size(l, c, "memory_low")),
              or_dash(cell_size(n, c, "memory_min")));
        if (value_get_u64(c, "memory_events.high", &high) && value_get_u64(c, "memory_events.oom_kill", &oom))
                field("Events", "%" PRIu64 " over high, %" PRIu64 " OOM kills", high, oom);
}

static void show_memory(const Value *c) {
        char cur[32], anon[32], file[32], d[32], fd[32], wb[32], sr[32], su[32], re[32], meta[32];

        field("Memory", "%s (anon %s, file %s)", or_dash(cell_size(cur, c, "memory_current")),
              or_dash(cell_size(anon, c, "anon")), or_dash(cell_size(file, c, "file")));
        field("Dirty", "%s (dirty %s, writeback %s)", or_dash(cell_size(d, c, "dirty")),
              or_dash(cell_size(fd, c, "file_dirty")), or_dash(cell_size(wb, c, "file_writeback")));
        field("Slab", "%s reclaimable, %s unreclaimable", or_dash(cell_size(sr, c, "slab_reclaimable")),
              or_dash(cell_size(su, c, "slab_unreclaimable")));
        field("Reclaimable", "%s (estimate: clean file cache and reclaimable slab)",
              or_dash(cell_size(re, c, "reclaimable_estimate")));
        if (cell_size(meta, c, "metadata_dirty_estimate"))
                field("Dirty metadata", "%s (estimate, by share of writes)", meta);
}

static void show_signals(const Value *c) {
        char ms[32], mf[32], is[32], isf[32], wr[32], iv[32];
        int64_t rate = 0;
        uint64_t interval = 0;

        if (!value_get(c, "signals")) {
                field("Signals", "not yet (two samples are needed)");
                return;
        }
        (void) value_get_u64(c, "signals.interval_usec", &interval);
        field("Stall", "memory some %s full %s, io some %s full %s (over %s)",
              or_dash(cell_ppm(ms, c, "signals.memory_stall.some_ppm")),
              or_dash(cell_ppm(mf, c, "signals.memory_stall.full_ppm")),
              or_dash(cell_ppm(is, c, "signals.io_stall.some_ppm")),
              or_dash(cell_ppm(isf, c, "signals.io_stall.full_ppm")), format_span(iv, interval));
        if (value_get_i64(c, "signals.dirty_rate", &rate)) {
                char abs_rate[32];
                format_size(abs_rate, (uint64_t) (rate < 0 ? -rate : rate));
                field("Dirty rate", "%s%s/s", rate < 0 ? "-" : "+", abs_rate);
        }
        field("Writes", "%s/s", or_dash(cell_size(wr, c, "signals.write_rate")));
}

static void show_print(const Value *c) {
        const char *unit = value_get_str(c, "unit"), *policy = value_get_str(c, "policy");
        uint64_t id = 0;

        (void) value_get_u64(c, "id", &id);
        printf("%s%s%s%s\n", or_dash(value_get_str(c, "path")), unit ? " (" : "", unit ? unit : "", unit ? ")" : "");
        field("Cgroup id", "%" PRIu64, id);
        if (policy)
                field("Policy", "%s (mode %s)", policy, or_dash(value_get_str(c, "mode")));
        else
                field("Policy", "none");
        show_memory(c);
        show_limits(c);
        show_signals(c);
}

static int verb_show(sd_bus *bus, const Args *a) {
        Value c = {};
        char what[300];
        int r;

        snprintf(what, sizeof(what), "cannot show %s", a->argv[1]);
        r = client_call(bus, what, "GetCgroup", &c, "s", a->argv[1]);
        if (r < 0)
                return r;
        if (a->json)
                print_json(&c);
        else
                show_print(&c);
        value_clear(&c);
        return 0;
}

static int verb_top(sd_bus *bus, const Args *a) {
        TopOptions o = {
                .delay_usec = a->delay_usec,
                .iterations = a->iterations,
                .sort = a->have_sort ? a->sort : SORT_DIRTY,
                .legend = a->legend,
        };

        if (a->json)
                return usage_error("top has no JSON output; use 'mdctl list --json'");
        return top_run(bus, &o);
}

/* ---- acting ---- */

/* Prints the daemon's one-line answer (JSON: {"result": ...}). */
static int print_result(sd_bus_message *reply, const Args *a) {
        const char *text = NULL;
        int r = sd_bus_message_read(reply, "s", &text);

        if (r < 0)
                return client_fail("cannot read the daemon's reply", r);
        if (a->json) {
                fputs("{\"result\":", stdout);
                json_string(stdout, text);
                fputs("}\n", stdout);
        } else
                printf("%s\n", text);
        return 0;
}

static int verb_reclaim(sd_bus *bus, const Args *a) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        char what[300];
        int r;

        snprintf(what, sizeof(what), "cannot reclaim from %s", a->argv[1]);
        r = client_call_raw(bus, what, "Reclaim", &reply, "stb", a->argv[1], a->have_bytes ? a->bytes : UINT64_C(0),
                            (int) a->cache_only);
        return r < 0 ? r : print_result(reply, a);
}

static int verb_writeback(sd_bus *bus, const Args *a) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        char what[300];
        int r;

        snprintf(what, sizeof(what), "cannot write back %s", a->argv[1]);
        r = client_call_raw(bus, what, "Writeback", &reply, "sb", a->argv[1], (int) a->wait);
        return r < 0 ? r : print_result(reply, a);
}

static int verb_reload(sd_bus *bus, const Args *a) {
        return client_call(bus, "reload refused", "Reload", NULL, "");
}

/* ---- policies ---- */

static const char *join_strings(char *buf, size_t size, const Value *v) {
        size_t off = 0;

        buf[0] = '\0';
        for (size_t i = 0; v && i < v->n && off < size; i++)
                if (v->items[i].kind == VALUE_STRING)
                        off += (size_t) snprintf(buf + off, size - off, "%s%s", i ? " " : "", v->items[i].s);
        return buf;
}

static int policy_list(sd_bus *bus, const Args *a) {
        static const char *const headers[] = { "NAME", "MODE", ">PRIORITY", "PROTECT", ">CGROUPS", "MATCH", "FILE", NULL };
        Value list = {};
        Table t;
        int r = client_call(bus, "cannot list the policies", "ListPolicies", &list, "");

        if (r < 0)
                return r;
        if (a->json) {
                fputs("{\"policies\":", stdout);
                value_json(&list, stdout);
                fputs("}\n", stdout);
                value_clear(&list);
                return 0;
        }
        table_init(&t, headers);
        for (size_t i = 0; r >= 0 && i < list.n; i++) {
                const Value *p = &list.items[i], *protect = value_get(p, "protect");
                char prio[24], count[24], match[512];
                uint64_t u = 0;
                const char *cells[7];

                (void) value_get_u64(p, "priority", &u);
                snprintf(prio, sizeof(prio), "%" PRIu64, u);
                u = 0;
                (void) value_get_u64(p, "cgroups", &u);
                snprintf(count, sizeof(count), "%" PRIu64, u);
                cells[0] = value_get_str(p, "name");
                cells[1] = value_get_str(p, "mode");
                cells[2] = prio;
                cells[3] = protect && protect->kind == VALUE_BOOL && protect->b ? "yes" : "no";
                cells[4] = count;
                cells[5] = join_strings(match, sizeof(match), value_get(p, "matches"));
                cells[6] = value_get_str(p, "file");
                r = table_add_row(&t, cells);
        }
        if (r >= 0) {
                table_print(&t, stdout, a->legend, 0, 0);
                if (a->legend)
                        printf("\n%zu polic%s.\n", list.n, list.n == 1 ? "y" : "ies");
        }
        table_clear(&t);
        value_clear(&list);
        return r < 0 ? client_fail("cannot build the table", r) : 0;
}

static void policy_print(const Value *p) {
        const Value *settings = value_get(p, "settings"), *paths = value_get(p, "cgroup_paths");
        const char *text = value_get_str(p, "text");
        char match[1024];

        printf("# %s\n", or_dash(value_get_str(p, "file")));
        if (text)
                fputs(text, stdout);
        if (text && *text && text[strlen(text) - 1] != '\n')
                putchar('\n');
        printf("\n# Effective settings (defaults included):\nMatch=%s\n",
               join_strings(match, sizeof(match), value_get(p, "matches")));
        for (size_t i = 0; settings && i < settings->n; i++)
                if (settings->items[i].kind == VALUE_STRING)
                        printf("%s=%s\n", settings->items[i].key, settings->items[i].s);
        printf("\n# Governs %zu cgroup%s:\n", paths ? paths->n : 0, paths && paths->n == 1 ? "" : "s");
        for (size_t i = 0; paths && i < paths->n; i++)
                printf("#   %s\n", paths->items[i].s);
}

static int policy_show(sd_bus *bus, const Args *a) {
        Value p = {};
        char what[300];
        int r;

        snprintf(what, sizeof(what), "cannot show policy '%s'", a->argv[2]);
        r = client_call(bus, what, "GetPolicy", &p, "s", a->argv[2]);
        if (r < 0)
                return r;
        if (a->json)
                print_json(&p);
        else
                policy_print(&p);
        value_clear(&p);
        return 0;
}

/* set and unset: the daemon checks everything and answers with the file it wrote. */
static int policy_change(sd_bus *bus, const Args *a, bool set) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *name = a->argv[2], *file = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &call, NULL, BUS_OBJECT_PATH, BUS_INTERFACE,
                                           set ? "SetPolicy" : "UnsetPolicy");
        if (r >= 0)
                r = sd_bus_message_append(call, "s", name);
        if (r >= 0)
                r = sd_bus_message_append_strv(call, a->argv + 3);
        if (r < 0)
                return client_fail("cannot build the request", r);
        r = sd_bus_call(bus, call, 0, &error, &reply);
        if (r < 0) {
                fprintf(stderr, "mdctl: policy '%s' not changed:%s%s\n", name,
                        error.message && strchr(error.message, '\n') ? "\n" : " ",
                        error.message ? error.message : strerror(-r));
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_read(reply, "s", &file);
        if (r < 0)
                return client_fail("cannot read the daemon's reply", r);
        if (a->json) {
                fputs("{\"policy\":", stdout);
                json_string(stdout, name);
                fputs(",\"file\":", stdout);
                json_string(stdout, file);
                fputs("}\n", stdout);
        } else
                printf("Policy '%s' %s: %s. Applied.\n", name,
                       set ? "written" : a->argc > 3 ? "rewritten" : "removed", file);
        return 0;
}

static int verb_policy(sd_bus *bus, const Args *a) {
        const char *sub = a->argv[1];

        if (streq(sub, "list"))
                return policy_list(bus, a);
        if (streq(sub, "show"))
                return policy_show(bus, a);
        if (streq(sub, "set"))
                return policy_change(bus, a, true);
        return policy_change(bus, a, false);
}

/* Checks `policy SUB ...` before connecting. */
static int check_policy_args(const Args *a) {
        const char *sub = a->argc > 1 ? a->argv[1] : NULL;

        if (!sub)
                return usage_error("policy needs a subcommand: list, show, set or unset");
        if (streq(sub, "list"))
                return a->argc == 2 ? 0 : usage_error("policy list takes no arguments");
        if (streq(sub, "show"))
                return a->argc == 3 ? 0 : usage_error("policy show takes one policy name");
        if (streq(sub, "set"))
                return a->argc >= 4 ? 0 : usage_error("policy set needs a name and at least one KEY=VALUE");
        if (streq(sub, "unset"))
                return a->argc >= 3 ? 0 : usage_error("policy unset needs a name (and optionally keys)");
        return usage_error("unknown policy subcommand '%s': expected list, show, set or unset", sub);
}

/* ---- events ---- */

static const char *priority_name(int32_t p) {
        static const char *const names[] = { "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug" };

        return p >= 0 && p < 8 ? names[p] : "?";
}

typedef struct EventLine {
        uint64_t seq, realtime_usec;
        int32_t priority;
        const char *action, *cgroup, *unit, *message;
} EventLine;

static void event_print(const EventLine *e, bool json) {
        char when[32];

        if (!json) {
                printf("%s  %-7s  %-16s  %s\n", format_time(when, e->realtime_usec), priority_name(e->priority),
                       e->action, e->message);
                return;
        }
        printf("{\"seq\":%" PRIu64 ",\"realtime_usec\":%" PRIu64 ",\"priority\":%" PRId32 ",\"priority_name\":\"%s\""
               ",\"action\":", e->seq, e->realtime_usec, e->priority, priority_name(e->priority));
        json_string(stdout, e->action);
        fputs(",\"cgroup\":", stdout);
        json_string(stdout, e->cgroup);
        fputs(",\"unit\":", stdout);
        json_string(stdout, e->unit);
        fputs(",\"message\":", stdout);
        json_string(stdout, e->message);
        fputc('}', stdout);
}

static int event_read(sd_bus_message *m, EventLine *e) {
        return sd_bus_message_read(m, "ttissss", &e->seq, &e->realtime_usec, &e->priority, &e->action,
                                   &e->cgroup, &e->unit, &e->message);
}

typedef struct Follow {
        const Args *args;
        uint64_t last_seq;
} Follow;

static int on_event(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Follow *f = userdata;
        EventLine e;

        if (event_read(m, &e) <= 0 || e.seq <= f->last_seq)
                return 0;
        f->last_seq = e.seq;
        event_print(&e, f->args->json);
        if (f->args->json)
                putchar('\n');
        fflush(stdout);
        return 0;
}

/* The events kept now; with `follow`, each as it is printed (JSON: one per line). */
static int events_backlog(sd_bus *bus, const Args *a, Follow *f) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        bool one_doc = a->json && !a->follow;
        EventLine e;
        size_t n = 0;
        int r;

        r = client_call_raw(bus, "cannot list the events", "ListEvents", &reply, "t", UINT64_C(0));
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ttissss)");
        if (r < 0)
                return client_fail("cannot read the events", r);
        if (one_doc)
                fputs("{\"events\":[", stdout);
        else if (!a->json && a->legend)
                printf("%-19s  %-7s  %-16s  %s\n", "TIME", "PRIORITY", "ACTION", "MESSAGE");
        while ((r = sd_bus_message_enter_container(reply, 'r', "ttissss")) > 0) {
                if (event_read(reply, &e) < 0 || sd_bus_message_exit_container(reply) < 0)
                        return client_fail("cannot read the events", -EBADMSG);
                if (one_doc && n)
                        putchar(',');
                event_print(&e, a->json);
                if (a->json && !one_doc)
                        putchar('\n');
                f->last_seq = e.seq;
                n++;
        }
        if (one_doc)
                fputs("]}\n", stdout);
        fflush(stdout);
        return r < 0 ? client_fail("cannot read the events", r) : 0;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig) {
        interrupted = 1;
}

static int events_follow(sd_bus *bus) {
        struct sigaction sa = { .sa_handler = on_interrupt };

        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        while (!interrupted) {
                int r = sd_bus_process(bus, NULL);

                if (r < 0)
                        return client_fail("following the events stopped", r);
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0 && r != -EINTR)
                        return client_fail("following the events stopped", r);
        }
        return 0;
}

static int verb_events(sd_bus *bus, const Args *a) {
        Follow f = { .args = a };
        int r;

        if (a->follow) {
                /* Subscribe first, so that nothing falls between the backlog and the stream. */
                r = sd_bus_match_signal(bus, NULL, NULL, BUS_OBJECT_PATH, BUS_INTERFACE, "Event", on_event, &f);
                if (r < 0)
                        return client_fail("cannot watch the events", r);
                r = client_call(bus, "cannot subscribe to the events", "Subscribe", NULL, "");
                if (r < 0)
                        return r;
        }
        r = events_backlog(bus, a, &f);
        if (r < 0 || !a->follow)
                return r;
        return events_follow(bus);
}

/* ---- main ---- */

enum {
        OPT_SORT = 1 << 0, OPT_BYTES = 1 << 1, OPT_WAIT = 1 << 2, OPT_FOLLOW = 1 << 3, OPT_TOP = 1 << 4,
};

typedef struct Verb {
        const char *name;
        int min_args, max_args;         /* after the verb; -1: any */
        unsigned options;               /* OPT_* the verb takes */
        int (*run)(sd_bus *bus, const Args *a);
} Verb;

static const Verb verbs[] = {
        { "status", 0, 0, 0, verb_status },
        { "list", 0, 0, OPT_SORT, verb_list },
        { "show", 1, 1, 0, verb_show },
        { "top", 0, 0, OPT_SORT | OPT_TOP, verb_top },
        { "reclaim", 1, 1, OPT_BYTES, verb_reclaim },
        { "writeback", 1, 1, OPT_WAIT, verb_writeback },
        { "policy", 1, -1, 0, verb_policy },
        { "events", 0, 0, OPT_FOLLOW, verb_events },
        { "reload", 0, 0, 0, verb_reload },
};

static int check_options(const Verb *v, const Args *a) {
        static const struct { unsigned opt; const char *name; } opts[] = {
                { OPT_SORT, "--sort" }, { OPT_BYTES, "--bytes/--cache-only" }, { OPT_WAIT, "--wait" },
                { OPT_FOLLOW, "--follow" }, { OPT_TOP, "--delay/--iterations" },
        };
        unsigned used = (a->have_sort ? OPT_SORT : 0) | (a->have_bytes || a->cache_only ? OPT_BYTES : 0) |
                        (a->wait ? OPT_WAIT : 0) | (a->follow ? OPT_FOLLOW : 0) | (a->have_top_opts ? OPT_TOP : 0);

        for (size_t i = 0; i < ELEMENTSOF(opts); i++)
                if ((used & opts[i].opt) && !(v->options & opts[i].opt))
                        return usage_error("%s does not go with '%s'", opts[i].name, v->name);
        if (a->argc - 1 < v->min_args || (v->max_args >= 0 && a->argc - 1 > v->max_args))
                return usage_error("'%s' takes %s", v->name,
                                   v->max_args == 0 ? "no arguments" :
                                   v->min_args == 1 && v->max_args == 1 ? "one unit name or cgroup path" :
                                   "other arguments");
        return streq(v->name, "policy") ? check_policy_args(a) : 0;
}

int main(int argc, char **argv) {
        sd_bus *bus = NULL;
        const Verb *verb = NULL;
        Args a;
        int r;

        r = parse_args(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(a.argv[0], verbs[i].name))
                        verb = &verbs[i];
        if (!verb)
                return usage_error("unknown command '%s'", a.argv[0]), EXIT_USAGE;
        if (check_options(verb, &a) < 0)
                return EXIT_USAGE;
        signal(SIGPIPE, SIG_IGN);
        if (client_connect(a.socket, &bus) < 0)
                return EXIT_FAILURE;
        r = verb->run(bus, &a);
        sd_bus_flush_close_unref(bus);
        if (r < 0)
                return r == -EINVAL && streq(verb->name, "top") ? EXIT_USAGE : EXIT_FAILURE;
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "mdctl: cannot write the output: %s\n", strerror(errno));
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
