/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "policy.h"

#include <fnmatch.h>
#include <string.h>

#include "util.h"

static const char *const mode_names[_POLICY_MODE_MAX] = {
        [POLICY_MODE_OFF] = "off",
        [POLICY_MODE_OBSERVE] = "observe",
        [POLICY_MODE_ENFORCE] = "enforce",
};

const char *policy_mode_to_string(PolicyMode m) {
        return m < _POLICY_MODE_MAX ? mode_names[m] : NULL;
}

int policy_mode_from_string(const char *s) {
        for (int i = 0; i < _POLICY_MODE_MAX; i++)
                if (streq(s, mode_names[i]))
                        return i;
        return -EINVAL;
}

Policy *policy_new(const char *name, const char *file) {
        Policy *p = calloc(1, sizeof(Policy));

        if (!p)
                return NULL;
        p->name = strdup(name);
        p->file = strdup(file);
        if (!p->name || !p->file)
                return policy_free(p);
        p->mode = POLICY_MODE_OBSERVE;
        p->priority = POLICY_PRIORITY_DEFAULT;
        p->cap_writes = true;
        p->metadata_cache_max = UINT64_MAX;
        p->reclaim_step_max = UINT64_C(16) << 20;
        return p;
}

Policy *policy_free(Policy *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_matches; i++)
                free(p->matches[i].pattern);
        free(p->matches);
        free(p->name);
        free(p->file);
        free(p);
        return NULL;
}

static bool is_glob(const char *s) {
        return strpbrk(s, "*?[") != NULL;
}

bool policy_match_valid(const char *pattern, const char **ret_why) {
        const char *why = NULL;

        if (!*pattern)
                why = "empty pattern";
        else if (pattern[0] == '#')
                why = "'#' starts a comment only at the beginning of a line";
        else if (pattern[0] == '/') {
                if (strstr(pattern, "//"))
                        why = "a cgroup path may not contain '//'";
                else if (strstr(pattern, "/../") || strstr(pattern, "/./") ||
                         (strlen(pattern) >= 3 && streq(pattern + strlen(pattern) - 3, "/..")))
                        why = "a cgroup path may not contain '.' or '..' components";
                else if (strlen(pattern) > 1 && pattern[strlen(pattern) - 1] == '/')
                        why = "a cgroup path may not end in '/'";
        } else if (strchr(pattern, '/'))
                why = "a unit name cannot contain '/' (a cgroup path starts with '/')";
        else if (strspn(pattern, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789:-_.\\@*?[]!") != strlen(pattern))
                why = "a unit name or glob may hold only letters, digits, ':-_.\\@' and '*?[]!'";
        if (ret_why)
                *ret_why = why;
        return !why;
}

/*
 * Scores: exact path > exact unit > globs, and among globs the longer pattern.
 * The class sits above any possible pattern length.
 */
#define SCORE_CLASS(c) ((uint64_t) (c) << 32)

uint64_t policy_match_score(const Policy *p, const char *path, const char *unit) {
        uint64_t best = 0;

        for (size_t i = 0; i < p->n_matches; i++) {
                const char *pat = p->matches[i].pattern;
                const char *subject = pat[0] == '/' ? path : unit;
                uint64_t score;

                if (!subject)
                        continue;
                if (!is_glob(pat)) {
                        if (!streq(pat, subject))
                                continue;
                        score = SCORE_CLASS(pat[0] == '/' ? 3 : 2);
                } else {
                        if (fnmatch(pat, subject, pat[0] == '/' ? FNM_PATHNAME : 0) != 0)
                                continue;
                        score = SCORE_CLASS(1) + strlen(pat);
                }
                best = MAX(best, score);
        }
        return best;
}

const Policy *policy_find(Policy *const *policies, size_t n, const char *path, const char *unit) {
        const Policy *best = NULL;
        uint64_t best_score = 0;

        for (size_t i = 0; i < n; i++) {
                uint64_t s = policy_match_score(policies[i], path, unit);
                if (s == 0)
                        continue;
                if (s > best_score ||
                    (s == best_score && strcmp(policies[i]->name, best->name) < 0)) {
                        best = policies[i];
                        best_score = s;
                }
        }
        return best;
}
