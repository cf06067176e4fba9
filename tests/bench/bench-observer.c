/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-observer: what observing cgroups costs the daemon, per cgroup and
 * tick, next to the floor set by a bare loop that only preads the same files,
 * and how much memory it holds. It runs on fixture trees of several sizes,
 * each measured in a child process of its own so that peak RSS is per size,
 * or on a real cgroup2 tree. A benchmark run by hand, not a test.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "fixture.h"
#include "log.h"
#include "observer-scan.h"
#include "util.h"

/* The targets of the observation issue (issue 4, "Cost"). */
#define TARGET_RATIO 1.2
#define TARGET_RSS_KIB 4096
#define TARGET_RSS_CGROUPS 1000
#define TARGET_CORE_PERCENT 5.0
#define TARGET_CORE_CGROUPS 10000

#define SIZES_MAX 16
#define PATH_LEN 512

typedef struct Args {
        size_t sizes[SIZES_MAX];
        size_t n_sizes;
        unsigned ticks;
        unsigned rescans;
        const char *cgroup_root;        /* NULL: fixture trees */
        const char *proc_root;
        const char *sys_root;
        size_t create;                  /* real tree: cgroups to mkdir first */
        uint64_t nofile;                /* 0: raise as far as needed */
        bool no_io_stat;                /* fixture cgroups without io.stat (io controller off) */
        size_t governed;                /* cgroups sampled every tick; 0: all of them */
        unsigned cold_every;            /* with --governed: the others every this many ticks */
        Fixture *fixture;               /* the tree being measured */
} Args;

/* What one child measured, sent back to the parent through a pipe. */
typedef struct Result {
        int error;                      /* negative errno, or 0 */
        size_t made;                    /* cgroups the benchmark built */
        size_t seen;                    /* cgroups the observer found */
        size_t incomplete;              /* found, but some per-tick file unread */
        size_t governed;                /* sampled every tick (the rest every --cold-every ticks) */
        uint64_t walks;                 /* tree walks the rescans did (a rescan walks only on change) */
        bool out_of_fds;                /* RLIMIT_NOFILE was reached: figures void */
        unsigned ticks, rescans;
        uint64_t tick_cpu_ns;           /* over all timed ticks */
        uint64_t bare_cpu_ns;
        uint64_t rescan_cpu_ns;         /* over all timed rescans */
        uint64_t start_cpu_ns;          /* first rescan and first two passes */
        long fds;                       /* held by the observer */
        size_t heap_bytes;              /* malloc'd by the observer after warm-up */
        long long heap_growth;          /* during the timed ticks */
        long rss_base_kib;              /* VmRSS before the observer existed */
        long rss_kib;                   /* VmRSS after warm-up */
        long hwm_kib;                   /* VmHWM after warm-up */
        long maxrss_kib;                /* ru_maxrss at the end, the bare loop's fds array included */
        long kmem_kib;                  /* unreclaimable slab grown while the observer started */
} Result;

/* ---- clocks, memory, fds ---- */

static uint64_t clock_ns(clockid_t id) {
        struct timespec ts;

        (void) clock_gettime(id, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

static uint64_t cpu_ns(void) {
        return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

static uint64_t monotonic_usec(void) {
        return clock_ns(CLOCK_MONOTONIC) / 1000;
}

/* A "Key:   123 kB" line of a /proc file, in KiB; -1 if absent. */
static long proc_kib(const char *path, const char *key) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        size_t kl = strlen(key);
        char line[256];

        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, kl) == 0 && line[kl] == ':')
                        return strtol(line + kl + 1, NULL, 10);
        return -1;
}

static long status_kib(const char *key) {
        return proc_kib("/proc/self/status", key);
}

static long meminfo_kib(const char *key) {
        return proc_kib("/proc/meminfo", key);
}

static size_t heap_in_use(void) {
        struct mallinfo2 mi = mallinfo2();

        return mi.uordblks + mi.hblkhd;
}

static long count_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        long n = 0;

        if (!d)
                return -1;
        while (readdir(d))
                n++;
        closedir(d);
        return n - 3; /* ".", ".." and the directory's own fd */
}

/* False once the process ran out of fds (the observer then skips cgroups). */
static bool fd_available(void) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return errno != EMFILE && errno != ENFILE;
        close(fd);
        return true;
}

/* ---- the shape of a host's tree ---- */

typedef int (*PathFn)(const char *path, size_t index, void *userdata);

typedef struct Plan {
        const char *prefix;     /* "" for a fixture tree, "/mdreclaim-bench" for a real one */
        size_t budget;          /* cgroups still to emit */
        size_t index;
        PathFn fn;
        void *userdata;
        int error;
} Plan;

/* Emits the cgroup prefix+path; false once the budget is spent or on error. */
static bool __attribute__((format(printf, 2, 3))) plan_emit(Plan *p, const char *fmt, ...) {
        char path[PATH_LEN];
        size_t pl = strlen(p->prefix);
        va_list ap;
        int n;

        if (p->budget == 0 || p->error < 0)
                return false;
        memcpy(path, p->prefix, pl + 1);
        va_start(ap, fmt);
        n = vsnprintf(path + pl, sizeof(path) - pl, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t) n >= sizeof(path) - pl) {
                p->error = -ENAMETOOLONG;
                return false;
        }
        if (path[0] == '\0')
                strcpy(path, "/");
        p->error = p->fn(path, p->index++, p->userdata);
        p->budget--;
        return p->error >= 0;
}

static void plan_system(Plan *p) {
        static const char *const services[] = {
                "systemd-journald.service", "systemd-udevd.service", "systemd-logind.service",
                "systemd-networkd.service", "systemd-resolved.service", "systemd-timesyncd.service",
                "dbus.service", "cron.service", "ssh.service", "rsyslog.service", "polkit.service",
                "containerd.service", "kubelet.service", "chrony.service", "unattended-upgrades.service",
                "nginx.service", "postgresql@15-main.service", "prometheus-node-exporter.service",
        };

        for (size_t i = 0; i < ELEMENTSOF(services); i++)
                plan_emit(p, "/system.slice/%s", services[i]);
        plan_emit(p, "/system.slice/system-getty.slice");
        for (unsigned i = 1; i <= 6; i++)
                plan_emit(p, "/system.slice/system-getty.slice/getty@tty%u.service", i);
        for (unsigned i = 0; i < 15; i++)
                plan_emit(p, "/system.slice/app-%02u.service", i);
}

static void plan_user(Plan *p) {
        const char *u = "/user.slice/user-1000.slice";

        plan_emit(p, "%s", u);
        plan_emit(p, "%s/session-3.scope", u);
        plan_emit(p, "%s/user@1000.service", u);
        plan_emit(p, "%s/user@1000.service/init.scope", u);
        plan_emit(p, "%s/user@1000.service/app.slice", u);
        for (unsigned i = 0; i < 3; i++)
                plan_emit(p, "%s/user@1000.service/app.slice/app-tmux-%u.scope", u, i);
}

/* Pods of a Kubernetes node: a slice per pod, three containers in each. */
static void plan_pods(Plan *p) {
        static const char *const qos[] = { "burstable", "besteffort" };

        plan_emit(p, "/kubepods.slice/kubepods-%s.slice", qos[0]);
        plan_emit(p, "/kubepods.slice/kubepods-%s.slice", qos[1]);
        for (size_t pod = 0; p->budget > 0 && p->error >= 0; pod++) {
                const char *q = qos[pod % 3 == 2];
                char slice[PATH_LEN];

                snprintf(slice, sizeof(slice), "/kubepods.slice/kubepods-%s.slice/kubepods-%s-pod%06zu.slice",
                         q, q, pod);
                plan_emit(p, "%s", slice);
                for (size_t c = 0; c < 3; c++)
                        plan_emit(p, "%s/cri-containerd-%016" PRIx64 ".scope", slice,
                                  (uint64_t) (pod * 3 + c) * UINT64_C(0x9e3779b97f4a7c15) >> 8);
        }
}

/* Emits exactly n cgroups, the root first, parents before children. */
static int plan_tree(const char *prefix, size_t n, PathFn fn, void *userdata) {
        Plan p = { .prefix = prefix, .budget = n, .fn = fn, .userdata = userdata };

        plan_emit(&p, "%s", "");
        plan_emit(&p, "/init.scope");
        plan_emit(&p, "/system.slice");
        plan_emit(&p, "/user.slice");
        plan_emit(&p, "/kubepods.slice");
        plan_system(&p);
        plan_user(&p);
        plan_pods(&p);
        return p.error < 0 ? p.error : (int) (p.index > INT32_MAX ? INT32_MAX : p.index);
}

/* ---- file contents like Linux 6.1's ---- */

/* memory.stat of 6.1, in its order: byte counts, then event counts. */
static const char *const stat_keys_6_1[] = {
        "anon", "file", "kernel", "kernel_stack", "pagetables", "percpu", "sock", "vmalloc",
        "shmem", "zswap", "zswapped", "file_mapped", "file_dirty", "file_writeback", "swapcached",
        "anon_thp", "file_thp", "shmem_thp", "inactive_anon", "active_anon", "inactive_file",
        "active_file", "unevictable", "slab_reclaimable", "slab_unreclaimable", "slab",
        /* events from here */
        "workingset_refault_anon", "workingset_refault_file", "workingset_activate_anon",
        "workingset_activate_file", "workingset_restore_anon", "workingset_restore_file",
        "workingset_nodereclaim", "pgscan", "pgsteal", "pgscan_kswapd", "pgscan_direct",
        "pgsteal_kswapd", "pgsteal_direct", "pgfault", "pgmajfault", "pgrefill", "pgactivate",
        "pgdeactivate", "pglazyfree", "pglazyfreed", "zswpin", "zswpout", "thp_fault_alloc",
        "thp_collapse_alloc",
};
#define STAT_FIRST_EVENT 26

static uint64_t rng_next(uint64_t *s) {
        /* xorshift64*: varied, repeatable figures. */
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        return *s * UINT64_C(2685821657736338717);
}

/* What stays 0 on a host without swap, zswap or lazy frees. */
static bool stat_stays_zero(const char *k) {
        static const char *const zero[] = {
                "zswap", "zswapped", "swapcached", "file_thp", "shmem_thp", "workingset_refault_anon",
                "workingset_activate_anon", "workingset_restore_anon", "pglazyfree", "pglazyfreed",
                "zswpin", "zswpout",
        };

        for (size_t i = 0; i < ELEMENTSOF(zero); i++)
                if (streq(k, zero[i]))
                        return true;
        return false;
}

static void format_memory_stat(char *buf, size_t size, uint64_t *rng) {
        size_t off = 0;

        for (size_t i = 0; i < ELEMENTSOF(stat_keys_6_1); i++) {
                uint64_t v = rng_next(rng) % (i < STAT_FIRST_EVENT ? UINT64_C(4) << 30 : UINT64_C(50000000));
                int n = snprintf(buf + off, size - off, "%s %" PRIu64 "\n", stat_keys_6_1[i],
                                 stat_stays_zero(stat_keys_6_1[i]) ? 0 : v);

                if (n < 0 || (size_t) n >= size - off)
                        break;
                off += (size_t) n;
        }
}

static void format_pressure(char *buf, size_t size, uint64_t *rng) {
        uint64_t some = rng_next(rng) % 900000000;
        unsigned a = (unsigned) (rng_next(rng) % 400);

        snprintf(buf, size,
                 "some avg10=%u.%02u avg60=%u.%02u avg300=0.%02u total=%" PRIu64 "\n"
                 "full avg10=0.%02u avg60=0.%02u avg300=0.00 total=%" PRIu64 "\n",
                 a / 100, a % 100, a / 200, a % 100, a % 50, some, a % 60, a % 20, some / 3);
}

/* One device, or two for every third cgroup; dbytes/dios as 6.1 prints them. */
static void format_io_stat(char *buf, size_t size, size_t index, uint64_t *rng) {
        int n = snprintf(buf, size, "259:0 rbytes=%" PRIu64 " wbytes=%" PRIu64 " rios=%" PRIu64
                         " wios=%" PRIu64 " dbytes=0 dios=0\n",
                         rng_next(rng) % (UINT64_C(1) << 36), rng_next(rng) % (UINT64_C(1) << 36),
                         rng_next(rng) % 10000000, rng_next(rng) % 10000000);

        if (index % 3 == 0 && n > 0 && (size_t) n < size)
                snprintf(buf + n, size - (size_t) n, "253:0 rbytes=%" PRIu64 " wbytes=%" PRIu64
                         " rios=%" PRIu64 " wios=%" PRIu64 " dbytes=0 dios=0\n",
                         rng_next(rng) % (UINT64_C(1) << 34), rng_next(rng) % (UINT64_C(1) << 34),
                         rng_next(rng) % 1000000, rng_next(rng) % 1000000);
}

static int fixture_fill(const char *path, size_t index, void *userdata) {
        Fixture *fx = userdata;
        bool root = streq(path, "/");
        uint64_t rng = (index + 1) * UINT64_C(0x9e3779b97f4a7c15);
        char buf[4096];
        int r;

        if (!root && (r = fixture_add_cgroup(fx, path)) < 0)
                return r;
        format_memory_stat(buf, sizeof(buf), &rng);
        if ((r = fixture_write(fx, path, "memory.stat", buf)) < 0)
                return r;
        format_pressure(buf, sizeof(buf), &rng);
        if ((r = fixture_write(fx, path, "memory.pressure", buf)) < 0)
                return r;
        format_pressure(buf, sizeof(buf), &rng);
        if ((r = fixture_write(fx, path, "io.pressure", buf)) < 0)
                return r;
        format_io_stat(buf, sizeof(buf), index, &rng);
        if ((r = fixture_write(fx, path, "io.stat", buf)) < 0)
                return r;
        if (root)
                return 0; /* the root has no memory.current, limits or events */
        snprintf(buf, sizeof(buf), "%" PRIu64 "\n", rng_next(&rng) % (UINT64_C(8) << 30));
        if ((r = fixture_write(fx, path, "memory.current", buf)) < 0)
                return r;
        snprintf(buf, sizeof(buf), "low 0\nhigh %" PRIu64 "\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
                 index % 7 == 0 ? rng_next(&rng) % 5000 : 0);
        if ((r = fixture_write(fx, path, "memory.events", buf)) < 0)
                return r;
        if (index % 4 == 0 && (r = fixture_write(fx, path, "memory.high", "4294967296\n")) < 0)
                return r;
        return 0;
}

/* A second pass: adding a child recreates its parents' missing files. */
static int fixture_drop_io_stat(const char *path, size_t index, void *userdata) {
        return streq(path, "/") ? 0 : fixture_remove_file(userdata, path, "io.stat");
}

/* The host's own /proc files where they exist, so that host parsing is real-sized. */
static void fixture_copy_host_proc(Fixture *fx) {
        static const char *const files[] = { "meminfo", "vmstat", "pressure/memory", "pressure/io" };
        char path[64], buf[16384];

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_close_ int fd = -1;
                ssize_t n;

                snprintf(path, sizeof(path), "/proc/%s", files[i]);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
                        continue;
                buf[n] = '\0';
                (void) fixture_write_proc(fx, files[i], buf);
        }
}

/* ---- the bare loop: the same files, kept open, preads only ---- */

static const CgFile tick_files[] = {
        CG_MEMORY_CURRENT, CG_MEMORY_STAT, CG_MEMORY_PRESSURE, CG_IO_PRESSURE, CG_IO_STAT,
};
static const char *const host_files[] = { "pressure/memory", "pressure/io", "meminfo", "vmstat" };

typedef struct Bare {
        int *fds;               /* -1 where a cgroup lacks the file */
        size_t n_fds;
} Bare;

static void bare_close(Bare *b) {
        for (size_t i = 0; i < b->n_fds; i++)
                closep(&b->fds[i]);
        free(b->fds);
        *b = (Bare) {};
}

/* Opens, outside the daemon's code, every file a sample pass reads every tick (the governed cgroups'). */
static int bare_open(const Observer *o, Bare *ret) {
        size_t n = o->cgroups.n * ELEMENTSOF(tick_files) + ELEMENTSOF(host_files), k = 0;
        Bare b = { .fds = calloc(n, sizeof(int)), .n_fds = n };

        if (!b.fds)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                b.fds[i] = -1;
        for (size_t i = 0; i < ELEMENTSOF(host_files); i++)
                b.fds[k++] = openat(o->host->proc_fd, host_files[i], O_RDONLY | O_CLOEXEC);
        for (size_t i = 0; i < o->cgroups.n; i++) {
                const Cgroup *cg = o->cgroups.entries[i].cg;
                _cleanup_close_ int dir = -1;

                if (!o->cgroups.entries[i].hot)
                        continue;
                dir = openat(o->root->fd, streq(cg->path, "/") ? "." : cg->path + 1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                for (size_t f = 0; dir >= 0 && f < ELEMENTSOF(tick_files); f++)
                        b.fds[k++] = openat(dir, cg_file_name(tick_files[f]), O_RDONLY | O_CLOEXEC);
        }
        *ret = b;
        return 0;
}

static size_t bare_tick(const Bare *b) {
        char buf[16384];
        size_t total = 0;

        for (size_t i = 0; i < b->n_fds; i++) {
                ssize_t n;

                if (b->fds[i] < 0)
                        continue;
                n = pread(b->fds[i], buf, sizeof(buf) - 1, 0);
                if (n > 0)
                        total += (size_t) n;
        }
        return total;
}

/* ---- one measurement ---- */

/* Cgroups whose newest sample lacks a file they should have. */
static size_t count_incomplete(const Observer *o, bool no_io_stat) {
        const unsigned all = SAMPLE_MEMORY_CURRENT | SAMPLE_MEMORY_STAT | SAMPLE_MEMORY_PRESSURE |
                             SAMPLE_IO_PRESSURE | (no_io_stat ? 0 : SAMPLE_IO_STAT);
        size_t n = 0;

        for (size_t i = 0; i < o->cgroups.n; i++) {
                const CgEntry *e = &o->cgroups.entries[i];
                const CgroupSample *s = cg_entry_sample(e);
                /* The root cgroup has no memory.current. */
                unsigned want = streq(e->cg->path, "/") ? all & ~SAMPLE_MEMORY_CURRENT : all;

                n += !s || (s->have & want) != want;
        }
        return n;
}

/* Cold start: the first rescan and two sample passes, opening every file. */
/* The first --governed cgroups (all without it) are sampled every tick, as a policy makes them. */
static void mark_governed(Observer *o, const Args *a, Result *res) {
        res->governed = 0;
        for (size_t i = 0; i < o->cgroups.n; i++) {
                bool hot = a->governed == 0 || i < a->governed;

                observer_set_hot(o, &o->cgroups.entries[i], hot);
                res->governed += hot;
        }
        o->cold_every = a->governed ? a->cold_every : 1;
}

static int measure_start(Observer *o, const Args *a, Result *res) {
        uint64_t t0 = cpu_ns();
        int r = observer_rescan(o);

        if (r >= 0)
                mark_governed(o, a, res);
        if (r >= 0)
                r = observer_sample(o, monotonic_usec());
        if (r >= 0)
                r = observer_sample(o, monotonic_usec());
        res->start_cpu_ns = cpu_ns() - t0;
        res->seen = o->cgroups.n;
        res->incomplete = count_incomplete(o, a->no_io_stat);
        res->out_of_fds = !fd_available();
        return r;
}

/* Timed ticks, the daemon's pass and the bare loop alternating which goes first. */
static int measure_ticks(Observer *o, const Bare *b, const Args *a, Result *res) {
        size_t heap0 = heap_in_use();
        size_t bare_bytes = 0;

        (void) bare_tick(b);
        for (unsigned t = 0; t < a->ticks; t++) {
                uint64_t c0, c1, c2;
                int r = 0;

                if (t % 2 == 0) {
                        c0 = cpu_ns();
                        r = observer_sample(o, monotonic_usec());
                        c1 = cpu_ns();
                        bare_bytes += bare_tick(b);
                        c2 = cpu_ns();
                        res->tick_cpu_ns += c1 - c0;
                        res->bare_cpu_ns += c2 - c1;
                } else {
                        c0 = cpu_ns();
                        bare_bytes += bare_tick(b);
                        c1 = cpu_ns();
                        r = observer_sample(o, monotonic_usec());
                        c2 = cpu_ns();
                        res->bare_cpu_ns += c1 - c0;
                        res->tick_cpu_ns += c2 - c1;
                }
                if (r < 0)
                        return r;
                res->ticks++;
        }
        if (a->ticks > 0 && bare_bytes == 0) {
                fprintf(stderr, "bench-observer: the bare loop read nothing, so there is no floor to compare with\n");
                return -EIO;
        }
        res->heap_growth = (long long) heap_in_use() - (long long) heap0;
        return 0;
}

static int measure_rescans(Observer *o, const Args *a, Result *res) {
        for (unsigned i = 0; i < a->rescans; i++) {
                uint64_t c0 = cpu_ns();
                int r = observer_rescan(o);

                res->rescan_cpu_ns += cpu_ns() - c0;
                if (r < 0)
                        return r;
                res->rescans++;
                res->walks = o->walks;
        }
        return 0;
}

static int measure(const Args *a, const char *cg_root, const char *proc_root, const char *sys_root,
                   Result *res) {
        _cleanup_(observer_freep) Observer *o = NULL;
        Bare b = {};
        size_t heap0 = heap_in_use();
        long fds0 = count_fds(), slab0 = meminfo_kib("SUnreclaim");
        int r;

        res->rss_base_kib = status_kib("VmRSS");
        r = observer_new(cg_root, proc_root, sys_root, &o);
        if (r < 0)
                return r;
        r = measure_start(o, a, res);
        if (r < 0)
                return r;
        res->heap_bytes = heap_in_use() - heap0;
        res->fds = count_fds() - fds0;
        res->rss_kib = status_kib("VmRSS");
        res->hwm_kib = status_kib("VmHWM");
        res->kmem_kib = meminfo_kib("SUnreclaim") - slab0;

        r = bare_open(o, &b);
        if (r >= 0)
                r = measure_ticks(o, &b, a, res);
        bare_close(&b);
        if (r >= 0)
                r = measure_rescans(o, a, res);
        return r;
}

static void result_finish(Result *res) {
        struct rusage ru;

        if (getrusage(RUSAGE_SELF, &ru) == 0)
                res->maxrss_kib = ru.ru_maxrss;
}

/* ---- children ---- */

/* Runs fn in a child; its Result comes back through a pipe. */
static int run_child(int (*fn)(const Args *a, size_t n, Result *res), const Args *a, size_t n, Result *ret) {
        int p[2], status;
        pid_t pid;
        ssize_t got;

        if (pipe2(p, O_CLOEXEC) < 0)
                return negative_errno();
        fflush(stdout);
        pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                Result res = { .made = n };

                close(p[0]);
                (void) signal(SIGINT, SIG_DFL);
                res.error = fn(a, n, &res);
                result_finish(&res);
                _exit(write(p[1], &res, sizeof(res)) == (ssize_t) sizeof(res) ? 0 : 1);
        }
        close(p[1]);
        got = read(p[0], ret, sizeof(*ret));
        close(p[0]);
        if (waitpid(pid, &status, 0) < 0)
                return negative_errno();
        if (got != (ssize_t) sizeof(*ret))
                return -ECHILD;
        return ret->error;
}

/* Fills the fixture tree in a child, so that the measuring child starts small. */
static int child_build(const Args *a, size_t n, Result *res) {
        int r = plan_tree("", n, fixture_fill, a->fixture);

        char stat[96];

        if (r >= 0 && a->no_io_stat)
                r = plan_tree("", n, fixture_drop_io_stat, a->fixture);
        fixture_copy_host_proc(a->fixture);
        /* The root's count of descendants, as the kernel keeps it: a rescan walks only when it changes. */
        snprintf(stat, sizeof(stat), "nr_descendants %zu\nnr_dying_descendants 0\n", n);
        if (r >= 0)
                r = fixture_write(a->fixture, "/", "cgroup.stat", stat);
        return r < 0 ? r : 0;
}

static int child_fixture(const Args *a, size_t n, Result *res) {
        return measure(a, a->fixture->dir, a->fixture->proc_dir, a->fixture->sys_dir, res);
}

static int child_real(const Args *a, size_t n, Result *res) {
        int r = measure(a, a->cgroup_root, a->proc_root, a->sys_root, res);

        if (n == 0)
                res->made = res->seen; /* nothing created: the tree as found */
        return r;
}

/* ---- real trees: --create ---- */

typedef struct Created {
        int root_fd;
        char (*paths)[PATH_LEN];
        size_t n;
        bool warned;
} Created;

static const char *rel(const char *path) {
        while (*path == '/')
                path++;
        return *path ? path : ".";
}

/* mkdir below the root, with memory and io enabled in the parent first. */
static int create_one(const char *path, size_t index, void *userdata) {
        Created *c = userdata;
        char parent[PATH_LEN], ctl[PATH_LEN + 32];
        char *slash;
        _cleanup_close_ int fd = -1;

        snprintf(parent, sizeof(parent), "%s", path);
        slash = strrchr(parent, '/');
        if (slash)
                *slash = '\0';
        snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", rel(parent));
        fd = openat(c->root_fd, ctl, O_WRONLY | O_CLOEXEC);
        if ((fd < 0 || write(fd, "+memory +io", 11) != 11) && !c->warned) {
                fprintf(stderr, "bench-observer: cannot enable memory and io in %s: %m "
                        "(the new cgroups may lack their files)\n", ctl);
                c->warned = true;
        }
        if (mkdirat(c->root_fd, rel(path), 0755) < 0)
                return negative_errno();
        snprintf(c->paths[c->n++], PATH_LEN, "%s", path);
        return 0;
}

static void created_remove(Created *c) {
        for (size_t i = c->n; i > 0; i--)
                if (unlinkat(c->root_fd, rel(c->paths[i - 1]), AT_REMOVEDIR) < 0)
                        fprintf(stderr, "bench-observer: cannot remove %s: %m\n", c->paths[i - 1]);
        closep(&c->root_fd);
        free(c->paths);
        *c = (Created) { .root_fd = -1 };
}

static int created_make(const Args *a, Created *c) {
        int r;

        *c = (Created) { .root_fd = open(a->cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
        if (c->root_fd < 0)
                return negative_errno();
        c->paths = calloc(a->create, PATH_LEN);
        if (!c->paths)
                return -ENOMEM;
        r = plan_tree("/mdreclaim-bench", a->create, create_one, c);
        if (r < 0)
                created_remove(c);
        return r;
}

/* ---- what the kernel charges, probed on this host ---- */

#define PROBE_FILES 1000

/* The first cgroup2 mount, or NULL. */
static char *cgroup2_mount(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mounts", "re");
        char dev[256], dir[PATH_LEN], type[64];

        if (!f)
                return NULL;
        while (fscanf(f, "%255s %511s %63s %*[^\n]", dev, dir, type) == 3)
                if (streq(type, "cgroup2"))
                        return strdup(dir);
        return NULL;
}

/* Unreclaimable slab, in KiB per file, held by a cgroupfs file kept open and
 * read once (the daemon keeps each file it rereads open): opened PROBE_FILES
 * times, system-wide SUnreclaim before and after. */
static double probe_kept_file_kib(const char *dir) {
        char path[PATH_LEN + 16], buf[4096];
        int fds[PROBE_FILES];
        long before = meminfo_kib("SUnreclaim"), after;
        size_t n = 0;

        snprintf(path, sizeof(path), "%s/cgroup.stat", dir);
        for (; n < PROBE_FILES; n++) {
                fds[n] = open(path, O_RDONLY | O_CLOEXEC);
                if (fds[n] < 0 || pread(fds[n], buf, sizeof(buf), 0) < 0)
                        break;
        }
        after = meminfo_kib("SUnreclaim");
        for (size_t i = 0; i < n; i++)
                close(fds[i]);
        if (n < PROBE_FILES)
                return -1.0;
        return (double) (after - before) / PROBE_FILES;
}

/* CPU per pread of a kernel-generated file (PSI formatting, as in memory.pressure). */
static double probe_pread_us(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        char buf[4096];
        uint64_t t0;

        if (fd < 0)
                return -1.0;
        t0 = cpu_ns();
        for (unsigned i = 0; i < 10000; i++)
                if (pread(fd, buf, sizeof(buf), 0) < 0)
                        return -1.0;
        return (double) (cpu_ns() - t0) / 1000.0 / 10000.0;
}

static void print_kernel_probe(const Args *a) {
        _cleanup_free_ char *found = a->cgroup_root ? NULL : cgroup2_mount();
        const char *dir = a->cgroup_root ?: found;
        double kib = dir ? probe_kept_file_kib(dir) : -1.0;

        printf("# kernel: pread of /proc/pressure/memory %.2f us;", probe_pread_us("/proc/pressure/memory"));
        if (kib >= 0)
                printf(" a cgroupfs file kept open and read once holds %.1f KiB of unreclaimable slab"
                       " (%d x %s/cgroup.stat)\n", kib, PROBE_FILES, dir);
        else
                printf(" no cgroup2 mount to probe the kernel memory of kept-open files\n");
}

/* ---- output ---- */

static void print_header(int argc, char **argv, const Args *a, uint64_t nofile) {
        struct utsname u;
        struct statfs sfs;
        const char *where = a->cgroup_root ? a->cgroup_root : getenv("TMPDIR") ?: "/tmp";

        printf("# command:");
        for (int i = 0; i < argc; i++)
                printf(" %s", argv[i]);
        printf("\n");
        if (uname(&u) == 0)
                printf("# machine: %s %s %s, nproc %ld\n", u.sysname, u.release, u.machine,
                       sysconf(_SC_NPROCESSORS_ONLN));
        printf("# tree: %s %s (filesystem magic 0x%lx), %u timed ticks, %u timed rescans, RLIMIT_NOFILE %" PRIu64 "\n",
               a->cgroup_root ? "real tree" : "fixture trees under", where,
               statfs(where, &sfs) == 0 ? (unsigned long) sfs.f_type : 0UL, a->ticks, a->rescans, nofile);
        printf("# CPU is CLOCK_PROCESS_CPUTIME_ID (user+sys). 'us/cg' is per cgroup per tick (or per rescan).\n");
        printf("# %-7s %6s %5s | %7s %7s %5s | %7s %7s | %6s | %7s %6s %6s %6s %6s %7s | %6s %7s\n",
               "cgroups", "seen", "miss",
               "daemon", "bare", "ratio",
               "rescan", "start",
               "fds/cg",
               "heap", "base", "RSS", "peak", "maxrss", "kslab",
               "1Hz", "+rescan");
        printf("# %-7s %6s %5s | %7s %7s %5s | %7s %7s | %6s | %7s %6s %6s %6s %6s %7s | %6s %7s\n",
               "", "", "",
               "us/cg", "us/cg", "",
               "us/cg", "us/cg",
               "",
               "KiB", "KiB", "KiB", "KiB", "KiB", "KiB",
               "%core", "%core");
}

static double per_cg_us(uint64_t ns, unsigned times, size_t n) {
        return times && n ? (double) ns / 1000.0 / times / (double) n : 0.0;
}

static double tick_core_percent(const Result *r, double interval_s) {
        return r->ticks ? (double) r->tick_cpu_ns / r->ticks / 1e9 / interval_s * 100.0 : 0.0;
}

static double rescan_core_percent(const Result *r, double interval_s) {
        return r->rescans ? (double) r->rescan_cpu_ns / r->rescans / 1e9 / interval_s * 100.0 : 0.0;
}

static double result_ratio(const Result *r) {
        return r->bare_cpu_ns ? (double) r->tick_cpu_ns / (double) r->bare_cpu_ns : 0.0;
}

static unsigned cold_every_printed = 30;

static void print_row(const Result *r) {
        double rescan_s = (double) RESCAN_INTERVAL_DEFAULT_USEC / 1e6;

        if (r->out_of_fds) {
                printf("  %-7zu %6zu %5zu | out of fds (RLIMIT_NOFILE): the observer skipped cgroups or files, "
                       "no figures\n", r->made, r->seen, r->incomplete);
                return;
        }

        printf("  %-7zu %6zu %5zu | %7.2f %7.2f %5.2f | %7.2f %7.1f | %6.1f | %7zu %6ld %6ld %6ld %6ld %7ld | %6.2f %7.2f\n",
               r->made, r->seen, r->incomplete,
               per_cg_us(r->tick_cpu_ns, r->ticks, r->governed), per_cg_us(r->bare_cpu_ns, r->ticks, r->governed),
               result_ratio(r),
               per_cg_us(r->rescan_cpu_ns, r->rescans, r->seen), per_cg_us(r->start_cpu_ns, 1, r->seen),
               r->seen ? (double) r->fds / (double) r->seen : 0.0,
               r->heap_bytes / 1024, r->rss_base_kib, r->rss_kib, r->hwm_kib, r->maxrss_kib, r->kmem_kib,
               tick_core_percent(r, 1.0), tick_core_percent(r, 1.0) + rescan_core_percent(r, rescan_s));
        if (r->governed != r->seen)
                printf("  (%zu governed, sampled every tick: 'us/cg' of daemon and bare is per governed cgroup; "
                       "the other %zu every %u ticks, their cost included)\n", r->governed, r->seen - r->governed,
                       cold_every_printed);
        if (r->rescans)
                printf("  (%" PRIu64 " of the %u timed rescans walked the tree)\n", r->walks - 1, r->rescans);
        if (r->heap_growth != 0)
                printf("  ! the heap changed by %lld bytes over %u ticks\n", r->heap_growth, r->ticks);
        if (r->incomplete > 0)
                printf("  ! %zu cgroups lack a per-tick file (a controller not enabled where they are)\n",
                       r->incomplete);
}

static const char *verdict(bool ok) {
        return ok ? "met" : "MISSED";
}

static void print_targets(const Result *res, size_t n) {
        printf("# targets:\n");
        for (size_t i = 0; i < n; i++) {
                if (res[i].out_of_fds) {
                        printf("#   %zu cgroups: not judged, the process ran out of fds\n", res[i].made);
                        continue;
                }
                if (res[i].governed != res[i].seen) {
                        printf("#   ratio at %zu cgroups: not judged, the daemon's column carries the slow samples "
                               "(run without --governed for the floor)\n", res[i].made);
                        continue;
                }
                printf("#   ratio <= %.1f at %zu cgroups: %.2f, %s\n", TARGET_RATIO, res[i].made,
                       result_ratio(&res[i]), verdict(result_ratio(&res[i]) <= TARGET_RATIO));
        }
        for (size_t i = 0; i < n; i++) {
                if (res[i].out_of_fds)
                        continue;
                if (res[i].made == TARGET_RSS_CGROUPS)
                        printf("#   peak RSS <= %d KiB at %d cgroups: %ld KiB, %s\n", TARGET_RSS_KIB,
                               TARGET_RSS_CGROUPS, res[i].hwm_kib, verdict(res[i].hwm_kib <= TARGET_RSS_KIB));
                if (res[i].made == TARGET_CORE_CGROUPS)
                        printf("#   %d cgroups at 1 Hz < %.0f %% of a core: %.2f %% (%.2f %% with a rescan every "
                               "%" PRIu64 " s), %s\n", TARGET_CORE_CGROUPS, TARGET_CORE_PERCENT,
                               tick_core_percent(&res[i], 1.0),
                               tick_core_percent(&res[i], 1.0) +
                                       rescan_core_percent(&res[i], (double) RESCAN_INTERVAL_DEFAULT_USEC / 1e6),
                               RESCAN_INTERVAL_DEFAULT_USEC / USEC_PER_SEC,
                               verdict(tick_core_percent(&res[i], 1.0) < TARGET_CORE_PERCENT));
        }
}

/* ---- arguments ---- */

static void help(void) {
        printf("bench-observer [OPTIONS]\n\n"
               "Measures the daemon's per-tick observation cost against a bare pread loop.\n\n"
               "  --sizes N,N,...      fixture tree sizes (default 100,1000,10000)\n"
               "  --ticks N            timed ticks per size (default 50)\n"
               "  --rescans N          timed rescans per size (default 10)\n"
               "  --cgroup-root DIR    measure the real tree at DIR instead of fixtures\n"
               "  --proc-root DIR      /proc for the host files (default /proc with --cgroup-root)\n"
               "  --sys-root DIR       /sys (default /sys with --cgroup-root)\n"
               "  --create N           with --cgroup-root: mkdir N cgroups under mdreclaim-bench/\n"
               "                       first (parents included) and remove them afterwards\n"
               "  --nofile N           set RLIMIT_NOFILE to N instead of raising it as needed\n"
               "  --no-io-stat         fixture cgroups lack io.stat, as where the io controller\n"
               "                       is not enabled (systemd without IOAccounting=)\n"
               "  --governed N         only N cgroups are governed (sampled every tick from kept\n"
               "                       files); the rest are sampled every --cold-every ticks\n"
               "  --cold-every K       with --governed: ticks between two samples of the rest (30)\n");
}

static int parse_count(const char *s, uint64_t max, uint64_t *ret) {
        char *end;
        unsigned long long v;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end || v == 0 || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_sizes(const char *s, Args *a) {
        _cleanup_free_ char *copy = strdup(s);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        a->n_sizes = 0;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                uint64_t v;
                if (a->n_sizes >= SIZES_MAX || parse_count(t, 1000000, &v) < 0)
                        return -EINVAL;
                a->sizes[a->n_sizes++] = (size_t) v;
        }
        return a->n_sizes ? 0 : -EINVAL;
}

static int parse_args(int argc, char **argv, Args *a) {
        enum { ARG_SIZES = 0x100, ARG_TICKS, ARG_RESCANS, ARG_CGROUP_ROOT, ARG_PROC_ROOT, ARG_SYS_ROOT,
               ARG_CREATE, ARG_NOFILE, ARG_NO_IO_STAT, ARG_GOVERNED, ARG_COLD_EVERY };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "sizes", required_argument, NULL, ARG_SIZES },
                { "ticks", required_argument, NULL, ARG_TICKS },
                { "rescans", required_argument, NULL, ARG_RESCANS },
                { "cgroup-root", required_argument, NULL, ARG_CGROUP_ROOT },
                { "proc-root", required_argument, NULL, ARG_PROC_ROOT },
                { "sys-root", required_argument, NULL, ARG_SYS_ROOT },
                { "create", required_argument, NULL, ARG_CREATE },
                { "nofile", required_argument, NULL, ARG_NOFILE },
                { "no-io-stat", no_argument, NULL, ARG_NO_IO_STAT },
                { "governed", required_argument, NULL, ARG_GOVERNED },
                { "cold-every", required_argument, NULL, ARG_COLD_EVERY },
                {}
        };
        uint64_t v;
        int c;

        *a = (Args) { .sizes = { 100, 1000, 10000 }, .n_sizes = 3, .ticks = 50, .rescans = 10, .cold_every = 30 };
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                int r = 0;

                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_SIZES:
                        r = parse_sizes(optarg, a);
                        break;
                case ARG_TICKS:
                        r = parse_count(optarg, 1000000, &v);
                        a->ticks = (unsigned) v;
                        break;
                case ARG_RESCANS:
                        r = parse_count(optarg, 1000000, &v);
                        a->rescans = (unsigned) v;
                        break;
                case ARG_GOVERNED:
                        r = parse_count(optarg, 1000000, &v);
                        a->governed = (size_t) v;
                        break;
                case ARG_COLD_EVERY:
                        r = parse_count(optarg, 3600, &v);
                        a->cold_every = (unsigned) v;
                        cold_every_printed = a->cold_every;
                        break;
                case ARG_CGROUP_ROOT:
                        a->cgroup_root = optarg;
                        break;
                case ARG_PROC_ROOT:
                        a->proc_root = optarg;
                        break;
                case ARG_SYS_ROOT:
                        a->sys_root = optarg;
                        break;
                case ARG_CREATE:
                        r = parse_count(optarg, 1000000, &v);
                        a->create = (size_t) v;
                        break;
                case ARG_NOFILE:
                        r = parse_count(optarg, UINT32_MAX, &a->nofile);
                        break;
                case ARG_NO_IO_STAT:
                        a->no_io_stat = true;
                        break;
                default:
                        return -EINVAL;
                }
                if (r < 0) {
                        fprintf(stderr, "bench-observer: bad value '%s'\n", optarg);
                        return -EINVAL;
                }
        }
        if (optind < argc || (a->create && !a->cgroup_root)) {
                fprintf(stderr, "bench-observer: %s\n",
                        optind < argc ? "unexpected arguments" : "--create needs --cgroup-root");
                return -EINVAL;
        }
        if (a->cgroup_root) {
                a->proc_root = a->proc_root ?: "/proc";
                a->sys_root = a->sys_root ?: "/sys";
        }
        return 1;
}

/* The observer keeps up to 11 fds per cgroup, the bare loop 5 more. */
static uint64_t raise_nofile(const Args *a) {
        size_t most = a->create;
        struct rlimit rl;
        uint64_t want;

        for (size_t i = 0; i < a->n_sizes; i++)
                most = MAX(most, a->sizes[i]);
        if (a->cgroup_root)
                most += 20000; /* the tree's own cgroups: unknown until scanned */
        want = a->nofile ?: (uint64_t) most * 16 + 256;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 0;
        if (a->nofile || want > rl.rlim_cur) {
                rl.rlim_cur = want;
                if (want > rl.rlim_max)
                        rl.rlim_max = want; /* needs CAP_SYS_RESOURCE */
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                        rl.rlim_cur = rl.rlim_max;
                        (void) setrlimit(RLIMIT_NOFILE, &rl);
                }
        }
        return getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (uint64_t) rl.rlim_cur : 0;
}

/* ---- main ---- */

static int run_fixture(Args *a, size_t n, Result *ret) {
        Result built = {};
        int r = fixture_new(&a->fixture);

        if (r < 0)
                return r;
        r = run_child(child_build, a, n, &built);
        if (r >= 0)
                r = run_child(child_fixture, a, n, ret);
        fixture_free(a->fixture);
        a->fixture = NULL;
        return r;
}

static int run_fixtures(Args *a, Result *res) {
        for (size_t i = 0; i < a->n_sizes; i++) {
                int r = run_fixture(a, a->sizes[i], &res[i]);

                if (r < 0) {
                        fprintf(stderr, "bench-observer: %zu cgroups: %s\n", a->sizes[i], strerror(-r));
                        return r;
                }
                print_row(&res[i]);
                fflush(stdout);
        }
        return 0;
}

static int run_real(const Args *a, Result *res) {
        Created c = { .root_fd = -1 };
        int r;

        if (a->create) {
                r = created_make(a, &c);
                if (r < 0) {
                        fprintf(stderr, "bench-observer: creating cgroups under %s failed: %s\n",
                                a->cgroup_root, strerror(-r));
                        return r;
                }
        }
        r = run_child(child_real, a, a->create, res);
        if (a->create)
                created_remove(&c);
        if (r < 0) {
                fprintf(stderr, "bench-observer: %s: %s\n", a->cgroup_root, strerror(-r));
                return r;
        }
        print_row(res);
        return 0;
}

int main(int argc, char **argv) {
        Result res[SIZES_MAX] = {};
        Args a;
        uint64_t nofile;
        int r;

        r = parse_args(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        log_set_max_level(LOG_WARNING);
        nofile = raise_nofile(&a);
        /* ^C ends the child; the parent goes on to remove what it created. */
        (void) signal(SIGINT, SIG_IGN);
        print_header(argc, argv, &a, nofile);
        print_kernel_probe(&a);
        if (a.cgroup_root) {
                r = run_real(&a, &res[0]);
                if (r >= 0)
                        print_targets(res, 1);
        } else {
                r = run_fixtures(&a, res);
                if (r >= 0)
                        print_targets(res, a.n_sizes);
        }
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
