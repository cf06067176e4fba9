/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "unit-name.h"

#include "util.h"

const char *cgroup_path_unit(const char *path) {
        static const char *const suffixes[] = { ".service", ".scope", ".slice" };
        const char *last = strrchr(path, '/');
        size_t len;

        last = last ? last + 1 : path;
        len = strlen(last);
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                size_t sl = strlen(suffixes[i]);
                if (len > sl && streq(last + len - sl, suffixes[i]))
                        return last;
        }
        return NULL;
}
