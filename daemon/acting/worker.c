/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "worker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgfs.h"
#include "log.h"
#include "util.h"

/* Delivered to the worker thread alone when a job overruns its budget. */
#define WORKER_SIGNAL SIGUSR2
/* Bound on files one writeback job touches. */
#define WRITEBACK_FILES_MAX 4096

struct Worker {
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stop;

        Job queue[WORKER_QUEUE_MAX];
        unsigned q_head, q_len;
        Job done[WORKER_QUEUE_MAX + 1];
        unsigned d_head, d_len;
        unsigned running;

        timer_t timer;
        bool have_timer;
        char proc_root[256];

        int efd;
        sd_event_source *source;
        WorkerDone on_done;
        void *userdata;
};

static uint64_t mono_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

static void on_worker_signal(int sig) {
        /* Nothing: its arrival makes the blocked write return early. */
}

static void arm_budget(Worker *w, uint64_t usec) {
        struct itimerspec its = {
                .it_value = { .tv_sec = (time_t) (usec / USEC_PER_SEC),
                              .tv_nsec = (long) (usec % USEC_PER_SEC) * 1000 },
        };

        if (w->have_timer)
                (void) timer_settime(w->timer, 0, &its, NULL);
}

static void disarm_budget(Worker *w) {
        struct itimerspec its = {};

        if (w->have_timer)
                (void) timer_settime(w->timer, 0, &its, NULL);
}

/* memory.reclaim in steps: small writes block briefly, the overshoot of each
 * stays small, and the job stops when a step frees nothing or time runs out. */
static void run_reclaim(Job *j) {
        uint64_t deadline = mono_usec() + (j->budget_usec ? j->budget_usec : 10 * USEC_PER_SEC);
        uint64_t step = j->step ? j->step : j->bytes, done = 0, last;
        char buf[64];

        (void) cg_dir_read_u64(j->dirfd, "memory.current", &j->before);
        last = j->before;
        while (done < j->bytes && mono_usec() < deadline) {
                uint64_t ask = MIN(step, j->bytes - done), now_current = last;

                snprintf(buf, sizeof(buf), "%llu%s", (unsigned long long) ask, j->swappiness0 ? " swappiness=0" : "");
                j->result = cg_dir_write(j->dirfd, "memory.reclaim", buf);
                (void) cg_dir_read_u64(j->dirfd, "memory.current", &now_current);
                done += ask;
                /* EAGAIN: it got less than asked (frees can be deferred: measure, do not trust). */
                if (j->result < 0 && j->result != -EAGAIN)
                        break;
                if (now_current >= last)
                        break;
                last = now_current;
        }
        j->interrupted |= done < j->bytes && mono_usec() >= deadline;
        (void) cg_dir_read_u64(j->dirfd, "memory.current", &j->after);
}

/* Open-for-writing flags from /proc/PID/fdinfo/N ("flags:\t0100001"). */
static bool fd_open_for_writing(int fdinfo_dirfd, const char *name) {
        char buf[256], *p;
        int fd = openat(fdinfo_dirfd, name, O_RDONLY | O_CLOEXEC);
        ssize_t n;
        unsigned long flags;

        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        p = strstr(buf, "flags:");
        if (!p || sscanf(p + 6, "%lo", &flags) != 1)
                return false;
        return (flags & O_ACCMODE) == O_WRONLY || (flags & O_ACCMODE) == O_RDWR;
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

/* sync_file_range(SYNC_FILE_RANGE_WRITE) on every regular file PID holds open for writing. */
static void writeback_pid(Job *j, const char *proc_root, unsigned long pid, uint64_t deadline, FsSeen *seen) {
        char path[300];
        int fd_dirfd, info_dirfd;
        DIR *d;
        struct dirent *de;

        snprintf(path, sizeof(path), "%s/%lu/fd", proc_root, pid);
        fd_dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd_dirfd < 0)
                return;
        snprintf(path, sizeof(path), "%s/%lu/fdinfo", proc_root, pid);
        info_dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        d = info_dirfd >= 0 ? fdopendir(dup(fd_dirfd)) : NULL;
        while (d && (de = readdir(d)) && j->files < WRITEBACK_FILES_MAX && mono_usec() < deadline) {
                struct stat st;
                int f;

                if (de->d_name[0] == '.' || !fd_open_for_writing(info_dirfd, de->d_name))
                        continue;
                /* An O_RDONLY open of the magic link works for this; O_PATH would give EBADF. */
                f = openat(fd_dirfd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (f < 0)
                        continue;
                if (fstat(f, &st) == 0 && S_ISREG(st.st_mode) &&
                    sync_file_range(f, 0, 0, SYNC_FILE_RANGE_WRITE) == 0) {
                        j->files++;
                        maybe_start_commit(j, f, &st, seen);
                }
                close(f);
        }
        if (d)
                closedir(d);
        closep(&info_dirfd);
        close(fd_dirfd);
}

static void run_writeback(Job *j, const char *proc_root) {
        uint64_t deadline = mono_usec() + (j->budget_usec ? j->budget_usec : 10 * USEC_PER_SEC);
        char buf[65536], *p, *end;
        FsSeen seen = {};
        int fd = openat(j->dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0) {
                j->result = negative_errno();
                return;
        }
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0) {
                j->result = negative_errno();
                return;
        }
        buf[n] = '\0';
        for (p = buf; *p && mono_usec() < deadline; p = end) {
                unsigned long pid = strtoul(p, &end, 10);
                if (end == p)
                        break;
                writeback_pid(j, proc_root, pid, deadline, &seen);
                while (*end == '\n')
                        end++;
        }
        j->result = 0;
        j->interrupted = mono_usec() >= deadline;
}

static void run_job(Worker *w, Job *j) {
        uint64_t start = mono_usec();

        if (j->kind != JOB_WRITEBACK && j->budget_usec)
                arm_budget(w, j->budget_usec);
        switch (j->kind) {
        case JOB_WRITE:
                j->result = cg_dir_write(j->dirfd, j->file, j->data);
                break;
        case JOB_RECLAIM:
                run_reclaim(j);
                break;
        case JOB_WRITEBACK:
                run_writeback(j, w->proc_root);
                break;
        }
        disarm_budget(w);
        j->duration_usec = mono_usec() - start;
        if (j->result == -EINTR)
                j->interrupted = true;
        closep(&j->dirfd);
        j->dirfd = -1;
}

static void *worker_main(void *arg) {
        Worker *w = arg;
        struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = WORKER_SIGNAL };
        sigset_t ss;

        /* Every process signal is the loop's (signalfd); this thread takes only its own. */
        sigfillset(&ss);
        sigdelset(&ss, WORKER_SIGNAL);
        pthread_sigmask(SIG_SETMASK, &ss, NULL);
        sev._sigev_un._tid = (pid_t) syscall(SYS_gettid);
        w->have_timer = timer_create(CLOCK_MONOTONIC, &sev, &w->timer) == 0;

        pthread_mutex_lock(&w->lock);
        for (;;) {
                Job j;
                uint64_t one = 1;

                while (!w->stop && w->q_len == 0)
                        pthread_cond_wait(&w->wake, &w->lock);
                if (w->stop)
                        break;
                j = w->queue[w->q_head];
                w->q_head = (w->q_head + 1) % WORKER_QUEUE_MAX;
                w->q_len--;
                w->running++;
                pthread_mutex_unlock(&w->lock);

                run_job(w, &j);

                pthread_mutex_lock(&w->lock);
                w->running--;
                w->done[(w->d_head + w->d_len) % ELEMENTSOF(w->done)] = j;
                w->d_len++;
                if (write(w->efd, &one, sizeof(one)) < 0)
                        log_debug_errno(errno, "worker: eventfd write failed: %m");
        }
        pthread_mutex_unlock(&w->lock);
        if (w->have_timer)
                timer_delete(w->timer);
        return NULL;
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Worker *w = userdata;
        uint64_t n;

        if (read(w->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                return log_error_errno(errno, "worker: eventfd read failed: %m");
        for (;;) {
                Job j;

                pthread_mutex_lock(&w->lock);
                if (w->d_len == 0) {
                        pthread_mutex_unlock(&w->lock);
                        break;
                }
                j = w->done[w->d_head];
                w->d_head = (w->d_head + 1) % ELEMENTSOF(w->done);
                w->d_len--;
                pthread_mutex_unlock(&w->lock);
                w->on_done(&j, w->userdata);
        }
        return 0;
}

int worker_new(sd_event *event, WorkerDone done, void *userdata, Worker **ret) {
        Worker *w = calloc(1, sizeof(Worker));
        struct sigaction sa = { .sa_handler = on_worker_signal };  /* no SA_RESTART */
        sigset_t ss, old;
        int r;

        if (!w)
                return -ENOMEM;
        w->on_done = done;
        w->userdata = userdata;
        snprintf(w->proc_root, sizeof(w->proc_root), "/proc");
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->wake, NULL);
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0) {
                r = negative_errno();
                worker_free(w);
                return r;
        }
        r = sd_event_add_io(event, &w->source, w->efd, EPOLLIN, on_done, w);
        if (r < 0) {
                worker_free(w);
                return r;
        }
        (void) sd_event_source_set_description(w->source, "worker-done");
        sigaction(WORKER_SIGNAL, &sa, NULL);
        /* The loop's thread never takes the worker's signal; the thread starts
         * with everything blocked and then opens up to its own signal alone. */
        sigemptyset(&ss);
        sigaddset(&ss, WORKER_SIGNAL);
        pthread_sigmask(SIG_BLOCK, &ss, NULL);
        sigfillset(&ss);
        pthread_sigmask(SIG_BLOCK, &ss, &old);
        r = -pthread_create(&w->thread, NULL, worker_main, w);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
                worker_free(w);
                return r;
        }
        w->started = true;
        *ret = w;
        return 0;
}

Worker *worker_free(Worker *w) {
        if (!w)
                return NULL;
        if (w->started) {
                pthread_mutex_lock(&w->lock);
                w->stop = true;
                pthread_cond_signal(&w->wake);
                pthread_mutex_unlock(&w->lock);
                /* A job blocked in the kernel is interrupted rather than waited out. */
                pthread_kill(w->thread, WORKER_SIGNAL);
                pthread_join(w->thread, NULL);
        }
        for (unsigned i = 0; i < w->q_len; i++)
                closep(&w->queue[(w->q_head + i) % WORKER_QUEUE_MAX].dirfd);
        sd_event_source_disable_unref(w->source);
        closep(&w->efd);
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->wake);
        free(w);
        return NULL;
}

int worker_submit(Worker *w, const Job *job, int cgroup_dirfd) {
        Job j = *job;

        j.dirfd = fcntl(cgroup_dirfd, F_DUPFD_CLOEXEC, 3);
        if (j.dirfd < 0)
                return negative_errno();
        j.result = 0;
        j.interrupted = false;
        j.files = j.commits = j.before = j.after = j.duration_usec = 0;
        pthread_mutex_lock(&w->lock);
        if (w->q_len + w->running + w->d_len >= WORKER_QUEUE_MAX) {
                pthread_mutex_unlock(&w->lock);
                close(j.dirfd);
                return -EBUSY;
        }
        w->queue[(w->q_head + w->q_len) % WORKER_QUEUE_MAX] = j;
        w->q_len++;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        return 0;
}

unsigned worker_pending(const Worker *w) {
        Worker *mw = (Worker *) w;
        unsigned n;

        pthread_mutex_lock(&mw->lock);
        n = mw->q_len + mw->running;
        pthread_mutex_unlock(&mw->lock);
        return n;
}

void worker_set_proc_root(Worker *w, const char *proc_root) {
        snprintf(w->proc_root, sizeof(w->proc_root), "%s", proc_root);
}
