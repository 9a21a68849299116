/* comm.c: the MPI module (see comm.h).  Plain MPI-3 calls only: no CUDA-aware paths, no
 * persistent collectives, no custom reduction operators; every call is checked by MPI_CHECK,
 * which records the call text, file:line and MPI's own error string. */
#include "config.h"

#include "comm/comm.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm_internal.h"
#include "core/cli.h"
#include "core/util.h"
#include "optim/optim.h"

#define COMM_MAX_BUCKETS 4096

/* y[i] += x[i] */
static void vec_add_into(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

struct comm {
    bool mpi;                     /* false: a local world of one, no MPI calls at all */
    int rank, size;
    char host[MPI_MAX_PROCESSOR_NAME];
    /* the reduction in flight */
    float *g;
    size_t n, bucket_floats;
    size_t reported;              /* floats reported ready so far */
    double local_sumsq;
    bool local_norm;              /* accumulate local_sumsq this step */
    MPI_Request req[COMM_MAX_BUCKETS];
    int n_req;
    int overflow;                 /* more buckets than COMM_MAX_BUCKETS: rest reduced at finish */
    /* ZeRO: a reduction that reduce-scatters into this rank's shard */
    bool sharded, accumulate;
    float *shard;                 /* (hi - lo): this rank's part of the reduced gradient */
    size_t lo, hi, align;
    const float *req_data[COMM_MAX_BUCKETS]; /* the floats each bucket in flight sends */
    size_t req_len[COMM_MAX_BUCKETS];
    int *counts;                  /* (COMM_MAX_BUCKETS, size): recvcounts of each bucket */
    /* ZeRO: the parameter all-gather in flight (comm_params_*) */
    float *params;
    MPI_Request preq[COMM_MAX_BUCKETS];
    size_t pend[COMM_MAX_BUCKETS];/* end of each bucket, ascending */
    int *pcounts, *pdispls;       /* (COMM_MAX_BUCKETS, size) */
    int n_preq, p_done;           /* buckets [0, p_done) are complete */
    double param_wait_s;          /* time blocked in comm_params_need since the last finish */
    /* the gradient reduction's own time: its first bucket's post, the moment every bucket was
     * seen complete (a progress point's MPI_Testall, or the finish's wait), and the span of the
     * last finished one */
    double t_post, t_done, span_s;
    /* the first failure of a call that cannot return one (bucket starts, waits in hooks),
     * reported by the next comm_grads_finish or comm_params_finish */
    bool failed;
    char failure[512];
};

/* For the calls made from the model's hooks, which cannot return a status: the first failure is
 * kept (call text, file:line, MPI's message) and returned by the next *_finish. */
#define MPI_NOTE(c, call) do { \
        int mpi_rc_ = (call); \
        if (mpi_rc_ != MPI_SUCCESS && !(c)->failed) { \
            char mpi_msg_[MPI_MAX_ERROR_STRING]; int mpi_len_ = 0; \
            MPI_Error_string(mpi_rc_, mpi_msg_, &mpi_len_); \
            rz_fmt((c)->failure, sizeof (c)->failure, "%s:%d: %s failed: %s", __FILE__, \
                   __LINE__, #call, mpi_msg_); \
            (c)->failed = true; \
        } } while (0)

enum rz_status comm_init(struct comm **out, int *argc, char ***argv, const struct comm_launch *l,
                         bool ring, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    *out = NULL;
    struct comm *c = calloc(1, sizeof *c);
    if (c == NULL)
        return rz_fail(err, RZ_ENOMEM, "comm: out of memory");
    int provided = 0, len = 0;
    /* Open MPI's shared-memory transport copies large messages in fragments unless told to use
     * single-copy (CMA).  Fragments advance at every MPI_Testall of the progress points, so
     * the gradient allreduce overlaps backward (exposed comm ~1% vs ~5% with CMA, measured on
     * the seed model, 2 ranks); CMA also needs ptrace rights that containers often lack.  An
     * operator's own setting wins (no overwrite). */
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
    /* The gradient buckets' MPI_Iallreduce (Open MPI's libnbc): left to choose, it reduced to
     * and broadcast from rank 0, whose node then sent 4 gradients a step on 8 ranks over 2 nodes
     * and 8 on 12 and 16 (measured on the dev cluster: every step waited on that one link).  A
     * ring sends 2(P-1)/P of the gradient from every node: 2.3x to 4.6x faster steps there. */
    if (ring)
        setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0);
    /* MPICH: the same ring by its own control variable (its default for large sums,
     * reduce-scatter then allgather, already sends 2(P-1)/P per node; the ring keeps comm.allreduce
     * meaning one algorithm).  Open MPI's single-copy setting has no MPICH counterpart to set:
     * ch4's shared memory needs no ptrace rights. */
    if (ring)
        setenv("MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM", "tsp_ring", 0);
    MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    /* Errors come back as codes, so we can say what failed instead of MPI aborting for us. */
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &c->rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &c->size));
    MPI_CHECK(MPI_Get_processor_name(c->host, &len));
    /* Under Slurm the node name is what operators know (and, on a dev cluster of virtual nodes
     * on one machine, the only name that tells the nodes apart). */
    if (l != NULL && l->nodename[0] != '\0')
        snprintf(c->host, sizeof c->host, "%s", l->nodename);
    c->mpi = true;
    *out = c;
    return RZ_OK;
cleanup:
    free(c);
    return st == RZ_EHANG ? RZ_EHEALTH : st;
}

enum rz_status comm_create_local(struct comm **out, struct rz_err *err)
{
    struct comm *c = calloc(1, sizeof *c);
    if (c == NULL)
        return rz_fail(err, RZ_ENOMEM, "comm: out of memory");
    c->size = 1;
    snprintf(c->host, sizeof c->host, "localhost");
    *out = c;
    return RZ_OK;
}

void comm_finalize(struct comm *c)
{
    if (c == NULL)
        return;
    free(c->counts);
    free(c->pcounts);
    free(c->pdispls);
    int finalized = 0;
    if (c->mpi && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized)
        MPI_Finalize();
    free(c);
}

void comm_abort(struct comm *c, int code)
{
    if (c != NULL && c->mpi)
        MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);
}

int comm_rank(const struct comm *c) { return c->rank; }
int comm_size(const struct comm *c) { return c->size; }
const char *comm_host(const struct comm *c) { return c->host; }

/* ---- gradient allreduce ------------------------------------------------------------------------ */

void comm_grads_begin(struct comm *c, float *g, size_t n, size_t bucket_bytes, bool local_norm)
{
    c->sharded = false;
    c->local_norm = local_norm;
    c->g = g;
    c->n = n;
    c->bucket_floats = bucket_bytes / sizeof(float);
    if (c->bucket_floats == 0)
        c->bucket_floats = 1;
    c->reported = 0;
    c->local_sumsq = 0.0;
    c->n_req = 0;
    c->overflow = 0;
    c->t_post = c->t_done = 0.0;
}

/* A bucket is posted: the first one starts the reduction's clock, and every one means it is
 * not done (the buckets before may all have completed already). */
static void posted(struct comm *c)
{
    if (c->t_post == 0.0)
        c->t_post = rz_now();
    c->t_done = 0.0;
}

void comm_progress(struct comm *c)
{
    int flag = 0;
    if (c->n_req > 0) {
        MPI_Testall(c->n_req, c->req, &flag, comm_statuses_ignore());
        if (flag && c->t_done == 0.0)
            c->t_done = rz_now();
    }
    if (c->p_done < c->n_preq)
        MPI_Testall(c->n_preq - c->p_done, c->preq + c->p_done, &flag, comm_statuses_ignore());
}

/* Stage 0: allreduce g[offset ..) in place, in buckets. */
static void allreduce_range(struct comm *c, size_t offset, size_t count)
{
    for (size_t done = 0; done < count;) {
        size_t len = count - done < c->bucket_floats ? count - done : c->bucket_floats;
        if (c->n_req == COMM_MAX_BUCKETS) {
            c->overflow = 1;
            return;
        }
        /* errors surface in comm_grads_finish through MPI_Waitall */
        posted(c);
        MPI_Iallreduce(MPI_IN_PLACE, c->g + offset + done, (int)len, MPI_FLOAT, MPI_SUM,
                       MPI_COMM_WORLD, &c->req[c->n_req++]);
        done += len;
    }
}

/* |[a, b) n [lo, hi)| */
static size_t overlap(size_t a, size_t b, size_t lo, size_t hi)
{
    size_t x = a > lo ? a : lo, y = b < hi ? b : hi;
    return y > x ? y - x : 0;
}

/* counts[r] (and displs[r] from a, when not NULL) of every rank's part of [a, b). */
static void part_counts(const struct comm *c, size_t n, size_t a, size_t b, int *counts,
                        int *displs)
{
    for (int r = 0; r < c->size; r++) {
        size_t lo, hi;
        rz_shard(n, c->size, r, c->align, &lo, &hi);
        counts[r] = (int)overlap(a, b, lo, hi);
        if (displs != NULL)
            displs[r] = counts[r] > 0 ? (int)((a > lo ? a : lo) - a) : 0;
    }
}

/* Free a slot for one more bucket: wait for everything in flight (rare: > 4096 buckets). */
static void make_room(struct comm *c)
{
    if (c->n_req < COMM_MAX_BUCKETS)
        return;
    MPI_NOTE(c, MPI_Waitall(c->n_req, c->req, comm_statuses_ignore()));
    c->n_req = 0;
}

/* ZeRO: reduce-scatter data (= floats [offset, offset + count) of the layout) in buckets; each
 * rank receives the sum of its part into its shard. */
static void reduce_scatter_range(struct comm *c, size_t offset, size_t count, float *data)
{
    size_t own = overlap(offset, offset + count, c->lo, c->hi);
    if (c->accumulate && own > 0) /* the previous micro-steps' sum rides along in our part */
        vec_add_into(data + ((offset > c->lo ? offset : c->lo) - offset),
                     c->shard + ((offset > c->lo ? offset : c->lo) - c->lo), own);
    if (c->size == 1) {
        memcpy(c->shard + (offset - c->lo), data, count * sizeof *data);
        return;
    }
    for (size_t a = offset; a < offset + count; a += c->bucket_floats) {
        size_t b = a + c->bucket_floats < offset + count ? a + c->bucket_floats : offset + count;
        make_room(c);
        int k = c->n_req++, *counts = c->counts + (size_t)k * (size_t)c->size;
        part_counts(c, c->n, a, b, counts, NULL);
        float *recv = c->shard + (overlap(a, b, c->lo, c->hi) > 0 ? (a > c->lo ? a : c->lo) - c->lo
                                                                  : 0);
        c->req_data[k] = data + (a - offset);
        c->req_len[k] = b - a;
        posted(c);
        MPI_NOTE(c, MPI_Ireduce_scatter(data + (a - offset), recv, counts, MPI_FLOAT, MPI_SUM,
                                        MPI_COMM_WORLD, &c->req[k]));
    }
}

void comm_grads_ready(struct comm *c, size_t offset, size_t count, float *data)
{
    if (count == 0) { /* a progress point (model.h): let the buckets in flight advance */
        comm_progress(c);
        return;
    }
    if (c->local_norm)
        c->local_sumsq += optim_sumsq(data, count);
    c->reported += count;
    if (c->sharded)
        reduce_scatter_range(c, offset, count, data);
    else if (c->size > 1)
        allreduce_range(c, offset, count);
    /* Open MPI has no progress thread by default: poke the engine so earlier buckets move
     * while the next layer's backward runs. */
    if (c->size > 1)
        comm_progress(c);
}

void comm_grads_reuse(struct comm *c, const float *data, size_t count)
{
    for (int k = 0; c->sharded && k < c->n_req; k++)
        if (c->req[k] != MPI_REQUEST_NULL && c->req_data[k] < data + count &&
            data < c->req_data[k] + c->req_len[k])
            MPI_NOTE(c, MPI_Wait(&c->req[k], MPI_STATUS_IGNORE));
}

static enum rz_status ensure_counts(struct comm *c, int **counts, struct rz_err *err)
{
    if (*counts == NULL)
        *counts = calloc((size_t)COMM_MAX_BUCKETS * (size_t)c->size, sizeof **counts);
    return *counts != NULL ? RZ_OK : rz_fail(err, RZ_ENOMEM, "comm: out of memory for buckets");
}

enum rz_status comm_grads_begin_sharded(struct comm *c, float *shard, size_t n, size_t align,
                                        size_t bucket_bytes, bool local_norm, bool accumulate,
                                        struct rz_err *err)
{
    comm_grads_begin(c, NULL, n, bucket_bytes, local_norm);
    c->sharded = true;
    c->accumulate = accumulate;
    c->shard = shard;
    c->align = align;
    rz_shard(n, c->size, c->rank, align, &c->lo, &c->hi);
    return ensure_counts(c, &c->counts, err);
}

/* ---- ZeRO: the parameter all-gather ------------------------------------------------------------ */

enum rz_status comm_params_begin(struct comm *c, float *params, size_t n, size_t align,
                                 size_t bucket_bytes, struct rz_err *err)
{
    c->params = params;
    c->n_preq = c->p_done = 0;
    c->align = align;
    if (c->size == 1)
        return RZ_OK; /* one rank holds the whole shard */
    enum rz_status st = ensure_counts(c, &c->pcounts, err);
    if (st == RZ_OK)
        st = ensure_counts(c, &c->pdispls, err);
    if (st != RZ_OK)
        return st;
    size_t bucket = bucket_bytes / sizeof(float), least = n / COMM_MAX_BUCKETS + 1;
    bucket = bucket > least ? bucket : least;
    for (size_t a = 0; a < n; a += bucket) {
        size_t b = a + bucket < n ? a + bucket : n;
        int k = c->n_preq++;
        int *counts = c->pcounts + (size_t)k * (size_t)c->size;
        int *displs = c->pdispls + (size_t)k * (size_t)c->size;
        part_counts(c, n, a, b, counts, displs);
        c->pend[k] = b;
        /* in place: each rank's contribution is its own part of params[a, b) */
        MPI_NOTE(c, MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, params + a, counts,
                                    displs, MPI_FLOAT, MPI_COMM_WORLD, &c->preq[k]));
    }
    return RZ_OK;
}

void comm_params_need(struct comm *c, size_t offset, size_t count)
{
    double t0 = rz_now();
    bool waited = false;
    while (c->p_done < c->n_preq && (c->p_done == 0 || c->pend[c->p_done - 1] < offset + count)) {
        MPI_NOTE(c, MPI_Wait(&c->preq[c->p_done], MPI_STATUS_IGNORE));
        c->p_done++;
        waited = true;
    }
    if (waited)
        c->param_wait_s += rz_now() - t0;
}

double comm_grads_span(const struct comm *c)
{
    return c->span_s;
}

double comm_params_waited(const struct comm *c)
{
    return c->param_wait_s;
}

enum rz_status comm_params_finish(struct comm *c, struct rz_err *err)
{
    comm_params_need(c, 0, SIZE_MAX / 2);
    if (c->failed)
        return rz_fail(err, RZ_EHANG, "comm: %s", c->failure);
    return RZ_OK;
}

enum rz_status comm_gather_range(struct comm *c, const float *shard, size_t n, size_t align,
                                 size_t a, size_t b, float *out, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    size_t lo, hi;
    c->align = align;
    rz_shard(n, c->size, c->rank, align, &lo, &hi);
    size_t own = overlap(a, b, lo, hi);
    const float *send = shard + (own > 0 ? (a > lo ? a : lo) - lo : 0);
    if (b - a > INT32_MAX)
        return rz_fail(err, RZ_EHANG, "comm: gather of %zu floats: more than one MPI call can "
                       "count", b - a);
    if (c->size == 1) {
        memcpy(out, send, (b - a) * sizeof *out);
        return RZ_OK;
    }
    int *counts = calloc(2 * (size_t)c->size, sizeof *counts);
    if (counts == NULL)
        return rz_fail(err, RZ_ENOMEM, "comm: out of memory for a gather");
    part_counts(c, n, a, b, counts, counts + c->size);
    MPI_CHECK(MPI_Gatherv(send, (int)own, MPI_FLOAT, out, counts, counts + c->size, MPI_FLOAT, 0,
                          MPI_COMM_WORLD));
cleanup:
    free(counts);
    return st;
}

enum rz_status comm_grads_finish(struct comm *c, double *exposed_s, double *local_sumsq,
                                 struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    double t0 = rz_now();
    if (c->sharded && c->reported != c->n) {
        st = rz_fail(err, RZ_EHANG, "comm: gradient ranges reported (%zu of %zu floats) do not "
                     "cover the sharded buffer", c->reported, c->n);
        goto cleanup;
    }
    if (c->size > 1 && c->sharded) {
        MPI_CHECK(MPI_Waitall(c->n_req, c->req, comm_statuses_ignore()));
    } else if (c->size > 1) {
        MPI_CHECK(MPI_Waitall(c->n_req, c->req, comm_statuses_ignore()));
        if (c->overflow || c->reported != c->n) {
            /* Fallback for a model that did not report every range: reduce it all again
             * would double-count, so only whole-buffer reduction when nothing was started. */
            if (c->n_req == 0)
                MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, c->g, (int)c->n, MPI_FLOAT, MPI_SUM,
                                        MPI_COMM_WORLD));
            else
                return rz_fail(err, RZ_EHANG, "comm: gradient ranges reported (%zu of %zu "
                               "floats, %d buckets) do not cover the buffer", c->reported, c->n,
                               c->n_req);
        }
    }
    if (c->reported == 0 && c->local_norm && !c->sharded)
        c->local_sumsq = optim_sumsq(c->g, c->n);
    if (c->failed)
        st = rz_fail(err, RZ_EHANG, "comm: %s", c->failure);
cleanup:
    *exposed_s = rz_now() - t0 + c->param_wait_s;
    if (c->t_post > 0.0 && c->t_done == 0.0)
        c->t_done = rz_now(); /* not seen before the wait: it completed in it */
    c->span_s = c->t_post > 0.0 ? c->t_done - c->t_post : 0.0;
    c->param_wait_s = 0.0;
    *local_sumsq = c->local_sumsq;
    c->n_req = 0;
    return st;
}

/* ---- agreement and reductions ------------------------------------------------------------------ */

enum rz_status comm_max_int(struct comm *c, int local, int *out, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    *out = local;
    if (c->size > 1)
        MPI_CHECK(MPI_Allreduce(&local, out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
cleanup:
    return st;
}

enum rz_status comm_sum_doubles(struct comm *c, double *v, int n, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    if (c->size > 1)
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
cleanup:
    return st;
}

enum rz_status comm_allgather_double(struct comm *c, double local, double *out,
                                     struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    out[0] = local;
    if (c->size > 1)
        MPI_CHECK(MPI_Allgather(&local, 1, MPI_DOUBLE, out, 1, MPI_DOUBLE, MPI_COMM_WORLD));
cleanup:
    return st;
}

enum rz_status comm_allgather_doubles(struct comm *c, const double *local, int n, double *out,
                                      struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    memcpy(out, local, (size_t)n * sizeof *out);
    if (c->size > 1)
        MPI_CHECK(MPI_Allgather(local, n, MPI_DOUBLE, out, n, MPI_DOUBLE, MPI_COMM_WORLD));
cleanup:
    return st;
}

enum rz_status comm_barrier(struct comm *c, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    if (c->size > 1)
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
cleanup:
    return st;
}

enum rz_status comm_bcast_int(struct comm *c, int *v, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    if (c->size > 1)
        MPI_CHECK(MPI_Bcast(v, 1, MPI_INT, 0, MPI_COMM_WORLD));
cleanup:
    return st;
}

enum rz_status comm_bcast_bytes(struct comm *c, void *buf, size_t len, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    if (c->size > 1)
        MPI_CHECK(MPI_Bcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD));
cleanup:
    return st;
}

enum rz_status comm_allgather_bytes(struct comm *c, const void *local, size_t len, void *out,
                                    struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    memcpy(out, local, len);
    if (c->size > 1)
        MPI_CHECK(MPI_Allgather(local, (int)len, MPI_BYTE, out, (int)len, MPI_BYTE,
                                MPI_COMM_WORLD));
cleanup:
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum rz_status comm_allreduce_latency(struct comm *c, int reps, double *median_s,
                                      struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    double *t = calloc((size_t)reps, sizeof *t);
    if (t == NULL)
        return rz_fail(err, RZ_ENOMEM, "comm: out of memory");
    if (c->size == 1) {
        *median_s = 0.0;
        free(t);
        return RZ_OK;
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < reps; i++) {
        double v = 1.0, r = 0.0, t0 = MPI_Wtime();
        MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        t[i] = MPI_Wtime() - t0;
    }
    /* the slowest rank's view is what a step sees */
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, t, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    *median_s = t[reps / 2];
cleanup:
    free(t);
    return st;
}

/* ---- preflight probes -------------------------------------------------------------------------- */

enum rz_status comm_ring_check(struct comm *c, bool *ok, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    int next = (c->rank + 1) % c->size, prev = (c->rank + c->size - 1) % c->size;
    int sent = c->rank, got = -1, all_ok = 1;
    *ok = false;
    if (c->size == 1) {
        *ok = true;
        return RZ_OK;
    }
    MPI_CHECK(MPI_Sendrecv(&sent, 1, MPI_INT, next, 71, &got, 1, MPI_INT, prev, 71,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int mine = got == prev;
    MPI_CHECK(MPI_Allreduce(&mine, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    *ok = all_ok == 1;
cleanup:
    return st;
}

/* Value rank r contributes at index i: small integers and halves, so every partial sum is exact
 * in fp32 and the expected total is known in closed form. */
static float probe_value(int r, size_t i)
{
    return (float)((int)((i * 7 + (size_t)r * 13) % 64) - 32) * 0.5f;
}

enum rz_status comm_allreduce_check(struct comm *c, size_t n, double *max_rel_err,
                                    struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    float *v = malloc(n * sizeof *v);
    if (v == NULL)
        return rz_fail(err, RZ_ENOMEM, "comm: out of memory for the allreduce probe");
    for (size_t i = 0; i < n; i++)
        v[i] = probe_value(c->rank, i);
    if (c->size > 1)
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double want = 0.0;
        for (int r = 0; r < c->size; r++)
            want += (double)probe_value(r, i);
        double e = fabs((double)v[i] - want) / fmax(1.0, fabs(want));
        worst = fmax(worst, e);
    }
    if (c->size > 1)
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    *max_rel_err = worst;
cleanup:
    free(v);
    return st;
}

/* ---- gradient-sync accuracy -------------------------------------------------------------------- */

/* 64-bit FNV-1a over the parameter bytes, word by word: equal iff (with overwhelming
 * probability) the buffers are bit-identical. */
static uint64_t params_hash(const float *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const uint32_t *w = (const uint32_t *)(const void *)p;
    for (size_t i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static enum rz_status param_spread(struct comm *c, const float *p, size_t n, double *out,
                                   struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    float *hi = malloc(n * sizeof *hi), *lo = malloc(n * sizeof *lo);
    if (hi == NULL || lo == NULL) {
        st = rz_fail(err, RZ_ENOMEM, "comm: out of memory for the parameter spread");
        goto cleanup;
    }
    MPI_CHECK(MPI_Allreduce(p, hi, (int)n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Allreduce(p, lo, (int)n, MPI_FLOAT, MPI_MIN, MPI_COMM_WORLD));
    double spread = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        spread = fmax(spread, (double)hi[i] - (double)lo[i]);
        scale = fmax(scale, fmax(fabs((double)hi[i]), fabs((double)lo[i])));
    }
    *out = scale > 0 ? spread / scale : 0.0;
cleanup:
    free(hi);
    free(lo);
    return st;
}

enum rz_status comm_sync_check(struct comm *c, const float *params, size_t n, double pre_gnorm,
                               double post_gnorm, struct comm_sync *out, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    memset(out, 0, sizeof *out);
    out->hash = params_hash(params, n);
    unsigned long long local = out->hash;
    double mine[2] = {pre_gnorm, post_gnorm};
    unsigned long long *all = calloc((size_t)c->size, sizeof *all);
    double *norms = calloc(2 * (size_t)c->size, sizeof *norms);
    if (all == NULL || norms == NULL) {
        st = rz_fail(err, RZ_ENOMEM, "comm: out of memory");
        goto cleanup;
    }
    all[0] = local;
    norms[0] = mine[0];
    norms[1] = mine[1];
    if (c->size > 1) {
        MPI_CHECK(MPI_Allgather(&local, 1, MPI_UNSIGNED_LONG_LONG, all, 1,
                                MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Allgather(mine, 2, MPI_DOUBLE, norms, 2, MPI_DOUBLE, MPI_COMM_WORLD));
    }
    out->agree = true;
    out->pre_min = out->pre_max = norms[0];
    double post_min = norms[1], post_max = norms[1];
    for (int r = 0; r < c->size; r++) {
        out->pre_min = fmin(out->pre_min, norms[2 * r]);
        out->pre_max = fmax(out->pre_max, norms[2 * r]);
        post_min = fmin(post_min, norms[2 * r + 1]);
        post_max = fmax(post_max, norms[2 * r + 1]);
        if (all[r] != all[0]) {
            size_t used = strlen(out->bad_ranks);
            snprintf(out->bad_ranks + used, sizeof out->bad_ranks - used, "%s%d",
                     out->agree ? "" : ",", r);
            out->agree = false;
        }
    }
    double mean = 0.5 * (post_min + post_max);
    out->post_spread = mean > 0 ? (post_max - post_min) / mean : 0.0;
    if (!out->agree)
        st = param_spread(c, params, n, &out->param_spread, err);
cleanup:
    free(all);
    free(norms);
    return st;
}
