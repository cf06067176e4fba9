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
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build-config.h"
#include "client.h"
#include "mdctl.h"
#include "parse-util.h"
#include "util.h"

static void help(void) {
        printf("Usage: mdctl [OPTIONS] COMMAND ...\n"
               "\n"
               "Query and steer mdreclaimd, the memory-cgroup-aware reclaim daemon.\n"
               "\n"
               "Commands:\n"
               "  status                        the daemon and the host at a glance\n"
               "  list [--sort KEY] [--tree] [-o COLS]\n"
               "                                every cgroup watched (KEY: dirty, pressure, memory,\n"
               "                                name); --tree: as the cgroup hierarchy\n"
               "  show UNIT|CGROUP              one cgroup in full (a path starting with / is a cgroup);\n"
               "                                protected: its limit, its stall, the writers capped for it\n"
               "  explain UNIT|CGROUP           why its writes are capped or not; protected: who is capped\n"
               "                                for it, or why nobody is (from the daemon's own state)\n"
               "  top [--sort KEY] [-d|--delay T] [-n|--iterations N] [-o COLS]\n"
               "                                live view; q quits, d/p/m/n sort, space refreshes\n"
               "  reclaim UNIT [--bytes SIZE] [--cache-only] [--wait [--timeout TIME]] [--yes]\n"
               "                                reclaim memory of a cgroup now; prints the action's id,\n"
               "                                with --wait its result (freed, how long); a protected one\n"
               "                                asks first on a terminal (--yes: do not ask)\n"
               "  writeback UNIT [--wait [--timeout TIME]]\n"
               "                                write back a cgroup's dirty data now and wait for the\n"
               "                                writes; with --wait the result (files, dirty+writeback\n"
               "                                before and after); TIME: how long to wait (default 2min)\n"
               "  action ID                     a reclaim or writeback asked for: its state and result\n"
               "  actions [-o COLS]             the reclaims and writebacks asked for that the daemon\n"
               "                                keeps (up to 64), and what came of each\n"
               "  throttles [-o COLS]           every throttle the daemon holds, and the releases\n"
               "  release UNIT [--for TIME] | --all\n"
               "                                lift a cgroup's throttles (or every cgroup's) now and\n"
               "                                set none for TIME (default 10min)\n"
               "  release --end UNIT | --end --all\n"
               "                                end a release early: the points may throttle it again\n"
               "  policy list                   the policies loaded\n"
               "  policy show NAME              one policy: its file and every effective setting\n"
               "  policy set NAME KEY=VALUE...  set keys of a policy (created if needed), persisted in\n"
               "                                /etc/mdreclaim/policies.d/NAME.conf and applied at once;\n"
               "                                says the mode in force and the cgroups it governs (none:\n"
               "                                a warning with the nearest unit names)\n"
               "  policy unset NAME [KEY...]    remove keys, or the whole policy\n"
               "  events [-f|--follow] [--unit UNIT] [--action ACTION[,...]] [--since TIME] [-n|--lines N]\n"
               "                                recent events (actions and decisions), those of UNIT (or of a\n"
               "                                cgroup path), of these actions, since TIME, the last N;\n"
               "                                TIME: '10min ago', '-2h', 'today', 'yesterday', '2026-12-04\n"
               "                                14:30[:05]', '14:30', '@EPOCH' (local time); from the\n"
               "                                journal (--journal-directory DIR: its files in DIR) what\n"
               "                                the daemon no longer keeps, across its restarts\n"
               "  metrics                       the daemon's metrics, in the OpenMetrics text format\n"
               "  history UNIT|/ [--since TIME] the samples kept of a cgroup under a policy (/: the\n"
               "                                host) over the last hour, or the last TIME\n"
               "  plot UNIT... [--since TIME] [--view write|memory] [--mark TIME=LABEL]...\n"
               "       -o FILE.svg|FILE.png\n"
               "                                draw their stalls, dirty data, write rates and caps\n"
               "                                over time (needs gnuplot); --view memory: memory,\n"
               "                                file cache and slab with memory.high instead; --mark:\n"
               "                                a phase that begins at TIME, drawn across the panels\n"
               "  reload                        reread the configuration\n"
               "\n"
               "Options:\n"
               "  --json            machine-readable output: one JSON document (one per line with --follow)\n"
               "  --no-legend       no column headers\n"
               "  -o, --output COLS the table's columns, a comma list (list, top, throttles,\n"
               "                    actions); an unknown one is refused with the valid ones\n"
               "                    (plot: its file)\n"
               "  --socket PATH     the daemon's control socket (default: $MDCTL_SOCKET or\n"
               "                    " CONTROL_SOCKET_DEFAULT ")\n"
               "  --version         print the version\n"
               "  -h, --help        print this help\n"
               "\n"
               "Tables fit the terminal ($COLUMNS first), the cgroup column shortened in the middle;\n"
               "without a terminal or $COLUMNS, nothing is cut.\n"
               "Reading needs access to the socket; changing things needs root or the group named\n"
               "by the daemon's AdminGroup=.\n"
               "Exit status: 0 success, 1 failure, 2 bad usage.\n");
}

enum {
        ARG_JSON = 0x100, ARG_NO_LEGEND, ARG_SOCKET, ARG_VERSION, ARG_SORT, ARG_BYTES, ARG_CACHE_ONLY,
        ARG_WAIT, ARG_FOLLOW, ARG_DELAY, ARG_FOR, ARG_ALL, ARG_ITERATIONS, ARG_LINES, ARG_UNIT, ARG_ACTION,
        ARG_SINCE, ARG_OUTPUT, ARG_TREE, ARG_VIEW, ARG_TIMEOUT, ARG_JOURNAL_DIRECTORY, ARG_MARK, ARG_YES, ARG_END,
};

static int parse_count(const char *option, const char *s, uint64_t *ret) {
        if (parse_uint_range(s, 1, UINT32_MAX, ret) < 0)
                return usage_error("invalid %s '%s': expected a number above 0", option, s);
        return 0;
}

static int parse_option(int c, Args *a) {
        int k;

        switch (c) {
        case ARG_JSON: a->json = true; break;
        case ARG_NO_LEGEND: a->legend = false; break;
        case ARG_SOCKET: a->socket = optarg; break;
        case ARG_CACHE_ONLY: a->cache_only = true; break;
        case ARG_WAIT: a->wait = true; break;
        case ARG_TIMEOUT:
                if (parse_duration(optarg, &a->timeout_usec) < 0 || a->timeout_usec < 100 * USEC_PER_MSEC)
                        return usage_error("invalid --timeout '%s': expected a duration of 100ms or more (e.g. "
                                           "30s, 5min)", optarg);
                a->have_timeout = true;
                break;
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
                        return usage_error("invalid --bytes '%s': expected a size above 0 as systemd reads one "
                                           "(K, M, G, T, P, E upper case, powers of 1024; e.g. 64M)", optarg);
                a->have_bytes = true;
                break;
        case 'd': case ARG_DELAY:
                if (parse_duration(optarg, &a->delay_usec) < 0 || a->delay_usec < 100 * USEC_PER_MSEC ||
                    a->delay_usec > 3600 * USEC_PER_SEC)
                        return usage_error("invalid --delay '%s': expected a duration from 100ms to 1h", optarg);
                a->have_top_opts = true;
                break;
        case 'n':
                /* top's --iterations or events' --lines: which one is known with the verb. */
                if (parse_count("-n", optarg, &a->iterations) < 0)
                        return -EINVAL;
                a->lines = a->iterations;
                a->have_n = true;
                break;
        case ARG_ITERATIONS:
                if (parse_count("--iterations", optarg, &a->iterations) < 0)
                        return -EINVAL;
                a->have_top_opts = true;
                break;
        case ARG_LINES:
                if (parse_count("--lines", optarg, &a->lines) < 0)
                        return -EINVAL;
                a->have_lines = a->have_events_opts = true;
                break;
        case ARG_UNIT: a->events_unit = optarg; a->have_events_opts = true; break;
        case ARG_ACTION: a->events_action = optarg; a->have_events_opts = true; break;
        case ARG_JOURNAL_DIRECTORY: a->journal_directory = optarg; break;
        case ARG_MARK:
                if (a->n_marks == PLOT_MARKS_MAX)
                        return usage_error("plot takes at most %d --mark", PLOT_MARKS_MAX);
                a->marks[a->n_marks++] = optarg;
                break;
        case ARG_SINCE: {
                /* A point in time, or a plain duration back from now ("15min"). */
                uint64_t now = now_usec(CLOCK_REALTIME), back;

                if (parse_since(optarg, now, &a->since_usec) < 0) {
                        if (parse_duration(optarg, &back) < 0 || back == 0)
                                return usage_error("invalid --since '%s': expected '10min ago', '-2h', '15min', "
                                                   "'today', 'yesterday', 'YYYY-MM-DD [HH:MM[:SS]]', "
                                                   "'HH:MM[:SS]' or '@EPOCH'", optarg);
                        a->since_usec = u64_delta(now, back);
                }
                a->have_since = true;
                break;
        }
        case ARG_FOR:
                if (parse_duration(optarg, &a->for_usec) < 0 || a->for_usec < USEC_PER_SEC)
                        return usage_error("invalid --for '%s': expected a duration of 1s or more (e.g. 30min)",
                                           optarg);
                a->have_for = true;
                break;
        case ARG_ALL: a->all = true; break;
        case ARG_END: a->end = true; break;
        case ARG_YES: a->yes = true; break;
        case 'o': case ARG_OUTPUT: a->output = optarg; break;
        case ARG_TREE: a->tree = true; break;
        case ARG_VIEW:
                if (!streq(optarg, "write") && !streq(optarg, "memory"))
                        return usage_error("invalid --view '%s': expected 'write' or 'memory'", optarg);
                a->memory_view = streq(optarg, "memory");
                a->have_view = true;
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
                { "timeout", required_argument, NULL, ARG_TIMEOUT },
                { "follow", no_argument, NULL, ARG_FOLLOW },
                { "delay", required_argument, NULL, ARG_DELAY },
                { "iterations", required_argument, NULL, ARG_ITERATIONS },
                { "lines", required_argument, NULL, ARG_LINES },
                { "unit", required_argument, NULL, ARG_UNIT },
                { "action", required_argument, NULL, ARG_ACTION },
                { "journal-directory", required_argument, NULL, ARG_JOURNAL_DIRECTORY },
                { "mark", required_argument, NULL, ARG_MARK },
                { "since", required_argument, NULL, ARG_SINCE },
                { "for", required_argument, NULL, ARG_FOR },
                { "all", no_argument, NULL, ARG_ALL },
                { "end", no_argument, NULL, ARG_END },
                { "yes", no_argument, NULL, ARG_YES },
                { "output", required_argument, NULL, ARG_OUTPUT },
                { "tree", no_argument, NULL, ARG_TREE },
                { "view", required_argument, NULL, ARG_VIEW },
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
                c = getopt_long(argc, argv, "+hfd:n:o:", options, NULL);
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

/* ---- main ---- */

enum {
        OPT_SORT = 1 << 0, OPT_BYTES = 1 << 1, OPT_WAIT = 1 << 2, OPT_FOLLOW = 1 << 3, OPT_TOP = 1 << 4,
        OPT_RELEASE = 1 << 5, OPT_EVENTS = 1 << 6, OPT_SINCE = 1 << 7, OPT_OUTPUT = 1 << 8, OPT_TREE = 1 << 9,
        OPT_VIEW = 1 << 10, OPT_YES = 1 << 11,
};

typedef struct Verb {
        const char *name;
        int min_args, max_args;         /* after the verb; -1: any */
        unsigned options;               /* OPT_* the verb takes */
        int (*run)(sd_bus *bus, const Args *a);
        const char *const *columns;     /* its table's, for -o */
} Verb;

static const Verb verbs[] = {
        { "status", 0, 0, 0, verb_status },
        { "list", 0, 0, OPT_SORT | OPT_OUTPUT | OPT_TREE, verb_list, cgroup_columns },
        { "show", 1, 1, 0, verb_show },
        { "explain", 1, 1, 0, verb_explain },
        { "top", 0, 0, OPT_SORT | OPT_TOP | OPT_OUTPUT, verb_top, cgroup_columns },
        { "reclaim", 1, 1, OPT_BYTES | OPT_WAIT | OPT_YES, verb_reclaim },
        { "writeback", 1, 1, OPT_WAIT, verb_writeback },
        { "action", 1, 1, 0, verb_action },
        { "actions", 0, 0, OPT_OUTPUT, verb_actions, action_columns },
        { "policy", 1, -1, 0, verb_policy },
        { "events", 0, 0, OPT_FOLLOW | OPT_EVENTS | OPT_SINCE, verb_events },
        { "metrics", 0, 0, 0, verb_metrics },
        { "reload", 0, 0, 0, verb_reload },
        { "throttles", 0, 0, OPT_OUTPUT, verb_throttles, throttle_columns },
        { "release", 0, 1, OPT_RELEASE, verb_release },
        { "history", 1, 1, OPT_SINCE, verb_history },
        { "plot", 1, -1, OPT_SINCE | OPT_OUTPUT | OPT_VIEW, verb_plot },
};

static int check_options(const Verb *v, const Args *a) {
        static const struct { unsigned opt; const char *name; } opts[] = {
                { OPT_SORT, "--sort" }, { OPT_BYTES, "--bytes/--cache-only" }, { OPT_WAIT, "--wait" },
                { OPT_FOLLOW, "--follow" }, { OPT_TOP, "--delay/--iterations" }, { OPT_RELEASE, "--for/--all/--end" },
                { OPT_EVENTS, "--unit/--action/--lines" }, { OPT_SINCE, "--since" }, { OPT_OUTPUT, "-o/--output" },
                { OPT_TREE, "--tree" }, { OPT_VIEW, "--view" }, { OPT_YES, "--yes" },
        };
        unsigned used = (a->have_sort ? OPT_SORT : 0) | (a->have_bytes || a->cache_only ? OPT_BYTES : 0) |
                        (a->wait ? OPT_WAIT : 0) | (a->follow ? OPT_FOLLOW : 0) | (a->have_top_opts ? OPT_TOP : 0) |
                        (a->have_for || a->all || a->end ? OPT_RELEASE : 0) | (a->have_events_opts ? OPT_EVENTS : 0) |
                        (a->have_since ? OPT_SINCE : 0) | (a->output ? OPT_OUTPUT : 0) | (a->tree ? OPT_TREE : 0) |
                        (a->have_view ? OPT_VIEW : 0) | (a->yes ? OPT_YES : 0);

        if (a->have_n && !(v->options & (OPT_TOP | OPT_EVENTS)))
                return usage_error("-n does not go with '%s' (it is top's --iterations and events' --lines)",
                                   v->name);

        for (size_t i = 0; i < ELEMENTSOF(opts); i++)
                if ((used & opts[i].opt) && !(v->options & opts[i].opt))
                        return usage_error("%s does not go with '%s'", opts[i].name, v->name);
        if (a->json && streq(v->name, "top"))
                return usage_error("top has no JSON output; use 'mdctl list --json'");
        /* -o names columns for the tables (plot's -o is its file). */
        if (v->columns && a->json && (a->output || a->tree))
                return usage_error("%s shapes the table; --json prints every field", a->tree ? "--tree" : "-o");
        if (v->columns && a->output && table_check_choice(v->columns, a->output) < 0)
                return -EINVAL;
        if (a->json && streq(v->name, "metrics"))
                return usage_error("metrics prints the OpenMetrics text format, not JSON");
        if (a->json && streq(v->name, "plot"))
                return usage_error("plot draws a picture, not JSON; use 'mdctl history --json'");
        if (a->have_timeout && !a->wait)
                return usage_error("--timeout goes with --wait");
        if (a->argc - 1 < v->min_args || (v->max_args >= 0 && a->argc - 1 > v->max_args))
                return usage_error("'%s' takes %s", v->name,
                                   v->max_args == 0 ? "no arguments" :
                                   streq(v->name, "action") ? "one action id" :
                                   v->min_args == 1 && v->max_args == 1 ? "one unit name or cgroup path" :
                                   v->min_args == 1 && v->max_args < 0 ? "one or more unit names or cgroup paths" :
                                   "other arguments");
        if (a->n_marks > 0 && !streq(v->name, "plot"))
                return usage_error("--mark goes with 'plot'");
        if (a->journal_directory && !streq(v->name, "events"))
                return usage_error("--journal-directory goes with 'events'");
        if (streq(v->name, "release"))
                return check_release_args(a);
        if (streq(v->name, "plot"))
                return check_plot_args(a);
        if (streq(v->name, "events"))
                return check_events_args(a);
        if (streq(v->name, "action"))
                return check_action_args(a);
        return streq(v->name, "policy") ? check_policy_args(a) : 0;
}

int main(int argc, char **argv) {
        sd_bus *bus = NULL;
        const Verb *verb = NULL;
        Args a;
        int r;

        /* Character widths for the tables (UTF-8 ellipsis and tree); numbers stay in the C locale for JSON. */
        (void) setlocale(LC_CTYPE, "");
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
                return EXIT_FAILURE;
        if (fflush(stdout) != 0 || ferror(stdout)) {
                /* The reader went away (`mdctl list | head`): what it wanted it has; nothing to say. */
                if (errno == EPIPE)
                        return EXIT_SUCCESS;
                fprintf(stderr, "mdctl: cannot write the output: %s\n", strerror(errno));
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
