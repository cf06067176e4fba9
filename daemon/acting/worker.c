/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "worker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cgfs.h"
#include "cgparse.h"
#include "fileio.h"
#include "log.h"
#include "procs.h"
#include "util.h"

/* Bound on files one writeback job touches, and on the pids it looks at. */
#define WRITEBACK_FILES_MAX 4096
#define WRITEBACK_PIDS_MAX 4096
/* sync_file_range is called on ranges of this size, so that a job can stop between two. */
#define WRITEBACK_RANGE (UINT64_C(8) << 20)
/* Bound on the ranges of one file (its last 2 GiB): see writeback_file(). */
#define WRITEBACK_RANGES_MAX 256

/*
 * Two lanes, each a queue with its own thread, so that a throttle write never
 * waits behind a long job: a memory.high raise still under the usage waited
 * 2.3 s behind the job before it (CI, vm-operator; most likely one of the
 * writer's writebacks) when both shared one thread.
 * Jobs of one lane run in the order queued; the two lanes run side by side.
 */
typedef enum Lane {
        LANE_THROTTLE,          /* JOB_FILE_WRITE: memory.high under the usage, nr_requests */
        LANE_BULK,              /* JOB_RECLAIM, JOB_WRITEBACK */
        LANE_COUNT,
} Lane;

struct Worker {
        TaskQueue *lanes[LANE_COUNT];
        char proc_root[128];
        WorkerDone on_done;
        void *userdata;
};

_Static_assert(LANE_COUNT == WORKER_LANES, "worker.h counts the lanes");

static Job *job_of(Task *t) {
        return (Job *) t;       /* the task is the job's first member */
}

/*
 * One write to memory.reclaim asks for at most this much. The kernel looks
 * for a signal only between its reclaim passes, and one pass goes on until
 * it has freed what it was asked for: swapping out to a saturated 16 MiB/s
 * disk, a 64 MiB write kept a stopping daemon alive 2.7-5.5 s
 * (docs/lab/allocation-point-runs.md, "A stop while the worker is inside the
 * kernel"); 8 MiB is half a second there.
 */
#define RECLAIM_WRITE_MAX (UINT64_C(8) << 20)

static bool swap_congested;      /* worker_set_swap_congested(): written by the loop, read by the worker */

void worker_set_swap_congested(bool congested) {
        __atomic_store_n(&swap_congested, congested, __ATOMIC_RELAXED);
}

bool worker_swap_congested(void) {
        return __atomic_load_n(&swap_congested, __ATOMIC_RELAXED);
}

/* memory.reclaim in steps: small writes block briefly, the overshoot of each
 * stays small, and the job stops when it has freed what it asked for, when a
 * step frees nothing, or when time runs out (or the daemon stops); one that
 * may swap also before a write while the swap disk is congested. */
static void run_reclaim(Job *j) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + (j->budget_usec ?: 10 * USEC_PER_SEC);
        uint64_t step = MIN(j->step ? j->step : j->bytes, RECLAIM_WRITE_MAX), done = 0, last, seen;
        char buf[64];

        /* A figure that could not be read is never used (a parse that failed may have stored part of
         * one): the last one read stands for it. */
        if (cg_dir_read_u64(j->dirfd, "memory.current", &j->before) < 0)
                j->before = 0;
        last = seen = j->before;
        while (done < j->bytes && now_usec(CLOCK_MONOTONIC) < deadline && !taskq_stopping()) {
                uint64_t ask = MIN(step, j->bytes - done), now_current = last;

                if (j->may_swap && worker_swap_congested()) {
                        j->swap_busy = true;
                        break;
                }
                snprintf(buf, sizeof(buf), "%llu%s", (unsigned long long) ask, j->swappiness0 ? " swappiness=0" : "");
                j->result = cg_dir_write(j->dirfd, "memory.reclaim", buf);
                if (cg_dir_read_u64(j->dirfd, "memory.current", &now_current) < 0)
                        now_current = last;
                else
                        seen = now_current;
                /* A step that freed more than asked (slab comes in large batches) counts as much. */
                done += MAX(ask, u64_delta(last, now_current));
                /* EAGAIN: it got less than asked (frees can be deferred: measure, do not trust). */
                if (j->result < 0 && j->result != -EAGAIN)
                        break;
                if (now_current >= last)
                        break;
                last = now_current;
        }
        j->reclaimed = done;
        j->interrupted |= done < j->bytes && (now_usec(CLOCK_MONOTONIC) >= deadline || taskq_stopping());
        /* Unreadable now (the cgroup went, or the file holds garbage): the last figure read, not 0,
         * which would count its whole usage as freed. */
        if (cg_dir_read_u64(j->dirfd, "memory.current", &j->after) < 0)
                j->after = seen;
}

/* Filesystems whose btrfs commit a job has started already. */
#define WRITEBACK_FS_MAX 8
typedef struct FsSeen {
        dev_t dev[WRITEBACK_FS_MAX];
        size_t n;
} FsSeen;

/*
 * On btrfs, dirty metadata goes out with the transaction commit, which may be
 * written outside the writer's cgroup and in front of others' syncs: start it
 * now (BTRFS_IOC_START_SYNC does not wait). syncfs() is not used: it waits,
 * uninterruptibly, for every dirty page of the filesystem, which no time
 * budget could bound.
 */
static void maybe_start_commit(Job *j, int fd, const struct stat *st, FsSeen *seen) {
        struct statfs sfs;
        uint64_t transid;

        for (size_t i = 0; i < seen->n; i++)
                if (seen->dev[i] == st->st_dev)
                        return;
        if (seen->n >= WRITEBACK_FS_MAX)
                return;
        seen->dev[seen->n++] = st->st_dev;
        if (fstatfs(fd, &sfs) == 0 && sfs.f_type == BTRFS_SUPER_MAGIC && ioctl(fd, BTRFS_IOC_START_SYNC, &transid) == 0)
                j->commits++;
}

static bool job_must_stop(uint64_t deadline) {
        return taskq_stopping() || now_usec(CLOCK_MONOTONIC) >= deadline;
}

/*
 * Writeback of one file in bounded ranges, checking between them whether to
 * stop. An appending writer's dirty pages are at the end, so the ranges cover
 * the file's last WRITEBACK_RANGES_MAX ranges, the last one to the end of the
 * file however far it grew; earlier pages go out with the kernel's own
 * writeback. `flags`: SYNC_FILE_RANGE_WRITE starts the writes; with the WAIT
 * flags each range is waited for too (its pages under writeback before and
 * after), so that the job ends when they are on the device.
 */
static bool writeback_file(int fd, const struct stat *st, unsigned flags, uint64_t deadline) {
        uint64_t size = (uint64_t) st->st_size, span = WRITEBACK_RANGE * WRITEBACK_RANGES_MAX;
        uint64_t off = size > span ? (size - span) / WRITEBACK_RANGE * WRITEBACK_RANGE : 0;

        for (; ; off += WRITEBACK_RANGE) {
                bool last = off + WRITEBACK_RANGE >= size;

                if (sync_file_range(fd, (off64_t) off, last ? 0 : (off64_t) WRITEBACK_RANGE, flags) < 0)
                        return false;
                if (last || job_must_stop(deadline))
                        return true;
        }
}

/* Starts the writes of a file, then, for a job that waits for them, waits range by range. */
static bool writeback_one(const Job *j, int fd, const struct stat *st, uint64_t deadline) {
        if (!writeback_file(fd, st, SYNC_FILE_RANGE_WRITE, deadline))
                return false;
        if (!j->to_completion || job_must_stop(deadline))
                return true;
        return writeback_file(fd, st, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                              SYNC_FILE_RANGE_WAIT_AFTER, deadline);
}

/* Writeback of every regular file PID holds open for writing. */
static void writeback_pid(Job *j, pid_t pid, uint64_t deadline, FsSeen *seen) {
        _cleanup_close_ int fd_dirfd = -1, info_dirfd = -1;
        char path[300];
        DIR *d;
        struct dirent *de;

        snprintf(path, sizeof(path), "%s/%d/fd", j->proc_root, (int) pid);
        fd_dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(path, sizeof(path), "%s/%d/fdinfo", j->proc_root, (int) pid);
        info_dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd_dirfd < 0 || info_dirfd < 0)
                return;
        d = opendir_at(fd_dirfd, ".");
        while (d && (de = readdir(d)) && j->files < WRITEBACK_FILES_MAX && !job_must_stop(deadline)) {
                _cleanup_close_ int f = -1;
                struct stat st;

                if (de->d_name[0] == '.' || !proc_fd_writable(info_dirfd, de->d_name))
                        continue;
                /* An O_RDONLY open of the magic link works for this; O_PATH would give EBADF. */
                f = openat(fd_dirfd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (f >= 0 && fstat(f, &st) == 0 && S_ISREG(st.st_mode) && writeback_one(j, f, &st, deadline)) {
                        j->files++;
                        maybe_start_commit(j, f, &st, seen);
                }
        }
        if (d)
                closedir(d);
}

static void run_writeback(Job *j) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + (j->budget_usec ?: 10 * USEC_PER_SEC);
        _cleanup_free_ pid_t *pids = calloc(WRITEBACK_PIDS_MAX, sizeof(pid_t));
        FsSeen seen = {};
        int n;

        if (!pids) {
                j->result = -ENOMEM;
                return;
        }
        if (cg_dir_read_dirty(j->dirfd, &j->dirty_before) < 0)
                j->dirty_before = UINT64_MAX;
        n = cg_read_procs(j->dirfd, pids, WRITEBACK_PIDS_MAX);
        if (n < 0) {
                j->result = n;
                return;
        }
        for (int i = 0; i < n && !job_must_stop(deadline); i++)
                writeback_pid(j, pids[i], deadline, &seen);
        j->result = 0;
        j->interrupted = job_must_stop(deadline);
        if (cg_dir_read_dirty(j->dirfd, &j->dirty_after) < 0)
                j->dirty_after = UINT64_MAX;
}

/* Whether the kernel could swap out some of the cgroup's memory: it holds anon, and its own swap
 * limit has room (memory.swap.max absent: no swap accounting, so it may). */
static bool may_swap_out(int dirfd) {
        uint64_t anon, max, used;

        if (cg_dir_read_anon(dirfd, &anon) < 0 || anon == 0)
                return false;
        if (cg_dir_read_u64(dirfd, "memory.swap.max", &max) < 0)
                return true;
        return cg_dir_read_u64(dirfd, "memory.swap.current", &used) < 0 || used < max;
}

/*
 * While a swap disk is congested, memory.high is not written under the
 * usage of a cgroup that may swap: the reclaim the kernel does in the
 * writer's context would swap, and the worker would wait in that disk's
 * queue (a memory.high step of 128 KiB stayed 11.8 s in the kernel). A
 * lowering goes down to the usage with the headroom and no further; a raise
 * that would still be under the usage goes up to it (never over the
 * ceiling), looser than asked for a while rather than tighter. The
 * cgroup's tasks reclaim for themselves as they allocate, the allocator
 * paying; the actuator asks again once the disk is not congested.
 * Returns 1 if deferred.
 */
static int defer_for_swap(Job *j, uint64_t target, uint64_t current, uint64_t high, long page) {
        uint64_t hold;
        char buf[32];

        if (target >= current || !worker_swap_congested() || !may_swap_out(j->dirfd))
                return 0;
        j->swap_deferred = true;
        hold = (current + j->headroom + (uint64_t) page - 1) / (uint64_t) page * (uint64_t) page;
        if (j->headroom == 0 || hold >= high) {
                /* Lowering: nothing lower to write without a reclaim. Raising: up to the hold at most. */
                if (target <= high || j->headroom == 0)
                        return 1;
                hold = MIN(hold, MAX(j->ceiling, target));
                if (hold <= high || hold < current)
                        return 1;
        }
        snprintf(buf, sizeof(buf), "%llu", (unsigned long long) hold);
        if (cg_dir_write(j->dirfd, "memory.high", buf) >= 0)
                j->high_written = hold;
        return 1;
}

/*
 * memory.high lowered under the cgroup's usage, in steps. The kernel
 * reclaims down to a new memory.high before the write returns, in passes
 * that look for a signal only between them, and its first pass goes on
 * until it has freed the whole gap: lowering it 100 MiB at once over anon
 * that swaps out to a saturated 16 MiB/s disk kept a stopping daemon alive
 * 9 s. Each step sets it at most RECLAIM_WRITE_MAX under the usage (or
 * under the value it holds, if lower); the target is written once the gap
 * is that small, when a step no longer brings the usage down, or at half
 * the job's budget (the rest is then reclaimed in one write, cut at the
 * budget as before). Stopped or cancelled between steps, the file holds a
 * value between the one before and the target: the actuator takes those
 * for its own.
 */
static int write_high(Task *t, Job *j) {
        uint64_t target, current, high, deadline = now_usec(CLOCK_MONOTONIC) + j->budget_usec / 2, last = UINT64_MAX;
        long page = sysconf(_SC_PAGESIZE);
        bool stepped = false;
        char buf[32];
        int r;

        if (cg_parse_u64(j->data, strlen(j->data), &target) < 0 || target == UINT64_MAX || page <= 0)
                return cg_dir_write(j->dirfd, j->file, j->data);
        while (!taskq_cancelled(t) && !taskq_stopping() && now_usec(CLOCK_MONOTONIC) < deadline) {
                uint64_t base, next;

                if (cg_dir_read_u64(j->dirfd, "memory.current", &current) < 0 ||
                    cg_dir_read_u64(j->dirfd, "memory.high", &high) < 0 || current >= last)
                        break;
                if (defer_for_swap(j, target, current, high, page))
                        return 0;
                base = MIN(current, high);
                next = (base - MIN(base, RECLAIM_WRITE_MAX)) / (uint64_t) page * (uint64_t) page;
                if (next <= target)
                        break;
                snprintf(buf, sizeof(buf), "%llu", (unsigned long long) next);
                r = cg_dir_write(j->dirfd, "memory.high", buf);
                if (r < 0 && r != -EINTR)
                        return r;
                j->high_written = next;
                stepped = true;
                last = current;
        }
        if (taskq_stopping())
                return -EINTR;
        /* Superseded on the way: the loop wrote a newer value; a step of ours may have landed after it,
         * so the job counts as written and the actuator catches up. */
        if (taskq_cancelled(t))
                return stepped ? 0 : -ECANCELED;
        /* Read again only while a swap disk is congested: otherwise the write goes as it always did. */
        if (worker_swap_congested() && cg_dir_read_u64(j->dirfd, "memory.current", &current) >= 0 &&
            cg_dir_read_u64(j->dirfd, "memory.high", &high) >= 0 && defer_for_swap(j, target, current, high, page))
                return 0;
        return cg_dir_write(j->dirfd, j->file, j->data);
}

static void job_run(Task *t) {
        Job *j = job_of(t);
        uint64_t start = now_usec(CLOCK_MONOTONIC);

        __atomic_store_n(&j->started_usec, now_usec(CLOCK_REALTIME), __ATOMIC_RELEASE);
        switch (j->kind) {
        case JOB_FILE_WRITE:
                /* Superseded while queued (a value written since from the loop): nothing to do. */
                j->result = taskq_cancelled(t) ? -ECANCELED :
                            streq(j->file, "memory.high") ? write_high(t, j) : cg_dir_write(j->dirfd, j->file, j->data);
                break;
        case JOB_RECLAIM:
                run_reclaim(j);
                break;
        case JOB_WRITEBACK:
                run_writeback(j);
                break;
        }
        j->finished_usec = now_usec(CLOCK_MONOTONIC);
        j->duration_usec = j->finished_usec - start;
        if (j->result == -EINTR)
                j->interrupted = true;
        closep(&j->dirfd);
}

static void job_free(Job *j) {
        closep(&j->dirfd);
        free(j);
}

static void job_drop(Task *t, void *userdata) {
        job_free(job_of(t));
}

static void job_done(Task *t, void *userdata) {
        Worker *w = userdata;
        Job *j = job_of(t);

        if (taskq_cancelled(t) && !j->started_usec)
                j->result = -ECANCELED;         /* never run */
        w->on_done(j, w->userdata);
        job_free(j);
}

unsigned worker_lane(JobKind kind) {
        return kind == JOB_FILE_WRITE ? LANE_THROTTLE : LANE_BULK;
}

static void worker_freep(Worker **w) {
        worker_free(*w);
}

int worker_new(sd_event *event, const char *name, const char *proc_root, bool bulk_lane, WorkerDone done,
               void *userdata, Worker **ret) {
        static const char *const lane_suffix[LANE_COUNT] = { "throttle", "bulk" };
        _cleanup_(worker_freep) Worker *w = calloc(1, sizeof(Worker));
        char lane_name[32];
        int r;

        if (!w)
                return -ENOMEM;
        w->on_done = done;
        w->userdata = userdata;
        snprintf(w->proc_root, sizeof(w->proc_root), "%s", proc_root);
        for (Lane l = 0; l < (bulk_lane ? LANE_COUNT : LANE_BULK); l++) {
                snprintf(lane_name, sizeof(lane_name), "%s-%s", name, lane_suffix[l]);
                r = taskq_new(event, lane_name, WORKER_QUEUE_MAX, true, w, &w->lanes[l]);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(w);
        return 0;
}

void worker_stop(Worker *w) {
        if (!w)
                return;
        for (Lane l = 0; l < LANE_COUNT; l++)
                taskq_stop(w->lanes[l]);
}

Worker *worker_free(Worker *w) {
        if (!w)
                return NULL;
        /* Both told first, then both waited for: a stop waits 1.5 s at most, not that for each lane. */
        worker_stop(w);
        for (Lane l = 0; l < LANE_COUNT; l++)
                taskq_free(w->lanes[l]);
        free(w);
        return NULL;
}

int worker_submit(Worker *w, const Job *job, int cgroup_dirfd) {
        _cleanup_free_ Job *j = malloc(sizeof(Job));
        int r;

        if (!j)
                return -ENOMEM;
        if (!w->lanes[worker_lane(job->kind)])
                return -EINVAL;         /* a worker without that lane */
        *j = *job;
        j->task = (Task) { .run = job_run, .done = job_done, .drop = job_drop,
                           /* Writeback checks its own deadline between ranges. */
                           .budget_usec = j->kind == JOB_WRITEBACK ? 0 : j->budget_usec };
        snprintf(j->proc_root, sizeof(j->proc_root), "%s", w->proc_root);
        j->result = 0;
        j->interrupted = false;
        j->files = j->commits = j->before = j->after = j->duration_usec = j->started_usec = j->finished_usec = 0;
        j->dirty_before = j->dirty_after = UINT64_MAX;
        j->dirfd = fcntl(cgroup_dirfd, F_DUPFD_CLOEXEC, 3);
        if (j->dirfd < 0)
                return negative_errno();
        r = taskq_submit(w->lanes[worker_lane(j->kind)], &j->task);
        if (r < 0) {
                closep(&j->dirfd);
                return r;
        }
        TAKE_PTR(j);
        return 0;
}

typedef struct Cookies {
        const uint64_t *v;
        size_t n;
} Cookies;

static bool cookie_matches(const Task *t, void *arg) {
        const Cookies *c = arg;

        for (size_t i = 0; i < c->n; i++)
                if (((const Job *) t)->cookie == c->v[i])
                        return true;
        return false;
}

size_t worker_cancel(Worker *w, const uint64_t *cookies, size_t n) {
        size_t k = 0;

        for (Lane l = 0; l < LANE_COUNT; l++)
                if (w->lanes[l])
                        k += taskq_cancel(w->lanes[l], cookie_matches, &(Cookies) { cookies, n });
        return k;
}

size_t worker_pending(Worker *w) {
        size_t n = 0;

        for (Lane l = 0; l < LANE_COUNT; l++)
                if (w->lanes[l])
                        n += taskq_pending(w->lanes[l]);
        return n;
}

size_t worker_running(Worker *w, WorkerRunning ret[static WORKER_LANES]) {
        size_t n = 0;

        for (Lane l = 0; l < LANE_COUNT; l++) {
                const Job *j = w->lanes[l] ? (const Job *) taskq_running(w->lanes[l]) : NULL;

                /* The cookie was set before it was queued, and a job is freed only on this thread. */
                if (j)
                        ret[n++] = (WorkerRunning) { .cookie = j->cookie,
                                                     .started_usec = __atomic_load_n(&j->started_usec,
                                                                                     __ATOMIC_ACQUIRE) };
        }
        return n;
}
