/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "policy-writer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

struct PolicyWriter {
        sd_event_source *done_source;
        int efd;
        PolicyJob *head, *tail;         /* waiting */
        size_t n_queued;
        PolicyJob *running;             /* in the thread */
        pthread_t thread;
        PolicyJobDone done;
        void *userdata;
};

static void job_free(PolicyJob *j) {
        policy_change_free(j->change);
        free(j->path);
        free(j->message);
        free(j);
}

static void *job_thread(void *arg) {
        PolicyWriter *w = arg;
        PolicyJob *j = w->running;
        uint64_t one = 1;

        j->result = policy_store_apply(j->change, &j->path, &j->message);
        /* The loop joins the thread when it reads this. */
        while (write(w->efd, &one, sizeof(one)) < 0 && errno == EINTR)
                ;
        return NULL;
}

static void writer_start_next(PolicyWriter *w) {
        sigset_t all, old;
        int r;

        while (!w->running && w->head) {
                w->running = w->head;
                w->head = w->head->next;
                if (!w->head)
                        w->tail = NULL;
                w->n_queued--;
                /* The thread must not take the loop's signals. */
                sigfillset(&all);
                pthread_sigmask(SIG_SETMASK, &all, &old);
                r = pthread_create(&w->thread, NULL, job_thread, w);
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                if (r == 0)
                        return;
                w->running->result = -r;
                (void) asprintf(&w->running->message, "cannot start the policy writer thread: %s", strerror(r));
                w->done(w->running, w->userdata);
                job_free(w->running);
                w->running = NULL;
        }
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        PolicyWriter *w = userdata;
        uint64_t n;
        PolicyJob *j;

        if (read(fd, &n, sizeof(n)) < 0 || !w->running)
                return 0;
        pthread_join(w->thread, NULL);
        j = TAKE_PTR(w->running);
        w->done(j, w->userdata);
        job_free(j);
        writer_start_next(w);
        return 0;
}

int policy_writer_new(sd_event *event, PolicyJobDone done, void *userdata, PolicyWriter **ret) {
        PolicyWriter *w = calloc(1, sizeof(PolicyWriter));
        int r;

        if (!w)
                return -ENOMEM;
        w->done = done;
        w->userdata = userdata;
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0) {
                r = negative_errno();
                free(w);
                return r;
        }
        r = sd_event_add_io(event, &w->done_source, w->efd, EPOLLIN, on_done, w);
        if (r < 0) {
                close(w->efd);
                free(w);
                return r;
        }
        (void) sd_event_source_set_description(w->done_source, "policy-writer");
        *ret = w;
        return 0;
}

int policy_writer_submit(PolicyWriter *w, PolicyChange *change, void *job_userdata) {
        PolicyJob *j;

        if (w->n_queued >= POLICY_WRITER_QUEUE_MAX) {
                policy_change_free(change);
                return -EBUSY;
        }
        j = calloc(1, sizeof(PolicyJob));
        if (!j) {
                policy_change_free(change);
                return -ENOMEM;
        }
        j->change = change;
        j->userdata = job_userdata;
        if (w->tail)
                w->tail->next = j;
        else
                w->head = j;
        w->tail = j;
        w->n_queued++;
        writer_start_next(w);
        return 0;
}

size_t policy_writer_pending(const PolicyWriter *w) {
        return w->n_queued + (w->running ? 1 : 0);
}

PolicyWriter *policy_writer_free(PolicyWriter *w, void (*drop)(PolicyJob *job)) {
        if (!w)
                return NULL;
        if (w->running) {
                pthread_join(w->thread, NULL);
                if (drop)
                        drop(w->running);
                job_free(w->running);
        }
        while (w->head) {
                PolicyJob *j = w->head;
                w->head = j->next;
                if (drop)
                        drop(j);
                job_free(j);
        }
        sd_event_source_disable_unref(w->done_source);
        close(w->efd);
        free(w);
        return NULL;
}
