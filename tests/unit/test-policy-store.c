/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of runtime policy changes: names, the edit of a policy file's
 * text, and the files written below a temporary configuration root (atomic
 * replacement, validation by the loader, removal and masking).
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

#include "conf-test.h"
#include "policy-store.h"
#include "util.h"

static void test_names(void **state) {
        static const char *const good[] = { "nginx.service", "web@1.service", "batch-writers", "a_b", "x.y.z" };
        static const char *const bad[] = { "", ".", "..", "../x", "a/b", "/abs", ".hidden", "a..b", "sp ace",
                                           "tab\t", "semi;colon", "star*", "new\nline" };
        char longname[POLICY_NAME_MAX + 2];
        const char *why;

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                assert_true(policy_name_settable(good[i], NULL));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                why = NULL;
                assert_false(policy_name_settable(bad[i], &why));
                assert_non_null(why);
        }
        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        assert_false(policy_name_settable(longname, NULL));
        longname[POLICY_NAME_MAX] = '\0';
        assert_true(policy_name_settable(longname, NULL));
}

/* Runs an edit that must succeed and compares the text. */
static void edit_ok(const char *old, const char *name, const char *const *set, size_t n_set,
                    const char *const *unset, size_t n_unset,
                    const char *expected) {
        char *text = NULL, *error = NULL;

        assert_int_equal(policy_text_edit(old, name, set, n_set, unset, n_unset, &text, &error), 0);
        assert_null(error);
        assert_string_equal(text, expected);
        free(text);
}

#define HEADER "# Written by mdreclaimd for 'mdctl policy set'. Edits by hand are kept:\n" \
               "# set and unset replace only the lines of the keys they name.\n"

static void test_edit_new(void **state) {
        const char *set[] = { "DirtyLimit=256M", "Mode=enforce" };
        const char *set_match[] = { "Match=*.service", "Mode=observe" };

        /* A unit's name gives the Match= a new policy needs. */
        edit_ok(NULL, "nginx.service", set, 2, NULL, 0,
                HEADER "[Policy]\nMatch=nginx.service\nDirtyLimit=256M\nMode=enforce\n");
        /* Other names do not (the loader will say that Match= is missing). */
        edit_ok(NULL, "batch", set, 2, NULL, 0, HEADER "[Policy]\nDirtyLimit=256M\nMode=enforce\n");
        /* A Match= given wins. */
        edit_ok(NULL, "web.slice", set_match, 2, NULL, 0, HEADER "[Policy]\nMatch=*.service\nMode=observe\n");
}

static void test_edit_in_place(void **state) {
        const char *old = "# the database\n[Policy]\nMatch=db.service\n; tuned\nMode=observe\n"
                          "Priority=70\n\n# end\n";
        const char *set[] = { "Mode=enforce", "CacheFloor=1G" };
        const char *set_match[] = { "Match=a.service", "Match=b.service" };
        const char *unset[] = { "Priority" };

        edit_ok(old, "db", set, 2, NULL, 0,
                "# the database\n[Policy]\nMatch=db.service\n; tuned\nMode=enforce\nPriority=70\nCacheFloor=1G\n"
                "\n# end\n");
        edit_ok(old, "db", NULL, 0, unset, 1, "# the database\n[Policy]\nMatch=db.service\n; tuned\nMode=observe\n"
                                              "\n# end\n");
        /* Match= may repeat: all old lines go, all new ones come where the first was. */
        edit_ok("[Policy]\nMatch=x.service\nMode=off\nMatch=y.service\n", "p", set_match, 2, NULL, 0,
                "[Policy]\nMatch=a.service\nMatch=b.service\nMode=off\n");
}

static void test_edit_continuations_and_spacing(void **state) {
        const char *set[] = { "Match=c.service" };
        const char *set_mode[] = { "Mode=on" };
        const char *unset[] = { "Mode" };

        /* A value continued on indented lines is removed whole; "Key = value" and "Key: value" count. */
        edit_ok("[Policy]\nMatch=a.service\n  b.service\n  ; a comment stays\nMode = off\n", "p", set, 1, NULL, 0,
                "[Policy]\nMatch=c.service\n  ; a comment stays\nMode = off\n");
        edit_ok("[Policy]\nMatch=a.service\nMode: off\n", "p", NULL, 0, unset, 1, "[Policy]\nMatch=a.service\n");
        /* As libinih reads it, an indented line after a key continues it, even one starting with '['
         * and even after a blank line: new keys go after it, and it goes with its key. */
        edit_ok("[Policy]\nMatch=a.service\n\n  [x]\n", "p", set_mode, 1, NULL, 0,
                "[Policy]\nMatch=a.service\n\n  [x]\nMode=on\n");
        edit_ok("[Policy]\nMode=off\n  [x]\nMatch=a.service\n", "p", set_mode, 1, NULL, 0,
                "[Policy]\nMode=on\nMatch=a.service\n");
        /* Right after a header an indented line is no continuation; inserting there would make it
         * one, so the new key gets a section of its own. */
        edit_ok("[Policy]\n  [Other]\n", "p", set_mode, 1, NULL, 0, "[Policy]\n  [Other]\n\n[Policy]\nMode=on\n");
        edit_ok("[Policy]\n  Match=a.service\n", "p", set_mode, 1, NULL, 0, "[Policy]\n  Match=a.service\nMode=on\n");
        /* Text without a final newline, and without a [Policy] section. */
        edit_ok("# only a comment", "p", set, 1, NULL, 0, "# only a comment\n\n[Policy]\nMatch=c.service\n");
}

static void test_edit_other_sections_untouched(void **state) {
        const char *set[] = { "Mode=enforce" };

        /* Keys outside [Policy] are the loader's business (it reports the section). */
        edit_ok("[Policy]\nMatch=a.service\n[Other]\nMode=off\n", "p", set, 1, NULL, 0,
                "[Policy]\nMatch=a.service\nMode=enforce\n[Other]\nMode=off\n");
}

static void edit_fails(const char *const *set, size_t n_set, const char *const *unset, size_t n_unset,
                       const char *needle) {
        char *text = NULL, *error = NULL;

        assert_int_equal(policy_text_edit("[Policy]\n", "p", set, n_set, unset, n_unset, &text, &error), -EINVAL);
        assert_null(text);
        assert_non_null(error);
        if (!strstr(error, needle))
                fail_msg("'%s' does not contain '%s'", error, needle);
        free(error);
}

static void test_edit_errors(void **state) {
        const char *no_eq[] = { "Mode" };
        const char *empty_key[] = { "=x" };
        const char *bad_key[] = { "Mo de=x" };
        const char *newline[] = { "Mode=enforce\nCgroupRoot=/x" };
        const char *cr[] = { "Mode=enforce\r" };
        const char *unknown[] = { "Foo" };
        const char *unset_assign[] = { "Mode=x" };

        edit_fails(no_eq, 1, NULL, 0, "expected KEY=VALUE");
        edit_fails(empty_key, 1, NULL, 0, "expected KEY=VALUE");
        edit_fails(bad_key, 1, NULL, 0, "expected KEY=VALUE");
        edit_fails(newline, 1, NULL, 0, "line break");
        edit_fails(cr, 1, NULL, 0, "line break");
        edit_fails(NULL, 0, unknown, 1, "unknown key Foo= in [Policy] (known keys: Match, Mode, Priority");
        edit_fails(NULL, 0, unset_assign, 1, "unknown key Mode=x=");
}

/* ---- the files ---- */

static char *path_of(const char *dir, const char *name) {
        static char p[512];

        snprintf(p, sizeof(p), "%s/%s/mdreclaim/policies.d/%s.conf", tmp_root, dir, name);
        return p;
}

static char *slurp(const char *path) {
        static char buf[4096];
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static void put(const char *path, const char *text) {
        char cmd[600];
        FILE *f;

        snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
        assert_int_equal(system(cmd), 0);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static int apply(const char *name, const char *const *set, size_t n_set, const char *const *unset, size_t n_unset,
                 bool remove,
                 char **ret_message) {
        PolicyChange c = { .root = tmp_root, .name = (char *) name, .set = (char **) set, .n_set = n_set,
                           .unset = (char **) unset, .n_unset = n_unset, .remove = remove };
        char *path = NULL, *message = NULL;
        int r = policy_store_apply(&c, &path, &message);

        if (r >= 0)
                assert_string_equal(path, path_of("etc", name));
        free(path);
        if (ret_message)
                *ret_message = message;
        else
                free(message);
        return r;
}

/* Nothing but NAME.conf files (no leftover candidates) in /etc's policies.d. */
static size_t etc_files(void) {
        char cmd[600];
        FILE *p;
        size_t n = 0;
        char line[512];

        snprintf(cmd, sizeof(cmd), "ls -A '%s/etc/mdreclaim/policies.d' 2>/dev/null", tmp_root);
        p = popen(cmd, "re");
        assert_non_null(p);
        while (fgets(line, sizeof(line), p)) {
                assert_true(line[0] != '.');
                n++;
        }
        pclose(p);
        return n;
}

static void test_store_set_unset_remove(void **state) {
        const char *set[] = { "DirtyLimit=256M", "Mode=enforce" };
        const char *unset[] = { "DirtyLimit" };

        assert_int_equal(apply("db.service", set, 2, NULL, 0, false, NULL), 0);
        assert_string_equal(slurp(path_of("etc", "db.service")),
                            HEADER "[Policy]\nMatch=db.service\nDirtyLimit=256M\nMode=enforce\n");
        assert_int_equal(apply("db.service", NULL, 0, unset, 1, false, NULL), 0);
        assert_string_equal(slurp(path_of("etc", "db.service")), HEADER "[Policy]\nMatch=db.service\nMode=enforce\n");
        assert_int_equal(etc_files(), 1);
        assert_int_equal(apply("db.service", NULL, 0, NULL, 0, true, NULL), 0);
        assert_null(slurp(path_of("etc", "db.service")));
        assert_int_equal(apply("db.service", NULL, 0, NULL, 0, true, NULL), -ENOENT);
        assert_int_equal(apply("db.service", NULL, 0, unset, 1, false, NULL), -ENOENT);
        assert_int_equal(etc_files(), 0);
}

static void test_store_refuses_invalid(void **state) {
        const char *bad_value[] = { "DirtyLimit=lots" };
        const char *no_match[] = { "Mode=enforce" };
        const char *dup[] = { "Match=db.service" };
        const char *good[] = { "Mode=enforce" };
        char *message = NULL;

        assert_int_equal(apply("db.service", bad_value, 1, NULL, 0, false, &message), -EINVAL);
        /* The loader's message, naming the file the policy would be in, not the candidate. */
        assert_non_null(strstr(message, path_of("etc", "db.service")));
        assert_non_null(strstr(message, ":5: DirtyLimit=: expected a size"));
        assert_null(strstr(message, "/."));
        free(message);
        assert_int_equal(etc_files(), 0);

        assert_int_equal(apply("batch", no_match, 1, NULL, 0, false, &message), -EINVAL);
        assert_non_null(strstr(message, "policy 'batch' has no Match="));
        free(message);

        assert_int_equal(apply("db.service", good, 1, NULL, 0, false, NULL), 0);
        assert_int_equal(apply("other", dup, 1, NULL, 0, false, &message), -EINVAL);
        assert_non_null(strstr(message, "duplicate policy"));
        free(message);
        assert_int_equal(etc_files(), 1);

        assert_int_equal(apply("../escape", good, 1, NULL, 0, false, &message), -EINVAL);
        assert_non_null(strstr(message, "invalid policy name"));
        free(message);
        assert_int_equal(apply("db.service", NULL, 0, NULL, 0, true, NULL), 0);
}

static void test_store_lower_directories(void **state) {
        const char *set[] = { "Mode=enforce" };
        char link[64] = "";

        /* A shipped policy is copied up with the change ... */
        put(path_of("usr/lib", "shipped"), "[Policy]\nMatch=shipped.service\nPriority=70\n");
        assert_int_equal(apply("shipped", set, 1, NULL, 0, false, NULL), 0);
        assert_string_equal(slurp(path_of("etc", "shipped")), "[Policy]\nMatch=shipped.service\nPriority=70\n"
                                                              "Mode=enforce\n");
        assert_string_equal(slurp(path_of("usr/lib", "shipped")), "[Policy]\nMatch=shipped.service\nPriority=70\n");
        /* ... and removing it masks the shipped one. */
        assert_int_equal(apply("shipped", NULL, 0, NULL, 0, true, NULL), 0);
        assert_true(readlink(path_of("etc", "shipped"), link, sizeof(link) - 1) > 0);
        assert_string_equal(link, "/dev/null");
        assert_int_equal(apply("shipped", NULL, 0, NULL, 0, true, NULL), -ENOENT);
        /* Set on a masked policy starts afresh and replaces the mask. */
        assert_int_equal(apply("shipped", set, 1, NULL, 0, false, NULL), -EINVAL);   /* no Match= */
        unlink(path_of("etc", "shipped"));
        unlink(path_of("usr/lib", "shipped"));
}

static void test_store_broken_neighbour_blocks_changes(void **state) {
        const char *set[] = { "Mode=enforce" };
        char *message = NULL;

        put(path_of("etc", "broken"), "[Policy]\nMatch=x.service\nPriority=high\n");
        assert_int_equal(apply("db.service", set, 1, NULL, 0, false, &message), -EINVAL);
        assert_non_null(strstr(message, "broken.conf:3: Priority="));
        free(message);
        assert_null(slurp(path_of("etc", "db.service")));
        unlink(path_of("etc", "broken"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_edit_new),
                cmocka_unit_test(test_edit_in_place),
                cmocka_unit_test(test_edit_continuations_and_spacing),
                cmocka_unit_test(test_edit_other_sections_untouched),
                cmocka_unit_test(test_edit_errors),
                cmocka_unit_test_setup_teardown(test_store_set_unset_remove, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_store_refuses_invalid, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_store_lower_directories, tmp_root_setup, tmp_root_teardown),
                cmocka_unit_test_setup_teardown(test_store_broken_neighbour_blocks_changes, tmp_root_setup, tmp_root_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
