/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of what the loader accepts as a configuration file (issue 19):
 * only a regular file of at most 1 MiB, reached directly or through a link. A
 * FIFO, a device, a socket, a directory or a larger file in its place is an
 * error naming the path, never a mask and never a wait; a link to /dev/null
 * and an empty policy file still mask. Also the message of a directory with
 * too many files.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf.h"
#include "log.h"
#include "conf-test.h"
#include "util.h"

/* The bound docs/configuration.md gives for one file. */
#define FILE_SIZE_BOUND (1024 * 1024)
/* A load that has not returned by then hangs (it takes milliseconds). */
#define HANG_SECONDS 60

#define MAIN_FILE "etc/mdreclaim/mdreclaimd.conf"
#define DROPIN "etc/mdreclaim/mdreclaimd.conf.d/10-x.conf"
#define POLICY "etc/mdreclaim/policies.d/x.conf"

static void dump(const ConfDiag *d) {
        for (size_t i = 0; i < d->n_messages; i++)
                fprintf(stderr, "  diag: %s\n", d->messages[i]);
}

/* config_load() under a hang guard. */
static int load(ConfDiag *d, Config **ret) {
        int r;

        hang_guard_arm("config_load()", HANG_SECONDS);
        r = config_load(tmp_root, ret, d);
        hang_guard_disarm();
        return r;
}

static Config *load_ok(void) {
        ConfDiag d = {};
        Config *c = NULL;
        int r = load(&d, &c);

        if (r < 0)
                dump(&d);
        assert_int_equal(r, 0);
        conf_diag_clear(&d);
        return c;
}

/* The load is refused with a message on `rel` that holds `text`. */
static void load_refused(const char *rel, const char *text) {
        ConfDiag d = {};
        Config *c = NULL;
        int r = load(&d, &c);
        bool found = false;

        for (size_t i = 0; i < d.n_messages; i++)
                found |= strstr(d.messages[i], rel) && strstr(d.messages[i], text);
        if (r != -EINVAL || !found) {
                dump(&d);
                fail_msg("expected a refusal naming %s with '%s', got %d", rel, text, r);
        }
        assert_null(c);
        conf_diag_clear(&d);
}

static int make_fifo(const char *path) {
        return mkfifo(path, 0644);
}

static int make_zero_link(const char *path) {
        return symlink("/dev/zero", path);
}

static int make_urandom_link(const char *path) {
        return symlink("/dev/urandom", path);
}

static int make_directory(const char *path) {
        return mkdir(path, 0755);
}

/* A socket file stays after its fd is closed. */
static int make_socket(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;

        if (strlen(path) >= sizeof(sa.sun_path))
                skip();
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        return fd < 0 ? -1 : bind(fd, (struct sockaddr *) &sa, sizeof(sa));
}

/* A policy of exactly `size` bytes: [Policy], Match=, then comment lines of 100 bytes. */
static int make_policy_of_size(const char *path, size_t size) {
        static const char head[] = "[Policy]\nMatch=x.service\n";
        FILE *f = fopen(path, "we");
        size_t left = size - (sizeof(head) - 1);

        assert_non_null(f);
        fputs(head, f);
        for (; left > 100; left -= 100)
                fprintf(f, ";%098d\n", 0);
        fprintf(f, ";%0*d\n", (int) left - 2, 0);
        assert_int_equal(ftell(f), (long) size);
        return fclose(f);
}

static int make_too_large(const char *path) {
        return make_policy_of_size(path, FILE_SIZE_BOUND + 1);
}

typedef struct RefusedCase {
        const char *rel;
        int (*make)(const char *path);
        const char *expect;
} RefusedCase;

#define REFUSED(name, rel, make, expect) \
        static const RefusedCase name = { rel, make, expect }
REFUSED(fifo_main, MAIN_FILE, make_fifo, "is a FIFO, not a regular file");
REFUSED(fifo_dropin, DROPIN, make_fifo, "is a FIFO, not a regular file");
REFUSED(fifo_policy, POLICY, make_fifo, "is a FIFO, not a regular file");
REFUSED(zero_main, MAIN_FILE, make_zero_link, "is a character device");
REFUSED(urandom_dropin, DROPIN, make_urandom_link, "is a character device");
REFUSED(zero_policy, POLICY, make_zero_link, "is a character device");
REFUSED(urandom_policy, POLICY, make_urandom_link, "is a character device");
REFUSED(directory_policy, POLICY, make_directory, "is a directory");
REFUSED(socket_policy, POLICY, make_socket, "is a socket");
REFUSED(large_policy, POLICY, make_too_large, "is larger than 1048576 bytes");

/*
 * The file of `*state` takes the place of a configuration file; a policy
 * there would have masked (that is, silently dropped) the shipped x.conf.
 */
static void test_refused(void **state) {
        const RefusedCase *t = *state;

        tmp_root_put("usr/lib/mdreclaim/policies.d/x.conf", "[Policy]\nMatch=x.service\n");
        assert_int_equal(t->make(tmp_root_path(t->rel)), 0);
        load_refused(t->rel, t->expect);
}

static void test_size_bound_itself_is_fine(void **state) {
        Config *c;

        assert_int_equal(make_policy_of_size(tmp_root_path(POLICY), FILE_SIZE_BOUND), 0);
        c = load_ok();
        assert_int_equal(c->n_policies, 1);
        config_free(c);
}

static void test_null_links_and_empty_policies_still_mask(void **state) {
        Config *c;

        tmp_root_put("usr/lib/mdreclaim/mdreclaimd.conf", "[Daemon]\nInterval=5s\n");
        tmp_root_put("usr/lib/mdreclaim/mdreclaimd.conf.d/10-x.conf", "[Daemon]\nLogLevel=debug\n");
        tmp_root_put("usr/lib/mdreclaim/policies.d/a.conf", "[Policy]\nMatch=a.service\n");
        tmp_root_put("usr/lib/mdreclaim/policies.d/b.conf", "[Policy]\nMatch=b.service\n");
        tmp_root_put("usr/lib/mdreclaim/policies.d/c.conf", "[Policy]\nMatch=c.service\n");
        tmp_root_link(MAIN_FILE, "/dev/null");
        tmp_root_link(DROPIN, "/dev/null");
        tmp_root_link("etc/mdreclaim/policies.d/a.conf", "/dev/null");
        tmp_root_put("etc/mdreclaim/policies.d/b.conf", "");
        /* A link to a regular file is read as the file. */
        tmp_root_put("srv/c.conf", "[Policy]\nMatch=c.service\nPriority=70\n");
        tmp_root_link("etc/mdreclaim/policies.d/c.conf", tmp_root_path("srv/c.conf"));

        c = load_ok();
        assert_int_equal(c->daemon.interval_usec, USEC_PER_SEC);
        assert_int_equal(c->daemon.log_level, LOG_INFO);
        assert_int_equal(c->n_policies, 1);
        assert_string_equal(c->policies[0]->name, "c");
        assert_int_equal(c->policies[0]->priority, 70);
        config_free(c);
}

static void test_too_many_files_says_the_configuration_is_refused(void **state) {
        char rel[128], text[64];

        for (int i = 0; i <= CONFIG_DIR_FILES_MAX; i++) {
                snprintf(rel, sizeof(rel), "etc/mdreclaim/policies.d/p%04d.conf", i);
                snprintf(text, sizeof(text), "[Policy]\nMatch=p%04d.service\n", i);
                tmp_root_put(rel, text);
        }
        load_refused("policies.d", "the whole configuration is refused");
}

#define REFUSED_TEST(c) { .name = "refused: " #c, .test_func = test_refused, .setup_func = tmp_root_setup, \
                          .teardown_func = tmp_root_teardown, .initial_state = (void *) &(c) }
#define ROOT_TEST(f) cmocka_unit_test_setup_teardown(f, tmp_root_setup, tmp_root_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                REFUSED_TEST(fifo_main),
                REFUSED_TEST(fifo_dropin),
                REFUSED_TEST(fifo_policy),
                REFUSED_TEST(zero_main),
                REFUSED_TEST(urandom_dropin),
                REFUSED_TEST(zero_policy),
                REFUSED_TEST(urandom_policy),
                REFUSED_TEST(directory_policy),
                REFUSED_TEST(socket_policy),
                REFUSED_TEST(large_policy),
                ROOT_TEST(test_size_bound_itself_is_fine),
                ROOT_TEST(test_null_links_and_empty_policies_still_mask),
                ROOT_TEST(test_too_many_files_says_the_configuration_is_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
