/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Explain: why the write point caps a cgroup or does not, and for a
 * protected one which writers are capped for it, or why none is. Answered
 * from the daemon's own state, never guessed: the policies in force, the
 * devices' capacities, the last tick's signals, and the write point's caps,
 * stalls and device activity (deciding/wp-explain.h). GetCgroup's protected
 * side (mdctl show) is the same answer's figures.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api-internal.h"
#include "blkqueue.h"
#include "bus-reply.h"
#include "wp-explain.h"
#include "util.h"

#define EXPLAIN_LINES_MAX 24
#define EXPLAIN_LINE_MAX 320
#define EXPLAIN_CAPS_MAX 32
#define EXPLAIN_PROTECTED_MAX 8
#define MIB (UINT64_C(1) << 20)

/* The lines of an answer, for people; the first is the verdict. */
typedef struct Answer {
        char lines[EXPLAIN_LINES_MAX][EXPLAIN_LINE_MAX];
        size_t n;
} Answer;

static void say(Answer *a, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void say(Answer *a, const char *format, ...) {
        va_list ap;

        if (a->n >= EXPLAIN_LINES_MAX)
                return;
        va_start(ap, format);
        vsnprintf(a->lines[a->n++], EXPLAIN_LINE_MAX, format, ap);
        va_end(ap);
}

/* ---- words ---- */

static const char *name_of(const CgEntry *e) {
        return e->unit ? e->unit : e->cg->path;
}

/* "vda (8:0)"; "8:0" when sysfs names it not. */
static const char *device_text(Manager *m, uint32_t major, uint32_t minor, char buf[static 80]) {
        char name[48];

        blkdev_name(m->observer->host->sys_fd, major, minor, name, sizeof(name));
        if (strchr(name, ':'))
                snprintf(buf, 80, "%s", name);
        else
                snprintf(buf, 80, "%s (%" PRIu32 ":%" PRIu32 ")", name, major, minor);
        return buf;
}

static const char *rate_text(char buf[static 32], uint64_t bytes_per_sec) {
        snprintf(buf, 32, "%" PRIu64 ".%" PRIu64 " MiB/s", bytes_per_sec / MIB, bytes_per_sec % MIB * 10 / MIB);
        return buf;
}

/* CapHoldTime= as written: "30s", "1min", "500ms". */
static const char *hold_text(char buf[static 32], uint64_t usec) {
        if (usec % (60 * USEC_PER_SEC) == 0)
                snprintf(buf, 32, "%" PRIu64 "min", usec / (60 * USEC_PER_SEC));
        else if (usec % USEC_PER_SEC == 0)
                snprintf(buf, 32, "%" PRIu64 "s", usec / USEC_PER_SEC);
        else
                snprintf(buf, 32, "%" PRIu64 "ms", usec / 1000);
        return buf;
}

static const char *ppm_text(char buf[static 32], uint64_t ppm) {
        snprintf(buf, 32, "%" PRIu64 ".%02" PRIu64 "%%", ppm / 10000, ppm / 100 % 100);
        return buf;
}

/* ---- what the daemon knows ---- */

static bool protected_entry(const CgEntry *e) {
        return !e->gone && e->policy && e->policy->protect && e->policy->mode != POLICY_MODE_OFF;
}

static size_t protected_cgroups(Manager *m, const CgEntry **ret, size_t max) {
        size_t n = 0;

        for (size_t i = 0; i < m->observer->cgroups.n && n < max; i++)
                if (protected_entry(&m->observer->cgroups.entries[i]))
                        ret[n++] = &m->observer->cgroups.entries[i];
        return n;
}

static const DeviceRate *device_of(const CgEntry *e, uint32_t major, uint32_t minor) {
        for (size_t i = 0; e->signals.valid && i < e->signals.n_devices; i++)
                if (e->signals.devices[i].major == major && e->signals.devices[i].minor == minor)
                        return &e->signals.devices[i];
        return NULL;
}

static uint64_t dirty_of(const CgEntry *e) {
        const CgroupSample *s = cg_entry_sample(e);

        return s ? sample_dirty_bytes(s) : 0;
}

/* What makes a writer of a cgroup for the write point (wp-types.h). */
static bool writes(const CgEntry *e) {
        return (e->signals.valid && e->signals.write_rate >= WP_WRITING_RATE_MIN) || dirty_of(e) >= WP_GUARD_DIRTY_MIN;
}

static uint32_t limit_of(Manager *m, const CgEntry *p) {
        return p->policy->io_pressure_limit_ppm ?: m->config->daemon.io_pressure_limit_ppm;
}

/* Whether protected cgroup p was active on the device within CapHoldTime, as the write point saw it. */
static bool active_on(Manager *m, uint32_t major, uint32_t minor) {
        uint64_t stall = 0, guarded = 0, now = manager_now_usec(m), hold = m->config->daemon.cap_hold_usec;

        if (!write_point_device_seen(&m->write_runner.state, major, minor, &stall, &guarded))
                return false;
        return (guarded && now - guarded < hold) || (stall && now - stall < hold);
}

static uint64_t capacity_of(Manager *m, uint32_t major, uint32_t minor) {
        const DevStat *d = devstat_find(&m->observer->devices, major, minor);

        for (size_t i = 0; !d && i < m->observer->devices.n_known; i++)
                if (m->observer->devices.known[i].major == major && m->observer->devices.known[i].minor == minor)
                        return m->observer->devices.known[i].capacity;
        return d ? devstat_capacity(d) : 0;
}

/* ---- the caps, as figures ---- */

/* One cap: the other side's cgroup (the writer, or whom it protects), the device, the rate, whether only observed. */
static int append_cap(sd_bus_message *r, Manager *m, const WpCap *c, bool writer_side) {
        const CgEntry *other = cgtable_find(&m->observer->cgroups, writer_side ? c->cgroup_id : c->protected_id);
        char dev[32], name[48];
        int k;

        snprintf(dev, sizeof(dev), "%" PRIu32 ":%" PRIu32, c->major, c->minor);
        blkdev_name(m->observer->host->sys_fd, c->major, c->minor, name, sizeof(name));
        k = sd_bus_message_open_container(r, 'a', "{sv}");
        if (k >= 0 && other)
                k = bus_dict_name(r, "path", other->cg->path);
        if (k >= 0 && other && other->unit)
                k = bus_dict_name(r, "unit", other->unit);
        if (k >= 0)
                k = bus_dict_u64(r, "id", writer_side ? c->cgroup_id : c->protected_id);
        if (k >= 0)
                k = bus_dict_str(r, "device", dev);
        if (k >= 0)
                k = bus_dict_str(r, "device_name", name);
        if (k >= 0)
                k = bus_dict_u64(r, "wbps", c->wbps);
        if (k >= 0)
                k = sd_bus_message_append(r, "{sv}", "observed", "b", (int) c->observed);
        return k < 0 ? k : sd_bus_message_close_container(r);
}

/* `key`: the caps on cgroup id (for_protected false) or held for it (true), as aa{sv}. */
static int append_caps(sd_bus_message *r, Manager *m, const char *key, uint64_t id, bool for_protected) {
        const WpCap *caps[EXPLAIN_CAPS_MAX];
        size_t n = write_point_caps(&m->write_runner.state, id, for_protected, caps, ELEMENTSOF(caps));
        int k;

        k = sd_bus_message_open_container(r, 'e', "sv");
        if (k >= 0)
                k = sd_bus_message_append(r, "s", key);
        if (k >= 0)
                k = sd_bus_message_open_container(r, 'v', "aa{sv}");
        if (k >= 0)
                k = sd_bus_message_open_container(r, 'a', "a{sv}");
        for (size_t i = 0; k >= 0 && i < MIN(n, ELEMENTSOF(caps)); i++)
                k = append_cap(r, m, caps[i], for_protected);
        for (int j = 0; k >= 0 && j < 3; j++)
                k = sd_bus_message_close_container(r);
        return k;
}

/* A protected cgroup's figures: its limit, its baseline, its stall as the write point smooths it. */
static int append_protected_figures(sd_bus_message *r, Manager *m, const CgEntry *e) {
        uint32_t smooth = 0, baseline = 0;
        int k;

        k = bus_dict_u64(r, "io_pressure_limit_ppm", limit_of(m, e));
        if (k >= 0 && write_point_stall_seen(&m->write_runner.state, e->cg->id, &smooth, &baseline))
                k = bus_dict_u64(r, "io_stall_smoothed_ppm", smooth);
        if (k >= 0)
                k = bus_dict_u64(r, "io_baseline_ppm", baseline);
        if (k >= 0 && e->signals.valid && e->signals.have_io_stall)
                k = bus_dict_u64(r, "io_stall_ppm", e->signals.io_stall.some_ppm);
        return k;
}

int api_append_protection(sd_bus_message *r, Manager *m, const CgEntry *e) {
        int k;

        k = sd_bus_message_append(r, "{sv}", "protect", "b", (int) protected_entry(e));
        if (k >= 0 && e->policy)
                k = sd_bus_message_append(r, "{sv}", "cap_writes", "b", (int) e->policy->cap_writes);
        if (k >= 0 && protected_entry(e))
                k = append_protected_figures(r, m, e);
        if (k >= 0 && protected_entry(e))
                k = append_caps(r, m, "capped_for_it", e->cg->id, true);
        if (k >= 0 && !protected_entry(e))
                k = append_caps(r, m, "capped_for", e->cg->id, false);
        return k;
}

/* ---- the writer's side ---- */

/* The reason the ledger keeps for the write point's cap on the writer, or NULL. */
static const char *cap_reason(Manager *m, const WpCap *c) {
        const Ledger *l = actuator_ledger(m->actuator);

        for (size_t i = 0; i < l->n; i++) {
                const ThrottleEntry *t = &l->entries[i];

                if (t->cgroup_id == c->cgroup_id && t->kind == THROTTLE_IO_WBPS && t->major == c->major &&
                    t->minor == c->minor && t->requested[POINT_WRITE] != THROTTLE_NONE)
                        return t->reason[POINT_WRITE];
        }
        return NULL;
}

static void say_cap(Manager *m, const WpCap *c, bool writer_side, Answer *a) {
        const CgEntry *other = cgtable_find(&m->observer->cgroups, writer_side ? c->cgroup_id : c->protected_id);
        const char *why = writer_side ? NULL : cap_reason(m, c);
        char dev[80], rate[32];

        say(a, "%s%s at %s on %s%s%s%s", writer_side ? "" : "for ", other ? name_of(other) : "a cgroup now gone",
            rate_text(rate, c->wbps), device_text(m, c->major, c->minor, dev),
            c->observed ? " (decided, not written: its policy observes)" : "", why ? ", because " : "",
            why ? why : "");
}

/* The writer's policy, or the lack of one, when it alone says why: true then. */
static bool writer_policy_says(Manager *m, const CgEntry *e, Answer *a) {
        const Policy *p = e->policy;

        if (p && p->mode == POLICY_MODE_OFF)
                say(a, "its policy '%s' is Mode=off: the points leave it alone", p->name);
        else if (p && !p->cap_writes)
                say(a, "its policy '%s' has CapWrites=no: its writes are never capped", p->name);
        else if (!p && !m->config->daemon.cap_writers_without_policy)
                say(a, "no policy governs it, and CapWritersWithoutPolicy=no: only cgroups under a policy are "
                    "capped");
        else {
                if (p && p->mode == POLICY_MODE_OBSERVE)
                        say(a, "its policy '%s' is in Mode=observe: a cap is decided and logged (OBSERVE=yes), "
                            "not written", p->name);
                if (!p)
                        say(a, "no policy governs it: it may be capped as if under a policy of Priority=%u in "
                            "enforce mode (CapWritersWithoutPolicy=yes)", (unsigned) POLICY_PRIORITY_DEFAULT);
                return false;
        }
        return true;
}

/* Why writer w is not capped on one device protected cgroup p uses. */
static void writer_on_device(Manager *m, const CgEntry *w, const CgEntry *p, const DeviceRate *d, Answer *a) {
        const DaemonSettings *ds = &m->config->daemon;
        uint32_t smooth = 0, baseline = 0;
        char dev[80], hold[32], s1[32], s2[32];

        device_text(m, d->major, d->minor, dev);
        (void) write_point_stall_seen(&m->write_runner.state, p->cg->id, &smooth, &baseline);
        if (ds->guard_rate_ppm && capacity_of(m, d->major, d->minor) == 0)
                say(a, "the capacity of %s is not known yet: the guard (GuardRate=) waits for it; it is learnt "
                    "once the device is seen saturated", dev);
        else if (!ds->guard_rate_ppm && smooth <= limit_of(m, p) + baseline)
                say(a, "%s's io stall (%s smoothed) is under its limit (%s, its baseline included), and "
                    "GuardRate=0%% caps only at a stall", name_of(p), ppm_text(s1, smooth),
                    ppm_text(s2, (uint64_t) limit_of(m, p) + baseline));
        else if (ds->guard_rate_ppm && !active_on(m, d->major, d->minor))
                say(a, "%s has not been active on %s: no io or stall there within CapHoldTime (%s)", name_of(p), dev,
                    hold_text(hold, ds->cap_hold_usec));
        else if (!writes(w))
                say(a, "it does not write enough to count as a writer on %s (1 MiB/s, or 16 MiB dirty)", dev);
        else
                say(a, "nothing the write point keeps says why not on %s: it decides again at every tick "
                    "('mdctl events --unit %s')", dev, name_of(w));
}

/* Why writer w is not capped for protected cgroup p. */
static void writer_vs_protected(Manager *m, const CgEntry *w, const CgEntry *p, Answer *a) {
        unsigned prio = w->policy ? w->policy->priority : POLICY_PRIORITY_DEFAULT;
        size_t common = 0;

        if (prio > p->policy->priority) {
                say(a, "its Priority=%u is above %s's (%u): it is never capped for it", prio, name_of(p),
                    p->policy->priority);
                return;
        }
        if (cgroup_paths_related(w->cg->path, p->cg->path)) {
                say(a, "it is an ancestor or a descendant of %s: never capped for it", name_of(p));
                return;
        }
        if (!p->signals.valid || p->signals.n_devices == 0) {
                say(a, "%s has done no io yet: its io.stat lists no device", name_of(p));
                return;
        }
        for (size_t i = 0; i < p->signals.n_devices; i++) {
                const DeviceRate *d = &p->signals.devices[i];

                if (!device_of(w, d->major, d->minor))
                        continue;
                common++;
                writer_on_device(m, w, p, d, a);
        }
        if (common == 0)
                say(a, "it uses none of the devices %s does io on (its io.stat lists %u device%s, %s's %u)",
                    name_of(p), w->signals.valid ? (unsigned) w->signals.n_devices : 0u,
                    w->signals.valid && w->signals.n_devices == 1 ? "" : "s", name_of(p),
                    (unsigned) p->signals.n_devices);
}

static void explain_writer(Manager *m, const CgEntry *e, Answer *a) {
        const WpCap *caps[EXPLAIN_CAPS_MAX];
        const CgEntry *prot[EXPLAIN_PROTECTED_MAX];
        size_t n = write_point_caps(&m->write_runner.state, e->cg->id, false, caps, ELEMENTSOF(caps)), np;

        if (n > 0) {
                say(a, "capped: the write point holds %zu cap%s on it, for a protected cgroup", n, n == 1 ? "" : "s");
                for (size_t i = 0; i < MIN(n, ELEMENTSOF(caps)); i++)
                        say_cap(m, caps[i], false, a);
                (void) writer_policy_says(m, e, a);
                return;
        }
        say(a, "not capped");
        if (writer_policy_says(m, e, a))
                return;
        np = protected_cgroups(m, prot, ELEMENTSOF(prot));
        if (np == 0) {
                say(a, "nothing is protected: no policy with Protect=yes governs a cgroup, so no writer is capped");
                return;
        }
        for (size_t i = 0; i < np; i++)
                writer_vs_protected(m, e, prot[i], a);
}

/* ---- the protected side ---- */

/* Whether any cgroup but p and its relatives writes to the device. */
static bool someone_writes(Manager *m, const CgEntry *p, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < m->observer->cgroups.n; i++) {
                const CgEntry *e = &m->observer->cgroups.entries[i];
                const DeviceRate *d = device_of(e, major, minor);

                if (!e->gone && e != p && d && !cgroup_paths_related(e->cg->path, p->cg->path) &&
                    (d->wbytes_per_sec >= WP_WRITING_RATE_MIN || dirty_of(e) >= WP_GUARD_DIRTY_MIN))
                        return true;
        }
        return false;
}

static void protected_on_device(Manager *m, const CgEntry *p, const DeviceRate *d, Answer *a) {
        const DaemonSettings *ds = &m->config->daemon;
        uint32_t smooth = 0, baseline = 0;
        char dev[80], hold[32], s1[32], s2[32];

        device_text(m, d->major, d->minor, dev);
        (void) write_point_stall_seen(&m->write_runner.state, p->cg->id, &smooth, &baseline);
        if (!someone_writes(m, p, d->major, d->minor))
                say(a, "nobody else writes to %s (1 MiB/s, or 16 MiB dirty, makes a writer)", dev);
        else if (ds->guard_rate_ppm && capacity_of(m, d->major, d->minor) == 0)
                say(a, "the capacity of %s is not known yet: the guard (GuardRate=) waits for it", dev);
        else if (!ds->guard_rate_ppm && smooth <= limit_of(m, p) + baseline)
                say(a, "on %s its io stall (%s smoothed) is under its limit (%s, its baseline included), and "
                    "GuardRate=0%% caps only at a stall", dev, ppm_text(s1, smooth),
                    ppm_text(s2, (uint64_t) limit_of(m, p) + baseline));
        else if (ds->guard_rate_ppm && !active_on(m, d->major, d->minor))
                say(a, "it has not been active on %s: no io or stall there within CapHoldTime (%s)", dev,
                    hold_text(hold, ds->cap_hold_usec));
        else
                say(a, "the writers on %s are of a higher priority, exempt (CapWrites=no) or related to it", dev);
}

static void explain_protected(Manager *m, const CgEntry *e, Answer *a) {
        const WpCap *caps[EXPLAIN_CAPS_MAX];
        size_t n = write_point_caps(&m->write_runner.state, e->cg->id, true, caps, ELEMENTSOF(caps));
        uint32_t smooth = 0, baseline = 0;
        char s1[32], s2[32], s3[32];

        say(a, "protected by policy '%s' (Protect=yes, Mode=%s): %zu writer cap%s held for it", e->policy->name,
            policy_mode_to_string(e->policy->mode), n, n == 1 ? "" : "s");
        if (write_point_stall_seen(&m->write_runner.state, e->cg->id, &smooth, &baseline))
                say(a, "its io stall: %s smoothed, against a limit of %s (IOPressureLimit=) plus %s it has alone",
                    ppm_text(s1, smooth), ppm_text(s2, limit_of(m, e)), ppm_text(s3, baseline));
        else
                say(a, "its io stall limit: %s (IOPressureLimit=); the write point has measured no stall of it yet",
                    ppm_text(s2, limit_of(m, e)));
        for (size_t i = 0; i < MIN(n, ELEMENTSOF(caps)); i++)
                say_cap(m, caps[i], true, a);
        if (n > 0)
                return;
        if (!e->signals.valid || e->signals.n_devices == 0) {
                say(a, "it has done no io yet: its io.stat lists no device, so no device is guarded for it");
                return;
        }
        for (size_t i = 0; i < e->signals.n_devices; i++)
                protected_on_device(m, e, &e->signals.devices[i], a);
}

/* ---- the method ---- */

static int append_answer(sd_bus_message *r, const Answer *a) {
        const char *lines[EXPLAIN_LINES_MAX];

        for (size_t i = 0; i < a->n; i++)
                lines[i] = a->lines[i];
        return bus_dict_namev(r, "answer", lines, a->n);
}

static int append_identity(sd_bus_message *r, const CgEntry *e) {
        int k = bus_dict_name(r, "path", e->cg->path);

        if (k >= 0 && e->unit)
                k = bus_dict_name(r, "unit", e->unit);
        if (k >= 0 && e->policy)
                k = bus_dict_str(r, "policy", e->policy->name);
        if (k >= 0 && e->policy)
                k = bus_dict_str(r, "mode", policy_mode_to_string(e->policy->mode));
        return k;
}

int method_explain(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *r = NULL;
        Manager *m = api_of(userdata)->manager;
        static Answer a;        /* the loop answers one call at a time */
        CgEntry *e;
        int k;

        k = api_resolve_argument(msg, m, &e, error);
        if (k < 0)
                return k;
        a.n = 0;
        if (protected_entry(e))
                explain_protected(m, e, &a);
        else
                explain_writer(m, e, &a);
        k = sd_bus_message_new_method_return(msg, &r);
        if (k >= 0)
                k = sd_bus_message_open_container(r, 'a', "{sv}");
        if (k >= 0)
                k = append_identity(r, e);
        if (k >= 0)
                k = api_append_protection(r, m, e);
        if (k >= 0)
                k = append_answer(r, &a);
        if (k >= 0)
                k = sd_bus_message_close_container(r);
        return k < 0 ? k : sd_bus_send(NULL, r, NULL);
}
