/* prep_encode.c: `ryzen-data encode`'s pipeline (see prep.h).
 *
 * The main thread reads the inputs, as one concatenated text, into chunks that end at a line end
 * (about four a thread, 64 KiB to PREP_CHUNK_BYTES; a longer line makes a longer chunk); N
 * worker threads encode chunks (tok_encode is thread-safe on one struct tok, and a text encodes
 * to the same ids cut at any line end, tok.h); the main thread appends each chunk's ids to the
 * token file in input order.
 * The chunks in flight are a ring of 2N+2 slots, so memory is bounded by the window, not by the
 * corpus, and the file is the same bytes for any thread count.
 *
 * Not here: the token file's format and durability (record/tokfile.c), the tokenizer (tok/). */
#define _GNU_SOURCE /* sched_getaffinity, cpu_set_t: the CPUs this process may use */
#include "config.h"

#include "prep/prep.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "tok/tok.h"

int prep_default_threads(const char *cpus_per_task)
{
    if (cpus_per_task != NULL) {
        char *end = NULL;
        errno = 0;
        long v = strtol(cpus_per_task, &end, 10);
        if (errno == 0 && end != cpus_per_task && *end == '\0' && v > 0)
            return v > PREP_MAX_THREADS ? PREP_MAX_THREADS : (int)v;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set) > PREP_MAX_THREADS ? PREP_MAX_THREADS : CPU_COUNT(&set);
    return 1;
}

/* ---- reading the inputs as one text, in chunks cut at line ends ---- */

struct reader {
    const char *const *paths;
    size_t n, next;            /* paths[next] is the file to open when fd < 0 */
    int fd;
    const char *path;          /* the open file's name */
    char *carry;               /* bytes after the last chunk's line end */
    size_t carry_len, carry_cap;
    bool eof;                  /* every input read to its end */
    uint64_t total;            /* the inputs' sizes (regular files) */
};

/* Every input opens and is not a directory, before anything is written. */
static enum rz_status reader_check(struct reader *r, struct rz_err *err)
{
    for (size_t i = 0; i < r->n; i++) {
        struct stat sb;
        int fd = open(r->paths[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return rz_fail(err, RZ_EDATA, "input '%s': %s", r->paths[i], strerror(errno));
        int rc = fstat(fd, &sb);
        int e = errno;
        close(fd);
        if (rc != 0)
            return rz_fail(err, RZ_EDATA, "input '%s': %s", r->paths[i], strerror(e));
        if (S_ISDIR(sb.st_mode))
            return rz_fail(err, RZ_EDATA, "input '%s': it is a directory, not a text file",
                           r->paths[i]);
        if (S_ISREG(sb.st_mode))
            r->total += (uint64_t)sb.st_size;
    }
    return RZ_OK;
}

/* Read up to `want` bytes into buf from the inputs in order; *got is 0 only at the end. */
static enum rz_status reader_read(struct reader *r, char *buf, size_t want, size_t *got,
                                  struct rz_err *err)
{
    *got = 0;
    while (!r->eof) {
        if (r->fd < 0) {
            if (r->next == r->n) {
                r->eof = true;
                break;
            }
            r->path = r->paths[r->next++];
            r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
            if (r->fd < 0)
                return rz_fail(err, RZ_EDATA, "input '%s': %s", r->path, strerror(errno));
        }
        ssize_t k = read(r->fd, buf, want);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return rz_fail(err, RZ_EIO, "read '%s': %s", r->path, rz_io_cause(errno));
        if (k > 0) {
            *got = (size_t)k;
            break;
        }
        close(r->fd);
        r->fd = -1;
    }
    return RZ_OK;
}

static enum rz_status grow(char **buf, size_t *cap, size_t need, struct rz_err *err)
{
    if (need <= *cap)
        return RZ_OK;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    char *p = realloc(*buf, c);
    if (p == NULL)
        return rz_fail(err, RZ_ENOMEM, "encode: out of memory for a chunk of %zu bytes", c);
    *buf = p;
    *cap = c;
    return RZ_OK;
}

/* The next chunk into *buf (grown as needed): the carry, then input up to `chunk` bytes, cut
 * after its last '\n'; a chunk without one grows until it has one or the input ends.  *len 0:
 * the input has ended. */
static enum rz_status reader_chunk(struct reader *r, size_t chunk, char **buf, size_t *cap,
                                   size_t *len, struct rz_err *err)
{
    enum rz_status st = grow(buf, cap, chunk > r->carry_len ? chunk : r->carry_len + 1, err);
    if (st != RZ_OK)
        return st;
    if (r->carry_len > 0)
        memcpy(*buf, r->carry, r->carry_len);
    size_t n = r->carry_len, searched = 0, target = chunk;
    r->carry_len = 0;
    for (;;) {
        while (n < target && !r->eof) {
            size_t got = 0;
            if ((st = reader_read(r, *buf + n, target - n, &got, err)) != RZ_OK)
                return st;
            n += got;
        }
        if (r->eof)
            break;
        char *nl = NULL;
        for (size_t i = n; i > searched && nl == NULL; i--)
            if ((*buf)[i - 1] == '\n')
                nl = *buf + i - 1;
        if (nl != NULL) {
            size_t keep = (size_t)(nl - *buf) + 1;
            if ((st = grow(&r->carry, &r->carry_cap, n - keep, err)) != RZ_OK)
                return st;
            if (n > keep)
                memcpy(r->carry, *buf + keep, n - keep);
            r->carry_len = n - keep;
            n = keep;
            break;
        }
        searched = n; /* one line longer than a chunk: read on */
        target = 2 * n;
        if ((st = grow(buf, cap, target, err)) != RZ_OK)
            return st;
    }
    *len = n;
    return RZ_OK;
}

static void reader_free(struct reader *r)
{
    if (r->fd >= 0)
        close(r->fd);
    free(r->carry);
}

/* ---- the window of chunks and the worker threads ---- */

enum slot_state { SLOT_FREE, SLOT_READY, SLOT_DONE };

struct slot {
    enum slot_state state;
    char *text;
    size_t len, cap;
    struct tok_ids ids;
    enum rz_status st;
    struct rz_err err;
};

struct pipeline {
    const struct tok *t;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    struct slot *slots;
    size_t n_slots;
    uint64_t next_read, next_take, next_write; /* chunk sequence numbers */
    bool input_done, stop;
};

static struct slot *slot_of(struct pipeline *p, uint64_t seq)
{
    return &p->slots[seq % p->n_slots];
}

/* A worker: take the oldest ready chunk, encode it, mark it done; until the input is done and
 * every chunk taken, or the pipeline stops. */
static void *worker_main(void *arg)
{
    struct pipeline *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next_take == p->next_read && !p->input_done)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop || p->next_take == p->next_read)
            break;
        struct slot *s = slot_of(p, p->next_take++);
        pthread_mutex_unlock(&p->mu);
        s->ids.n = 0;
        rz_err_clear(&s->err);
        s->st = tok_encode(p->t, s->text, s->len, &s->ids, &s->err);
        pthread_mutex_lock(&p->mu);
        s->state = SLOT_DONE;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void pipeline_free(struct pipeline *p)
{
    for (size_t i = 0; p->slots != NULL && i < p->n_slots; i++) {
        free(p->slots[i].text);
        tok_ids_free(&p->slots[i].ids);
    }
    free(p->slots);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
}

static enum rz_status pipeline_init(struct pipeline *p, const struct tok *t, int threads,
                                    struct rz_err *err)
{
    memset(p, 0, sizeof *p);
    p->t = t;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->n_slots = 2 * (size_t)threads + 2;
    p->slots = calloc(p->n_slots, sizeof *p->slots);
    if (p->slots == NULL) {
        pipeline_free(p);
        return rz_fail(err, RZ_ENOMEM, "encode: out of memory for %zu chunks", p->n_slots);
    }
    return RZ_OK;
}

/* Stop the workers (at once when `now`, else when every chunk is taken) and join them. */
static void pipeline_join(struct pipeline *p, pthread_t *tid, int n, bool now)
{
    pthread_mutex_lock(&p->mu);
    p->input_done = true;
    p->stop = p->stop || now;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
}

/* ---- progress ---- */

struct progress {
    FILE *f;
    bool tty, shown;
    double t0, last;
    uint64_t total, done;
};

/* At most four times a second, on a terminal only. */
static void progress_show(struct progress *g)
{
    double now = rz_now();
    if (g->f == NULL || !g->tty || now - g->last < 0.25)
        return;
    g->last = now;
    double el = now - g->t0, rate = el > 0 ? (double)g->done / el : 0;
    fprintf(g->f, "\rryzen-data: encode: %.1f", (double)g->done / 1e6);
    if (g->total > 0) {
        double pct = 100.0 * (double)g->done / (double)g->total;
        fprintf(g->f, " / %.1f MB (%.0f%%)", (double)g->total / 1e6, pct > 100 ? 100 : pct);
    } else {
        fputs(" MB", g->f);
    }
    fprintf(g->f, ", %.2f MB/s", rate / 1e6);
    if (g->total > g->done && rate > 0) {
        double eta = (double)(g->total - g->done) / rate;
        fprintf(g->f, ", ETA %d:%02d", (int)(eta / 60), (int)eta % 60);
    }
    fputs("\033[K", g->f);
    fflush(g->f);
    g->shown = true;
}

static void progress_end(struct progress *g)
{
    if (g->f != NULL && g->shown)
        fputs("\r\033[K", g->f);
}

/* ---- the pipeline's main thread: read, hand out, write in order ---- */

struct encode_run {
    struct pipeline p;
    struct reader r;
    struct tokfile_writer w;
    struct progress g;
    size_t chunk;
    struct prep_encode_stats *st;
};

/* Fill the next free slot with a chunk and hand it to the workers; *filled false when the
 * input has ended. */
static enum rz_status feed_one(struct encode_run *e, bool *filled, struct rz_err *err)
{
    struct slot *s = slot_of(&e->p, e->p.next_read);
    enum rz_status st = reader_chunk(&e->r, e->chunk, &s->text, &s->cap, &s->len, err);
    *filled = st == RZ_OK && s->len > 0;
    if (!*filled)
        return st;
    pthread_mutex_lock(&e->p.mu);
    s->state = SLOT_READY;
    e->p.next_read++;
    pthread_cond_signal(&e->p.work);
    pthread_mutex_unlock(&e->p.mu);
    return RZ_OK;
}

/* Append the oldest chunk's ids (it is done) and free its slot. */
static enum rz_status write_one(struct encode_run *e, struct rz_err *err)
{
    struct slot *s = slot_of(&e->p, e->p.next_write);
    if (s->st != RZ_OK) {
        *err = s->err;
        return s->st;
    }
    enum rz_status st = tokfile_writer_append(&e->w, s->ids.ids, s->ids.n, err);
    if (st != RZ_OK)
        return st;
    e->st->tokens += s->ids.n;
    e->st->bytes += s->len;
    e->st->chunks++;
    e->g.done += s->len;
    s->state = SLOT_FREE;
    e->p.next_write++;
    progress_show(&e->g);
    return RZ_OK;
}

/* Whether the oldest chunk not yet written is encoded (the lock is held). */
static bool head_done(struct pipeline *p)
{
    return p->next_write < p->next_read && slot_of(p, p->next_write)->state == SLOT_DONE;
}

static void input_ended(struct pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    p->input_done = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
}

/* Feed while the window has room, write the oldest chunk once it is encoded, wait only when
 * neither can be done. */
static enum rz_status run_pipeline(struct encode_run *e, struct rz_err *err)
{
    struct pipeline *p = &e->p;
    bool more = true;
    for (;;) {
        if (more && p->next_read - p->next_write < p->n_slots) {
            enum rz_status st = feed_one(e, &more, err);
            if (st != RZ_OK)
                return st;
            if (!more)
                input_ended(p);
        }
        pthread_mutex_lock(&p->mu);
        if (!more && p->next_write == p->next_read) {
            pthread_mutex_unlock(&p->mu);
            return RZ_OK;
        }
        bool room = more && p->next_read - p->next_write < p->n_slots;
        while (!room && !head_done(p))
            pthread_cond_wait(&p->done, &p->mu);
        bool write = head_done(p);
        pthread_mutex_unlock(&p->mu);
        if (write) {
            enum rz_status st = write_one(e, err);
            if (st != RZ_OK)
                return st;
        }
    }
}

static enum rz_status start_workers(struct encode_run *e, pthread_t *tid, int n, int *started,
                                    struct rz_err *err)
{
    for (*started = 0; *started < n; (*started)++) {
        int rc = pthread_create(&tid[*started], NULL, worker_main, &e->p);
        if (rc != 0)
            return rz_fail(err, RZ_ENOMEM, "encode: cannot start thread %d of %d: %s",
                           *started + 1, n, strerror(rc));
    }
    return RZ_OK;
}

static void print_summary(const struct prep_encode_opts *o, const struct prep_encode_stats *st)
{
    if (o->log == NULL)
        return;
    double mbs = st->seconds > 0 ? (double)st->bytes / 1e6 / st->seconds : 0;
    fprintf(o->log,
            "ryzen-data: encode: %llu tokens from %llu bytes of %zu file(s) in %.2f s: "
            "%.2f MB/s on %d thread(s), %.4f tokens/byte -> %s\n",
            (unsigned long long)st->tokens, (unsigned long long)st->bytes, o->n_inputs,
            st->seconds, mbs, st->threads,
            st->bytes > 0 ? (double)st->tokens / (double)st->bytes : 0.0, o->out);
}

/* About four chunks a thread, from 64 KiB to PREP_CHUNK_BYTES: a shard smaller than
 * threads x 1 MiB still keeps every thread busy.  The ids do not depend on it (tok.h). */
static size_t default_chunk(uint64_t total, int threads)
{
    uint64_t c = total / (4 * (uint64_t)threads);
    return c < (64u << 10) ? 64u << 10 : c > PREP_CHUNK_BYTES ? PREP_CHUNK_BYTES : (size_t)c;
}

/* The token file, then (it committed) its sidecar; without the sidecar the token file goes
 * too, so a requeued task finds neither and redoes both. */
static enum rz_status commit(struct encode_run *e, const char *out, struct rz_err *err)
{
    char side[4200];
    rz_fmt(side, sizeof side, "%s.sha256", out);
    if (unlink(side) != 0 && errno != ENOENT)
        return rz_fail(err, RZ_EIO, "remove the old '%s': %s", side, rz_io_cause(errno));
    enum rz_status st = tokfile_writer_commit(&e->w, e->st->file_sha256, err);
    if (st != RZ_OK)
        return st;
    st = prep_sidecar_write(out, e->st->file_sha256, err);
    if (st != RZ_OK && unlink(out) == 0)
        rz_err_append(err, "; removed '%s' too, it has no checksum", out);
    return st;
}

enum rz_status prep_encode(const struct tok *t, const struct prep_encode_opts *o,
                           struct prep_encode_stats *st, struct rz_err *err)
{
    memset(st, 0, sizeof *st);
    if (o->threads < 1 || o->threads > PREP_MAX_THREADS)
        return rz_fail(err, RZ_ECONFIG, "encode: %d threads: need 1..%d", o->threads,
                       PREP_MAX_THREADS);
    struct encode_run e = {.r = {.paths = o->inputs, .n = o->n_inputs, .fd = -1}, .st = st};
    st->threads = o->threads;
    enum rz_status s = prep_check_out_dir(o->out, err);
    if (s == RZ_OK)
        s = reader_check(&e.r, err);
    if (s != RZ_OK)
        return s;
    e.chunk = o->chunk_bytes > 0 ? o->chunk_bytes : default_chunk(e.r.total, o->threads);
    uint8_t sha[32];
    tok_sha256(t, sha);
    if ((s = tokfile_writer_open(&e.w, o->out, o->width, (uint64_t)tok_vocab_size(t),
                                 sha, err)) != RZ_OK)
        return s;
    if ((s = pipeline_init(&e.p, t, o->threads, err)) != RZ_OK) {
        tokfile_writer_abort(&e.w);
        return s;
    }
    e.g = (struct progress){.f = o->log, .tty = o->tty, .t0 = rz_now(), .total = e.r.total};
    pthread_t tid[PREP_MAX_THREADS];
    int started = 0;
    s = start_workers(&e, tid, o->threads, &started, err);
    if (s == RZ_OK)
        s = run_pipeline(&e, err);
    pipeline_join(&e.p, tid, started, s != RZ_OK);
    progress_end(&e.g);
    if (s == RZ_OK)
        s = commit(&e, o->out, err);
    else
        tokfile_writer_abort(&e.w);
    st->seconds = rz_now() - e.g.t0;
    pipeline_free(&e.p);
    reader_free(&e.r);
    if (s == RZ_OK)
        print_summary(o, st);
    return s;
}
