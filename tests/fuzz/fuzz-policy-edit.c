/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target for the edit of a policy file's text (policy_text_edit, run on
 * what `mdctl policy set/unset` sends). The input's first line holds the
 * arguments, separated by spaces: words with '=' are assignments, others keys
 * to unset; the rest is the old file. An edit that succeeds keeps every new
 * assignment as a line of its own, leaves no other line assigning a key it
 * set or unset inside [Policy], and is stable: applying it again to its own
 * result changes nothing.
 */
#include <errno.h>
#include <stdbool.h>

#include "fuzz.h"
#include "policy-store.h"
#include "util.h"

#define ARGS_MAX 16

static size_t split_args(char *line, char **set, size_t *n_set, char **unset) {
        size_t n_unset = 0;

        *n_set = 0;
        for (char *save = NULL, *w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
                if (strchr(w, '=') && *n_set < ARGS_MAX)
                        set[(*n_set)++] = w;
                else if (!strchr(w, '=') && n_unset < ARGS_MAX)
                        unset[n_unset++] = w;
        }
        return n_unset;
}

static bool has_line(const char *text, const char *line) {
        size_t l = strlen(line);

        for (const char *p = text; (p = strstr(p, line)); p++)
                if ((p == text || p[-1] == '\n') && p[l] == '\n')
                        return true;
        return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *input = fuzz_strndup(data, size);
        char *set[ARGS_MAX], *unset[ARGS_MAX], *nl, *old;
        char *text = NULL, *again = NULL, *error = NULL;
        size_t n_set, n_unset;
        int r;

        nl = strchr(input, '\n');
        old = nl ? nl + 1 : NULL;
        if (nl)
                *nl = '\0';
        n_unset = split_args(input, set, &n_set, unset);
        r = policy_text_edit(old, "fuzz.service", (const char *const *) set, n_set, (const char *const *) unset,
                             n_unset, &text, &error);
        fuzz_check(r == 0 || r == -EINVAL);
        if (r < 0) {
                fuzz_check(!text && error && *error);
                free(error);
                return 0;
        }
        fuzz_check(text && !error);
        fuzz_check(!*text || text[strlen(text) - 1] == '\n');
        for (size_t i = 0; i < n_set; i++)
                fuzz_check(has_line(text, set[i]));
        /* The same edit again finds its own lines and puts them back where they are. */
        r = policy_text_edit(text, "fuzz.service", (const char *const *) set, n_set, (const char *const *) unset,
                             n_unset, &again, &error);
        fuzz_check(r == 0);
        fuzz_check(streq(text, again));
        free(text);
        free(again);
        return 0;
}
