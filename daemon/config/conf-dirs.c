/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "conf-dirs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "conf-limits.h"
#include "util.h"

char *conf_path_join(const char *a, const char *b, const char *c) {
        char *s;

        if (asprintf(&s, "%s%s%s%s%s", a, (b && *b) ? "/" : "", b ? b : "",
                     (c && *c) ? "/" : "", c ? c : "") < 0)
                return NULL;
        return s;
}

bool conf_file_is_masked(const char *path) {
        struct stat st;

        return stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

void conf_file_list_clear(ConfFileList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->files[i].name);
                free(l->files[i].path);
        }
        free(l->files);
        *l = (ConfFileList) {};
}

static int conf_file_cmp(const void *a, const void *b) {
        return strcmp(((const ConfFile *) a)->name, ((const ConfFile *) b)->name);
}

static bool name_is_conf(const char *name) {
        size_t l = strlen(name);
        return name[0] != '.' && l > 5 && streq(name + l - 5, ".conf");
}

/* Adds `dir`'s *.conf files, replacing entries of the same name. */
static int conf_file_list_add_dir(ConfFileList *l, const char *dir, ConfDiag *diag) {
        DIR *d = opendir(dir);
        struct dirent *de;
        size_t count = 0;
        int r = 0;

        if (!d)
                return errno == ENOENT ? 0 : (conf_diag_add(diag, dir, 0, "cannot open directory: %m"), -errno);
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                size_t i;

                if (!name_is_conf(de->d_name))
                        continue;
                if (++count > CONFIG_DIR_FILES_MAX) {
                        conf_diag_add(diag, dir, 0, "more than %d *.conf files in one directory: "
                                      "the whole configuration is refused", CONFIG_DIR_FILES_MAX);
                        r = -E2BIG;
                        break;
                }
                path = conf_path_join(dir, de->d_name, NULL);
                if (!path) {
                        r = -ENOMEM;
                        break;
                }
                for (i = 0; i < l->n && !streq(l->files[i].name, de->d_name); i++)
                        ;
                if (i == l->n) {
                        ConfFile *n = realloc(l->files, (l->n + 1) * sizeof(ConfFile));
                        if (!n || !(n[l->n].name = strdup(de->d_name))) {
                                if (n)
                                        l->files = n;
                                r = -ENOMEM;
                                break;
                        }
                        l->files = n;
                        l->files[l->n++].path = NULL;
                }
                free(l->files[i].path);
                l->files[i].path = TAKE_PTR(path);
        }
        closedir(d);
        return r;
}

int conf_file_list_collect(const char *root, const char *const *dirs, size_t n_dirs, const char *subdir,
                           ConfFileList *ret, ConfDiag *diag) {
        ConfFileList l = {};
        int r;

        for (size_t i = 0; i < n_dirs; i++) {
                _cleanup_free_ char *dir = conf_path_join(root, dirs[i] + 1, subdir);
                if (!dir) {
                        conf_file_list_clear(&l);
                        return -ENOMEM;
                }
                r = conf_file_list_add_dir(&l, dir, diag);
                if (r == -ENOMEM) {
                        conf_file_list_clear(&l);
                        return r;
                }
        }
        if (l.n > 0)
                qsort(l.files, l.n, sizeof(ConfFile), conf_file_cmp);
        *ret = l;
        return 0;
}

int conf_file_list_override(ConfFileList *l, const char *name, const char *path) {
        _cleanup_free_ char *file = NULL, *copy = NULL;
        ConfFile *n;
        size_t i;

        if (asprintf(&file, "%s.conf", name) < 0)
                return -ENOMEM;
        for (i = 0; i < l->n && !streq(l->files[i].name, file); i++)
                ;
        if (!path) {
                if (i < l->n) {
                        free(l->files[i].name);
                        free(l->files[i].path);
                        memmove(l->files + i, l->files + i + 1, (l->n - i - 1) * sizeof(ConfFile));
                        l->n--;
                }
                return 0;
        }
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        if (i < l->n) {
                free(l->files[i].path);
                l->files[i].path = TAKE_PTR(copy);
                return 0;
        }
        n = realloc(l->files, (l->n + 1) * sizeof(ConfFile));
        if (!n)
                return -ENOMEM;
        l->files = n;
        l->files[l->n++] = (ConfFile) { .name = TAKE_PTR(file), .path = TAKE_PTR(copy) };
        qsort(l->files, l->n, sizeof(ConfFile), conf_file_cmp);
        return 0;
}
