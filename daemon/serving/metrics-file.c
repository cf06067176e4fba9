/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "metrics-file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "taskq.h"
#include "util.h"
#include "new-file.h"

/* Hidden and not *.prom: the collector never reads it. */
/* A write() blocked longer than this is interrupted (an fsync is not: it ends when the disk is done). */
#define METRICS_FILE_BUDGET_USEC (10 * USEC_PER_SEC)

struct MetricsFile {
        Manager *manager;
        TaskQueue *queue;
        sd_event_source *timer;
        sd_event_source *exit_source;   /* tells the writer to stop as the loop ends */
        char *written_dir;              /* where the file is; NULL: nowhere */
        RateLimit failures;
};

typedef struct FileTask {
        Task task;                      /* the engine's */
        char *dir;                      /* where to write; NULL: nowhere */
        char *old_dir;                  /* where to remove the file first; NULL: nothing to remove */
        char *text;
        size_t size;
        int result;
} FileTask;

/* ---- in the queue's thread ---- */

typedef struct Text {
        const char *text;
        size_t size;
} Text;

static int write_text(FILE *f, void *userdata) {
        const Text *t = userdata;

        /* A short fwrite() leaves the failed write()'s errno (ENOSPC, EDQUOT, ...): that is the cause to log. */
        errno = 0;
        return fwrite(t->text, 1, t->size, f) == t->size ? 0 : negative_errno();
}

/* Replaced whole (file_replace: "mdreclaim.prom.tmp" first, which the collector does not read). */
static int write_file(const char *dir, const char *text, size_t size) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s", dir, METRICS_FILE_NAME) < 0)
                return -ENOMEM;
        return file_replace(path, 0644, write_text, &(Text) { text, size });
}

static void remove_file(const char *dir) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s", dir, METRICS_FILE_NAME) < 0)
                return;
        if (unlink(path) < 0 && errno != ENOENT)
                log_debug_errno(errno, "Cannot remove %s: %m", path);
}

static void task_run(Task *t) {
        FileTask *ft = (FileTask *) t;  /* the task is the first member */

        if (ft->old_dir)
                remove_file(ft->old_dir);
        if (ft->dir)
                ft->result = write_file(ft->dir, ft->text, ft->size);
}

/* ---- on the loop ---- */

static void task_free(FileTask *ft) {
        free(ft->dir);
        free(ft->old_dir);
        free(ft->text);
        free(ft);
}

static void task_freep(FileTask **ft) {
        if (*ft)
                task_free(*ft);
}

static void task_drop(Task *t, void *userdata) {
        task_free((FileTask *) t);
}

static void write_failed(MetricsFile *mf, const char *dir, int r) {
        unsigned suppressed;

        if (!ratelimit_below(&mf->failures, manager_now_usec(mf->manager), &suppressed))
                return;
        if (suppressed)
                log_warning("(%u more failures to write the metrics were not logged)", suppressed);
        log_warning_errno(r, "Cannot write the metrics to %s/%s: %m%s", dir, METRICS_FILE_NAME,
                          r == -EROFS ? " (the shipped unit lets the daemon write only where ReadWritePaths= "
                                        "says: add this directory with a drop-in)" : "");
}

static void task_done(Task *t, void *userdata) {
        MetricsFile *mf = userdata;
        FileTask *ft = (FileTask *) t;

        if (ft->old_dir) {
                free(mf->written_dir);
                mf->written_dir = NULL;
        }
        if (ft->dir && ft->result < 0)
                write_failed(mf, ft->dir, ft->result);
        else if (ft->dir && !streq_ptr(ft->dir, mf->written_dir)) {
                log_info("Metrics are written to %s/%s every %gs", ft->dir, METRICS_FILE_NAME,
                         (double) mf->manager->config->daemon.metrics.textfile_interval_usec / USEC_PER_SEC);
                free(mf->written_dir);
                mf->written_dir = TAKE_PTR(ft->dir);
        }
        task_free(ft);
}

/* What this round does: write to the directory in force, after removing the file where it was. */
static int task_new(MetricsFile *mf, const char *dir, FileTask **ret) {
        _cleanup_(task_freep) FileTask *ft = calloc(1, sizeof(FileTask));
        int r;

        if (!ft)
                return -ENOMEM;
        ft->task = (Task) { .run = task_run, .done = task_done, .drop = task_drop,
                            .budget_usec = METRICS_FILE_BUDGET_USEC };
        if (dir && !(ft->dir = strdup(dir)))
                return -ENOMEM;
        if (mf->written_dir && !streq_ptr(dir, mf->written_dir) && !(ft->old_dir = strdup(mf->written_dir)))
                return -ENOMEM;
        if (dir) {
                r = metrics_render(mf->manager, &ft->text, &ft->size);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(ft);
        return 0;
}

static void metrics_file_round(MetricsFile *mf) {
        const char *dir = mf->manager->config->daemon.metrics.textfile_dir;
        FileTask *ft;
        int r;

        if (!dir && !mf->written_dir)
                return;
        if (taskq_pending(mf->queue) > 0) {
                log_debug("The last metrics write has not finished (a slow disk?); this one is skipped");
                return;
        }
        r = task_new(mf, dir, &ft);
        if (r >= 0 && (r = taskq_submit(mf->queue, &ft->task)) < 0)
                task_free(ft);
        if (r < 0)
                write_failed(mf, dir ?: mf->written_dir, r);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        MetricsFile *mf = userdata;
        int r;

        metrics_file_round(mf);
        r = sd_event_source_set_time(s, usec + mf->manager->config->daemon.metrics.textfile_interval_usec);
        if (r < 0)
                return log_error_errno(r, "Cannot rearm the metrics timer: %m");
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

/* As the loop ends, before the daemon restores its throttles: a write in progress is told to stop
 * now, so that its wait runs alongside the workers' (manager.c), not after the restore. */
static int on_loop_exit(sd_event_source *s, void *userdata) {
        MetricsFile *mf = userdata;

        taskq_stop(mf->queue);
        return 0;
}

int metrics_file_new(Manager *m, MetricsFile **ret) {
        _cleanup_(metrics_file_freep) MetricsFile *mf = calloc(1, sizeof(MetricsFile));
        int r;

        if (!mf)
                return -ENOMEM;
        mf->manager = m;
        mf->failures = (RateLimit) RATELIMIT_INIT(300 * USEC_PER_SEC, 1);
        r = taskq_new(m->event, "metrics-writer", 1, true, mf, &mf->queue);
        if (r < 0)
                return log_error_errno(r, "Cannot start the metrics writer: %m");
        r = sd_event_add_time_relative(m->event, &mf->timer, CLOCK_MONOTONIC, 0, 0, on_timer, mf);
        if (r < 0)
                return log_error_errno(r, "Cannot create the metrics timer: %m");
        (void) sd_event_source_set_description(mf->timer, "metrics-textfile");
        r = sd_event_add_exit(m->event, &mf->exit_source, on_loop_exit, mf);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the loop's end for the metrics writer: %m");
        *ret = TAKE_PTR(mf);
        return 0;
}

MetricsFile *metrics_file_free(MetricsFile *mf) {
        const char *dir;

        if (!mf)
                return NULL;
        sd_event_source_disable_unref(mf->timer);
        sd_event_source_disable_unref(mf->exit_source);
        /* A write in progress is interrupted (the file in place is whole either way), then the file goes:
         * a daemon that stopped has no figures. At stop, the loop no longer runs: this may block. */
        taskq_free(mf->queue);
        dir = mf->manager->config->daemon.metrics.textfile_dir;
        if (dir)
                remove_file(dir);
        if (mf->written_dir && !streq_ptr(dir, mf->written_dir))
                remove_file(mf->written_dir);
        free(mf->written_dir);
        free(mf);
        return NULL;
}
