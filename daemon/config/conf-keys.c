/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "conf-keys.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "parse-util.h"
#include "policy-format.h"
#include "util.h"

static void list_expected_keys(const KeyParse *kp, const char *section, char *buf, size_t size) {
        size_t off = 0;

        buf[0] = '\0';
        if (kp->policy)
                off += (size_t) snprintf(buf, size, "Match");
        for (size_t i = 0; i < kp->n_table && off < size; i++)
                if (streq(kp->table[i].section, section))
                        off += (size_t) snprintf(buf + off, size - off, "%s%s",
                                                 off ? ", " : "", kp->table[i].key);
        if (off == 0)
                snprintf(buf, size, "none yet");
}

static int policy_add_matches(Policy *p, const ConfLocation *loc, const char *value, ConfDiag *diag) {
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL, *word;
        int r = 0;

        if (!copy)
                return -ENOMEM;
        if (!strtok_r(copy, " \t", &save)) {
                conf_diag_add(diag, loc->file, loc->line, "Match=: expected unit names, globs or cgroup paths, got nothing");
                return -EINVAL;
        }
        strcpy(copy, value);
        save = NULL;
        for (word = strtok_r(copy, " \t", &save); word; word = strtok_r(NULL, " \t", &save)) {
                const char *why;
                PolicyMatch *n;

                if (!policy_match_valid(word, &why)) {
                        conf_diag_add(diag, loc->file, loc->line, "Match=: '%s': %s", word, why);
                        r = -EINVAL;
                        continue;
                }
                if (p->n_matches >= POLICY_MATCH_MAX) {
                        conf_diag_add(diag, loc->file, loc->line, "Match=: more than %d patterns in one policy",
                                      POLICY_MATCH_MAX);
                        return -E2BIG;
                }
                n = realloc(p->matches, (p->n_matches + 1) * sizeof(PolicyMatch));
                if (!n)
                        return -ENOMEM;
                p->matches = n;
                p->matches[p->n_matches] = (PolicyMatch) { .pattern = strdup(word), .line = loc->line };
                if (!p->matches[p->n_matches].pattern)
                        return -ENOMEM;
                p->n_matches++;
        }
        return r;
}

/*
 * What a size written the way other tools write them should read here:
 * "64MB", "64MiB", "64m" and "64mb" are "64M" (systemd refuses them as well).
 * False when `value` is not such a slip.
 */
static bool size_slip(const char *value, char *buf, size_t size) {
        size_t digits = strspn(value, "0123456789.");
        const char *unit = value + digits;

        if (digits == 0 || !*unit || !strchr("kmgtpeKMGTPE", *unit))
                return false;
        if (!streq(unit + 1, "") && strcasecmp(unit + 1, "b") != 0 && strcasecmp(unit + 1, "ib") != 0)
                return false;
        snprintf(buf, size, "%.*s%c", (int) digits, value, toupper((unsigned char) *unit));
        return !streq(buf, value);
}

static void report_bad_value(const ConfKeyDef *k, const ConfLocation *loc, const char *value, int r,
                             ConfDiag *diag) {
        char min[POLICY_VALUE_MAX], hint[64];
        uint64_t u;

        if (r == -EDOM && strchr(value, '%'))
                conf_diag_add(diag, loc->file, loc->line, "%s=%s is refused: a percentage must be above 0%%, "
                              "and one that comes to less than %s on a cgroup counts as %s there (%s)",
                              k->key, value, format_size_exact(min, k->min), min, k->min_why);
        else if (r == -EDOM)
                conf_diag_add(diag, loc->file, loc->line, "%s=%s is below the minimum of %s: %s", k->key, value,
                              format_size_exact(min, k->min), k->min_why);
        else if (r == -ERANGE && cv_takes_size(k->parse) && !strchr(value, '%'))
                conf_diag_add(diag, loc->file, loc->line, "%s=%s is out of range: %s", k->key, value,
                              value[strspn(value, " \t")] == '-' ? "a size cannot be negative" :
                              "a size must come to less than 16E (2^64 bytes), and a fraction counts as a whole "
                              "unit more of its suffix");
        else if (cv_takes_size(k->parse) && size_slip(value, hint, sizeof(hint)) && parse_size(hint, false, &u) >= 0)
                conf_diag_add(diag, loc->file, loc->line, "%s=: expected %s, got '%s' (write %s: suffixes are "
                              "upper case and take no B or iB)", k->key, k->expected, value, hint);
        else
                conf_diag_add(diag, loc->file, loc->line, "%s=: expected %s, got '%s'", k->key, k->expected,
                              value);
}

int conf_key_handler(void *userdata, const ConfLocation *loc, const char *section,
                     const char *key, const char *value, ConfDiag *diag) {
        KeyParse *kp = userdata;
        char expected[512];
        int r;

        kp->has_section = true;
        if (kp->policy && streq(key, "Match"))
                return policy_add_matches(kp->policy, loc, value, diag);

        for (size_t i = 0; i < kp->n_table; i++) {
                const ConfKeyDef *k = &kp->table[i];

                if (!streq(k->section, section) || !streq(k->key, key))
                        continue;
                if (kp->seen & (UINT64_C(1) << i)) {
                        conf_diag_add(diag, loc->file, loc->line, "%s= given twice in [%s] (first at line %u)",
                                      key, section, kp->seen_line[i]);
                        return -EINVAL;
                }
                kp->seen |= UINT64_C(1) << i;
                kp->seen_line[i] = loc->line;
                r = k->parse(value, (char *) kp->base + k->offset, k->min);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        report_bad_value(k, loc, value, r, diag);
                        return -EINVAL;
                }
                return 0;
        }
        list_expected_keys(kp, section, expected, sizeof(expected));
        conf_diag_add(diag, loc->file, loc->line, "unknown key %s= in [%s] (known keys: %s)",
                      key, section, expected);
        return -EINVAL;
}

unsigned conf_key_line(const KeyParse *kp, const char *key) {
        for (size_t i = 0; i < kp->n_table; i++)
                if (streq(kp->table[i].key, key))
                        return kp->seen & (UINT64_C(1) << i) ? kp->seen_line[i] : 0;
        return 0;
}
