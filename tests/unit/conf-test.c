/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "conf-test.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

char tmp_root[256];

int tmp_root_setup(void **state) {
        const char *tmp = getenv("TMPDIR");

        snprintf(tmp_root, sizeof(tmp_root), "%s/mdreclaim-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        return mkdtemp(tmp_root) ? 0 : -1;
}

int tmp_root_teardown(void **state) {
        char cmd[512];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
        return system(cmd) == 0 ? 0 : -1;
}

const char *tmp_root_path(const char *rel) {
        static char path[512];

        snprintf(path, sizeof(path), "%s/%s", tmp_root, rel);
        for (char *s = path + strlen(tmp_root) + 1; *s; s++)
                if (*s == '/') {
                        *s = '\0';
                        (void) mkdir(path, 0755);
                        *s = '/';
                }
        return path;
}

void tmp_root_put(const char *rel, const char *content) {
        FILE *f = fopen(tmp_root_path(rel), "we");

        assert_non_null(f);
        fputs(content, f);
        assert_int_equal(fclose(f), 0);
}

void tmp_root_link(const char *rel, const char *target) {
        char copy[512];

        snprintf(copy, sizeof(copy), "%s", target);     /* it may be tmp_root_path()'s buffer */
        assert_int_equal(symlink(copy, tmp_root_path(rel)), 0);
}

static const char *hang_what = "";

static void hang_guard_fire(int sig) {
        static const char msg[] = " did not return: it hangs\n";

        (void) sig;
        (void) !write(STDERR_FILENO, hang_what, strlen(hang_what));
        (void) !write(STDERR_FILENO, msg, sizeof(msg) - 1);
        _exit(EXIT_FAILURE);
}

void hang_guard_arm(const char *what, unsigned seconds) {
        hang_what = what;
        signal(SIGALRM, hang_guard_fire);
        alarm(seconds);
}

void hang_guard_disarm(void) {
        alarm(0);
}
