/* SPDX-License-Identifier: GPL-2.0-or-later */
/* status, list, show, top, reclaim, writeback, reload. */
#include "mdctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "parse-util.h"
#include "table.h"
#include "top.h"
#include "util.h"

/* ---- status ---- */

static void status_access(const Value *st) {
        uint64_t uid = 0;
        const char *group = value_get_str(st, "admin_group");

        (void) value_get_u64(st, "caller_uid", &uid);
        if (value_is_true(st, "caller_is_admin"))
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

static const char *ppm_text(char buf[static 32], uint64_t ppm) {
        snprintf(buf, 32, "%" PRIu64 ".%02" PRIu64 "%%", ppm / 10000, ppm / 100 % 100);
        return buf;
}

static void status_print(const Value *st) {
        uint64_t pid = 0, started = 0, n = 0, np = 0, pol = 0, trig = 0, wake = 0, interval = 0, ticks = 0,
                 first = 0, next = 0, conns = 0, cold = 0, budget = 0, round = 0;
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
        (void) value_get_u64(st, "cold_round_usec", &round);
        printf("mdreclaimd %s (pid %" PRIu64 "), up %s\n", or_dash(value_get_str(st, "version")), pid,
               format_span(span, u64_delta(now_usec(CLOCK_REALTIME), started)));
        field("Cgroup root", "%s", or_dash(value_get_str(st, "cgroup_root")));
        field("Config root", "%s", or_dash(value_get_str(st, "config_root")));
        field("Cgroups", "%" PRIu64 " watched, %" PRIu64 " under a policy", n, np);
        field("Policies", "%" PRIu64 " loaded from %zu file%s", pol, files ? files->n : 0,
              files && files->n == 1 ? "" : "s");
        field("PSI triggers", "%" PRIu64 " armed, %" PRIu64 " wakeups", trig, wake);
        field("Sampling", "every %s, %" PRIu64 " ticks", format_span(iv, interval), ticks);
        if (value_get_u64(st, "cold_sample_interval_usec", &cold) && value_get_u64(st, "cold_sample_budget_ppm", &budget)) {
                char c[32], b[32], rd[32];
                size_t len;

                /* The others: each every ColdSampleInterval=, or slower where their budget runs out. The
                 * budget as configured: up to four decimals, no trailing zeros. */
                snprintf(b, sizeof(b), "%" PRIu64 ".%04" PRIu64, budget / 10000, budget % 10000);
                for (len = strlen(b); b[len - 1] == '0'; len--)
                        ;
                b[b[len - 1] == '.' ? len - 1 : len] = '\0';
                field("Slow samples", "every %s, at most %s%% of a core; %s%s", format_span(c, cold), b,
                      round ? "last round " : "no round done yet", round ? format_span(rd, round) : "");
        }
        field("Events", "%" PRIu64 " recorded, %" PRIu64 " kept", next ? next - 1 : 0, next - first);
        field("Control", "%s, %" PRIu64 " connection%s", or_dash(value_get_str(st, "control_socket")), conns,
              conns == 1 ? "" : "s");
        {
                char text[1024];
                field("Protecting", "%s", protection_text(text, sizeof(text), st));
        }
        status_access(st);
        status_host(st);
}

int verb_status(sd_bus *bus, const Args *a) {
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

static int list_table(sd_bus *bus, const Value *list, const Args *a) {
        Value throttles = {};
        Table t = {};
        int r = client_call(bus, "cannot list the throttles", "ListThrottles", &throttles, "");

        if (r < 0)
                return r;
        r = cgroups_table(list, &throttles, a->tree, &t);
        if (r < 0)
                r = client_fail("cannot build the table", r);
        else if ((r = print_table(&t, a)) >= 0 && a->legend)
                printf("\n%zu cgroup%s.\n", list->n, list->n == 1 ? "" : "s");
        table_clear(&t);
        value_clear(&throttles);
        return r;
}

/* The JSON form as the daemon writes it, sorted there: ListCgroups read into a tree and printed took
 * about a second and a half at 50,000 cgroups, most of it in a million dictionary entries. */
static int list_json(sd_bus *bus, const Args *a) {
        sd_bus_message *reply = NULL;
        const char *piece;
        int r = client_call_raw(bus, "cannot list the cgroups", "ListCgroupsJSON", &reply, "s",
                                sort_key_to_string(a->sort));

        if (r < 0)
                return r;
        /* Read through once before a byte is printed: a reply that cannot be read prints nothing. */
        r = sd_bus_message_enter_container(reply, 'a', "s");
        while (r >= 0 && (r = sd_bus_message_read_basic(reply, 's', &piece)) > 0)
                ;
        if (r >= 0)
                r = sd_bus_message_rewind(reply, true);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "s");
        if (r >= 0)
                fputs("{\"cgroups\":", stdout);
        while (r >= 0 && (r = sd_bus_message_read_basic(reply, 's', &piece)) > 0)
                fputs(piece, stdout);
        if (r < 0)
                client_fail("cannot read the daemon's reply", r);
        else
                fputs("}\n", stdout);
        sd_bus_message_unref(reply);
        return r;
}

int verb_list(sd_bus *bus, const Args *a) {
        Value list = {};
        int r;

        if (a->json)
                return list_json(bus, a);
        r = client_call(bus, "cannot list the cgroups", "ListCgroups", &list, "");
        if (r < 0)
                return r;
        cgroups_sort(&list, a->sort);
        r = list_table(bus, &list, a);
        value_clear(&list);
        return r;
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
        uint64_t interval = 0, wait = 0, reqs = 0;

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
        if (value_get_u64(c, "signals.io_wait_per_request_usec", &wait)) {
                (void) value_get_u64(c, "signals.io_requests", &reqs);
                field("IO wait", "%" PRIu64 ".%" PRIu64 " ms per request (%" PRIu64 " requests)",
                      wait / 1000, wait / 100 % 10, reqs);
        }
}

/* The IOLatencyTarget= in force for the cgroup, and where it comes from. */
static void show_latency_target(const Value *c) {
        const char *by = value_get_str(c, "io_latency_target_by");
        char fs[64];
        uint64_t t;

        if (!value_get_u64(c, "io_latency_target_usec", &t))
                return;
        if (!by)
                by = "-";
        else if (streq(by, "policy"))
                by = "its policy's IOLatencyTarget=";
        else if (streq(by, "default"))
                by = "[WritePoint] IOLatencyTarget=";
        else {  /* a filesystem's type */
                snprintf(fs, sizeof(fs), "IOLatencyTargetByFilesystem= for %s", by);
                by = fs;
        }
        field("IO wait target", "%" PRIu64 ".%" PRIu64 " ms per request (%s)", t / 1000, t / 100 % 10, by);
}

/* "writer.service at 12.0 MiB/s on vda (8:0)", one line per cap of Explain's `key` array. */
static void show_caps(const Value *x, const char *key, const char *label) {
        const Value *caps = value_get(x, key);
        size_t n = caps && caps->kind == VALUE_ARRAY ? caps->n : 0;

        for (size_t i = 0; i < n; i++) {
                const Value *c = &caps->items[i];
                char rate[32], dev[64];
                uint64_t wbps = 0;

                (void) value_get_u64(c, "wbps", &wbps);
                field(i == 0 ? label : "", "%s at %s on %s%s",
                      or_dash(value_get_str(c, "unit") ?: value_get_str(c, "path")), text_rate(rate, wbps),
                      or_dash(text_device(dev, c)), value_is_true(c, "observed") ? " (observed, not written)" : "");
        }
        if (n == 0)
                field(label, "nobody ('mdctl explain %s' says why)",
                      or_dash(value_get_str(x, "unit") ?: value_get_str(x, "path")));
}

/* The protected side (its limit, its stall, the writers capped for it), or whom a writer is capped for. */
static void show_protection(const Value *x) {
        uint64_t limit = 0, smooth = 0, base = 0, now = 0;
        char l[32], sm[32], b[32], nw[32];

        if (!value_is_true(x, "protect")) {
                show_caps(x, "capped_for", "Capped for");
                return;
        }
        (void) value_get_u64(x, "io_pressure_limit_ppm", &limit);
        (void) value_get_u64(x, "io_baseline_ppm", &base);
        field("Protected", "yes (policy '%s', Mode=%s): io stall limit %s (IOPressureLimit=) + baseline %s",
              or_dash(value_get_str(x, "policy")), or_dash(value_get_str(x, "mode")), ppm_text(l, limit),
              ppm_text(b, base));
        if (value_get_u64(x, "io_stall_smoothed_ppm", &smooth))
                field("Stalled", "%s smoothed, %s over the last tick, against %s (%s)", ppm_text(sm, smooth),
                      value_get_u64(x, "io_stall_ppm", &now) ? ppm_text(nw, now) : "-", ppm_text(l, limit + base),
                      smooth > limit + base ? "over the limit" : "under the limit");
        else
                field("Stalled", "not measured yet (no io stall figure from the write point)");
        show_caps(x, "capped_for_it", "Capped for it");
}

static void show_print(const Value *c, const Value *throttles, const Value *x) {
        const char *unit = value_get_str(c, "unit"), *policy = value_get_str(c, "policy");
        uint64_t id = 0;

        (void) value_get_u64(c, "id", &id);
        printf("%s%s%s%s\n", or_dash(value_get_str(c, "path")), unit ? " (" : "", unit ? unit : "", unit ? ")" : "");
        field("Cgroup id", "%" PRIu64, id);
        if (policy)
                field("Policy", "%s (mode %s)", policy, or_dash(value_get_str(c, "mode")));
        else
                field("Policy", "none");
        if (x)
                show_protection(x);
        show_memory(c);
        show_limits(c);
        show_signals(c);
        show_latency_target(c);
        show_throttles(c, throttles);
}

/* Explain's members after GetCgroup's, those it has already left out: one object for --json. */
static int merge_members(Value *into, Value *from) {
        Value *items;
        size_t n = into->n;

        if (into->kind != VALUE_OBJECT || from->kind != VALUE_OBJECT)
                return 0;
        items = realloc(into->items, (into->n + from->n) * sizeof(Value));
        if (!items)
                return -ENOMEM;
        into->items = items;
        for (size_t i = 0; i < from->n; i++) {
                if (value_get(into, from->items[i].key))
                        value_clear(&from->items[i]);
                else
                        into->items[n++] = from->items[i];
        }
        into->n = n;
        from->n = 0;
        return 0;
}

/* GetCgroup and Explain of a name as typed (escaped where it is not UTF-8). */
static int get_cgroup(sd_bus *bus, const char *arg, Value *ret_c, Value *ret_x) {
        _cleanup_free_ char *name = client_name_arg(arg);
        char what[300];
        int r;

        if (!name)
                return client_fail("cannot show it", -ENOMEM);
        snprintf(what, sizeof(what), "cannot show %s", name);
        r = client_call(bus, what, "GetCgroup", ret_c, "s", name);
        if (r >= 0 && ret_x)
                r = client_call(bus, what, "Explain", ret_x, "s", name);
        return r;
}

int verb_show(sd_bus *bus, const Args *a) {
        Value c = {}, throttles = {}, x = {};
        int r = get_cgroup(bus, a->argv[1], &c, &x);

        if (r >= 0 && a->json) {
                r = merge_members(&c, &x);
                if (r >= 0)
                        print_json(&c);
                else
                        client_fail("cannot show it", r);
        } else if (r >= 0 && (r = client_call(bus, "cannot list the throttles", "ListThrottles", &throttles, "")) >= 0)
                show_print(&c, &throttles, &x);
        value_clear(&c);
        value_clear(&x);
        value_clear(&throttles);
        return r < 0 ? r : 0;
}

int verb_explain(sd_bus *bus, const Args *a) {
        _cleanup_free_ char *name = client_name_arg(a->argv[1]);
        const Value *answer;
        Value x = {};
        char what[300];
        int r;

        if (!name)
                return client_fail("cannot explain it", -ENOMEM);
        snprintf(what, sizeof(what), "cannot explain %s", name);
        r = client_call(bus, what, "Explain", &x, "s", name);
        if (r < 0)
                return r;
        answer = value_get(&x, "answer");
        if (a->json)
                print_json(&x);
        else {
                const char *unit = value_get_str(&x, "unit");

                printf("%s%s%s%s: ", or_dash(value_get_str(&x, "path")), unit ? " (" : "", unit ? unit : "",
                       unit ? ")" : "");
                for (size_t i = 0; answer && answer->kind == VALUE_ARRAY && i < answer->n; i++) {
                        char text[700];

                        /* The figures of a reason quoted from the write point, for people. */
                        printf(i == 0 ? "%s\n" : "  - %s\n",
                               answer->items[i].s ? text_humanize(text, sizeof(text), answer->items[i].s) : "-");
                }
        }
        value_clear(&x);
        return 0;
}

int verb_top(sd_bus *bus, const Args *a) {
        TopOptions o = {
                .delay_usec = a->delay_usec,
                .iterations = a->iterations,
                .sort = a->have_sort ? a->sort : SORT_DIRTY,
                .legend = a->legend,
                .output = a->output,
        };

        return top_run(bus, &o);
}

int verb_reload(sd_bus *bus, const Args *a) {
        return client_call(bus, "reload refused", "Reload", NULL, "");
}
