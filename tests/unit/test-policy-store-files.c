/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the policy writer's files beyond a normal change (issue 19):
 * the candidates an interrupted change leaves in /etc's policies.d are never
 * loaded and are removed by policy_store_clean_stale(), which touches nothing
 * else; and a policy file that is a FIFO is refused, not waited on.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf.h"
#include "policy-store.h"
#include "conf-test.h"
#include "util.h"

#define STALE_HEX "0123456789abcdef"

#define DIR "etc/mdreclaim/" CONFIG_POLICY_DIR "/"

static bool exists(const char *name) {
        char path[600];
        struct stat st;

        snprintf(path, sizeof(path), "%s/" DIR "%s", tmp_root, name);
        return lstat(path, &st) == 0;
}

/* Names of the writer's shape that are not its own leftovers, or not files. */
static const char *const kept[] = {
        "db.service.conf",
        ".db.service.conf.0123456789ABCDEF",    /* upper-case hex */
        ".db.service.conf.0123456789abcde",     /* 15 digits */
        ".db.service.conf.0123456789abcdef0",   /* 17 digits */
        ".db.service.conf." STALE_HEX "~",
        "..conf." STALE_HEX,                    /* no name */
        ".a..b.conf." STALE_HEX,                /* not a settable name */
        ".a b.conf." STALE_HEX,
        "x.db.conf." STALE_HEX,                 /* not hidden */
        ".db.cfg." STALE_HEX,
};

static void test_clean_stale_removes_only_leftovers(void **state) {
        char rel[256];

        tmp_root_put(DIR ".db.service.conf." STALE_HEX, "[Policy]\nMatch=db.service\n");
        tmp_root_put(DIR ".web@1.conf.fedcba9876543210", "[Policy]\nMatch=");   /* cut short by the kill */
        tmp_root_link(DIR ".old.conf.00000000000000ff", "/dev/null");
        for (size_t i = 0; i < ELEMENTSOF(kept); i++) {
                snprintf(rel, sizeof(rel), DIR "%s", kept[i]);
                tmp_root_put(rel, "[Policy]\nMatch=kept.service\n");
        }
        /* The right shape, but not what the writer makes. */
        assert_int_equal(mkdir(tmp_root_path(DIR ".dir.conf." STALE_HEX), 0755), 0);
        assert_int_equal(mkfifo(tmp_root_path(DIR ".fifo.conf." STALE_HEX), 0644), 0);
        tmp_root_link(DIR ".link.conf." STALE_HEX, "db.service.conf");

        assert_int_equal(policy_store_clean_stale(tmp_root), 3);
        assert_false(exists(".db.service.conf." STALE_HEX));
        assert_false(exists(".web@1.conf.fedcba9876543210"));
        assert_false(exists(".old.conf.00000000000000ff"));
        for (size_t i = 0; i < ELEMENTSOF(kept); i++)
                assert_true(exists(kept[i]));
        assert_true(exists(".dir.conf." STALE_HEX));
        assert_true(exists(".fifo.conf." STALE_HEX));
        assert_true(exists(".link.conf." STALE_HEX));
        assert_true(exists("db.service.conf"));   /* the link's target */

        assert_int_equal(policy_store_clean_stale(tmp_root), 0);
}

static void test_clean_stale_without_directory(void **state) {
        assert_int_equal(policy_store_clean_stale(tmp_root), 0);
}

static void test_leftovers_are_never_loaded(void **state) {
        ConfDiag d = {};
        Config *c = NULL;

        tmp_root_put(DIR ".db.service.conf." STALE_HEX, "this is no policy\n");
        tmp_root_put(DIR ".half.conf." STALE_HEX, "[Policy]\nMatch=db.service\n");
        tmp_root_put(DIR "db.service.conf", "[Policy]\nMatch=db.service\n");
        assert_int_equal(config_load(tmp_root, &c, &d), 0);
        assert_int_equal(c->n_policies, 1);
        assert_int_equal(c->n_files, 1);
        config_free(c);
        conf_diag_clear(&d);
}

static void test_set_on_a_fifo_is_refused(void **state) {
        const char *set[] = { "Mode=enforce" };
        PolicyChange change = { .root = tmp_root, .name = (char *) "fifo", .set = (char **) set, .n_set = 1 };
        char *path = NULL, *message = NULL;
        int r;

        assert_int_equal(mkfifo(tmp_root_path(DIR "fifo.conf"), 0644), 0);
        hang_guard_arm("policy_store_apply()", 60);
        r = policy_store_apply(&change, &path, &message);
        hang_guard_disarm();
        fprintf(stderr, "policy set on a FIFO: %d %s\n", r, strna(message));
        assert_true(r < 0);
        assert_null(path);
        assert_non_null(message);
        assert_non_null(strstr(message, "fifo.conf"));
        assert_non_null(strstr(message, "FIFO"));
        free(message);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_clean_stale_removes_only_leftovers, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_clean_stale_without_directory, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_leftovers_are_never_loaded, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_set_on_a_fifo_is_refused, tmp_root_setup, tmp_root_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
