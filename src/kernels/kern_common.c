/* kern_common.c: the public face of the kernels module: the backend registry (one ops table per
 * backend, kern_impl.h), the context, argument validation for every op, dispatch through the
 * context's ops table, and kern_measure_peak.
 *
 * It deliberately does no arithmetic of its own (the backends do) and never asks which backend it
 * holds.  Validation happens once, in x_create; the execute path (x_run, x_forward, x_backward)
 * only dispatches, with assert() for pointer misuse. */
#include "config.h"

#include "kernels/kernels.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kernels/kern_impl.h"
#include "kernels/kern_rows.h"

/* ---- validation ---------------------------------------------------------------------------- */

/* Elements in the largest tensor any op may touch: 2^40 (4 TiB of fp32) is absurd for one rank. */
#define KERN_MAX_ELEMS ((int64_t)1 << 40)

/* *acc *= v unless that overflows size_t; returns false on overflow. */
static bool mul_size(size_t *acc, int64_t v)
{
    if (*acc != 0 && (size_t)v > SIZE_MAX / *acc)
        return false;
    *acc *= (size_t)v;
    return true;
}

/* Checks that every dimension in dims is positive and that their product (and every partial
 * product) fits in size_t and below KERN_MAX_ELEMS. */
static bool dims_ok(const int64_t *dims, size_t ndims)
{
    size_t prod = 1;
    for (size_t i = 0; i < ndims; i++) {
        if (dims[i] <= 0 || !mul_size(&prod, dims[i]))
            return false;
    }
    return prod <= (size_t)KERN_MAX_ELEMS;
}

static enum rz_status bad_shape(struct rz_err *err, const char *op, const char *shape)
{
    return rz_fail(err, RZ_ECONFIG,
                   "%s: invalid shape %s: sizes must be positive and the tensors and the "
                   "flop count must fit in memory (size_t)",
                   op, shape);
}

/* The row-wise ops' (rows, cols): written into shape (its text for messages), then checked. */
static enum rz_status check_rows_cols(char shape[static 96], const char *op, int64_t rows,
                                      int64_t cols, struct rz_err *err)
{
    const int64_t dims[] = {rows, cols};
    snprintf(shape, 96, "(%" PRId64 ", %" PRId64 ")", rows, cols);
    return dims_ok(dims, 2) ? RZ_OK : bad_shape(err, op, shape);
}

/* ---- backend and context ------------------------------------------------------------------- */

/* The registry, indexed by enum kern_backend. */
static const struct kern_ops *const backends[] = {
    [KERN_REF] = &kern_ref_ops,
    [KERN_DNNL] = &kern_dnnl_ops,
};

enum rz_status kern_backend_parse(const char *name, enum kern_backend *out, struct rz_err *err)
{
    for (size_t i = 0; name != NULL && i < RZ_ARRAY_LEN(backends); i++) {
        if (strcmp(name, backends[i]->name) == 0) {
            *out = (enum kern_backend)i;
            return RZ_OK;
        }
    }
    return rz_fail(err, RZ_ECONFIG, "kernel backend: unknown name '%s' (choices: ref, dnnl)",
                   name != NULL ? name : "(null)");
}

enum rz_status kern_isa_cap(enum rz_isa cap, struct rz_err *err)
{
    rz_isa_set(cap);
    if (cap >= rz_isa_detect())
        return RZ_OK; /* the CPU's own level: the libraries choose as they would */
    enum rz_status st = kern_dnnl_cap(cap, err);
    if (st == RZ_OK)
        st = kern_xsmm_cap(cap, err);
    if (st == RZ_OK)
        st = kern_blis_cap(cap, err);
    return st;
}

const char *kern_rows_isa(void)
{
    return rz_isa_name(kern_rows_active()->isa);
}

enum rz_status kern_ctx_create(struct kern_ctx **out, enum kern_backend backend, struct rz_err *err)
{
    *out = NULL;
    if ((unsigned)backend >= RZ_ARRAY_LEN(backends))
        return rz_fail(err, RZ_ECONFIG, "kern_ctx_create: unknown backend %d (choices: ref, dnnl)",
                       (int)backend);
    struct kern_ctx *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return rz_fail(err, RZ_ENOMEM, "kern_ctx_create: out of memory");
    ctx->backend = backend;
    ctx->ops = backends[backend];
    enum rz_status st = ctx->ops->ctx_init != NULL ? ctx->ops->ctx_init(ctx, err) : RZ_OK;
    if (st != RZ_OK) {
        kern_ctx_destroy(ctx);
        return st;
    }
    *out = ctx;
    return RZ_OK;
}

void kern_ctx_destroy(struct kern_ctx *ctx)
{
    if (ctx == NULL)
        return;
    if (ctx->ops->ctx_fini != NULL)
        ctx->ops->ctx_fini(ctx);
    free(ctx);
}

enum kern_backend kern_ctx_backend(const struct kern_ctx *ctx)
{
    return ctx->backend;
}

const char *kern_ctx_isa(const struct kern_ctx *ctx)
{
    return ctx->ops->isa(ctx);
}

enum rz_status kern_check_bf16(const struct kern_ctx *ctx, struct rz_err *err)
{
    return ctx->ops->check_bf16(ctx, err);
}

void kern_round_bf16(kern_bf16 *dst, const float *src, int64_t n)
{
    assert(n >= 0 && (n == 0 || (dst != NULL && src != NULL)));
    kern_simd_round_bf16(dst, src, n);
}

void kern_colsum_round(float *sums, kern_bf16 *dst, const float *src, int64_t rows, int64_t cols)
{
    assert(rows >= 0 && cols >= 0);
    if (rows == 0 || cols == 0 || (sums == NULL && dst == NULL))
        return;
    assert(src != NULL);
    if (sums == NULL)
        kern_round_bf16(dst, src, rows * cols);
    else
        kern_simd_colsum_round(sums, dst, src, rows, cols);
}

/* ---- op lifecycle -------------------------------------------------------------------------- */

/* ---- profiling ----------------------------------------------------------------------------- */

void kern_ctx_profile(struct kern_ctx *ctx, struct kern_profile *profile)
{
    ctx->profile = profile;
}

/* Runs `call` (an execute through the ops table) and, when the context profiles, adds its wall
 * time and one call to class `cls`. */
#define TIMED(ctx, cls, call)                                                                     \
    do {                                                                                          \
        struct kern_profile *prof_ = (ctx)->profile;                                              \
        double t0_ = prof_ != NULL ? rz_now() : 0.0;                                              \
        call;                                                                                     \
        if (prof_ != NULL) {                                                                      \
            prof_->seconds[cls] += rz_now() - t0_;                                                \
            prof_->calls[cls]++;                                                                  \
        }                                                                                         \
    } while (0)

/* The body of every x_destroy: the backend state (with the table's x_free, or free()), then the
 * op. */
static void op_release(void *op, void (*state_free)(void *), void *impl)
{
    (state_free != NULL ? state_free : free)(impl);
    free(op);
}

/* The backend's plan of a freshly allocated op (an init of NULL plans nothing). */
#define PLAN(op, init) ((op)->ctx->ops->init != NULL ? (op)->ctx->ops->init((op), err) : RZ_OK)

/* ---- matmul -------------------------------------------------------------------------------- */

static enum rz_status matmul_check(const struct kern_matmul_desc *d, struct rz_err *err)
{
    char shape[160];
    snprintf(shape, sizeof shape,
             "batch=%" PRId64 " m=%" PRId64 " n=%" PRId64 " k=%" PRId64, d->batch, d->m, d->n,
             d->k);
    const int64_t flops[] = {d->batch, d->m, d->n, d->k};
    const int64_t a[] = {d->batch, d->m, d->k};
    const int64_t b[] = {d->batch, d->k, d->n};
    const int64_t c[] = {d->batch, d->m, d->n};
    if (!dims_ok(a, 3) || !dims_ok(b, 3) || !dims_ok(c, 3))
        return bad_shape(err, "matmul", shape);
    size_t prod = 2; /* 2 * batch * m * n * k must fit too: kern_measure_peak and MFU use it */
    for (size_t i = 0; i < RZ_ARRAY_LEN(flops); i++) {
        if (!mul_size(&prod, flops[i]))
            return bad_shape(err, "matmul", shape);
    }
    if (!isfinite(d->alpha))
        return rz_fail(err, RZ_ECONFIG, "matmul %s: alpha must be finite, got %g", shape,
                       (double)d->alpha);
    return RZ_OK;
}

enum rz_status kern_matmul_create(struct kern_matmul **out, struct kern_ctx *ctx,
                                  const struct kern_matmul_desc *desc, struct rz_err *err)
{
    *out = NULL;
    enum rz_status st = matmul_check(desc, err);
    if (st != RZ_OK)
        return st;
    struct kern_matmul *op = calloc(1, sizeof *op);
    if (op == NULL)
        return rz_fail(err, RZ_ENOMEM, "matmul: out of memory");
    op->ctx = ctx;
    op->desc = *desc;
    st = PLAN(op, matmul_init);
    if (st != RZ_OK)
        kern_matmul_destroy(op);
    else
        *out = op;
    return st;
}

/* The profile's row for d's shape and form: found, or added while there is room; NULL past
 * KERN_PROFILE_SHAPES distinct shapes. */
static struct kern_profile_shape *profile_shape(struct kern_profile *prof,
                                                const struct kern_matmul_desc *d)
{
    for (int i = 0; i < prof->nshapes; i++) {
        struct kern_profile_shape *s = &prof->shapes[i];
        if (s->batch == d->batch && s->m == d->m && s->n == d->n && s->k == d->k &&
            s->trans_a == d->trans_a && s->trans_b == d->trans_b && s->bf16 == d->bf16)
            return s;
    }
    if (prof->nshapes == KERN_PROFILE_SHAPES)
        return NULL;
    struct kern_profile_shape *s = &prof->shapes[prof->nshapes++];
    *s = (struct kern_profile_shape){.batch = d->batch, .m = d->m, .n = d->n, .k = d->k,
                                     .trans_a = d->trans_a, .trans_b = d->trans_b,
                                     .bf16 = d->bf16};
    return s;
}

/* One matmul of `seconds` into the profile: its class, its flops and its shape's row. */
static void profile_matmul(struct kern_profile *prof, const struct kern_matmul_desc *d,
                           double seconds)
{
    double flops = 2.0 * (double)d->batch * (double)d->m * (double)d->n * (double)d->k;
    prof->seconds[KERN_MATMUL] += seconds;
    prof->calls[KERN_MATMUL]++;
    prof->matmul_flops += flops;
    struct kern_profile_shape *s = profile_shape(prof, d);
    if (s == NULL) {
        prof->unlisted_calls++;
        return;
    }
    s->calls++;
    s->seconds += seconds;
    s->flops += flops;
}

void kern_matmul_run(struct kern_matmul *op, float *c, const void *a, const void *b,
                     const float *bias)
{
    assert(op != NULL && c != NULL && a != NULL && b != NULL);
    assert(!op->desc.bias || bias != NULL);
    struct kern_profile *prof = op->ctx->profile;
    double t0 = prof != NULL ? rz_now() : 0.0;
    op->ctx->ops->matmul_run(op, c, a, b, bias);
    if (prof != NULL)
        profile_matmul(prof, &op->desc, rz_now() - t0);
}

void kern_matmul_destroy(struct kern_matmul *op)
{
    if (op != NULL)
        op_release(op, op->ctx->ops->matmul_free, op->impl);
}

/* ---- layer normalization ------------------------------------------------------------------- */

enum rz_status kern_layernorm_create(struct kern_layernorm **out, struct kern_ctx *ctx,
                                     int64_t rows, int64_t cols, float eps, bool bf16_out,
                                     struct rz_err *err)
{
    *out = NULL;
    char shape[96];
    if (check_rows_cols(shape, "layernorm", rows, cols, err) != RZ_OK)
        return RZ_ECONFIG;
    if (!isfinite(eps) || eps < 0.0f)
        return rz_fail(err, RZ_ECONFIG, "layernorm %s: eps must be finite and >= 0, got %g", shape,
                       (double)eps);
    struct kern_layernorm *op = calloc(1, sizeof *op);
    if (op == NULL)
        return rz_fail(err, RZ_ENOMEM, "layernorm %s: out of memory", shape);
    op->ctx = ctx;
    op->rows = rows;
    op->cols = cols;
    op->eps = eps;
    op->bf16_out = bf16_out;
    enum rz_status st = PLAN(op, layernorm_init);
    if (st != RZ_OK)
        kern_layernorm_destroy(op);
    else
        *out = op;
    return st;
}

void kern_layernorm_forward(struct kern_layernorm *op, void *y, float *mean, float *var,
                            const float *x, const float *gamma, const float *beta)
{
    assert(op != NULL && y != NULL && mean != NULL && var != NULL && x != NULL);
    assert(gamma != NULL && beta != NULL);
    TIMED(op->ctx, KERN_NORM, op->ctx->ops->layernorm_forward(op, y, mean, var, x, gamma, beta));
}

void kern_layernorm_backward(struct kern_layernorm *op, float *dx, float *dgamma, float *dbeta,
                             const float *dy, const float *x, const float *mean, const float *var,
                             const float *gamma, bool accumulate_dx)
{
    assert(op != NULL && dx != NULL && dgamma != NULL && dbeta != NULL && dy != NULL);
    assert(x != NULL && mean != NULL && var != NULL && gamma != NULL);
    TIMED(op->ctx, KERN_NORM, op->ctx->ops->layernorm_backward(op, dx, dgamma, dbeta, dy, x, mean,
                                                               var, gamma, accumulate_dx));
}

void kern_layernorm_destroy(struct kern_layernorm *op)
{
    if (op != NULL)
        op_release(op, op->ctx->ops->layernorm_free, op->impl);
}

/* ---- GELU ---------------------------------------------------------------------------------- */

enum rz_status kern_gelu_create(struct kern_gelu **out, struct kern_ctx *ctx, int64_t rows,
                                int64_t cols, bool bf16_out, struct rz_err *err)
{
    *out = NULL;
    char shape[96];
    if (check_rows_cols(shape, "gelu", rows, cols, err) != RZ_OK)
        return RZ_ECONFIG;
    struct kern_gelu *op = calloc(1, sizeof *op);
    if (op == NULL)
        return rz_fail(err, RZ_ENOMEM, "gelu %s: out of memory", shape);
    op->ctx = ctx;
    op->rows = rows;
    op->cols = cols;
    op->bf16_out = bf16_out;
    enum rz_status st = PLAN(op, gelu_init);
    if (st != RZ_OK)
        kern_gelu_destroy(op);
    else
        *out = op;
    return st;
}

void kern_gelu_forward(struct kern_gelu *op, void *y, const float *x)
{
    assert(op != NULL && y != NULL && x != NULL);
    TIMED(op->ctx, KERN_OTHER, op->ctx->ops->gelu_forward(op, y, x));
}

void kern_gelu_backward(struct kern_gelu *op, void *dx, float *dbias, const float *dy,
                        const float *x)
{
    assert(op != NULL && dx != NULL && dy != NULL && x != NULL);
    assert(!op->bf16_out || dx != (const void *)dy); /* in place only in fp32 */
    TIMED(op->ctx, KERN_OTHER, op->ctx->ops->gelu_backward(op, dx, dbias, dy, x));
}

void kern_gelu_destroy(struct kern_gelu *op)
{
    if (op != NULL)
        op_release(op, op->ctx->ops->gelu_free, op->impl);
}

/* ---- attention ----------------------------------------------------------------------------- */

enum rz_status kern_attention_create(struct kern_attention **out, struct kern_ctx *ctx,
                                     int64_t batch, int64_t seq, int64_t heads, int64_t head_dim,
                                     int64_t tile, struct rz_err *err)
{
    *out = NULL;
    char shape[128];
    snprintf(shape, sizeof shape, "B=%" PRId64 " T=%" PRId64 " H=%" PRId64 " D=%" PRId64,
             batch, seq, heads, head_dim);
    /* the largest tensors: qkv (B, T, 3 H D), and the (B, H, T, T) scores the reference backend
     * never holds either, but whose count the flops must not overflow */
    const int64_t qkv[] = {batch, seq, 3, heads, head_dim};
    const int64_t scores[] = {batch, heads, seq, seq, head_dim};
    if (!dims_ok(qkv, RZ_ARRAY_LEN(qkv)) || !dims_ok(scores, RZ_ARRAY_LEN(scores)))
        return bad_shape(err, "attention", shape);
    if (tile < 0)
        return rz_fail(err, RZ_ECONFIG, "attention %s: tile must be >= 0 (0: the backend's "
                       "choice), got %" PRId64, shape, tile);
    struct kern_attention *op = calloc(1, sizeof *op);
    if (op == NULL)
        return rz_fail(err, RZ_ENOMEM, "attention %s: out of memory", shape);
    op->ctx = ctx;
    op->B = batch;
    op->T = seq;
    op->H = heads;
    op->D = head_dim;
    op->tile = tile < seq ? tile : seq;
    enum rz_status st = PLAN(op, attention_init);
    if (st != RZ_OK)
        kern_attention_destroy(op);
    else
        *out = op;
    return st;
}

void kern_attention_forward(struct kern_attention *op, float *y, float *lse, const float *qkv)
{
    assert(op != NULL && y != NULL && lse != NULL && qkv != NULL);
    TIMED(op->ctx, KERN_ATTENTION, op->ctx->ops->attention_forward(op, y, lse, qkv));
}

void kern_attention_backward(struct kern_attention *op, float *dqkv, const float *dy,
                             const float *qkv, const float *y, const float *lse)
{
    assert(op != NULL && dqkv != NULL && dy != NULL && qkv != NULL && y != NULL && lse != NULL);
    TIMED(op->ctx, KERN_ATTENTION, op->ctx->ops->attention_backward(op, dqkv, dy, qkv, y, lse));
}

void kern_attention_destroy(struct kern_attention *op)
{
    if (op != NULL)
        op_release(op, op->ctx->ops->attention_free, op->impl);
}

/* ---- cross-entropy ------------------------------------------------------------------------- */

enum rz_status kern_xent_create(struct kern_xent **out, struct kern_ctx *ctx, int64_t rows,
                                int64_t vocab, bool bf16_out, struct rz_err *err)
{
    *out = NULL;
    char shape[96];
    if (check_rows_cols(shape, "xent", rows, vocab, err) != RZ_OK)
        return RZ_ECONFIG;
    if (vocab > INT32_MAX)
        return rz_fail(err, RZ_ECONFIG, "xent %s: vocab must fit the int32 targets", shape);
    struct kern_xent *op = calloc(1, sizeof *op);
    if (op == NULL)
        return rz_fail(err, RZ_ENOMEM, "xent %s: out of memory", shape);
    op->ctx = ctx;
    op->rows = rows;
    op->vocab = vocab;
    op->bf16_out = bf16_out;
    enum rz_status st = PLAN(op, xent_init);
    if (st != RZ_OK)
        kern_xent_destroy(op);
    else
        *out = op;
    return st;
}

/* Targets are validated by the data loader (RZ_EDATA); here a bad one is a programmer error. */
static bool targets_in_range(const int32_t *targets, int64_t rows, int64_t vocab)
{
    for (int64_t r = 0; r < rows; r++) {
        if (targets[r] < 0 || targets[r] >= vocab)
            return false;
    }
    return true;
}

void kern_xent_forward(struct kern_xent *op, float *losses, float *probs, const float *logits,
                       const int32_t *targets)
{
    assert(op != NULL && losses != NULL && probs != NULL && logits != NULL && targets != NULL);
    assert(targets_in_range(targets, op->rows, op->vocab));
    TIMED(op->ctx, KERN_LOSS, op->ctx->ops->xent_forward(op, losses, probs, logits, targets));
}

void kern_xent_backward(struct kern_xent *op, void *dlogits, float *dbias, const float *probs,
                        const int32_t *targets, float scale)
{
    assert(op != NULL && dlogits != NULL && probs != NULL && targets != NULL);
    assert(targets_in_range(targets, op->rows, op->vocab));
    TIMED(op->ctx, KERN_LOSS,
          op->ctx->ops->xent_backward(op, dlogits, dbias, probs, targets, scale));
}

void kern_xent_destroy(struct kern_xent *op)
{
    if (op != NULL)
        op_release(op, op->ctx->ops->xent_free, op->impl);
}

/* ---- measured peak ------------------------------------------------------------------------- */

/* Fills n floats with a deterministic pattern in [-0.5, 0.5). */
static void fill_pattern(float *x, size_t n)
{
    uint32_t s = 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
    }
}

/* Runs `op` repeatedly for about `seconds` (at least 3 times) and returns the best GFLOP/s. */
static double best_gflops(struct kern_matmul *op, float *c, const void *a, const void *b,
                          double flops, double seconds)
{
    double best = 0.0;
    double start = rz_now();
    kern_matmul_run(op, c, a, b, NULL); /* warm-up: first touch, JIT caches */
    for (int it = 0; it < 3 || rz_now() - start < seconds; it++) {
        double t0 = rz_now();
        kern_matmul_run(op, c, a, b, NULL);
        double dt = rz_now() - t0;
        if (dt > 0.0 && flops / dt > best)
            best = flops / dt;
    }
    return best * 1e-9;
}

/* a (n) = the fill pattern, as floats or rounded to bf16 (through the scratch `tmp`, n floats). */
static void fill_operand(void *a, float *tmp, size_t n, bool bf16)
{
    fill_pattern(bf16 ? tmp : a, n);
    if (bf16)
        kern_round_bf16(a, tmp, (int64_t)n);
}

/* One form's best GFLOP/s over `seconds`: its op, timed on the caller's operands. */
static enum rz_status peak_of_form(struct kern_ctx *ctx, const struct kern_matmul_desc *d,
                                   float *c, const void *a, const void *b, double seconds,
                                   double *gflops, struct rz_err *err)
{
    struct kern_matmul *op = NULL;
    enum rz_status st = kern_matmul_create(&op, ctx, d, err);
    if (st != RZ_OK)
        return st;
    *gflops = best_gflops(op, c, a, b, 2.0 * (double)d->m * (double)d->n * (double)d->k, seconds);
    kern_matmul_destroy(op);
    return RZ_OK;
}

enum rz_status kern_measure_peak(struct kern_ctx *ctx, int64_t m, int64_t n, int64_t k, bool bf16,
                                 double seconds, double *gflops, struct rz_err *err)
{
    *gflops = 0.0;
    /* The plain form, and the weight gradient's (A transposed), which a backend may run on
     * another library (oneDNN at AVX2: BLIS): the peak is the better of the two, so that no
     * matmul of the run can beat its own MFU denominator. */
    struct kern_matmul_desc d = {.batch = 1, .m = m, .n = n, .k = k, .alpha = 1.0f, .bf16 = bf16};
    if (!(seconds >= 0.0) || seconds > 3600.0)
        return rz_fail(err, RZ_ECONFIG, "measure peak: seconds must be in [0, 3600], got %g",
                       seconds);
    enum rz_status st = matmul_check(&d, err);
    if (st != RZ_OK)
        return st;
    size_t na = (size_t)m * (size_t)k, nb = (size_t)k * (size_t)n, nc = (size_t)m * (size_t)n;
    size_t nt = bf16 ? (na > nb ? na : nb) : 0;
    void *a = rz_alloc_aligned(na * sizeof(float)), *b = rz_alloc_aligned(nb * sizeof(float));
    float *c = rz_alloc_aligned(nc * sizeof(float)), *tmp = rz_alloc_aligned(nt * sizeof(float));
    if (a == NULL || b == NULL || c == NULL || (nt > 0 && tmp == NULL)) {
        st = rz_fail(err, RZ_ENOMEM, "measure peak: out of memory for a (%" PRId64 ", %" PRId64
                     ") x (%" PRId64 ", %" PRId64 ") matmul", m, k, k, n);
    } else {
        fill_operand(a, tmp, na, bf16);
        fill_operand(b, tmp, nb, bf16);
        for (int form = 0; form < 2 && st == RZ_OK; form++) {
            double g = 0.0;
            d.trans_a = form == 1;
            st = peak_of_form(ctx, &d, c, a, b, seconds / 2, &g, err);
            *gflops = g > *gflops ? g : *gflops;
        }
    }
    free(a);
    free(b);
    free(c);
    free(tmp);
    return st;
}
