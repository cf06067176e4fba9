/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "policy-writer.h"

#include <errno.h>
#include <stdlib.h>

#include "util.h"

struct PolicyWriter {
        TaskQueue *queue;
        PolicyJobDone done;
        void (*drop)(PolicyJob *job);
        void *userdata;
};

static PolicyJob *job_of(Task *t) {
        return (PolicyJob *) t;         /* the task is the job's first member */
}

static void job_free(PolicyJob *j) {
        policy_change_free(j->change);
        free(j->path);
        free(j->message);
        free(j);
}

static void job_run(Task *t) {
        PolicyJob *j = job_of(t);

        j->result = policy_store_apply(j->change, &j->path, &j->message);
}

static void job_done(Task *t, void *userdata) {
        PolicyWriter *w = userdata;
        PolicyJob *j = job_of(t);

        w->done(j, w->userdata);
        job_free(j);
}

static void job_drop(Task *t, void *userdata) {
        PolicyWriter *w = userdata;
        PolicyJob *j = job_of(t);

        if (w->drop)
                w->drop(j);
        job_free(j);
}

int policy_writer_new(sd_event *event, PolicyJobDone done, void (*drop)(PolicyJob *job), void *userdata,
                      PolicyWriter **ret) {
        _cleanup_free_ PolicyWriter *w = calloc(1, sizeof(PolicyWriter));
        int r;

        if (!w)
                return -ENOMEM;
        w->done = done;
        w->drop = drop;
        w->userdata = userdata;
        r = taskq_new(event, "policy-writer", POLICY_WRITER_QUEUE_MAX, false, w, &w->queue);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

PolicyWriter *policy_writer_free(PolicyWriter *w) {
        if (!w)
                return NULL;
        taskq_free(w->queue);
        free(w);
        return NULL;
}

int policy_writer_submit(PolicyWriter *w, PolicyChange *change, void *job_userdata) {
        PolicyJob *j = calloc(1, sizeof(PolicyJob));
        int r;

        if (!j) {
                policy_change_free(change);
                return -ENOMEM;
        }
        *j = (PolicyJob) { .task = { .run = job_run, .done = job_done, .drop = job_drop },
                           .change = change, .userdata = job_userdata };
        r = taskq_submit(w->queue, &j->task);
        if (r < 0)
                job_free(j);
        return r;
}

