/* kern_dnnl.c: the oneDNN backend (v2 C API), the only file that includes dnnl.h.
 *
 * Every primitive, its memory objects (created without a buffer) and its scratchpad (user mode,
 * allocated once) are made by one generic builder, prims_build, at x_init; the execute path only
 * sets data handles and executes on the context's stream, so it never allocates.  The backend
 * state of every op is the same struct prims (a forward primitive and, for layers with a
 * gradient, a backward one), released by one prims_free.  Matmul is a oneDNN primitive (but for
 * the weight gradients below AVX-512: BLIS's, kern_blis.c, and a linear layer on one row, the
 * decoder's: our GEMV, kern_simd.c; each a state with no primitive); layer
 * normalization, the GELU and the softmax cross-entropy are our own row kernels (kern_simd.c),
 * and the attention's tile matmuls are libxsmm's (kern_xsmm.c), each where it measured faster
 * than oneDNN at the model's shapes.  The GELU alone is slower than oneDNN's gelu_erf, but it
 * writes the bf16 rounding and the bias gradient in the same pass, which oneDNN's eltwise
 * primitive cannot, and the step measured faster for it (docs/performance.md, Zen 4).
 *
 * Matmuls run in fp32 or, with desc.bf16, on bf16 operands with fp32 sums (AMX or avx512_bf16;
 * check_bf16 refuses a CPU without them).  Deliberately not here: argument validation
 * (kern_common.c), and error reporting from the execute path: an execute failure after a
 * successful create is a programming error and is caught by assert(). */
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

/* The backend state of every op: its primitives, and the scratch it owns. */
struct prims {
    int n;
    struct prim *p;           /* [0] the forward (a matmul: the matmul), [1] the backward; the
                               * attention: its tile matmuls (attn_slot) */
    float *buf;               /* the attention's tiles and statistics; NULL for the others */
};

/* One primitive to build: its operation descriptor (NULL: an empty slot), attributes (NULL: the
 * default ones, user scratchpad), the execute argument ids in slot order, and whether it is a
 * backward whose hint is the previous slot's forward. */
struct prim_spec {
    const_dnnl_op_desc_t desc;
    const_dnnl_primitive_attr_t attr;
    const int *ids;
    int nids;
    bool hinted;
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

enum rz_status kern_dnnl_cap(enum rz_isa cap, struct rz_err *err)
{
    const char *what = "RYZEN_ISA: capping oneDNN";
    enum rz_status st = RZ_OK;
    DNNL_CHECK(dnnl_set_max_cpu_isa(cap >= RZ_ISA_AVX2 ? dnnl_cpu_isa_avx2 : dnnl_cpu_isa_sse41));
cleanup:
    return st;
}

/* oneDNN runs AVX-512 (its ISA values are nested bit masks) */
static bool runs_avx512(void)
{
    unsigned have = (unsigned)dnnl_get_effective_cpu_isa(), need = dnnl_cpu_isa_avx512_core;
    return (have & need) == need;
}

/* Below AVX-512, the ISA and where the weight gradients run (kern_blis.c). */
static const char *isa_avx2(const char *name)
{
    static char buf[96];
    if (!kern_blis_usable())
        return name;
    snprintf(buf, sizeof buf, "%s; weight gradients: BLIS %s", name, kern_blis_arch());
    return buf;
}

static const char *isa(const struct kern_ctx *ctx)
{
    (void)ctx;
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return isa_avx2("sse41");
    case dnnl_cpu_isa_avx: return isa_avx2("avx");
    case dnnl_cpu_isa_avx2: return isa_avx2("avx2");
    case dnnl_cpu_isa_avx2_vnni: return isa_avx2("avx2_vnni");
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "unknown (oneDNN)";
    }
}

/* bf16 matmuls run natively from avx512_core_bf16 on (the ISA values are nested bit masks);
 * below it oneDNN would emulate them slowly, which we refuse rather than hide. */
static enum rz_status check_bf16(const struct kern_ctx *ctx, struct rz_err *err)
{
    unsigned have = (unsigned)dnnl_get_effective_cpu_isa(), need = dnnl_cpu_isa_avx512_core_bf16;
    if ((have & need) == need)
        return RZ_OK;
    return rz_fail(err, RZ_ECONFIG, "training.precision bf16 needs a CPU with avx512_bf16 or "
                   "amx_bf16 (oneDNN ISA avx512_core_bf16 or avx512_core_amx); oneDNN runs %s "
                   "here (a CPU without them, or ONEDNN_MAX_CPU_ISA below them): use "
                   "training.precision fp32", isa(ctx));
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

/* The x_free of every op of this backend but the attention (accepts NULL and half-built
 * state). */
static void prims_free(void *impl)
{
    struct prims *p = impl;
    if (p == NULL)
        return;
    for (int i = 0; p->p != NULL && i < p->n; i++)
        prim_fini(&p->p[i]);
    free(p->p);
    free(p->buf);
    free(p);
}

/* A struct prims in *impl with room for n primitives and a scratch buffer of buf_floats. */
static enum rz_status state_alloc(void **impl, int n, size_t buf_floats, const char *what,
                                  struct rz_err *err)
{
    struct prims *p = calloc(1, sizeof *p);
    if ((*impl = p) == NULL || (n > 0 && (p->p = calloc((size_t)n, sizeof *p->p)) == NULL) ||
        (buf_floats > 0 && (p->buf = rz_alloc_aligned(buf_floats * sizeof(float))) == NULL))
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", what);
    p->n = n;
    return RZ_OK;
}

/* The generic builder: a struct prims in *impl with one primitive per non-empty spec, created
 * once here and only executed in the step, and buf_floats of scratch.  A hinted spec (a
 * backward) gets the previous primitive descriptor (its forward) as the hint. */
static enum rz_status prims_build(void **impl, const struct kern_ctx *ctx,
                                  const struct prim_spec *specs, int n, size_t buf_floats,
                                  const char *what, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t prev = NULL;
    dnnl_engine_t eng = engine_of(ctx);
    if ((st = state_alloc(impl, n, buf_floats, what, err)) != RZ_OK)
        return st;
    struct prims *p = *impl;
    DNNL_CHECK(attr_create(&attr));
    for (int i = 0; i < n && st == RZ_OK; i++) {
        const struct prim_spec *sp = &specs[i];
        dnnl_primitive_desc_t pd = NULL;
        if (sp->desc == NULL)
            continue;
        DNNL_CHECK(dnnl_primitive_desc_create(&pd, sp->desc, sp->attr != NULL ? sp->attr : attr,
                                              eng, sp->hinted ? prev : NULL));
        st = prim_init(&p->p[i], pd, sp, eng, what, err);
        if (prev != NULL)
            dnnl_primitive_desc_destroy(prev);
        prev = pd;
    }
cleanup:
    if (prev != NULL)
        dnnl_primitive_desc_destroy(prev);
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

/* Primitive `i` of an op's state. */
static struct prim *prim_of(void *impl, int i)
{
    return &((struct prims *)impl)->p[i];
}

/* ---- matmul: C = alpha op(A) op(B) [+ bias] [+ C] ------------------------------------------ */

/* Logical (batch, rows, cols), or (rows, cols) when nd == 2, stored row-major as (rows, cols) or,
 * when trans, as (cols, rows): the transpose is expressed by the strides alone. */
static dnnl_status_t md_matrix(dnnl_memory_desc_t *md, int nd, int64_t batch, int64_t rows,
                               int64_t cols, bool trans, dnnl_data_type_t dt)
{
    int64_t row_stride = trans ? 1 : cols, col_stride = trans ? rows : 1;
    if (nd == 2) {
        dnnl_dims_t dims = {rows, cols}, strides = {row_stride, col_stride};
        return dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides);
    }
    dnnl_dims_t dims = {batch, rows, cols}, strides = {rows * cols, row_stride, col_stride};
    return dnnl_memory_desc_init_by_strides(md, 3, dims, dt, strides);
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
    dnnl_data_type_t in = d->bf16 ? dnnl_bf16 : dnnl_f32;
    if (d->bf16 && (st = check_bf16(op->ctx, err)) != RZ_OK)
        return st;
    /* a state with no primitive: BLIS or our GEMV runs it */
    if (kern_blis_takes(d, runs_avx512()) || kern_simd_gemv_takes(d))
        return state_alloc(&op->impl, 0, 0, what, err);
    DNNL_CHECK(md_matrix(&src, nd, d->batch, d->m, d->k, d->trans_a, in));
    DNNL_CHECK(md_matrix(&wei, nd, d->batch, d->k, d->n, d->trans_b, in));
    DNNL_CHECK(md_matrix(&bias, nd, 1, 1, d->n, false, dnnl_f32));
    DNNL_CHECK(md_matrix(&dst, nd, d->batch, d->m, d->n, false, dnnl_f32));
    bool prim_bias = d->bias && d->alpha == 1.0f;
    DNNL_CHECK(dnnl_matmul_desc_init(&md, &src, &wei, prim_bias ? &bias : NULL, &dst));
    if ((st = matmul_attr(&attr, d, &bias, what, err)) != RZ_OK)
        goto cleanup;
    const int ids[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, matmul_bias_arg(d)};
    const struct prim_spec spec = {&md, attr, ids, d->bias ? 4 : 3, false};
    st = prims_build(&op->impl, op->ctx, &spec, 1, 0, what, err);
cleanup:
    if (attr != NULL)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

static void matmul_run(struct kern_matmul *op, float *c, const void *a, const void *b,
                       const float *bias)
{
    if (((struct prims *)op->impl)->n == 0) {
        if (kern_simd_gemv_takes(&op->desc))
            kern_simd_gemv(&op->desc, c, a, b, bias);
        else
            kern_blis_matmul_run(&op->desc, c, a, b);
        return;
    }
    struct prim *pr = prim_of(op->impl, 0);
    if (op->desc.bias)
        PRIM_RUN(pr, op->ctx, a, b, c, bias);
    else
        PRIM_RUN(pr, op->ctx, a, b, c);
}

/* ---- layer normalization: our own row kernels (kern_simd.c) -------------------------------
 * oneDNN 2.6's layer normalization is its reference-style implementation on every ISA
 * (simple_layer_normalization:any); ours reads each row once per pass while it is in L1, adds
 * the input gradient into the residual stream's in the same pass, and sums the parameter
 * gradients per chunk of rows.  The state is only that sum's scratch. */

static enum rz_status layernorm_init(struct kern_layernorm *op, struct rz_err *err)
{
    char what[96];
    snprintf(what, sizeof what, "layernorm (%lld, %lld)", (long long)op->rows,
             (long long)op->cols);
    return state_alloc(&op->impl, 0, (size_t)kern_simd_layernorm_scratch(op), what, err);
}

static void layernorm_backward(struct kern_layernorm *op, float *dx, float *dgamma, float *dbeta,
                               const float *dy, const float *x, const float *mean,
                               const float *var, const float *gamma, bool accumulate_dx)
{
    kern_simd_layernorm_backward(op, ((struct prims *)op->impl)->buf, dx, dgamma, dbeta, dy, x,
                                 mean, var, gamma, accumulate_dx);
}

/* ---- cross-entropy: our own row kernels (kern_simd.c); the state is the column sums' scratch */

static enum rz_status xent_init(struct kern_xent *op, struct rz_err *err)
{
    char what[96];
    snprintf(what, sizeof what, "xent (%lld, %lld)", (long long)op->rows, (long long)op->vocab);
    return state_alloc(&op->impl, 0, (size_t)kern_simd_xent_scratch(op), what, err);
}

static void xent_backward(struct kern_xent *op, void *dlogits, float *dbias, const float *probs,
                          const int32_t *targets, float scale)
{
    kern_simd_xent_backward(op, ((struct prims *)op->impl)->buf, dlogits, dbias, probs, targets,
                            scale);
}

/* ---- the ops table ------------------------------------------------------------------------- */

const struct kern_ops kern_dnnl_ops = {
    .name = "dnnl",
    .ctx_init = ctx_init,
    .ctx_fini = ctx_fini,
    .isa = isa,
    .check_bf16 = check_bf16,
    .matmul_init = matmul_init,
    .matmul_free = prims_free,
    .matmul_run = matmul_run,
    .layernorm_init = layernorm_init,
    .layernorm_free = prims_free,
    .layernorm_forward = kern_simd_layernorm_forward,
    .layernorm_backward = layernorm_backward,
    .gelu_forward = kern_simd_gelu_forward,
    .gelu_backward = kern_simd_gelu_backward,
    .attention_init = kern_xsmm_attention_init,
    .attention_free = kern_xsmm_attention_free,
    .attention_forward = kern_xsmm_attention_forward,
    .attention_backward = kern_xsmm_attention_backward,
    .xent_init = xent_init,
    .xent_free = prims_free,
    .xent_forward = kern_simd_xent_forward,
    .xent_backward = xent_backward,
};
