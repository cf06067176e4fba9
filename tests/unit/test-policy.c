/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of policy matching: which policy governs a cgroup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy.h"
#include "unit-name.h"
#include "util.h"

static Policy *make(const char *name, const char *const *patterns) {
        Policy *p = policy_new(name, "/test");

        assert_non_null(p);
        for (; *patterns; patterns++) {
                p->matches = realloc(p->matches, (p->n_matches + 1) * sizeof(PolicyMatch));
                assert_non_null(p->matches);
                p->matches[p->n_matches++] = (PolicyMatch) { .pattern = strdup(*patterns), .line = 1 };
        }
        return p;
}

static void test_unit_of_path(void **state) {
        assert_string_equal(cgroup_path_unit("/system.slice/nginx.service"), "nginx.service");
        assert_string_equal(cgroup_path_unit("/system.slice"), "system.slice");
        assert_string_equal(cgroup_path_unit("/user.slice/user-0.slice/session-1.scope"), "session-1.scope");
        assert_null(cgroup_path_unit("/system.slice/nginx.service/worker"));
        assert_null(cgroup_path_unit("/"));
        assert_null(cgroup_path_unit("/.service"));
}

static void test_specificity(void **state) {
        Policy *p[] = {
                make("a-glob-all-services", (const char *const[]) { "*.service", NULL }),
                make("b-longer-glob", (const char *const[]) { "nginx*.service", NULL }),
                make("c-exact-unit", (const char *const[]) { "nginx.service", NULL }),
                make("d-exact-path", (const char *const[]) { "/system.slice/nginx.service", NULL }),
                make("e-path-glob", (const char *const[]) { "/batch.slice/*", NULL }),
        };
        const size_t n = ELEMENTSOF(p);

        assert_string_equal(policy_find(p, n, "/system.slice/nginx.service", "nginx.service")->name, "d-exact-path");
        assert_string_equal(policy_find(p, n, "/other.slice/nginx.service", "nginx.service")->name, "c-exact-unit");
        assert_string_equal(policy_find(p, n, "/system.slice/nginx-2.service", "nginx-2.service")->name,
                            "b-longer-glob");
        assert_string_equal(policy_find(p, n, "/system.slice/cron.service", "cron.service")->name,
                            "a-glob-all-services");
        assert_string_equal(policy_find(p, n, "/batch.slice/job-1", NULL)->name, "e-path-glob");
        /* A path glob's '*' does not cross '/'. */
        assert_null(policy_find(p, n, "/batch.slice/job-1/sub", NULL));
        assert_null(policy_find(p, n, "/system.slice", "system.slice"));
        for (size_t i = 0; i < n; i++)
                policy_free(p[i]);
}

static void test_tie_goes_to_first_name(void **state) {
        Policy *p[] = {
                make("zeta", (const char *const[]) { "web*", NULL }),
                make("alpha", (const char *const[]) { "*.sl", "web?", NULL }),
        };

        /* Both globs are 4 characters long: the name that sorts first wins. */
        assert_string_equal(policy_find(p, 2, "/webx", "webx")->name, "alpha");
        policy_free(p[0]);
        policy_free(p[1]);
}

static void test_pattern_validity(void **state) {
        const char *why;

        assert_true(policy_match_valid("nginx.service", &why));
        assert_true(policy_match_valid("*.slice", &why));
        assert_true(policy_match_valid("getty@tty1.service", &why));
        assert_true(policy_match_valid("/system.slice/foo.service", &why));
        assert_true(policy_match_valid("/", &why));
        assert_false(policy_match_valid("#note", &why));
        assert_non_null(why);
        assert_false(policy_match_valid("system.slice/foo.service", &why));
        assert_false(policy_match_valid("/a//b", &why));
        assert_false(policy_match_valid("/a/../b", &why));
        assert_false(policy_match_valid("/a/", &why));
        assert_false(policy_match_valid("a$b", &why));
        assert_false(policy_match_valid("", &why));
}

static void test_modes(void **state) {
        assert_int_equal(policy_mode_from_string("enforce"), POLICY_MODE_ENFORCE);
        assert_int_equal(policy_mode_from_string("observe"), POLICY_MODE_OBSERVE);
        assert_int_equal(policy_mode_from_string("off"), POLICY_MODE_OFF);
        assert_int_equal(policy_mode_from_string("Enforce"), -EINVAL);
        assert_string_equal(policy_mode_to_string(POLICY_MODE_OBSERVE), "observe");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unit_of_path),
                cmocka_unit_test(test_specificity),
                cmocka_unit_test(test_tie_goes_to_first_name),
                cmocka_unit_test(test_pattern_validity),
                cmocka_unit_test(test_modes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
