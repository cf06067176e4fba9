/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mdreclaimd: arguments, start-up checks, and either a one-shot command
 * (--check-config, --sample-once) or the daemon's event loop.
 *
 * Exit status: 0 success, 1 failure (configuration, cgroup setup, runtime),
 * 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "build-config.h"
#include "api.h"
#include "conf.h"
#include "discover.h"
#include "log.h"
#include "manager.h"
#include "metrics-file.h"
#include "observer-scan.h"
#include "parse-util.h"
#include "report.h"
#include "transport.h"
#include "util.h"

#define EXIT_USAGE 2

typedef struct Options {
        const char *config_root;
        const char *cgroup_root;
        const char *proc_root;
        const char *sys_root;
        const char *state_dir;
        bool state_dir_given;
        const char *persistent_dir;     /* NULL: --state-dir's if given, else $STATE_DIRECTORY, else /var/lib/mdreclaim */
        const char *control_socket;
        uint64_t sample_window_usec;
        int log_level;
        bool check_config;
        bool sample_once;
        bool json;
} Options;

static void help(void) {
        printf("Usage: mdreclaimd [OPTIONS]\n"
               "\n"
               "Memory-cgroup-aware reclaim daemon: keeps page cache, dirty data and\n"
               "filesystem metadata from squeezing the services that matter.\n"
               "\n"
               "  --config-root DIR   read the configuration below DIR (for tests)\n"
               "  --cgroup-root DIR   use DIR as the cgroup v2 root, skip discovery\n"
               "  --check-config      validate the configuration, print errors or a summary\n"
               "  --sample-once       read every cgroup once, print it and exit\n"
               "  --json              with --sample-once: print JSON\n"
               "  --sample-window T   with --sample-once: sample twice, T apart, for rates\n"
               "                      (default 1s; 0 for one pass without rates)\n"
               "  --log-level LEVEL   emerg, alert, crit, err, warning, notice, info, debug\n"
               "  --proc-root DIR     read /proc files below DIR (for tests)\n"
               "  --sys-root DIR      read /sys files below DIR (for tests)\n"
               "  --state-dir DIR     keep the throttle ledger in DIR (default /run/mdreclaim)\n"
               "  --persistent-dir DIR\n"
               "                      keep what outlives a reboot (device capacities, the\n"
               "                      sample history) in DIR (default $STATE_DIRECTORY,\n"
               "                      /var/lib/mdreclaim; --state-dir's DIR if that is given)\n"
               "  --control-socket P  serve the control API on P (default: ControlSocket=,\n"
               "                      " CONTROL_SOCKET_DEFAULT ")\n"
               "  --version           print the version\n"
               "  --help              print this help\n"
               "\n"
               "Exit status: 0 on success, 1 on failure, 2 on bad usage.\n");
}

static int parse_args(int argc, char **argv, Options *o) {
        enum { ARG_CONFIG_ROOT = 0x100, ARG_CGROUP_ROOT, ARG_CHECK_CONFIG, ARG_SAMPLE_ONCE,
               ARG_JSON, ARG_LOG_LEVEL, ARG_VERSION, ARG_HELP, ARG_PROC_ROOT, ARG_SYS_ROOT,
               ARG_SAMPLE_WINDOW, ARG_STATE_DIR, ARG_PERSISTENT_DIR, ARG_CONTROL_SOCKET };
        static const struct option options[] = {
                { "config-root", required_argument, NULL, ARG_CONFIG_ROOT },
                { "cgroup-root", required_argument, NULL, ARG_CGROUP_ROOT },
                { "check-config", no_argument, NULL, ARG_CHECK_CONFIG },
                { "sample-once", no_argument, NULL, ARG_SAMPLE_ONCE },
                { "json", no_argument, NULL, ARG_JSON },
                { "sample-window", required_argument, NULL, ARG_SAMPLE_WINDOW },
                { "proc-root", required_argument, NULL, ARG_PROC_ROOT },
                { "sys-root", required_argument, NULL, ARG_SYS_ROOT },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "persistent-dir", required_argument, NULL, ARG_PERSISTENT_DIR },
                { "control-socket", required_argument, NULL, ARG_CONTROL_SOCKET },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "version", no_argument, NULL, ARG_VERSION },
                { "help", no_argument, NULL, ARG_HELP },
                {}
        };
        int c;

        *o = (Options) { .log_level = -1, .proc_root = "/proc", .sys_root = "/sys", .state_dir = "/run/mdreclaim",
                         .sample_window_usec = USEC_PER_SEC };
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case ARG_CONFIG_ROOT:
                        o->config_root = optarg;
                        break;
                case ARG_CGROUP_ROOT:
                        o->cgroup_root = optarg;
                        break;
                case ARG_CHECK_CONFIG:
                        o->check_config = true;
                        break;
                case ARG_SAMPLE_ONCE:
                        o->sample_once = true;
                        break;
                case ARG_JSON:
                        o->json = true;
                        break;
                case ARG_SAMPLE_WINDOW:
                        if (parse_duration(optarg, &o->sample_window_usec) < 0 ||
                            o->sample_window_usec > 60 * USEC_PER_SEC) {
                                fprintf(stderr, "mdreclaimd: invalid --sample-window '%s': expected a duration "
                                        "up to 60s (e.g. 1s, 500ms, 0)\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_PROC_ROOT:
                        o->proc_root = optarg;
                        break;
                case ARG_SYS_ROOT:
                        o->sys_root = optarg;
                        break;
                case ARG_STATE_DIR:
                        o->state_dir = optarg;
                        o->state_dir_given = true;
                        break;
                case ARG_PERSISTENT_DIR:
                        o->persistent_dir = optarg;
                        break;
                case ARG_CONTROL_SOCKET:
                        if (optarg[0] != '/' || strlen(optarg) >= 108) {
                                fprintf(stderr, "mdreclaimd: invalid --control-socket '%s': expected an absolute "
                                        "path shorter than 108 bytes\n", optarg);
                                return -EINVAL;
                        }
                        o->control_socket = optarg;
                        break;
                case ARG_LOG_LEVEL:
                        o->log_level = log_level_from_string(optarg);
                        if (o->log_level < 0) {
                                fprintf(stderr, "mdreclaimd: invalid --log-level '%s': expected emerg, alert, "
                                        "crit, err, warning, notice, info or debug\n", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_VERSION:
                        printf("mdreclaimd %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_HELP:
                        help();
                        return 0;
                default:
                        fprintf(stderr, "Try 'mdreclaimd --help'.\n");
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "mdreclaimd: unexpected argument '%s'. Try 'mdreclaimd --help'.\n", argv[optind]);
                return -EINVAL;
        }
        if ((o->json || o->sample_window_usec != USEC_PER_SEC) && !o->sample_once) {
                fprintf(stderr, "mdreclaimd: --json and --sample-window go with --sample-once\n");
                return -EINVAL;
        }
        if (o->check_config && o->sample_once) {
                fprintf(stderr, "mdreclaimd: --check-config and --sample-once exclude each other\n");
                return -EINVAL;
        }
        return 1;
}

static void print_diag(const ConfDiag *diag, FILE *f, bool prefixed) {
        for (size_t i = 0; i < diag->n_messages; i++)
                fprintf(f, "%s%s\n", prefixed ? "<3>" : "", diag->messages[i]);
        if (diag->n_dropped)
                fprintf(f, "%s... and %zu more errors\n", prefixed ? "<3>" : "", diag->n_dropped);
}

/* `cgroup_root`: --cgroup-root, which wins over CgroupRoot=. */
static void print_summary(const Config *c, const char *cgroup_root) {
        printf("Configuration OK: %zu file(s) read, %zu polic%s.\n", c->n_files, c->n_policies,
               c->n_policies == 1 ? "y" : "ies");
        for (size_t i = 0; i < c->n_files; i++)
                printf("  file    %s\n", c->files[i]);
        printf("  daemon  Interval=%llums LogLevel=%s CgroupRoot=%s\n",
               (unsigned long long) (c->daemon.interval_usec / USEC_PER_MSEC),
               log_level_to_string(c->daemon.log_level), cgroup_root ?: c->daemon.cgroup_root ?: "(discover)");
        for (size_t i = 0; i < c->n_policies; i++) {
                const Policy *p = c->policies[i];
                printf("  policy  %-20s Mode=%s Priority=%u Protect=%s Match=", p->name,
                       policy_mode_to_string(p->mode), p->priority, p->protect ? "yes" : "no");
                for (size_t j = 0; j < p->n_matches; j++)
                        printf("%s%s", j ? " " : "", p->matches[j].pattern);
                putchar('\n');
        }
}

/* --cgroup-root, then CgroupRoot=, then libcgroup's discovery. */
static int resolve_cgroup_root(const Options *o, const Config *c, char **ret) {
        _cleanup_free_ char *mount = NULL;
        CgDiscoverResult result;
        const char *given = o->cgroup_root ?: c->daemon.cgroup_root;
        int r;

        if (given) {
                *ret = strdup(given);
                return *ret ? 0 : -ENOMEM;
        }
        r = cg_discover(&mount, &result);
        if (r < 0) {
                log_error("Cannot run here: %s%s%s.", cg_discover_explain(result),
                          mount ? "; memory controller found at " : "", mount ?: "");
                return r;
        }
        log_debug("cgroup v2 with the memory controller at %s", mount);
        *ret = TAKE_PTR(mount);
        return 0;
}

/* Each watched cgroup keeps a few files open: take every descriptor allowed. */
static void raise_fd_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_debug_errno(errno, "Cannot raise the file descriptor limit: %m");
}

static int run_sample_once(const Options *o, const char *cgroup_root) {
        _cleanup_(observer_freep) Observer *obs = NULL;
        int r;

        r = observer_new(cgroup_root, o->proc_root, o->sys_root, &obs);
        if (r < 0)
                return r;
        r = observer_rescan(obs);
        if (r >= 0)
                r = observer_sample(obs, now_usec(CLOCK_MONOTONIC));
        if (r >= 0 && o->sample_window_usec > 0) {
                /* A second pass gives the rates and stall deltas. */
                (void) usleep((useconds_t) o->sample_window_usec);
                r = observer_sample(obs, now_usec(CLOCK_MONOTONIC));
        }
        if (r < 0)
                return log_error_errno(r, "Sampling %s failed: %m", cgroup_root);
        if (o->json)
                report_json(obs, stdout);
        else
                report_table(obs, stdout);
        if (fflush(stdout) != 0 || ferror(stdout))
                return log_error_errno(EIO, "Writing the sample failed");
        return 0;
}

/* Where device capacities and the sample history are kept: --persistent-dir; with --state-dir alone
 * (a test's tree) that directory, as before; else systemd's StateDirectory= ($STATE_DIRECTORY, the
 * first of its list), else /var/lib/mdreclaim. */
static const char *persistent_dir(Options *o) {
        const char *env = getenv("STATE_DIRECTORY");

        if (o->persistent_dir)
                return o->persistent_dir;
        if (o->state_dir_given)
                return o->state_dir;
        if (env && env[0] == '/') {
                o->persistent_dir = strndup(env, strcspn(env, ":"));
                if (o->persistent_dir)
                        return o->persistent_dir;
        }
        return "/var/lib/mdreclaim";
}

int main(int argc, char **argv) {
        _cleanup_(config_freep) Config *config = NULL;
        _cleanup_free_ char *cgroup_root = NULL;
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(api_freep) Api *api = NULL;
        _cleanup_(metrics_file_freep) MetricsFile *metrics_file = NULL;
        ConfDiag diag = {};
        ManagerArgs margs;
        Options o;
        int r;

        /*
         * Fixed thresholds for glibc's allocator. Left to adjust itself, it
         * raises both after the first large block is freed (a list's reply
         * at 1,000 cgroups is about a megabyte), and from then on keeps such
         * blocks in the heap once freed: a daemon that answered one list
         * held 1.1 MB more for good. Fixed, a block of 128 KiB or more is
         * mapped and given back when freed, and so is a free heap top.
         */
#ifdef M_MMAP_THRESHOLD
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        mallopt(M_TRIM_THRESHOLD, 128 * 1024);
#endif

        r = parse_args(argc, argv, &o);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        if (o.log_level >= 0)
                log_set_max_level(o.log_level);

        r = config_load(o.config_root, &config, &diag);
        if (r < 0) {
                print_diag(&diag, stderr, !o.check_config);
                if (o.check_config)
                        fprintf(stderr, "%zu error(s) in the configuration.\n", conf_diag_count(&diag));
                else
                        log_error("The configuration has %zu error(s); not starting.", conf_diag_count(&diag));
                conf_diag_clear(&diag);
                return EXIT_FAILURE;
        }
        if (o.check_config) {
                print_summary(config, o.cgroup_root);
                return EXIT_SUCCESS;
        }
        margs = (ManagerArgs) { .config_root = o.config_root, .cgroup_root = o.cgroup_root,
                                .proc_root = o.proc_root, .sys_root = o.sys_root, .state_dir = o.state_dir,
                                .persistent_dir = persistent_dir(&o), .log_level = o.log_level };
        manager_apply_log_level(&margs, config);

        raise_fd_limit();
        r = resolve_cgroup_root(&o, config, &cgroup_root);
        if (r < 0)
                return EXIT_FAILURE;
        if (o.sample_once)
                return run_sample_once(&o, cgroup_root) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;

        r = manager_new(&margs, TAKE_PTR(config), cgroup_root, &m);
        if (r < 0)
                return EXIT_FAILURE;
        r = api_new(m, o.control_socket ?: m->config->daemon.control_socket ?: CONTROL_SOCKET_DEFAULT, &api);
        if (r < 0)
                return EXIT_FAILURE;
        r = metrics_file_new(m, &metrics_file);
        if (r < 0)
                return EXIT_FAILURE;
        r = manager_run(m);
        if (r < 0) {
                log_error_errno(r, "Stopped on an error: %m");
                return EXIT_FAILURE;
        }
        return r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
