/* ckpt_async.c: the background checkpoint writer (ckpt_async.h).
 *
 * One thread per writer, asleep on a condition until a job arrives.  A job moves through three
 * states under the lock: SUBMITTED (the thread copies the caller's buffers into the snapshot),
 * COPIED (the caller may change its buffers; the thread saves and prunes), DONE (the result
 * waits for ckpt_writer_wait).  IDLE again once collected. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt_async.h"
#include "core/util.h"

enum job_state { JOB_IDLE, JOB_SUBMITTED, JOB_COPIED, JOB_DONE };

struct ckpt_writer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;        /* every state change and `quit` */
    enum job_state state;
    bool quit;
    size_t n;                   /* floats per buffer */
    float *params, *m, *v;      /* the snapshot */
    /* the job */
    char dir[4096];
    struct ckpt_meta meta;      /* config_yaml owned by the job */
    struct ckpt_tensors src;    /* the caller's buffers, read until COPIED */
    int64_t keep;
    struct ckpt_known *known;
    struct ckpt_write_result res;
};

/* The snapshot and the writer itself (the thread, lock and condition gone already). */
static void free_writer(struct ckpt_writer *w)
{
    free(w->params);
    free(w->m);
    free(w->v);
    free(w);
}

static void set_state(struct ckpt_writer *w, enum job_state s)
{
    pthread_mutex_lock(&w->lock);
    w->state = s;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* The copy, then the save and retention, of the job in hand (on the writer's thread). */
static void run_job(struct ckpt_writer *w)
{
    struct ckpt_write_result *r = &w->res;
    const struct ckpt_tensors *s = &w->src;
    double t0 = rz_now();
    memcpy(w->params, s->params, w->n * sizeof *w->params);
    if (!s->moments_sharded) {
        memcpy(w->m, s->adam_m, w->n * sizeof *w->m);
        memcpy(w->v, s->adam_v, w->n * sizeof *w->v);
    }
    r->copy_ms = (rz_now() - t0) * 1e3;
    set_state(w, JOB_COPIED);

    struct ckpt_tensors x = {.table = s->table, .count = s->count, .n_floats = w->n,
                             .params = w->params, .adam_m = w->m, .adam_v = w->v};
    t0 = rz_now();
    r->status = ckpt_save(w->dir, &w->meta, &x, r->path, sizeof r->path, &r->err);
    r->commit_ms = (rz_now() - t0) * 1e3;
    if (r->status == RZ_OK) {
        struct rz_err perr;
        t0 = rz_now();
        /* our own fresh commit counts as valid without a read-back (train_ckpt.c does the same) */
        ckpt_known_add(w->known, r->path);
        if (ckpt_prune(w->dir, w->keep, w->known, &perr) != RZ_OK) {
            r->prune_failed = true;
            rz_fmt(r->prune_msg, sizeof r->prune_msg, "%s", perr.msg);
        }
        r->prune_ms = (rz_now() - t0) * 1e3;
    }
    free(w->meta.config_yaml);
    w->meta.config_yaml = NULL;
    set_state(w, JOB_DONE);
}

static void *writer_main(void *arg)
{
    struct ckpt_writer *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        while (!w->quit && w->state != JOB_SUBMITTED)
            pthread_cond_wait(&w->cond, &w->lock);
        bool quit = w->quit && w->state != JOB_SUBMITTED;
        pthread_mutex_unlock(&w->lock);
        if (quit)
            return NULL;
        run_job(w);
    }
}

enum rz_status ckpt_writer_create(struct ckpt_writer **out, size_t n_floats, struct rz_err *err)
{
    *out = NULL;
    struct ckpt_writer *w = calloc(1, sizeof *w);
    if (w == NULL)
        return rz_fail(err, RZ_ENOMEM, "checkpoint writer: out of memory");
    size_t bytes = (n_floats ? n_floats : 1) * sizeof(float);
    w->n = n_floats;
    w->params = rz_alloc_aligned(bytes);
    w->m = rz_alloc_aligned(bytes);
    w->v = rz_alloc_aligned(bytes);
    if (w->params == NULL || w->m == NULL || w->v == NULL) {
        free_writer(w);
        return rz_fail(err, RZ_ENOMEM, "checkpoint writer: out of memory for a snapshot of 3 x %zu "
                       "floats (checkpoint.mode async; sync needs none)", n_floats);
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    int e = pthread_create(&w->thread, NULL, writer_main, w);
    if (e != 0) {
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free_writer(w);
        return rz_fail(err, RZ_ENOMEM, "checkpoint writer: cannot start its thread: %s",
                       strerror(e));
    }
    *out = w;
    return RZ_OK;
}

float *ckpt_writer_moment(struct ckpt_writer *w, int which)
{
    return which == 0 ? w->m : w->v;
}

/* Block until the state is one of the two given; the lock is held by the caller. */
static void wait_for(struct ckpt_writer *w, enum job_state a, enum job_state b)
{
    while (w->state != a && w->state != b && w->state != JOB_IDLE)
        pthread_cond_wait(&w->cond, &w->lock);
}

enum rz_status ckpt_writer_submit(struct ckpt_writer *w, const char *dir,
                                  const struct ckpt_meta *meta, const struct ckpt_tensors *src,
                                  int64_t keep, struct ckpt_known *known, struct rz_err *err)
{
    if (src->n_floats != w->n)
        return rz_fail(err, RZ_ECONFIG, "checkpoint writer: %zu floats submitted to a snapshot "
                       "of %zu", src->n_floats, w->n);
    pthread_mutex_lock(&w->lock);
    enum job_state s = w->state;
    pthread_mutex_unlock(&w->lock);
    if (s != JOB_IDLE)
        return rz_fail(err, RZ_ECONFIG, "checkpoint writer: the previous write (step %lld) was "
                       "not collected before the next", (long long)w->res.step);
    char *yaml = NULL;
    if (meta->config_yaml != NULL && (yaml = strdup(meta->config_yaml)) == NULL)
        return rz_fail(err, RZ_ENOMEM, "checkpoint writer: out of memory for the config text");
    rz_fmt(w->dir, sizeof w->dir, "%s", dir);
    w->meta = *meta;
    w->meta.config_yaml = yaml;
    w->src = *src;
    w->keep = keep;
    w->known = known;
    memset(&w->res, 0, sizeof w->res);
    w->res.step = meta->step;
    set_state(w, JOB_SUBMITTED);
    return RZ_OK;
}

double ckpt_writer_fence(struct ckpt_writer *w)
{
    double t0 = rz_now();
    pthread_mutex_lock(&w->lock);
    bool waited = w->state == JOB_SUBMITTED;
    wait_for(w, JOB_COPIED, JOB_DONE);
    pthread_mutex_unlock(&w->lock);
    return waited ? rz_now() - t0 : 0.0;
}

bool ckpt_writer_ready(struct ckpt_writer *w)
{
    pthread_mutex_lock(&w->lock);
    bool done = w->state == JOB_DONE;
    pthread_mutex_unlock(&w->lock);
    return done;
}

bool ckpt_writer_pending(struct ckpt_writer *w)
{
    pthread_mutex_lock(&w->lock);
    bool pending = w->state != JOB_IDLE;
    pthread_mutex_unlock(&w->lock);
    return pending;
}

bool ckpt_writer_wait(struct ckpt_writer *w, struct ckpt_write_result *res, double *waited_s)
{
    double t0 = rz_now();
    pthread_mutex_lock(&w->lock);
    bool pending = w->state != JOB_IDLE;
    wait_for(w, JOB_DONE, JOB_DONE);
    if (pending) {
        *res = w->res;
        w->state = JOB_IDLE;
        pthread_cond_broadcast(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
    if (waited_s != NULL)
        *waited_s = rz_now() - t0;
    return pending;
}

void ckpt_writer_destroy(struct ckpt_writer *w)
{
    if (w == NULL)
        return;
    struct ckpt_write_result dropped;
    ckpt_writer_wait(w, &dropped, NULL);
    pthread_mutex_lock(&w->lock);
    w->quit = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free_writer(w);
}
