/* kern_xsmm.c: the oneDNN backend's causal attention, blocked with an online softmax, on
 * libxsmm's JIT matmul kernels; the only file that includes libxsmm.h.
 *
 * Why libxsmm: the attention's matmuls are many small (tile, tile) x (tile, D) products.  At the
 * seed shape (64 heads of 64 x 64 x 64), libxsmm's kernels ran at 135 GFLOP/s on one AVX-512
 * thread and 82-87 on AVX2, against 65-77 and 43-49 for oneDNN's batched strided matmul (which
 * calls a packed sgemm per head); measured on this project's Xeon, see docs/performance.md.
 *
 * The algorithm (Dao et al. 2022, FlashAttention; backward as in FlashAttention-2): per head,
 * queries and keys go in tiles of `tile` rows (the last may be shorter: the edge).  Forward, for
 * each query tile i: for each key tile j <= i (the tiles above the diagonal are skipped),
 * S = Q_i K_j^T, the online softmax step (kern_simd.c) with the 1/sqrt(D) scale, then
 * Y_i (+)= P V_j straight into y; at the end of the row of tiles, the normalization and lse.
 * Backward: delta = rowsum(dY * Y); for each key tile j, for each query tile i >= j: P again
 * from S and lse, dV_j (+)= P^T dY_i, dP = dY_i V_j^T, dS = P (dP - delta) / sqrt(D),
 * dK_j (+)= dS^T Q_i, dQ_i (+)= dS K_j, straight into dqkv.  q, k, v, y, dy and dqkv are read and
 * written in place through their row strides; only K and V are transposed, once per head, into
 * the thread's scratch, because libxsmm 1.17 transposes only its second operand.
 *
 * Heads go to threads whole (static schedule); each head runs the same sequence of kernels on
 * any thread, so results are deterministic and independent of the thread count.  Scratch, per
 * thread: K^T and V^T (D, T), two (tile, tile) score tiles, m and l (tile), delta (T).
 * libxsmm works in column-major terms: a row-major (r, c) matrix with row stride ld is its
 * (c, r) transpose with leading dimension ld, so C = A B (row-major) is C^T = B^T A^T, called as
 * kernel(B, A, C) with m = cols of C, n = rows of C. */
#include "config.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include <libxsmm.h>

#include "core/util.h"
#include "kernels/kern_impl.h"

/* The default tile for a sequence of T: 64 up to T = 256 (libxsmm's 64 x 64 x 64 kernels beat
 * its 128 x 128 x 64 ones at the seed shape, 135 against 100-115 GFLOP/s, and small tiles skip
 * more of the masked half), then larger, where the per-row work of the online softmax (max,
 * rescale of y) dominates: at T = 4096 (B 2, H 4, D 64, one thread) the forward took 345, 262
 * and 209 ms with tiles of 64, 128 and 256, the backward 454, 419 and 420 ms. */
static int64_t default_tile(int64_t T)
{
    int64_t tile = T <= 256 ? 64 : T <= 1024 ? 128 : 256;
    return tile < T ? tile : T;
}

/* The kernels: C (+)= A B in row-major terms, per the comment at the top of each. */
enum xk { XK_S, XK_MIX, XK_MIX_ACC, XK_DP, XK_DV, XK_DV_ACC, XK_DK, XK_DK_ACC, XK_DQ, XK_DQ_ACC,
          XK_KINDS };
/* Tile shapes: (tile, tile); the last query tile against a full key tile (edge, tile); the last
 * diagonal tile (edge, edge).  A full query tile never meets the edge key tile (causality). */
enum xs { XS_FULL, XS_EDGE_Q, XS_EDGE, XS_SHAPES };

struct xsmm_attn {
    int threads;              /* scratch sets, one per OpenMP thread at init */
    size_t per_thread;        /* floats per set */
    float *scratch;
    libxsmm_smmfunction k[XK_KINDS][XS_SHAPES];
};

/* One thread's scratch. */
struct xsmm_work {
    float *kt, *vt;           /* (D, T): K^T, V^T of the head */
    float *s, *dp;            /* (tile, tile) */
    float *m, *l;             /* (tile) */
    float *delta;             /* (T) */
};

static struct xsmm_work work_of(const struct kern_attention *op, const struct xsmm_attn *x,
                                int thread)
{
    int64_t DT = op->D * op->T, t2 = op->tile * op->tile;
    struct xsmm_work w = {.kt = x->scratch + (size_t)thread * x->per_thread};
    w.vt = w.kt + DT;
    w.s = w.vt + DT;
    w.dp = w.s + t2;
    w.m = w.dp + t2;
    w.l = w.m + op->tile;
    w.delta = w.l + op->tile;
    return w;
}

/* ---- plan ------------------------------------------------------------------------------------ */

/* libxsmm's (m, n, k) and leading dimensions of kernel `kind` for tile rows bq, columns bk, in
 * the column-major terms of the comment at the top.  Returns whether B is transposed. */
static bool xk_dims(const struct kern_attention *op, enum xk kind, int64_t bq, int64_t bk,
                    libxsmm_blasint dims[3], libxsmm_blasint ld[3])
{
    const libxsmm_blasint D = (libxsmm_blasint)op->D, T = (libxsmm_blasint)op->T;
    const libxsmm_blasint C3 = (libxsmm_blasint)(3 * op->H * op->D);
    const libxsmm_blasint C = (libxsmm_blasint)(op->H * op->D), tl = (libxsmm_blasint)op->tile;
    const libxsmm_blasint q = (libxsmm_blasint)bq, k = (libxsmm_blasint)bk;
    switch (kind) {
    case XK_S: /* S (bq, bk) = Q_i (bq, D) K^T[:, j] (D, bk) */
        dims[0] = k, dims[1] = q, dims[2] = D, ld[0] = T, ld[1] = C3, ld[2] = tl;
        return false;
    case XK_MIX: case XK_MIX_ACC: /* Y_i (bq, D) (+)= P (bq, bk) V_j (bk, D) */
        dims[0] = D, dims[1] = q, dims[2] = k, ld[0] = C3, ld[1] = tl, ld[2] = C;
        return false;
    case XK_DP: /* dP (bq, bk) = dY_i (bq, D) V^T[:, j] (D, bk) */
        dims[0] = k, dims[1] = q, dims[2] = D, ld[0] = T, ld[1] = C, ld[2] = tl;
        return false;
    case XK_DV: case XK_DV_ACC: /* dV_j (bk, D) (+)= P^T (bk, bq) dY_i (bq, D) */
        dims[0] = D, dims[1] = k, dims[2] = q, ld[0] = C, ld[1] = tl, ld[2] = C3;
        return true;
    case XK_DK: case XK_DK_ACC: /* dK_j (bk, D) (+)= dS^T (bk, bq) Q_i (bq, D) */
        dims[0] = D, dims[1] = k, dims[2] = q, ld[0] = C3, ld[1] = tl, ld[2] = C3;
        return true;
    default: /* XK_DQ, XK_DQ_ACC: dQ_i (bq, D) (+)= dS (bq, bk) K_j (bk, D) */
        dims[0] = D, dims[1] = q, dims[2] = k, ld[0] = C3, ld[1] = tl, ld[2] = C3;
        return false;
    }
}

static bool xk_accumulates(enum xk kind)
{
    return kind == XK_MIX_ACC || kind == XK_DV_ACC || kind == XK_DK_ACC || kind == XK_DQ_ACC;
}

/* Rows of query or key tile i. */
static int64_t tile_len(const struct kern_attention *op, int64_t i)
{
    int64_t left = op->T - i * op->tile;
    return left < op->tile ? left : op->tile;
}

static enum xs tile_shape(const struct kern_attention *op, int64_t bq, int64_t bk)
{
    return bq == op->tile ? XS_FULL : bk == op->tile ? XS_EDGE_Q : XS_EDGE;
}

static enum rz_status dispatch_all(struct kern_attention *op, struct xsmm_attn *x,
                                   struct rz_err *err)
{
    int64_t edge = tile_len(op, (op->T - 1) / op->tile);
    const int64_t bqs[XS_SHAPES] = {op->tile, edge, edge}, bks[XS_SHAPES] = {op->tile, op->tile,
                                                                               edge};
    for (int kind = 0; kind < XK_KINDS; kind++)
        for (int sh = 0; sh < XS_SHAPES; sh++) {
            /* the edge shapes exist only when the tile does not divide T */
            if (sh != XS_FULL && (edge == op->tile || (sh == XS_EDGE_Q && edge == op->T)))
                continue;
            libxsmm_blasint dims[3], ld[3];
            bool trans_b = xk_dims(op, (enum xk)kind, bqs[sh], bks[sh], dims, ld);
            const float alpha = 1.0f, beta = xk_accumulates((enum xk)kind) ? 1.0f : 0.0f;
            const int flags = trans_b ? LIBXSMM_GEMM_FLAGS('N', 'T') : LIBXSMM_GEMM_FLAGS('N', 'N');
            x->k[kind][sh] = libxsmm_smmdispatch(dims[0], dims[1], dims[2], &ld[0], &ld[1], &ld[2],
                                                 &alpha, &beta, &flags, NULL);
            if (x->k[kind][sh] == NULL)
                return rz_fail(err, RZ_EBACKEND, "attention T=%lld D=%lld tile %lld: libxsmm has "
                               "no kernel for (%d, %d, %d)", (long long)op->T, (long long)op->D,
                               (long long)op->tile, (int)dims[0], (int)dims[1], (int)dims[2]);
        }
    return RZ_OK;
}

/* libxsmm's JIT target for a level below the CPU's: its set call returns nothing, so the target
 * is read back. */
enum rz_status kern_xsmm_cap(enum rz_isa cap, struct rz_err *err)
{
    const char *arch = cap >= RZ_ISA_AVX2 ? "hsw" : "wsm";
    int want = cap >= RZ_ISA_AVX2 ? LIBXSMM_X86_AVX2 : LIBXSMM_X86_SSE4;
    libxsmm_init();
    libxsmm_set_target_arch(arch);
    int got = libxsmm_get_target_archid();
    if (got != want)
        return rz_fail(err, RZ_EBACKEND, "RYZEN_ISA: capping libxsmm at %s: its target is %d "
                       "(libxsmm_cpuid.h), not %d", arch, got, want);
    return RZ_OK;
}

enum rz_status kern_xsmm_attention_init(struct kern_attention *op, struct rz_err *err)
{
    if (op->tile == 0)
        op->tile = default_tile(op->T);
    struct xsmm_attn *x = calloc(1, sizeof *x);
    if ((op->impl = x) == NULL)
        return rz_fail(err, RZ_ENOMEM, "attention: out of memory");
    libxsmm_init(); /* idempotent */
    x->threads = omp_get_max_threads();
    x->per_thread = (size_t)(2 * op->D * op->T + 2 * op->tile * op->tile + 2 * op->tile + op->T);
    x->per_thread = (x->per_thread + 15) & ~(size_t)15; /* each set 64-byte aligned */
    x->scratch = rz_alloc_aligned((size_t)x->threads * x->per_thread * sizeof(float));
    if (x->scratch == NULL)
        return rz_fail(err, RZ_ENOMEM, "attention T=%lld D=%lld: out of memory for %d threads' "
                       "scratch", (long long)op->T, (long long)op->D, x->threads);
    return dispatch_all(op, x, err);
}

void kern_xsmm_attention_free(void *impl)
{
    struct xsmm_attn *x = impl;
    if (x == NULL)
        return;
    free(x->scratch);
    free(x);
}

/* ---- execute --------------------------------------------------------------------------------- */

/* One head: its q, k, v rows (3C apart) in qkv, where they sit in qkv (and in dqkv), where
 * its rows of y and dy (C apart) start, where its lse (T) starts, and its thread's scratch. */
struct head {
    const float *q, *k, *v;
    int64_t qkv_at, out_at, lse_at;
    struct xsmm_work w;
};

/* The tensors of a pass over the heads: the forward reads qkv and writes y_out, lse_out; the
 * backward reads qkv, dy, y_in, lse_in and writes dqkv. */
struct pass {
    const float *qkv, *dy, *y_in, *lse_in;
    float *y_out, *lse_out, *dqkv;
};

static void head_forward(const struct kern_attention *op, const struct xsmm_attn *x,
                         const struct pass *ps, const struct head *hd);
static void head_backward(const struct kern_attention *op, const struct xsmm_attn *x,
                          const struct pass *ps, const struct head *hd);

/* Runs `fn` on every head, whole heads to threads (static schedule): each head's results do not
 * depend on which thread, or how many, ran it. */
static void for_each_head(const struct kern_attention *op, const struct pass *ps,
                          void (*fn)(const struct kern_attention *, const struct xsmm_attn *,
                                     const struct pass *, const struct head *))
{
    const struct xsmm_attn *x = op->impl;
    const int64_t C = op->H * op->D, heads = op->B * op->H;
#pragma omp parallel for schedule(static) num_threads(x->threads)
    for (int64_t bh = 0; bh < heads; bh++) {
        int64_t b = bh / op->H, h = bh % op->H;
        struct head hd = {.qkv_at = b * op->T * 3 * C + h * op->D,
                          .out_at = b * op->T * C + h * op->D, .lse_at = bh * op->T,
                          .w = work_of(op, x, omp_get_thread_num())};
        hd.q = ps->qkv + hd.qkv_at, hd.k = hd.q + C, hd.v = hd.q + 2 * C;
        fn(op, x, ps, &hd);
    }
}

/* dst (D, T) = src (T, D) with source rows ld apart (libxsmm's transpose, in its column-major
 * terms: the (D, T) matrix src with leading dimension ld into the (T, D) dst with T). */
static void transpose(float *dst, const float *src, int64_t T, int64_t D, int64_t ld)
{
    libxsmm_otrans(dst, src, sizeof(float), (libxsmm_blasint)D, (libxsmm_blasint)T,
                   (libxsmm_blasint)ld, (libxsmm_blasint)T);
}

static void run(const struct xsmm_attn *x, enum xk kind, enum xs shape, const float *a,
                const float *b, float *c)
{
    x->k[kind][shape](a, b, c);
}

static void head_forward(const struct kern_attention *op, const struct xsmm_attn *x,
                         const struct pass *ps, const struct head *hd)
{
    const int64_t C = op->H * op->D, C3 = 3 * C, nt = (op->T + op->tile - 1) / op->tile;
    const float scale = 1.0f / sqrtf((float)op->D);
    const struct xsmm_work *w = &hd->w;
    float *y = ps->y_out + hd->out_at, *lse = ps->lse_out + hd->lse_at;
    transpose(w->kt, hd->k, op->T, op->D, C3);
    for (int64_t i = 0; i < nt; i++) {
        int64_t q0 = i * op->tile, bq = tile_len(op, i);
        for (int64_t j = 0; j <= i; j++) {
            int64_t k0 = j * op->tile, bk = tile_len(op, j);
            enum xs sh = tile_shape(op, bq, bk);
            struct kern_attn_tile t = {w->s, op->tile, q0, bq, k0, bk};
            run(x, XK_S, sh, w->kt + k0, hd->q + q0 * C3, w->s);
            kern_simd_attn_online(&t, scale, w->m, w->l, y, C, op->D);
            run(x, j == 0 ? XK_MIX : XK_MIX_ACC, sh, hd->v + k0 * C3, w->s, y + q0 * C);
        }
        kern_simd_attn_finish(y, C, op->D, lse, w->m, w->l, q0, bq);
    }
}

static void head_backward(const struct kern_attention *op, const struct xsmm_attn *x,
                          const struct pass *ps, const struct head *hd)
{
    const int64_t C = op->H * op->D, C3 = 3 * C, nt = (op->T + op->tile - 1) / op->tile;
    const float scale = 1.0f / sqrtf((float)op->D);
    const struct xsmm_work *w = &hd->w;
    const float *dy = ps->dy + hd->out_at, *y = ps->y_in + hd->out_at;
    const float *lse = ps->lse_in + hd->lse_at;
    float *dq = ps->dqkv + hd->qkv_at, *dk = dq + C, *dv = dq + 2 * C;
    transpose(w->kt, hd->k, op->T, op->D, C3);
    transpose(w->vt, hd->v, op->T, op->D, C3);
    kern_simd_attn_delta(w->delta, dy, y, C, op->D, op->T);
    for (int64_t j = 0; j < nt; j++) {
        int64_t k0 = j * op->tile, bk = tile_len(op, j);
        for (int64_t i = j; i < nt; i++) {
            int64_t q0 = i * op->tile, bq = tile_len(op, i);
            enum xs sh = tile_shape(op, bq, bk);
            struct kern_attn_tile p = {w->s, op->tile, q0, bq, k0, bk};
            struct kern_attn_tile ds = {w->dp, op->tile, q0, bq, k0, bk};
            run(x, XK_S, sh, w->kt + k0, hd->q + q0 * C3, w->s);
            kern_simd_attn_probs(&p, scale, lse);
            run(x, i == j ? XK_DV : XK_DV_ACC, sh, dy + q0 * C, w->s, dv + k0 * C3);
            run(x, XK_DP, sh, w->vt + k0, dy + q0 * C, w->dp);
            kern_simd_attn_dscores(&ds, w->s, w->delta, scale);
            run(x, i == j ? XK_DK : XK_DK_ACC, sh, hd->q + q0 * C3, w->dp, dk + k0 * C3);
            run(x, j == 0 ? XK_DQ : XK_DQ_ACC, sh, hd->k + k0 * C3, w->dp, dq + q0 * C3);
        }
    }
}

void kern_xsmm_attention_forward(struct kern_attention *op, float *y, float *lse,
                                 const float *qkv)
{
    const struct pass ps = {.qkv = qkv, .y_out = y, .lse_out = lse};
    for_each_head(op, &ps, head_forward);
}

void kern_xsmm_attention_backward(struct kern_attention *op, float *dqkv, const float *dy,
                                  const float *qkv, const float *y, const float *lse)
{
    const struct pass ps = {.qkv = qkv, .dy = dy, .y_in = y, .lse_in = lse, .dqkv = dqkv};
    for_each_head(op, &ps, head_backward);
}
