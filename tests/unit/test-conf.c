/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of configuration loading: good files, precedence of the three
 * directories, drop-ins, masking, and every kind of error with its file:line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "conf.h"
#include "conf-test.h"
#include "log.h"
#include "util.h"

/* tmp_root/rel written with `content`, directories made; its full path (a static buffer). */
static const char *put(const char *rel, const char *content) {
        tmp_root_put(rel, content);
        return tmp_root_path(rel);
}

/* True if some diagnostic contains both strings. */
static bool diag_has(const ConfDiag *d, const char *a, const char *b) {
        for (size_t i = 0; i < d->n_messages; i++)
                if (strstr(d->messages[i], a) && (!b || strstr(d->messages[i], b)))
                        return true;
        return false;
}

static void dump(const ConfDiag *d) {
        for (size_t i = 0; i < d->n_messages; i++)
                fprintf(stderr, "  diag: %s\n", d->messages[i]);
}

#define ASSERT_DIAG(d, a, b) do { if (!diag_has((d), (a), (b))) { dump(d); fail_msg("no diagnostic with '%s' and '%s'", (a), (b) ? (b) : ""); } } while (0)

static Config *load_ok(void) {
        ConfDiag diag = {};
        Config *c = NULL;
        int r = config_load(tmp_root, &c, &diag);

        if (r < 0)
                dump(&diag);
        assert_int_equal(r, 0);
        assert_int_equal(conf_diag_count(&diag), 0);
        conf_diag_clear(&diag);
        return c;
}

static void load_fail(ConfDiag *diag) {
        Config *c = NULL;

        assert_int_equal(config_load(tmp_root, &c, diag), -EINVAL);
        assert_null(c);
}

static void test_defaults(void **state) {
        Config *c = load_ok();

        assert_int_equal(c->daemon.interval_usec, USEC_PER_SEC);
        assert_int_equal(c->daemon.log_level, LOG_INFO);
        assert_null(c->daemon.cgroup_root);
        assert_int_equal(c->n_policies, 0);
        assert_int_equal(c->n_files, 0);
        config_free(c);
}

static void test_good_files(void **state) {
        Config *c;
        const Policy *p;

        put("etc/mdreclaim/mdreclaimd.conf",
            "# comment\n; comment\n[Daemon]\nInterval=500ms\nLogLevel=debug ; why not\n"
            "CgroupRoot=/sys/fs/cgroup\n[WritePoint]\n[AllocationPoint]\n");
        put("etc/mdreclaim/policies.d/web.conf",
            "[Policy]\nMatch=nginx.service *.web.slice\nMatch=/system.slice/php.service\n"
            "Mode=enforce\nPriority=80\nProtect=yes\nDirtyBackground=10%\nDirtyLimit=20%\n"
            "WriteRateMin=5%\nMetadataCacheMax=512M\nPressureTarget=0.1%\nReclaimStepMax=8M\n"
            "CacheFloor=1G\n");
        put("usr/lib/mdreclaim/policies.d/batch.conf", "[Policy]\nMatch=batch.slice\n");
        c = load_ok();
        assert_int_equal(c->daemon.interval_usec, 500 * USEC_PER_MSEC);
        assert_int_equal(c->daemon.log_level, LOG_DEBUG);
        assert_string_equal(c->daemon.cgroup_root, "/sys/fs/cgroup");
        assert_int_equal(c->n_policies, 2);

        p = config_find_policy(c, "/system.slice/php.service", "php.service");
        assert_non_null(p);
        assert_string_equal(p->name, "web");
        assert_int_equal(p->n_matches, 3);
        assert_int_equal(p->mode, POLICY_MODE_ENFORCE);
        assert_int_equal(p->mode_line, 4);
        assert_int_equal(p->priority, 80);
        assert_true(p->protect);
        assert_true(p->dirty_background.is_percent);
        assert_int_equal(p->dirty_background.ppm, 100000);
        assert_int_equal(p->dirty_limit.ppm, 200000);
        assert_true(p->write_rate_min.set && p->write_rate_min.is_percent);
        assert_int_equal(p->write_rate_min.ppm, 50000);
        assert_int_equal(p->metadata_cache_max, UINT64_C(512) << 20);
        assert_int_equal(p->pressure_target_ppm, 1000);
        assert_int_equal(p->reclaim_step_max, UINT64_C(8) << 20);
        assert_int_equal(p->cache_floor, UINT64_C(1) << 30);

        /* Defaults of a policy that sets only Match=. */
        p = config_find_policy(c, "/batch.slice", "batch.slice");
        assert_non_null(p);
        assert_int_equal(p->mode, POLICY_MODE_OBSERVE);
        assert_int_equal(p->mode_line, 0);
        assert_int_equal(p->priority, POLICY_PRIORITY_DEFAULT);
        assert_false(p->protect);
        assert_false(p->dirty_limit.set);
        assert_true(p->metadata_cache_max == UINT64_MAX);
        config_free(c);
}

static void test_precedence_and_dropins(void **state) {
        Config *c;

        put("usr/lib/mdreclaim/mdreclaimd.conf", "[Daemon]\nInterval=5s\nLogLevel=err\n");
        put("etc/mdreclaim/mdreclaimd.conf", "[Daemon]\nInterval=2s\n");
        /* /etc's main file masks /usr/lib's whole: LogLevel= from /usr/lib is not read. */
        c = load_ok();
        assert_int_equal(c->daemon.interval_usec, 2 * USEC_PER_SEC);
        assert_int_equal(c->daemon.log_level, LOG_INFO);
        assert_int_equal(c->n_files, 1);
        config_free(c);

        put("usr/lib/mdreclaim/mdreclaimd.conf.d/10-level.conf", "[Daemon]\nLogLevel=debug\n");
        put("etc/mdreclaim/mdreclaimd.conf.d/10-level.conf", "[Daemon]\nLogLevel=notice\n");
        put("run/mdreclaim/mdreclaimd.conf.d/20-interval.conf", "[Daemon]\nInterval=3s\n");
        c = load_ok();
        assert_int_equal(c->daemon.log_level, LOG_NOTICE);          /* /etc's 10-level.conf masks /usr/lib's */
        assert_int_equal(c->daemon.interval_usec, 3 * USEC_PER_SEC); /* drop-ins override the main file */
        assert_int_equal(c->n_files, 3);
        assert_non_null(strstr(c->files[1], "etc/mdreclaim/mdreclaimd.conf.d/10-level.conf"));
        assert_non_null(strstr(c->files[2], "run/mdreclaim/mdreclaimd.conf.d/20-interval.conf"));
        config_free(c);
}

static void test_policy_masking(void **state) {
        Config *c;
        char link[600];

        put("usr/lib/mdreclaim/policies.d/web.conf", "[Policy]\nMatch=nginx.service\nPriority=10\n");
        put("etc/mdreclaim/policies.d/web.conf", "[Policy]\nMatch=nginx.service\nPriority=90\n");
        put("usr/lib/mdreclaim/policies.d/old.conf", "[Policy]\nMatch=old.service\n");
        c = load_ok();
        assert_int_equal(c->n_policies, 2);
        assert_int_equal(config_find_policy(c, "/x/nginx.service", "nginx.service")->priority, 90);
        config_free(c);

        /* A link to /dev/null in /etc masks the shipped policy. */
        put("etc/mdreclaim/policies.d/.keep", "");
        snprintf(link, sizeof(link), "%s/etc/mdreclaim/policies.d/old.conf", tmp_root);
        assert_int_equal(symlink("/dev/null", link), 0);
        c = load_ok();
        assert_int_equal(c->n_policies, 1);
        assert_null(config_find_policy(c, "/old.service", "old.service"));
        config_free(c);
}

static void test_metrics_section(void **state) {
        ConfDiag d = {};
        Config *c = load_ok();

        assert_int_equal(c->daemon.metrics.top_cgroups, 20);
        assert_int_equal(c->daemon.metrics.top_by, METRICS_TOP_MEMORY);
        assert_null(c->daemon.metrics.textfile_dir);
        assert_int_equal(c->daemon.metrics.textfile_interval_usec, 15 * USEC_PER_SEC);
        config_free(c);

        put("etc/mdreclaim/mdreclaimd.conf", "[Metrics]\nTopCgroups=0\nTopBy=io_stall\n"
            "TextfileDirectory=/var/lib/prometheus/node-exporter\nTextfileInterval=1min\n");
        c = load_ok();
        assert_int_equal(c->daemon.metrics.top_cgroups, 0);
        assert_int_equal(c->daemon.metrics.top_by, METRICS_TOP_IO_STALL);
        assert_string_equal(c->daemon.metrics.textfile_dir, "/var/lib/prometheus/node-exporter");
        assert_int_equal(c->daemon.metrics.textfile_interval_usec, 60 * USEC_PER_SEC);
        config_free(c);

        /* A drop-in's empty TextfileDirectory= turns the textfile off again. */
        put("etc/mdreclaim/mdreclaimd.conf.d/off.conf", "[Metrics]\nTextfileDirectory=\n");
        c = load_ok();
        assert_null(c->daemon.metrics.textfile_dir);
        config_free(c);

        put("etc/mdreclaim/mdreclaimd.conf.d/off.conf",
            "[Metrics]\nTopCgroups=1001\nTopBy=cpu\nTextfileDirectory=relative\nTextfileInterval=500ms\n");
        load_fail(&d);
        ASSERT_DIAG(&d, "off.conf:2:", "TopCgroups=: expected a number of cgroups from 0 to 1000");
        ASSERT_DIAG(&d, "off.conf:3:", "TopBy=: expected memory, dirty, slab or io_stall");
        ASSERT_DIAG(&d, "off.conf:4:", "TextfileDirectory=: expected an absolute path");
        ASSERT_DIAG(&d, "off.conf:5:", "TextfileInterval=: expected a duration between 1s and 1h");
        conf_diag_clear(&d);
}

static void test_latency_target(void **state) {
        ConfDiag d = {};
        Config *c = load_ok();

        assert_int_equal(c->daemon.io_latency_target_usec, 0);         /* unset: by filesystem, else off */
        config_free(c);

        put("etc/mdreclaim/mdreclaimd.conf", "[WritePoint]\nIOLatencyTarget=20ms\n");
        put("etc/mdreclaim/policies.d/db.conf", "[Policy]\nMatch=db.service\nProtect=yes\nIOLatencyTarget=1.5ms\n");
        c = load_ok();
        assert_int_equal(c->daemon.io_latency_target_usec, 20000);
        assert_int_equal(c->n_policies, 1);
        assert_int_equal(c->policies[0]->io_latency_target_usec, 1500);
        config_free(c);

        /* Off, kept apart from unset: it holds against the filesystems' targets too. */
        put("etc/mdreclaim/mdreclaimd.conf.d/off.conf", "[WritePoint]\nIOLatencyTarget=off\n");
        c = load_ok();
        assert_int_equal(c->daemon.io_latency_target_usec, POLICY_LATENCY_OFF);
        config_free(c);

        /* A policy's off holds against the daemon's target. */
        put("etc/mdreclaim/mdreclaimd.conf.d/off.conf", "[WritePoint]\nIOLatencyTarget=20ms\n");
        put("etc/mdreclaim/policies.d/db.conf", "[Policy]\nMatch=db.service\nIOLatencyTarget=off\n");
        c = load_ok();
        assert_int_equal(c->policies[0]->io_latency_target_usec, POLICY_LATENCY_OFF);
        config_free(c);

        put("etc/mdreclaim/mdreclaimd.conf.d/off.conf", "[WritePoint]\nIOLatencyTarget=500us\n");
        put("etc/mdreclaim/policies.d/db.conf", "[Policy]\nMatch=db.service\nIOLatencyTarget=11s\n");
        load_fail(&d);
        ASSERT_DIAG(&d, "off.conf:2:", "IOLatencyTarget=: expected off, or a duration between 1ms and 10s");
        ASSERT_DIAG(&d, "db.conf:3:", "IOLatencyTarget=: expected off, or a duration between 1ms and 10s");
        conf_diag_clear(&d);
}

static void test_latency_target_by_filesystem(void **state) {
        ConfDiag d = {};
        Config *c = load_ok();

        /* By default btrfs only: the stall share did better on ext4 and xfs. */
        assert_int_equal(c->daemon.fs_latency_target_usec[FS_BTRFS], 10000);
        assert_int_equal(c->daemon.fs_latency_target_usec[FS_EXT4], 0);
        assert_int_equal(c->daemon.fs_latency_target_usec[FS_XFS], 0);
        config_free(c);

        /* Each assignment replaces the list; off there is none. */
        put("etc/mdreclaim/mdreclaimd.conf", "[WritePoint]\nIOLatencyTargetByFilesystem=xfs:20ms  btrfs:off\n");
        c = load_ok();
        assert_int_equal(c->daemon.fs_latency_target_usec[FS_XFS], 20000);
        assert_int_equal(c->daemon.fs_latency_target_usec[FS_BTRFS], 0);
        assert_int_equal(c->daemon.fs_latency_target_usec[FS_EXT4], 0);
        config_free(c);
        put("etc/mdreclaim/mdreclaimd.conf.d/more.conf", "[WritePoint]\nIOLatencyTargetByFilesystem=ext4:1.5ms\n");
        c = load_ok();
        assert_int_equal(c->daemon.fs_latency_target_usec[FS_EXT4], 1500);
        assert_int_equal(c->daemon.fs_latency_target_usec[FS_XFS], 0);
        config_free(c);
        put("etc/mdreclaim/mdreclaimd.conf.d/more.conf", "[WritePoint]\nIOLatencyTargetByFilesystem=off\n");
        c = load_ok();
        for (int i = 0; i < _FS_TYPE_MAX; i++)
                assert_int_equal(c->daemon.fs_latency_target_usec[i], 0);
        config_free(c);

        /* An unknown type, no duration, one out of range, a type twice: each an error, nothing half set. */
        static const char *const bad[] = { "zfs:10ms", "btrfs", "btrfs:", "btrfs:500us", "btrfs:10ms btrfs:off",
                                           "btrfs:10ms,xfs:10ms", ":10ms", "", "  " };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char text[128];

                snprintf(text, sizeof(text), "[WritePoint]\nIOLatencyTargetByFilesystem=%s\n", bad[i]);
                put("etc/mdreclaim/mdreclaimd.conf.d/more.conf", text);
                load_fail(&d);
                ASSERT_DIAG(&d, "more.conf:2:", "IOLatencyTargetByFilesystem=: expected off, or TYPE:DURATION pairs");
                conf_diag_clear(&d);
        }
}

static void test_history_section(void **state) {
        ConfDiag d = {};
        Config *c = load_ok();

        assert_int_equal(c->daemon.history_samples, HISTORY_SAMPLES_DEFAULT);
        assert_int_equal(c->daemon.history_cgroups, HISTORY_CGROUPS_DEFAULT);
        config_free(c);

        put("etc/mdreclaim/mdreclaimd.conf", "[History]\nSamples=0\nCgroups=256\n");
        c = load_ok();
        assert_int_equal(c->daemon.history_samples, 0);
        assert_int_equal(c->daemon.history_cgroups, 256);
        config_free(c);

        put("etc/mdreclaim/mdreclaimd.conf", "[History]\nSamples=86401\nCgroups=257\n");
        load_fail(&d);
        ASSERT_DIAG(&d, "mdreclaimd.conf:2:", "Samples=: expected a number of samples from 0 (no history) to 86400");
        ASSERT_DIAG(&d, "mdreclaimd.conf:3:", "Cgroups=: expected a number of cgroups from 0 to 256");
        conf_diag_clear(&d);
}

static void test_errors_name_file_and_line(void **state) {
        ConfDiag d = {};
        char lng[400], content[600];
        const char *main_path, *pol;

        memset(lng, 'x', sizeof(lng) - 1);
        lng[sizeof(lng) - 1] = '\0';
        snprintf(content, sizeof(content),
                 "[Daemon]\n"                        /* 1 */
                 "Interval=1 s\n"                    /* 2: bad duration */
                 "Bogus=1\n"                         /* 3: unknown key */
                 "LogLevel=loud\n"                   /* 4: bad level */
                 "CgroupRoot=/%s\n"                  /* 5: too long */
                 "[Nonsense]\n"                      /* 6: unknown section */
                 "Key=1\n"                           /* 7: silently part of [Nonsense] */
                 "[Daemon]\n"                        /* 8 */
                 "just words\n"                      /* 9: syntax */
                 "Interval=2s\n"                     /* 10: given twice? no: line 2 failed but counted */
                 , lng);
        main_path = put("etc/mdreclaim/mdreclaimd.conf", content);
        (void) main_path;
        pol = put("etc/mdreclaim/policies.d/bad.conf",
                  "[Policy]\n"                       /* 1 */
                  "Match=a.service\n"                /* 2 */
                  "DirtyLimit=64M # note\n"          /* 3: '#' inline */
                  "DirtyBackground=lots\n"           /* 4: bad size */
                  "PressureTarget=150%\n"            /* 5: bad percentage */
                  "Priority=101\n"                   /* 6: out of range */
                  "Mode=sometimes\n"                 /* 7 */
                  "Protect=perhaps\n"                /* 8 */
                  "Match=system.slice/x.service\n"   /* 9: bad pattern */
                  "ReclaimStepMax=0\n");             /* 10 */
        (void) pol;
        put("etc/mdreclaim/policies.d/dup.conf", "[Policy]\nMode=off\nMatch=a.service\n");
        put("etc/mdreclaim/policies.d/nomatch.conf", "[Policy]\nMode=off\n");
        put("etc/mdreclaim/policies.d/nosection.conf", "; just a comment\n");
        put("etc/mdreclaim/policies.d/twice.conf", "[Policy]\nMatch=t.service\nMode=off\nMode=enforce\n");
        put("etc/mdreclaim/policies.d/order.conf", "[Policy]\nMatch=o.service\nDirtyBackground=2G\nDirtyLimit=1G\n");
        put("etc/mdreclaim/policies.d/bad name.conf", "[Policy]\nMatch=n.service\n");
        load_fail(&d);

        ASSERT_DIAG(&d, "mdreclaimd.conf:2:", "Interval=: expected a duration");
        ASSERT_DIAG(&d, "mdreclaimd.conf:3:", "unknown key Bogus=");
        ASSERT_DIAG(&d, "mdreclaimd.conf:3:", "known keys: Interval, LogLevel, CgroupRoot");
        ASSERT_DIAG(&d, "mdreclaimd.conf:4:", "LogLevel=: expected a log level");
        ASSERT_DIAG(&d, "mdreclaimd.conf:5:", "longer than 199 characters");
        ASSERT_DIAG(&d, "mdreclaimd.conf:6:", "unknown section [Nonsense]");
        ASSERT_DIAG(&d, "mdreclaimd.conf:9:", "expected Key=Value");
        ASSERT_DIAG(&d, "mdreclaimd.conf:10:", "Interval= given twice");

        ASSERT_DIAG(&d, "bad.conf:3:", "'#' starts a comment only at the beginning");
        ASSERT_DIAG(&d, "bad.conf:4:", "DirtyBackground=: expected a size");
        ASSERT_DIAG(&d, "bad.conf:5:", "PressureTarget=: expected a percentage");
        ASSERT_DIAG(&d, "bad.conf:6:", "Priority=: expected an integer from 0 to 100");
        ASSERT_DIAG(&d, "bad.conf:7:", "Mode=: expected off, observe or enforce");
        ASSERT_DIAG(&d, "bad.conf:8:", "Protect=: expected yes or no");
        ASSERT_DIAG(&d, "bad.conf:9:", "a unit name cannot contain '/'");
        ASSERT_DIAG(&d, "bad.conf:10:", "ReclaimStepMax=0 is below the minimum of 1M: the allocation point asks "
                    "for no step under 1M");

        ASSERT_DIAG(&d, "nomatch.conf", "has no Match=");
        ASSERT_DIAG(&d, "nosection.conf", "no [Policy] section");
        ASSERT_DIAG(&d, "twice.conf:4:", "Mode= given twice in [Policy] (first at line 3)");
        ASSERT_DIAG(&d, "order.conf:3:", "DirtyBackground=2G is above DirtyLimit=1G (");
        ASSERT_DIAG(&d, "order.conf:3:", "order.conf:4); background writeback must start below the limit");
        ASSERT_DIAG(&d, "bad name.conf", "policy name 'bad name'");
        conf_diag_clear(&d);
}

/* One policy file with `line` after Match=: refused, with `message` at its line 3. */
static void refused_policy(const char *line, const char *message) {
        ConfDiag d = {};
        char content[300];

        snprintf(content, sizeof(content), "[Policy]\nMatch=a.service\n%s\n", line);
        put("etc/mdreclaim/policies.d/a.conf", content);
        load_fail(&d);
        ASSERT_DIAG(&d, "a.conf:3:", message);
        conf_diag_clear(&d);
}

static void accepted_policy(const char *line) {
        char content[300];

        snprintf(content, sizeof(content), "[Policy]\nMatch=a.service\n%s\n", line);
        put("etc/mdreclaim/policies.d/a.conf", content);
        config_free(load_ok());
}

/* Sizes that become a budget, a cap or a reclaim target: a stated minimum, with its reason. */
static void test_size_minimums(void **state) {
        refused_policy("DirtyLimit=64", "DirtyLimit=64 is below the minimum of 8M: a smaller dirty budget makes "
                       "every write of the cgroup wait for the disk");
        refused_policy("DirtyLimit=0", "DirtyLimit=0 is below the minimum of 8M");
        refused_policy("DirtyLimit=8191K", "DirtyLimit=8191K is below the minimum of 8M");
        refused_policy("DirtyLimit=0%", "DirtyLimit=0% is refused: a percentage must be above 0%, and one that "
                       "comes to less than 8M on a cgroup counts as 8M there");
        refused_policy("DirtyBackground=1M", "DirtyBackground=1M is below the minimum of 4M: early writeback");
        refused_policy("WriteRateMin=512K", "WriteRateMin=512K is below the minimum of 1M: a write cap under 1M");
        refused_policy("WriteRateMin=0%", "WriteRateMin=0% is refused: a percentage must be above 0%");
        refused_policy("MetadataCacheMax=0", "MetadataCacheMax=0 is below the minimum of 8M: the dentries");
        refused_policy("ReclaimStepMax=1023K", "ReclaimStepMax=1023K is below the minimum of 1M");

        accepted_policy("DirtyLimit=8M");
        accepted_policy("DirtyLimit=0.0001%");
        accepted_policy("DirtyBackground=4M");
        accepted_policy("WriteRateMin=1M");
        accepted_policy("MetadataCacheMax=8M");
        accepted_policy("MetadataCacheMax=max");
        accepted_policy("MetadataCacheMax=infinity");
        accepted_policy("ReclaimStepMax=1M");
        accepted_policy("CacheFloor=0");
}

/* A size past what 64 bits hold is refused as such, never taken as what it wraps to. */
static void test_size_out_of_range(void **state) {
        refused_policy("DirtyLimit=18446744073709551615.1K", "DirtyLimit=18446744073709551615.1K is out of range: "
                       "a size must come to less than 16E (2^64 bytes)");
        refused_policy("DirtyLimit=16E", "DirtyLimit=16E is out of range: a size must come to less than 16E");
        refused_policy("CacheFloor=18446744073709551616", "CacheFloor=18446744073709551616 is out of range");
        refused_policy("MetadataCacheMax=15E 1024P", "MetadataCacheMax=15E 1024P is out of range");
        refused_policy("CacheFloor=-1M", "CacheFloor=-1M is out of range: a size cannot be negative");
        accepted_policy("CacheFloor=15E");
}

/* Every suffix in a file; the slips other tools allow are refused with what to write instead. */
static void test_size_suffixes_in_files(void **state) {
        static const struct { const char *v; uint64_t bytes; } ok[] = {
                { "8388608", UINT64_C(8) << 20 }, { "8388608B", UINT64_C(8) << 20 }, { "8192K", UINT64_C(8) << 20 },
                { "8M", UINT64_C(8) << 20 }, { "1.5G", UINT64_C(3) << 29 }, { "2T", UINT64_C(2) << 40 },
                { "3P", UINT64_C(3) << 50 }, { "1E", UINT64_C(1) << 60 }, { "1G 512M", UINT64_C(3) << 29 },
        };
        static const struct { const char *v, *hint; } slips[] = {
                { "64MB", "write 64M" }, { "64mb", "write 64M" }, { "64KiB", "write 64K" }, { "64m", "write 64M" },
                { "1.5gb", "write 1.5G" },
        };
        char line[100], message[400];

        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                Config *c;
                char content[200];

                snprintf(content, sizeof(content), "[Policy]\nMatch=a.service\nCacheFloor=%s\n", ok[i].v);
                put("etc/mdreclaim/policies.d/a.conf", content);
                c = load_ok();
                assert_true(c->policies[0]->cache_floor == ok[i].bytes);
                config_free(c);
        }
        for (size_t i = 0; i < ELEMENTSOF(slips); i++) {
                snprintf(line, sizeof(line), "CacheFloor=%s", slips[i].v);
                snprintf(message, sizeof(message), "CacheFloor=: expected a size in bytes, optionally with K, M, G, "
                         "T, P or E (powers of 1024, upper case, as in systemd unit files; e.g. 64M, 1.5G) (0: no "
                         "floor), got '%s' (%s: suffixes are upper case and take no B or iB)", slips[i].v,
                         slips[i].hint);
                refused_policy(line, message);
        }
        refused_policy("CacheFloor=lots", "got 'lots'");
}

static void test_raw_bytes(void **state) {
        ConfDiag d = {};
        Config *c;
        static const char nul_line[] = "[Policy]\nMatch=a.service\nMode=off\0xyz\nPriority=5\n";
        char path[600];
        FILE *f;

        /* CRLF line ends and a UTF-8 BOM are fine. */
        put("etc/mdreclaim/mdreclaimd.conf", "\xef\xbb\xbf[Daemon]\r\nInterval=2s\r\n");
        c = load_ok();
        assert_int_equal(c->daemon.interval_usec, 2 * USEC_PER_SEC);
        config_free(c);

        /* A lone CR would hide the rest of the line; a NUL likewise. */
        put("etc/mdreclaim/mdreclaimd.conf", "[Daemon]\rInterval=50ms\rLogLevel=loud\r\n");
        snprintf(path, sizeof(path), "%s/etc/mdreclaim/policies.d/nul.conf", tmp_root);
        put("etc/mdreclaim/policies.d/.keep", "");
        f = fopen(path, "we");
        fwrite(nul_line, 1, sizeof(nul_line) - 1, f);
        fclose(f);
        load_fail(&d);
        ASSERT_DIAG(&d, "mdreclaimd.conf:1:", "carriage return in the middle");
        ASSERT_DIAG(&d, "nul.conf:3:", "a NUL byte");
        conf_diag_clear(&d);
}

static void test_duplicate_policy(void **state) {
        ConfDiag d = {};

        put("etc/mdreclaim/policies.d/one.conf", "[Policy]\nMatch=db.service\n");
        put("run/mdreclaim/policies.d/two.conf", "[Policy]\nMode=off\n\nMatch=other.service db.service\n");
        load_fail(&d);
        ASSERT_DIAG(&d, "two.conf:4:", "duplicate policy: Match=db.service is already claimed by policy 'one'");
        conf_diag_clear(&d);
}

static void test_unreadable_file(void **state) {
        ConfDiag d = {};
        char dir[600];

        /* A directory where a file should be cannot be read as one. */
        snprintf(dir, sizeof(dir), "%s/etc/mdreclaim/mdreclaimd.conf", tmp_root);
        put("etc/mdreclaim/.keep", "");
        assert_int_equal(mkdir(dir, 0755), 0);
        load_fail(&d);
        ASSERT_DIAG(&d, "mdreclaimd.conf", NULL);
        conf_diag_clear(&d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_defaults, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_good_files, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_precedence_and_dropins, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_policy_masking, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_history_section, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_latency_target, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_latency_target_by_filesystem, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_metrics_section, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_errors_name_file_and_line, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_size_minimums, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_size_out_of_range, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_size_suffixes_in_files, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_duplicate_policy, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_raw_bytes, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_unreadable_file, tmp_root_setup, tmp_root_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
