/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target for configuration loading: conf_file_parse through
 * config_load. The input is written to one memfd, which two configuration
 * roots in a temporary directory show through symlinks: one as
 * etc/mdreclaim/mdreclaimd.conf, one as etc/mdreclaim/policies.d/fuzz.conf.
 * Two roots rather than one holding both, because a single file can never be
 * a valid daemon file and a valid policy at once (their sections differ), so
 * a shared root would never reach the success path. Checked: no crash, no
 * leak (ASan), return 0 exactly when no diagnostic was given, and a
 * configuration that loads holds only values its keys allow.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "fuzz.h"
#include "log.h"
#include "policy.h"
#include "util.h"

typedef struct FuzzRoots {
        int fd;                 /* the memfd holding the input */
        char *top;              /* the temporary directory */
        char *daemon_root;      /* root with the input as mdreclaimd.conf */
        char *policy_root;      /* root with the input as policies.d/fuzz.conf */
} FuzzRoots;

static FuzzRoots roots = { .fd = -1 };

static char *join(const char *a, const char *b) {
        char *s;

        if (asprintf(&s, "%s/%s", a, b) < 0)
                abort();
        return s;
}

/* mkdir -p of `rel` below `top`, then a symlink `rel`/`name` to `target`. */
static void make_link(const char *top, const char *rel, const char *name, const char *target) {
        _cleanup_free_ char *copy = strdup(rel), *dir = strdup(top), *path = NULL;
        char *save = NULL;

        if (!copy || !dir)
                abort();
        for (char *part = strtok_r(copy, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
                char *next = join(dir, part);
                free(dir);
                dir = next;
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        fuzz_fail(__FILE__, __LINE__, "mkdir below the temporary root");
        }
        path = join(dir, name);
        if (symlink(target, path) < 0)
                fuzz_fail(__FILE__, __LINE__, "symlink below the temporary root");
}

static void roots_remove(void) {
        static const char *const paths[] = {
                "daemon/etc/mdreclaim/mdreclaimd.conf", "daemon/etc/mdreclaim", "daemon/etc", "daemon",
                "policy/etc/mdreclaim/policies.d/fuzz.conf", "policy/etc/mdreclaim/policies.d",
                "policy/etc/mdreclaim", "policy/etc", "policy", "",
        };

        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                _cleanup_free_ char *p = join(roots.top, paths[i]);
                (void) remove(p);
        }
        free(roots.top);
        free(roots.daemon_root);
        free(roots.policy_root);
        closep(&roots.fd);
        roots = (FuzzRoots) { .fd = -1 };
}

static void roots_setup(void) {
        const char *tmp = getenv("TMPDIR");
        _cleanup_free_ char *target = NULL,
                *template = join(tmp && *tmp ? tmp : "/tmp", "mdreclaim-fuzz-conf.XXXXXX");

        roots.fd = memfd_create("fuzz-conf", MFD_CLOEXEC);
        if (roots.fd < 0 || !mkdtemp(template))
                fuzz_fail(__FILE__, __LINE__, "memfd and temporary directory");
        roots.top = TAKE_PTR(template);
        roots.daemon_root = join(roots.top, "daemon");
        roots.policy_root = join(roots.top, "policy");
        if (asprintf(&target, "/proc/self/fd/%d", roots.fd) < 0)
                abort();
        make_link(roots.top, "daemon/etc/mdreclaim", CONFIG_MAIN_FILE, target);
        make_link(roots.top, "policy/etc/mdreclaim/" CONFIG_POLICY_DIR, "fuzz.conf", target);
        atexit(roots_remove);
}

static void input_write(const uint8_t *data, size_t size) {
        size_t done = 0;

        if (ftruncate(roots.fd, 0) < 0)
                fuzz_fail(__FILE__, __LINE__, "ftruncate of the memfd");
        while (done < size) {
                ssize_t n = pwrite(roots.fd, data + done, size - done, (off_t) done);
                if (n <= 0)
                        fuzz_fail(__FILE__, __LINE__, "write to the memfd");
                done += (size_t) n;
        }
}

static void check_size_or_percent(const SizeOrPercent *v) {
        fuzz_check(!v->is_percent || (v->set && v->ppm <= PPM_ONE));
}

static void check_policy(const Policy *p) {
        const SizeOrPercent *bg = &p->dirty_background, *lim = &p->dirty_limit;

        fuzz_check(streq(p->name, "fuzz"));
        fuzz_check(p->n_matches >= 1 && p->n_matches <= POLICY_MATCH_MAX);
        for (size_t i = 0; i < p->n_matches; i++) {
                const char *why = NULL;
                fuzz_check(p->matches[i].pattern[0] != '\0');
                fuzz_check(!strpbrk(p->matches[i].pattern, " \t"));
                fuzz_check(policy_match_valid(p->matches[i].pattern, &why));
        }
        fuzz_check(p->mode < _POLICY_MODE_MAX);
        fuzz_check(p->priority <= POLICY_PRIORITY_MAX);
        fuzz_check(p->pressure_target_ppm <= PPM_ONE);
        fuzz_check(p->io_pressure_limit_ppm <= PPM_ONE);
        fuzz_check(p->reclaim_step_max > 0);
        check_size_or_percent(bg);
        check_size_or_percent(lim);
        check_size_or_percent(&p->write_rate_min);
        if (bg->set && lim->set && bg->is_percent == lim->is_percent)
                fuzz_check(bg->is_percent ? bg->ppm <= lim->ppm : bg->bytes <= lim->bytes);
}

static bool ppm_nonzero(uint32_t ppm) {
        return ppm > 0 && ppm <= PPM_ONE;
}

static bool interval_in_range(uint64_t usec) {
        return usec >= INTERVAL_MIN_USEC && usec <= INTERVAL_MAX_USEC;
}

static void check_config(const Config *c, bool policy_root) {
        const DaemonSettings *d = &c->daemon;

        fuzz_check(interval_in_range(d->interval_usec));
        fuzz_check(interval_in_range(d->rescan_interval_usec));
        fuzz_check(interval_in_range(d->cap_hold_usec));
        fuzz_check(d->pressure_window_usec >= 500 * USEC_PER_MSEC &&
                   d->pressure_window_usec <= 10 * USEC_PER_SEC);
        fuzz_check(ppm_nonzero(d->system_pressure_threshold_ppm));
        fuzz_check(ppm_nonzero(d->io_pressure_limit_ppm));
        fuzz_check(ppm_nonzero(d->write_rate_min_ppm));
        fuzz_check(ppm_nonzero(d->global_dirty_guard_ppm));
        fuzz_check(d->guard_rate_ppm <= 1000000);
        fuzz_check(ppm_nonzero(d->mem_available_min_ppm));
        fuzz_check(interval_in_range(d->throttle_hold_usec));
        fuzz_check(d->log_level >= LOG_EMERG && d->log_level <= LOG_DEBUG);
        fuzz_check(!d->cgroup_root || (d->cgroup_root[0] == '/' && !strpbrk(d->cgroup_root, " \t")));
        fuzz_check(c->n_files <= 1);
        fuzz_check(c->n_policies <= (policy_root ? 1u : 0u));
        for (size_t i = 0; i < c->n_policies; i++)
                check_policy(c->policies[i]);
}

static void load_and_check(const char *root, bool policy_root) {
        static Config untouched;
        _cleanup_(conf_diag_clear) ConfDiag diag = {};
        Config *c = &untouched;
        int r = config_load(root, &c, &diag);

        /* ENOMEM cannot happen here: libFuzzer's malloc limit aborts instead. */
        fuzz_check(r == 0 || r == -EINVAL);
        fuzz_check((r == 0) == (conf_diag_count(&diag) == 0));
        fuzz_check(diag.n_messages <= CONF_DIAG_MAX);
        for (size_t i = 0; i < diag.n_messages; i++)
                /* Every message names a file of this root, and says something. */
                fuzz_check(strncmp(diag.messages[i], root, strlen(root)) == 0 &&
                           strstr(diag.messages[i] + strlen(root), ": ") &&
                           !strchr(diag.messages[i], '\n'));
        if (r < 0) {
                fuzz_check(c == &untouched);
                return;
        }
        fuzz_check(c && c != &untouched);
        check_config(c, policy_root);
        config_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (roots.fd < 0)
                roots_setup();
        input_write(data, size);
        load_and_check(roots.daemon_root, false);
        load_and_check(roots.policy_root, true);
        return 0;
}
