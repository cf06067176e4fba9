/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * devstat-replay: the daemon's device sampling (daemon/sampling/devstat.c)
 * replayed over a trace a VM recorded (tests/vm/scenarios/bench-capacity.sh):
 * what capacity it would have learnt, tick by tick, against what the device
 * sustained while saturated. A benchmark run by hand, not a test:
 *
 *   devstat-replay [--interval SECONDS] TRACE...
 *
 * A trace line is the guest's uptime, the device's stat fields and its
 * inflight pair; "#" lines are comments. Each tick (default 1 s, the shipped
 * Interval=) takes the first sample at or after it, writes it where a fake
 * /sys has the device, and calls devstat_sample(), as the daemon's observer
 * does.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devstat.h"
#include "hostfs.h"
#include "util.h"

#define DEV_MAJOR 8
#define DEV_MINOR 0

typedef struct Sample {
        double t;
        unsigned long long f[11];
        unsigned long long in_r, in_w;
} Sample;

static int put(const char *dir, const char *name, const char *text) {
        char p[512];
        FILE *f;

        snprintf(p, sizeof(p), "%s/sys/dev/block/%d:%d/%s", dir, DEV_MAJOR, DEV_MINOR, name);
        if (!(f = fopen(p, "w")))
                return -errno;
        fputs(text, f);
        return fclose(f) == 0 ? 0 : -errno;
}

static int load(const char *path, Sample **ret, size_t *ret_n) {
        FILE *f = fopen(path, "r");
        Sample *s = NULL;
        size_t n = 0, cap = 0;
        char line[1024];

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                Sample x = {};
                unsigned long long v[20];
                int k = 0;
                char *p = line, *end;

                if (line[0] == '#')
                        continue;
                x.t = strtod(p, &end);
                if (end == p)
                        continue;
                for (p = end; k < 20; p = end) {
                        v[k] = strtoull(p, &end, 10);
                        if (end == p)
                                break;
                        k++;
                }
                if (k < 13)     /* 11 stat fields at least, then inflight's two */
                        continue;
                memcpy(x.f, v, sizeof(x.f));
                x.in_r = v[k - 2];
                x.in_w = v[k - 1];
                if (n == cap) {
                        Sample *m = realloc(s, (cap = cap ? cap * 2 : 1024) * sizeof(*s));
                        if (!m) {
                                free(s);
                                fclose(f);
                                return -ENOMEM;
                        }
                        s = m;
                }
                s[n++] = x;
        }
        fclose(f);
        *ret = s;
        *ret_n = n;
        return 0;
}

/* What the device wrote over the samples where it was busy 90 % of the time or more, in bytes/s. */
static double sustained(const Sample *s, size_t n) {
        double bytes = 0, secs = 0;

        for (size_t i = 1; i < n; i++) {
                double dt = s[i].t - s[i - 1].t;
                double busy = (double) (s[i].f[9] - s[i - 1].f[9]) / 1000.0;

                if (dt > 0 && busy >= 0.9 * dt) {
                        bytes += (double) (s[i].f[6] - s[i - 1].f[6]) * 512;
                        secs += dt;
                }
        }
        return secs > 0 ? bytes / secs : 0;
}

static int replay(const char *path, double interval) {
        char dir[] = "/tmp/devstat-replay-XXXXXX", p[512], text[512];
        _cleanup_free_ Sample *s = NULL;
        HostRoot *h = NULL;
        DevStatTable t = {};
        size_t n = 0, i = 0;
        double next;
        int r;

        if ((r = load(path, &s, &n)) < 0 || n < 2) {
                fprintf(stderr, "%s: %s\n", path, r < 0 ? strerror(-r) : "fewer than two samples");
                return -EINVAL;
        }
        if (!mkdtemp(dir))
                return -errno;
        snprintf(p, sizeof(p), "%s/proc", dir);
        mkdir(p, 0755);
        snprintf(p, sizeof(p), "mkdir -p '%s/sys/dev/block/%d:%d'", dir, DEV_MAJOR, DEV_MINOR);
        if (system(p) != 0)
                return -EIO;
        snprintf(p, sizeof(p), "%s/proc", dir);
        snprintf(text, sizeof(text), "%s/sys", dir);
        if ((r = host_root_open(p, text, &h)) < 0)
                return r;

        printf("# %s: %zu samples over %.0f s; sustained while saturated %.2f MB/s\n", path, n,
               s[n - 1].t - s[0].t, sustained(s, n) / 1e6);
        printf("%8s %10s %6s %12s\n", "t", "rate MB/s", "busy", "capacity MB/s");
        for (next = s[0].t; i < n; next += interval) {
                while (i < n && s[i].t < next)
                        i++;
                if (i >= n)
                        break;
                snprintf(text, sizeof(text), "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu\n",
                         s[i].f[0], s[i].f[1], s[i].f[2], s[i].f[3], s[i].f[4], s[i].f[5], s[i].f[6], s[i].f[7],
                         s[i].f[8], s[i].f[9], s[i].f[10]);
                put(dir, "stat", text);
                snprintf(text, sizeof(text), "%8llu %8llu\n", s[i].in_r, s[i].in_w);
                put(dir, "inflight", text);
                devstat_want(&t, DEV_MAJOR, DEV_MINOR);
                devstat_sample(h, &t, (uint64_t) ((s[i].t - s[0].t) * 1e6) + 1000000);
                const DevStat *d = devstat_find(&t, DEV_MAJOR, DEV_MINOR);
                printf("%8.2f %10.2f %5u%% %12.2f\n", s[i].t - s[0].t, d->write_rate / 1e6, d->busy_ppm / 10000,
                       d->capacity / 1e6);
        }
        devstat_clear(&t);
        host_root_free(h);
        snprintf(p, sizeof(p), "rm -rf '%s'", dir);
        return system(p) == 0 ? 0 : -EIO;
}

int main(int argc, char **argv) {
        double interval = 1.0;
        int c, rc = 0;

        static const struct option opts[] = { { "interval", required_argument, NULL, 'i' }, {} };
        while ((c = getopt_long(argc, argv, "i:", opts, NULL)) >= 0) {
                if (c != 'i' || (interval = strtod(optarg, NULL)) <= 0.05) {
                        fprintf(stderr, "usage: devstat-replay [--interval SECONDS (> 0.05)] TRACE...\n");
                        return 2;
                }
        }
        if (optind >= argc) {
                fprintf(stderr, "usage: devstat-replay [--interval SECONDS] TRACE...\n");
                return 2;
        }
        for (; optind < argc; optind++)
                rc |= replay(argv[optind], interval) < 0;
        return rc;
}
