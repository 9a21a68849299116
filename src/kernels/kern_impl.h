/* kern_impl.h: the op structs shared by kern_common.c and the backends, and the ops table that
 * every backend fills in.
 *
 * A backend is one const `struct kern_ops` (kern_ref_ops, kern_dnnl_ops): kern_common.c validates
 * arguments, allocates the op struct, fills its common fields and calls the table's x_init to plan
 * the op (which may leave backend state in op->impl); the execute path calls the table's
 * x_forward / x_backward / matmul_run; x_destroy hands op->impl to the table's op_free.  Callers
 * never ask which backend they hold.  Backend state is opaque here (void *), so this header (and
 * everything but kern_dnnl.c) stays free of dnnl.h.  Not a public header: only the kernels module
 * and its white-box test include it.
 *
 * Ownership: an op owns its backend state (op->impl); op_free releases it and accepts NULL and a
 * half-built state.  An init that fails leaves whatever it built in op->impl for op_free. */
#ifndef RZ_KERNELS_KERN_IMPL_H
#define RZ_KERNELS_KERN_IMPL_H

#include <stdint.h>

#include "kernels/kernels.h"

struct kern_ops;

struct kern_ctx {
    enum kern_backend backend;
    const struct kern_ops *ops;
    void *impl;                 /* backend state (oneDNN: engine + stream); NULL for ref */
    struct kern_profile *profile; /* borrowed; NULL: not profiling */
};

struct kern_matmul {
    struct kern_ctx *ctx;
    struct kern_matmul_desc desc;
    void *impl;
};

struct kern_layernorm {
    struct kern_ctx *ctx;
    int64_t rows, cols;
    float eps;
    bool bf16_out;            /* the forward writes y as kern_bf16 */
    void *impl;
};

struct kern_gelu {
    struct kern_ctx *ctx;
    int64_t n;
    void *impl;
};

struct kern_attention {
    struct kern_ctx *ctx;
    int64_t B, T, H, D;       /* C = H D */
    int64_t tile;             /* 0 until the backend chooses (the reference ignores it) */
    void *impl;
};

struct kern_xent {
    struct kern_ctx *ctx;
    int64_t rows, vocab;
    bool bf16_out;            /* the backward writes dlogits as kern_bf16 */
    void *impl;
};

/* One backend.  Every execute entry is required; an x_init may be NULL when the backend plans
 * nothing for that op (its execute functions then need no state).  Forward/backward pairs sit
 * side by side, with the signatures of kernels.h. */
struct kern_ops {
    const char *name;           /* as in the config: "ref", "dnnl" */
    enum rz_status (*ctx_init)(struct kern_ctx *ctx, struct rz_err *err); /* may be NULL */
    void (*ctx_fini)(struct kern_ctx *ctx);                               /* may be NULL */
    const char *(*isa)(const struct kern_ctx *ctx);
    enum rz_status (*check_bf16)(const struct kern_ctx *ctx, struct rz_err *err);
    void (*op_free)(void *impl); /* releases the state any x_init left in op->impl */

    enum rz_status (*matmul_init)(struct kern_matmul *op, struct rz_err *err);
    void (*matmul_run)(struct kern_matmul *op, float *c, const void *a, const void *b,
                       const float *bias);

    enum rz_status (*layernorm_init)(struct kern_layernorm *op, struct rz_err *err);
    void (*layernorm_forward)(struct kern_layernorm *op, void *y, float *mean, float *var,
                              const float *x, const float *gamma, const float *beta);
    void (*layernorm_backward)(struct kern_layernorm *op, float *dx, float *dgamma,
                               float *dbeta, const float *dy, const float *x, const float *mean,
                               const float *var, const float *gamma, bool accumulate_dx);

    enum rz_status (*gelu_init)(struct kern_gelu *op, struct rz_err *err);
    void (*gelu_forward)(struct kern_gelu *op, float *y, const float *x);
    void (*gelu_backward)(struct kern_gelu *op, float *dx, const float *dy, const float *x);

    enum rz_status (*attention_init)(struct kern_attention *op, struct rz_err *err);
    void (*attention_forward)(struct kern_attention *op, float *y, float *lse, const float *qkv);
    void (*attention_backward)(struct kern_attention *op, float *dqkv, const float *dy,
                               const float *qkv, const float *y, const float *lse);

    enum rz_status (*xent_init)(struct kern_xent *op, struct rz_err *err);
    void (*xent_forward)(struct kern_xent *op, float *losses, float *probs, const float *logits,
                         const int32_t *targets);
    void (*xent_backward)(struct kern_xent *op, void *dlogits, float *dbias, const float *probs,
                          const int32_t *targets, float scale);
};

extern const struct kern_ops kern_ref_ops;  /* kern_ref.c */
extern const struct kern_ops kern_dnnl_ops; /* kern_dnnl.c */

/* ---- the oneDNN backend's own row kernels (kern_simd.c) -------------------------------------- */

/* Layer normalization, with the signatures of kernels.h; the backward's column sums go through
 * `scratch` (kern_simd_layernorm_scratch floats). */
void kern_simd_layernorm_forward(struct kern_layernorm *op, void *y, float *mean, float *var,
                                 const float *x, const float *gamma, const float *beta);
int64_t kern_simd_layernorm_scratch(const struct kern_layernorm *op);
void kern_simd_layernorm_backward(struct kern_layernorm *op, float *scratch, float *dx,
                                  float *dgamma, float *dbeta, const float *dy, const float *x,
                                  const float *mean, const float *var, const float *gamma,
                                  bool accumulate_dx);

/* Cross-entropy, with the signatures of kernels.h. */
void kern_simd_xent_forward(struct kern_xent *op, float *losses, float *probs,
                            const float *logits, const int32_t *targets);
/* The backward's column sums go through `scratch` (kern_simd_xent_scratch floats). */
int64_t kern_simd_xent_scratch(const struct kern_xent *op);
void kern_simd_xent_backward(struct kern_xent *op, float *scratch, void *dlogits, float *dbias,
                             const float *probs, const int32_t *targets, float scale);

/* The row steps of the blocked attention (kern_dnnl.c runs the tile matmuls between them).  A
 * score tile holds (B, H, bq, bk) scores of queries [q0, q0 + bq) against keys [k0, k0 + bk),
 * with row stride op->tile and head stride op->tile^2; rows are (b, h, query).  On the diagonal
 * tile (k0 == q0) keys past the query are masked: their probabilities are exactly 0.  m, l and
 * the other statistics are (B, H, tile) for the current query tile, or (B, H, T) where named. */

/* Online softmax step (forward): s holds scaled scores; on return the unnormalized
 * probabilities exp(s - m_new).  m (running max) and l (running sum) are updated, and the rows
 * of the output y (B, T, C) that already hold earlier tiles' sums are rescaled by
 * exp(m_old - m_new).  The first key tile (k0 == 0) starts them. */
void kern_simd_attn_online(const struct kern_attention *op, float *s, float *m, float *l,
                           float *y, int64_t q0, int64_t bq, int64_t k0, int64_t bk);
/* End of a query tile: y rows /= l; lse (B, H, T) = m + log l. */
void kern_simd_attn_finish(const struct kern_attention *op, float *y, float *lse,
                           const float *m, const float *l, int64_t q0, int64_t bq);
/* delta (B, H, T) = rowsum(dy * y) per head: the backward's D of FlashAttention-2. */
void kern_simd_attn_delta(const struct kern_attention *op, float *delta, const float *dy,
                          const float *y);
/* Backward: the probabilities of a tile recomputed in place, p = exp(s - lse) (masked 0). */
void kern_simd_attn_probs(const struct kern_attention *op, float *s, const float *lse,
                          int64_t q0, int64_t bq, int64_t k0, int64_t bk);
/* Backward: d scores in place of dp: ds = p * (dp - delta) (B, H, T). */
void kern_simd_attn_dscores(const struct kern_attention *op, float *dp, const float *p,
                            const float *delta, int64_t q0, int64_t bq, int64_t k0, int64_t bk);

/* kern_round_bf16's loop (shared by both backends), and its one value. */
void kern_simd_round_bf16(kern_bf16 *dst, const float *src, int64_t n);
kern_bf16 kern_simd_bf16(float f);

/* The vectorized exp of those kernels: y[i] = exp(x[i]) with relative error < 1e-6 for normal
 * results; results below FLT_MIN are flushed to 0.  Exposed so the tests can check its accuracy
 * directly. */
void kern_simd_exp(float *y, const float *x, int64_t n);

#endif
