/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of the configuration tests: a temporary directory to use as
 * configuration root, made before each test and removed whole after it, files
 * put below it, and a guard that turns a call that hangs into a failure.
 */
#pragma once

extern char tmp_root[256];

/* cmocka setup and teardown: a new empty tmp_root, then rm -rf of it. */
int tmp_root_setup(void **state);
int tmp_root_teardown(void **state);

/* tmp_root/rel, its parent directories created. Returns a static buffer. */
const char *tmp_root_path(const char *rel);

/* Writes `content` to tmp_root/rel. */
void tmp_root_put(const char *rel, const char *content);

/* Makes tmp_root/rel a symbolic link to `target`. */
void tmp_root_link(const char *rel, const char *target);

/*
 * Ends the test program with a failure naming `what` if hang_guard_disarm()
 * is not called within `seconds`: a call that blocks or spins forever fails
 * the test at once instead of waiting for meson's timeout.
 */
void hang_guard_arm(const char *what, unsigned seconds);
void hang_guard_disarm(void);
