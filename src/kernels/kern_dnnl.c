/* kern_dnnl.c: the oneDNN backend (v2 C API), the only file that includes dnnl.h.
 *
 * Every primitive, its memory objects (created without a buffer) and its scratchpad (user mode,
 * allocated once) are made by one generic builder, prims_build, at x_init; the execute path only
 * sets data handles and executes on the context's stream, so it never allocates.  The backend
 * state of every op is the same struct prims (a forward primitive and, for layers with a
 * gradient, a backward one), released by one prims_free.  Matmul, layer normalization, GELU
 * (gelu_erf) and the plain row softmax are oneDNN primitives; the causal softmax and the softmax
 * cross-entropy are our own row kernels (kern_simd.c).
 *
 * Deliberately not here: reduced precision (bf16), argument validation (kern_common.c), and
 * error reporting from the execute path: an execute failure after a successful create is a
 * programming error and is caught by assert(). */
#include "config.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "core/util.h"
#include "kernels/kern_impl.h"

/* The one checked call of this file: records the failing call, the dnnl status and file:line for
 * the op described by the local `what` in `err`, sets the local `st` and jumps to the local
 * `cleanup` label.  (The destroy calls are the exception: they cannot fail on a valid handle.) */
#define DNNL_CHECK(call)                                                                          \
    do {                                                                                          \
        dnnl_status_t dnnl_rc_ = (call);                                                          \
        if (dnnl_rc_ != dnnl_success) {                                                           \
            st = rz_fail(err, RZ_EBACKEND, "%s: %s failed: %s (%s:%d)", what, #call,              \
                         dnnl_status2str(dnnl_rc_), __FILE__, __LINE__);                          \
            goto cleanup;                                                                         \
        }                                                                                         \
    } while (0)

#define PRIM_MAX_ARGS 10

/* The context's backend state. */
struct dnnl_ctx {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
};

/* One primitive with its argument memory objects (slot i holds ids[i] of its prim_spec) and the
 * scratchpad, which is always the last slot. */
struct prim {
    dnnl_primitive_t prim;
    int nids;                 /* argument slots the caller fills: ids of its prim_spec */
    int nargs;                /* nids, plus the scratchpad's slot when it has one */
    dnnl_exec_arg_t args[PRIM_MAX_ARGS];
    void *scratch;
};

/* The backend state of every op: the forward primitive (the matmul itself for a matmul) and the
 * backward one (unused by ops without a gradient). */
struct prims {
    struct prim fwd, bwd;
};

/* One primitive to build: its operation descriptor, attributes (NULL: the default ones, user
 * scratchpad) and the execute argument ids in slot order. */
struct prim_spec {
    const_dnnl_op_desc_t desc;
    const_dnnl_primitive_attr_t attr;
    const int *ids;
    int nids;
};

static dnnl_engine_t engine_of(const struct kern_ctx *ctx)
{
    return ((const struct dnnl_ctx *)ctx->impl)->engine;
}

/* ---- context ------------------------------------------------------------------------------- */

static enum rz_status ctx_init(struct kern_ctx *ctx, struct rz_err *err)
{
    const char *what = "oneDNN context";
    enum rz_status st = RZ_OK;
    struct dnnl_ctx *c = calloc(1, sizeof *c);
    if (c == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", what);
    ctx->impl = c;
    DNNL_CHECK(dnnl_engine_create(&c->engine, dnnl_cpu, 0));
    DNNL_CHECK(dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags));
cleanup:
    return st;
}

static void ctx_fini(struct kern_ctx *ctx)
{
    struct dnnl_ctx *c = ctx->impl;
    if (c == NULL)
        return;
    if (c->stream != NULL)
        dnnl_stream_destroy(c->stream);
    if (c->engine != NULL)
        dnnl_engine_destroy(c->engine);
    free(c);
    ctx->impl = NULL;
}

static const char *isa(const struct kern_ctx *ctx)
{
    (void)ctx;
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "unknown (oneDNN)";
    }
}

/* ---- primitives: the generic builder; create once, execute many ---------------------------- */

static dnnl_status_t attr_create(dnnl_primitive_attr_t *attr)
{
    dnnl_status_t rc = dnnl_primitive_attr_create(attr);
    if (rc == dnnl_success)
        rc = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    return rc;
}

static enum rz_status prim_scratch(struct prim *pr, const_dnnl_primitive_desc_t pd,
                                   dnnl_engine_t eng, const char *what, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t bytes = md != NULL ? dnnl_memory_desc_get_size(md) : 0;
    if (bytes == 0)
        return RZ_OK;
    pr->scratch = rz_alloc_aligned(bytes);
    if (pr->scratch == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory for a %zu-byte scratchpad", what, bytes);
    DNNL_CHECK(dnnl_memory_create(&pr->args[pr->nargs].memory, md, eng, pr->scratch));
    pr->args[pr->nargs++].arg = DNNL_ARG_SCRATCHPAD;
cleanup:
    return st;
}

/* Creates the primitive of `pd` and one buffer-less memory object per execute argument id. */
static enum rz_status prim_init(struct prim *pr, const_dnnl_primitive_desc_t pd,
                                const struct prim_spec *spec, dnnl_engine_t eng, const char *what,
                                struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    assert(spec->nids < PRIM_MAX_ARGS);
    DNNL_CHECK(dnnl_primitive_create(&pr->prim, pd));
    for (int i = 0; i < spec->nids; i++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md,
                                                                     spec->ids[i]);
        if (md == NULL)
            return rz_fail(err, RZ_EBACKEND, "%s: primitive has no argument %d", what,
                           spec->ids[i]);
        DNNL_CHECK(dnnl_memory_create(&pr->args[i].memory, md, eng, DNNL_MEMORY_NONE));
        pr->args[i].arg = spec->ids[i];
        pr->nids = pr->nargs = i + 1;
    }
    st = prim_scratch(pr, pd, eng, what, err);
cleanup:
    return st;
}

static void prim_fini(struct prim *pr)
{
    for (int i = 0; i < pr->nargs; i++)
        dnnl_memory_destroy(pr->args[i].memory);
    if (pr->prim != NULL)
        dnnl_primitive_destroy(pr->prim);
    free(pr->scratch);
    memset(pr, 0, sizeof *pr);
}

/* The op_free of this backend (accepts NULL and half-built state). */
static void prims_free(void *impl)
{
    struct prims *p = impl;
    if (p == NULL)
        return;
    prim_fini(&p->fwd);
    prim_fini(&p->bwd);
    free(p);
}

/* The generic builder: a struct prims in *impl holding the primitive of `fwd` and, unless `bwd`
 * is NULL, the backward primitive of `bwd`, created with the forward's descriptor as its hint. */
static enum rz_status prims_build(void **impl, const struct kern_ctx *ctx,
                                  const struct prim_spec *fwd, const struct prim_spec *bwd,
                                  const char *what, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t fpd = NULL, bpd = NULL;
    dnnl_engine_t eng = engine_of(ctx);
    struct prims *p = calloc(1, sizeof *p);
    if ((*impl = p) == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", what);
    DNNL_CHECK(attr_create(&attr));
    DNNL_CHECK(dnnl_primitive_desc_create(&fpd, fwd->desc, fwd->attr != NULL ? fwd->attr : attr,
                                          eng, NULL));
    if ((st = prim_init(&p->fwd, fpd, fwd, eng, what, err)) != RZ_OK || bwd == NULL)
        goto cleanup;
    DNNL_CHECK(dnnl_primitive_desc_create(&bpd, bwd->desc, bwd->attr != NULL ? bwd->attr : attr,
                                          eng, fpd));
    st = prim_init(&p->bwd, bpd, bwd, eng, what, err);
cleanup:
    if (bpd != NULL)
        dnnl_primitive_desc_destroy(bpd);
    if (fpd != NULL)
        dnnl_primitive_desc_destroy(fpd);
    if (attr != NULL)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

/* Points the argument slots of `pr` at caller memory, in slot order (const only because oneDNN's
 * API is not), and executes it on the context's stream. */
static void prim_run(struct prim *pr, const struct kern_ctx *ctx, const void *const *ptrs, int n)
{
    const char *what = "oneDNN execute";
    enum rz_status st = RZ_OK;
    struct rz_err e, *err = &e;
    const struct dnnl_ctx *c = ctx->impl;
    assert(n == pr->nids);
    for (int i = 0; i < n; i++)
        DNNL_CHECK(dnnl_memory_set_data_handle(pr->args[i].memory, (void *)ptrs[i]));
    DNNL_CHECK(dnnl_primitive_execute(pr->prim, c->stream, pr->nargs, pr->args));
    DNNL_CHECK(dnnl_stream_wait(c->stream));
cleanup:
    assert(st == RZ_OK); /* a primitive that was created executes */
    (void)st;
}

#define PRIM_RUN(pr, ctx, ...)                                                                    \
    prim_run((pr), (ctx), (const void *const[]){__VA_ARGS__},                                     \
             (int)(sizeof((const void *const[]){__VA_ARGS__}) / sizeof(const void *)))

static struct prims *prims_of(void *impl)
{
    return impl;
}

/* ---- matmul: C = alpha op(A) op(B) [+ bias] [+ C] ------------------------------------------ */

/* Logical (batch, rows, cols), or (rows, cols) when nd == 2, stored row-major as (rows, cols) or,
 * when trans, as (cols, rows): the transpose is expressed by the strides alone. */
static dnnl_status_t md_matrix(dnnl_memory_desc_t *md, int nd, int64_t batch, int64_t rows,
                               int64_t cols, bool trans)
{
    int64_t row_stride = trans ? 1 : cols, col_stride = trans ? rows : 1;
    if (nd == 2) {
        dnnl_dims_t dims = {rows, cols}, strides = {row_stride, col_stride};
        return dnnl_memory_desc_init_by_strides(md, 2, dims, dnnl_f32, strides);
    }
    dnnl_dims_t dims = {batch, rows, cols}, strides = {rows * cols, row_stride, col_stride};
    return dnnl_memory_desc_init_by_strides(md, 3, dims, dnnl_f32, strides);
}

/* alpha is an output scale; oneDNN v2 applies it to the bias too, so with alpha != 1 the bias
 * is added by a binary post-op after scaling instead.  accumulate is a sum post-op. */
static enum rz_status matmul_attr(dnnl_primitive_attr_t *attr, const struct kern_matmul_desc *d,
                                  const dnnl_memory_desc_t *bias_md, const char *what,
                                  struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    dnnl_post_ops_t ops = NULL;
    DNNL_CHECK(attr_create(attr));
    DNNL_CHECK(dnnl_post_ops_create(&ops));
    if (d->accumulate)
        DNNL_CHECK(dnnl_post_ops_append_sum(ops, 1.0f));
    if (d->alpha != 1.0f) {
        DNNL_CHECK(dnnl_primitive_attr_set_output_scales(*attr, 1, 0, &d->alpha));
        if (d->bias)
            DNNL_CHECK(dnnl_post_ops_append_binary(ops, dnnl_binary_add, bias_md));
    }
    DNNL_CHECK(dnnl_primitive_attr_set_post_ops(*attr, ops));
cleanup:
    if (ops != NULL)
        dnnl_post_ops_destroy(ops);
    return st;
}

/* Argument id of the bias: the primitive's bias, or the src1 of the binary post-op. */
static int matmul_bias_arg(const struct kern_matmul_desc *d)
{
    if (d->alpha == 1.0f)
        return DNNL_ARG_BIAS;
    return DNNL_ARG_ATTR_MULTIPLE_POST_OP(d->accumulate ? 1 : 0) | DNNL_ARG_SRC_1;
}

static enum rz_status matmul_init(struct kern_matmul *op, struct rz_err *err)
{
    const struct kern_matmul_desc *d = &op->desc;
    char what[160];
    snprintf(what, sizeof what, "matmul batch=%lld m=%lld n=%lld k=%lld%s%s",
             (long long)d->batch, (long long)d->m, (long long)d->n, (long long)d->k,
             d->trans_a ? " trans_a" : "", d->trans_b ? " trans_b" : "");
    enum rz_status st = RZ_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_memory_desc_t src, wei, bias, dst;
    dnnl_matmul_desc_t md;
    int nd = d->batch == 1 ? 2 : 3;
    DNNL_CHECK(md_matrix(&src, nd, d->batch, d->m, d->k, d->trans_a));
    DNNL_CHECK(md_matrix(&wei, nd, d->batch, d->k, d->n, d->trans_b));
    DNNL_CHECK(md_matrix(&bias, nd, 1, 1, d->n, false));
    DNNL_CHECK(md_matrix(&dst, nd, d->batch, d->m, d->n, false));
    bool prim_bias = d->bias && d->alpha == 1.0f;
    DNNL_CHECK(dnnl_matmul_desc_init(&md, &src, &wei, prim_bias ? &bias : NULL, &dst));
    if ((st = matmul_attr(&attr, d, &bias, what, err)) != RZ_OK)
        goto cleanup;
    const int ids[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, matmul_bias_arg(d)};
    const struct prim_spec spec = {&md, attr, ids, d->bias ? 4 : 3};
    st = prims_build(&op->impl, op->ctx, &spec, NULL, what, err);
cleanup:
    if (attr != NULL)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

static void matmul_run(struct kern_matmul *op, float *c, const float *a, const float *b,
                       const float *bias)
{
    struct prim *pr = &prims_of(op->impl)->fwd;
    if (op->desc.bias)
        PRIM_RUN(pr, op->ctx, a, b, c, bias);
    else
        PRIM_RUN(pr, op->ctx, a, b, c);
}

/* ---- layer normalization ------------------------------------------------------------------- */

static enum rz_status layernorm_init(struct kern_layernorm *op, struct rz_err *err)
{
    char what[96];
    snprintf(what, sizeof what, "layernorm (%lld, %lld)", (long long)op->rows,
             (long long)op->cols);
    enum rz_status st = RZ_OK;
    const unsigned flags = dnnl_use_scale | dnnl_use_shift;
    dnnl_memory_desc_t data;
    dnnl_layer_normalization_desc_t fd, bd;
    dnnl_dims_t dims = {op->rows, op->cols};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&data, 2, dims, dnnl_f32, dnnl_ab));
    DNNL_CHECK(dnnl_layer_normalization_forward_desc_init(&fd, dnnl_forward_training, &data, NULL,
                                                          op->eps, flags));
    DNNL_CHECK(dnnl_layer_normalization_backward_desc_init(&bd, dnnl_backward, &data, &data, NULL,
                                                           op->eps, flags));
    const int fids[] = {DNNL_ARG_SRC,      DNNL_ARG_DST,   DNNL_ARG_MEAN,
                        DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
    /* oneDNN 2.6 requires a SHIFT argument in the backward too, though no gradient depends on
     * it (the execute fails with invalid_arguments without it); it gets gamma's buffer. */
    const int bids[] = {DNNL_ARG_SRC,      DNNL_ARG_DIFF_DST, DNNL_ARG_MEAN,
                        DNNL_ARG_VARIANCE, DNNL_ARG_SCALE,    DNNL_ARG_SHIFT,
                        DNNL_ARG_DIFF_SRC, DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT};
    const struct prim_spec f = {&fd, NULL, fids, (int)RZ_ARRAY_LEN(fids)};
    const struct prim_spec b = {&bd, NULL, bids, (int)RZ_ARRAY_LEN(bids)};
    st = prims_build(&op->impl, op->ctx, &f, &b, what, err);
cleanup:
    return st;
}

static void layernorm_forward(struct kern_layernorm *op, float *y, float *mean, float *var,
                              const float *x, const float *gamma, const float *beta)
{
    PRIM_RUN(&prims_of(op->impl)->fwd, op->ctx, x, y, mean, var, gamma, beta);
}

static void layernorm_backward(struct kern_layernorm *op, float *dx, float *dgamma, float *dbeta,
                               const float *dy, const float *x, const float *mean,
                               const float *var, const float *gamma)
{
    /* the SHIFT slot gets gamma: read by nobody (see layernorm_init) */
    PRIM_RUN(&prims_of(op->impl)->bwd, op->ctx, x, dy, mean, var, gamma, gamma, dx, dgamma,
             dbeta);
}

/* ---- GELU (eltwise gelu_erf) --------------------------------------------------------------- */

static enum rz_status gelu_init(struct kern_gelu *op, struct rz_err *err)
{
    char what[64];
    snprintf(what, sizeof what, "gelu (%lld)", (long long)op->n);
    enum rz_status st = RZ_OK;
    dnnl_memory_desc_t data;
    dnnl_eltwise_desc_t fd, bd;
    dnnl_dims_t dims = {op->n};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&data, 1, dims, dnnl_f32, dnnl_a));
    DNNL_CHECK(dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training, dnnl_eltwise_gelu_erf,
                                              &data, 0.0f, 0.0f));
    DNNL_CHECK(dnnl_eltwise_backward_desc_init(&bd, dnnl_eltwise_gelu_erf, &data, &data, 0.0f,
                                               0.0f));
    const int fids[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    const int bids[] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
    const struct prim_spec f = {&fd, NULL, fids, 2}, b = {&bd, NULL, bids, 3};
    st = prims_build(&op->impl, op->ctx, &f, &b, what, err);
cleanup:
    return st;
}

static void gelu_forward(struct kern_gelu *op, float *y, const float *x)
{
    PRIM_RUN(&prims_of(op->impl)->fwd, op->ctx, x, y);
}

static void gelu_backward(struct kern_gelu *op, float *dx, const float *dy, const float *x)
{
    PRIM_RUN(&prims_of(op->impl)->bwd, op->ctx, x, dy, dx);
}

/* ---- softmax: oneDNN for full rows, own kernel for causal rows ----------------------------- */

static enum rz_status softmax_init(struct kern_softmax *op, struct rz_err *err)
{
    if (op->causal)
        return RZ_OK; /* kern_simd.c's row kernel: nothing to plan */
    char what[96];
    snprintf(what, sizeof what, "softmax (%lld, %lld)", (long long)op->rows,
             (long long)op->cols);
    enum rz_status st = RZ_OK;
    dnnl_memory_desc_t data;
    dnnl_softmax_desc_t fd, bd;
    dnnl_dims_t dims = {op->rows, op->cols};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&data, 2, dims, dnnl_f32, dnnl_ab));
    DNNL_CHECK(dnnl_softmax_forward_desc_init(&fd, dnnl_forward_training, &data, 1));
    DNNL_CHECK(dnnl_softmax_backward_desc_init(&bd, &data, &data, 1));
    const int fids[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    const int bids[] = {DNNL_ARG_DST, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
    const struct prim_spec f = {&fd, NULL, fids, 2}, b = {&bd, NULL, bids, 3};
    st = prims_build(&op->impl, op->ctx, &f, &b, what, err);
cleanup:
    return st;
}

static void softmax_forward(struct kern_softmax *op, float *y, const float *x)
{
    if (op->causal)
        kern_simd_causal_forward(op, y, x);
    else
        PRIM_RUN(&prims_of(op->impl)->fwd, op->ctx, x, y);
}

static void softmax_backward(struct kern_softmax *op, float *dx, const float *dy, const float *y)
{
    if (op->causal)
        kern_simd_causal_backward(op, dx, dy, y);
    else
        PRIM_RUN(&prims_of(op->impl)->bwd, op->ctx, y, dy, dx);
}

/* ---- the ops table ------------------------------------------------------------------------- */

const struct kern_ops kern_dnnl_ops = {
    .name = "dnnl",
    .ctx_init = ctx_init,
    .ctx_fini = ctx_fini,
    .isa = isa,
    .op_free = prims_free,
    .matmul_init = matmul_init,
    .matmul_run = matmul_run,
    .layernorm_init = layernorm_init,
    .layernorm_forward = layernorm_forward,
    .layernorm_backward = layernorm_backward,
    .gelu_init = gelu_init,
    .gelu_forward = gelu_forward,
    .gelu_backward = gelu_backward,
    .softmax_init = softmax_init,
    .softmax_forward = softmax_forward,
    .softmax_backward = softmax_backward,
    .xent_forward = kern_simd_xent_forward,
    .xent_backward = kern_simd_xent_backward,
};
