/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small helpers shared by the whole daemon: cleanup attributes for fds,
 * FILE* and heap memory, and a few arithmetic conveniences.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define USEC_PER_SEC  UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)

/* µs as a struct timespec (a duration, or a point on whichever clock the µs count on). */
static inline struct timespec timespec_from_usec(uint64_t usec) {
        return (struct timespec) { .tv_sec = (time_t) (usec / USEC_PER_SEC),
                                   .tv_nsec = (long) (usec % USEC_PER_SEC) * 1000 };
}

static inline void freep(void *p) {
        free(*(void **) p);
}

/* Closes *fd if open and resets it to -1, keeping errno. */
static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
        *fd = -1;
}

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand over ownership out of a cleanup variable. */
#define TAKE_PTR(p) ({ __typeof__(p) _tp = (p); (p) = NULL; _tp; })
#define TAKE_FD(fd) ({ int _tf = (fd); (fd) = -1; _tf; })

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return streq(a, b);
}

/* Whether cgroup path `a` is `b` or below it. */
static inline bool cgroup_path_is_below(const char *a, const char *b) {
        size_t lb = strlen(b);

        if (streq(b, "/"))
                return true;
        return strncmp(a, b, lb) == 0 && (a[lb] == '\0' || a[lb] == '/');
}

/* Whether one of two cgroups is the other or below it: what either holds, the other counts. */
static inline bool cgroup_paths_related(const char *a, const char *b) {
        return cgroup_path_is_below(a, b) || cgroup_path_is_below(b, a);
}

/* A negative errno from the current errno, never 0 even if errno was lost. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

static inline const char *strna(const char *s) {
        return s ? s : "n/a";
}

/* The clock `clock` now, in µs (CLOCK_MONOTONIC for intervals, CLOCK_REALTIME for stamps). */
static inline uint64_t now_usec(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* Saturating subtraction for monotonic counters that may reset. */
static inline uint64_t u64_delta(uint64_t now, uint64_t before) {
        return now >= before ? now - before : 0;
}
