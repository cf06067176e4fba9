/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Policies changed at runtime (mdctl policy set/unset): the edit of a policy
 * file's text, and its persistence in /etc/mdreclaim/policies.d/NAME.conf.
 * A candidate file is written beside the real one, validated by the same
 * loader that reads the configuration at start, and renamed over the old
 * file only if the whole configuration is still good; a crash leaves the old
 * file or the new one, and perhaps a hidden candidate that
 * policy_store_clean_stale() removes. policy_store_apply() blocks (fsync): a
 * worker runs it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define POLICY_NAME_MAX 128
/* A policy file larger than this is not edited (lines are at most 199 bytes). */
#define POLICY_FILE_MAX (64 * 1024)

/*
 * Whether `name` may name a policy set at runtime: 1 to POLICY_NAME_MAX
 * letters, digits and "-_.@", not starting with '.', without "..". On false,
 * *ret_why says why.
 */
bool policy_name_settable(const char *name, const char **ret_why);

/*
 * Edits a policy file's text: every line of a key named in `set` (KEY=VALUE)
 * or `unset` (KEY) is removed, the new assignments take the place of the
 * first line of their key, or go to the end of [Policy]. Comments and other
 * lines stay. `old` NULL starts a new file; a new policy named after a unit
 * (NAME.service, .scope, .slice) without Match= gets Match=NAME. Returns 0, or
 * -EINVAL with *ret_error saying what is malformed (values are not checked
 * here: the loader does that).
 */
int policy_text_edit(const char *old, const char *name, const char *const *set, size_t n_set,
                     const char *const *unset, size_t n_unset, char **ret_text, char **ret_error);

typedef struct PolicyChange {
        char *root;             /* configuration root; "" for the real one */
        char *name;
        char **set;             /* KEY=VALUE */
        size_t n_set;
        char **unset;           /* KEY */
        size_t n_unset;
        bool remove;            /* the whole policy */
} PolicyChange;

void policy_change_free(PolicyChange *c);

/*
 * Applies a change to the files. Returns 0 with the file written, removed
 * or masked in *ret_path; or a negative errno with *ret_message: -EINVAL for
 * a change the configuration refuses (the loader's file:line messages, one
 * per line), -ENOENT for a policy that does not exist, others for I/O.
 */
int policy_store_apply(const PolicyChange *c, char **ret_path, char **ret_message);

/*
 * Removes what an interrupted policy_store_apply() (kill -9, a crash) left in
 * /etc/mdreclaim/policies.d below `config_root` (NULL, "" or "/" for the real
 * one): the hidden candidates named ".NAME.conf." and 16 hex digits that are
 * regular files, or links to /dev/null (a mask not renamed yet). Nothing else
 * is touched; each file removed is logged. Call it before any change can run
 * (at start): it would take a running change's candidate too. Returns how many
 * were removed (0 without the directory), or a negative errno if the directory
 * could not be read or a file not removed (the others are removed still).
 */
int policy_store_clean_stale(const char *config_root);

/* A policy file's text as it is on disk (for showing it): bounded, never blocking, no NUL bytes
 * (-EBADMSG); the errors of conf_file_read() otherwise. */
int policy_store_read_text(const char *path, char **ret_text);
