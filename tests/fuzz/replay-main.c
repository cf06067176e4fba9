/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The main() a fuzz target gets when it is not linked with libFuzzer: runs
 * the target once over each file named, or over every file of each
 * directory named (in name order), so that a corpus is an ordinary test.
 * Each input is handed over in a heap block of its exact size.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "util.h"

/* Reads all of fd into a block of exactly its size. */
static int read_whole(int fd, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t size = 0, alloc = 0;

        for (;;) {
                ssize_t n;

                if (size == alloc) {
                        uint8_t *b = realloc(buf, alloc = alloc ? alloc * 2 : 4096);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                }
                n = read(fd, buf + size, alloc - size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                size += (size_t) n;
        }
        *ret = malloc(size);
        if (!*ret)
                return -ENOMEM;
        if (size > 0)
                memcpy(*ret, buf, size);
        *ret_size = size;
        return 0;
}

static int replay_file(int dirfd, const char *name, const char *shown) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ uint8_t *data = NULL;
        size_t size;
        int r;

        if (fd < 0) {
                fprintf(stderr, "%s: cannot open: %m\n", shown);
                return negative_errno();
        }
        r = read_whole(fd, &data, &size);
        if (r < 0) {
                fprintf(stderr, "%s: cannot read: %s\n", shown, strerror(-r));
                return r;
        }
        fprintf(stderr, "%s (%zu bytes)\n", shown, size);
        (void) LLVMFuzzerTestOneInput(data, size);
        return 0;
}

static int is_input(const struct dirent *de) {
        return de->d_name[0] != '.';
}

/* Every regular file of `path` that does not start with a dot; returns how many, or an error. */
static int replay_dir(const char *path) {
        _cleanup_close_ int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct dirent **names = NULL;
        int n, done = 0, r = 0;

        if (dirfd < 0) {
                fprintf(stderr, "%s: cannot open: %m\n", path);
                return negative_errno();
        }
        n = scandir(path, &names, is_input, alphasort);
        if (n < 0) {
                fprintf(stderr, "%s: cannot list: %m\n", path);
                return negative_errno();
        }
        for (int i = 0; i < n; i++) {
                struct stat st;

                if (r >= 0 && fstatat(dirfd, names[i]->d_name, &st, 0) == 0 && S_ISREG(st.st_mode)) {
                        _cleanup_free_ char *shown = NULL;
                        if (asprintf(&shown, "%s/%s", path, names[i]->d_name) < 0)
                                r = -ENOMEM;
                        else if ((r = replay_file(dirfd, names[i]->d_name, shown)) >= 0)
                                done++;
                }
                free(names[i]);
        }
        free(names);
        return r < 0 ? r : done;
}

int main(int argc, char *argv[]) {
        int total = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s CORPUS-DIR|FILE...\n", program_invocation_short_name);
                return EXIT_FAILURE;
        }
        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %m\n", argv[i]);
                        return EXIT_FAILURE;
                }
                r = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(AT_FDCWD, argv[i], argv[i]);
                if (r < 0)
                        return EXIT_FAILURE;
                total += S_ISDIR(st.st_mode) ? r : 1;
        }
        /* An empty corpus would pass without testing anything. */
        if (total == 0) {
                fprintf(stderr, "no inputs found\n");
                return EXIT_FAILURE;
        }
        fprintf(stderr, "%d inputs replayed\n", total);
        return EXIT_SUCCESS;
}
