/* kern_impl.h: the op structs shared by kern_common.c and the backends, and the ops table that
 * every backend fills in.
 *
 * A backend is one const `struct kern_ops` (kern_ref_ops, kern_dnnl_ops): kern_common.c validates
 * arguments, allocates the op struct, fills its common fields and calls the table's x_init to plan
 * the op (which may leave backend state in op->impl); the execute path calls the table's
 * x_forward / x_backward / matmul_run; x_destroy hands op->impl to the table's x_free.  Callers
 * never ask which backend they hold, and a backend may take each op from another library.  Backend state is opaque here (void *), so this header (and
 * everything but kern_dnnl.c) stays free of dnnl.h.  Not a public header: only the kernels module
 * and its white-box test include it.
 *
 * Ownership: an op owns its backend state (op->impl); x_free releases it and accepts NULL and a
 * half-built state.  An init that fails leaves whatever it built in op->impl for x_free. */
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
    int64_t rows, cols;
    bool bf16_out;            /* forward and backward write kern_bf16 */
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
 * nothing for that op (its execute functions then need no state), an x_free NULL when free()
 * releases the state.  Forward/backward pairs sit side by side, with the signatures of
 * kernels.h. */
struct kern_ops {
    const char *name;           /* as in the config: "ref", "dnnl" */
    enum rz_status (*ctx_init)(struct kern_ctx *ctx, struct rz_err *err); /* may be NULL */
    void (*ctx_fini)(struct kern_ctx *ctx);                               /* may be NULL */
    const char *(*isa)(const struct kern_ctx *ctx);
    enum rz_status (*check_bf16)(const struct kern_ctx *ctx, struct rz_err *err);

    enum rz_status (*matmul_init)(struct kern_matmul *op, struct rz_err *err);
    void (*matmul_free)(void *impl);
    void (*matmul_run)(struct kern_matmul *op, float *c, const void *a, const void *b,
                       const float *bias);

    enum rz_status (*layernorm_init)(struct kern_layernorm *op, struct rz_err *err);
    void (*layernorm_free)(void *impl);
    void (*layernorm_forward)(struct kern_layernorm *op, void *y, float *mean, float *var,
                              const float *x, const float *gamma, const float *beta);
    void (*layernorm_backward)(struct kern_layernorm *op, float *dx, float *dgamma,
                               float *dbeta, const float *dy, const float *x, const float *mean,
                               const float *var, const float *gamma, bool accumulate_dx);

    enum rz_status (*gelu_init)(struct kern_gelu *op, struct rz_err *err);
    void (*gelu_free)(void *impl);
    void (*gelu_forward)(struct kern_gelu *op, void *y, const float *x);
    void (*gelu_backward)(struct kern_gelu *op, void *dx, float *dbias, const float *dy,
                          const float *x);

    enum rz_status (*attention_init)(struct kern_attention *op, struct rz_err *err);
    void (*attention_free)(void *impl);
    void (*attention_forward)(struct kern_attention *op, float *y, float *lse, const float *qkv);
    void (*attention_backward)(struct kern_attention *op, float *dqkv, const float *dy,
                               const float *qkv, const float *y, const float *lse);

    enum rz_status (*xent_init)(struct kern_xent *op, struct rz_err *err);
    void (*xent_free)(void *impl);
    void (*xent_forward)(struct kern_xent *op, float *losses, float *probs, const float *logits,
                         const int32_t *targets);
    void (*xent_backward)(struct kern_xent *op, void *dlogits, float *dbias, const float *probs,
                          const int32_t *targets, float scale);
};

extern const struct kern_ops kern_ref_ops;  /* kern_ref.c */
extern const struct kern_ops kern_dnnl_ops; /* kern_dnnl.c */

/* kern_isa_cap's part in each library's file: cap is below the CPU's own level. */
enum rz_status kern_dnnl_cap(enum rz_isa cap, struct rz_err *err);
enum rz_status kern_xsmm_cap(enum rz_isa cap, struct rz_err *err);
enum rz_status kern_blis_cap(enum rz_isa cap, struct rz_err *err);

/* ---- the oneDNN backend's attention: libxsmm's JIT kernels for its tile matmuls (kern_xsmm.c,
 * the only file that includes libxsmm.h), with the signatures of kernels.h -------------------- */
enum rz_status kern_xsmm_attention_init(struct kern_attention *op, struct rz_err *err);
void kern_xsmm_attention_free(void *impl);
void kern_xsmm_attention_forward(struct kern_attention *op, float *y, float *lse,
                                 const float *qkv);
void kern_xsmm_attention_backward(struct kern_attention *op, float *dqkv, const float *dy,
                                  const float *qkv, const float *y, const float *lse);

/* ---- the oneDNN backend's weight gradients where oneDNN runs AVX2: BLIS (kern_blis.c, the only
 * file that includes blis.h) ------------------------------------------------------------------- */
/* Whether BLIS runs the fp32 matmul d rather than oneDNN, on a CPU where oneDNN runs AVX-512
 * (avx512) or not: the weight gradients' form (trans_a, no bias, alpha 1, one batch) below
 * AVX-512, where BLIS has kernels for the CPU (not its generic C ones). */
bool kern_blis_takes(const struct kern_matmul_desc *d, bool avx512);
/* Whether BLIS has kernels for this CPU (not only its generic C ones) and the process's level is
 * AVX2 or above. */
bool kern_blis_usable(void);
/* BLIS's kernel set on this CPU ("haswell", "zen3", "skx", "generic", ...). */
const char *kern_blis_arch(void);
/* C (m, n) (+)= op(A) op(B) for a desc that kern_blis_takes. */
void kern_blis_matmul_run(const struct kern_matmul_desc *d, float *c, const float *a,
                          const float *b);

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

/* GELU, with the signatures of kernels.h. */
void kern_simd_gelu_forward(struct kern_gelu *op, void *y, const float *x);
void kern_simd_gelu_backward(struct kern_gelu *op, void *dx, float *dbias, const float *dy,
                             const float *x);

/* The row steps of the blocked attention, for one head (kern_xsmm.c runs the tile matmuls
 * between them).  A tile holds the (bq, bk) scores of queries [q0, q0 + bq) against keys
 * [k0, k0 + bk), row stride ld, not yet scaled by 1/sqrt(D).  On the diagonal tile (k0 == q0) keys
 * past the query are masked: their probabilities are exactly 0.  m, l (bq) are the running max
 * and sum of the query tile's rows; lse and delta are (T) per head; y and dy rows are ld* apart. */
struct kern_attn_tile {
    float *s;
    int64_t ld, q0, bq, k0, bk;
};
/* Online softmax step (forward): s becomes exp(scale s - m_new); m and l are updated, and the
 * rows of y that hold earlier tiles' sums are rescaled by exp(m_old - m_new).  The first key
 * tile (k0 == 0) starts them. */
void kern_simd_attn_online(const struct kern_attn_tile *t, float scale, float *m, float *l,
                           float *y, int64_t ldy, int64_t D);
/* End of a query tile: its y rows /= l; lse[q0 + r] = m + log l. */
void kern_simd_attn_finish(float *y, int64_t ldy, int64_t D, float *lse, const float *m,
                           const float *l, int64_t q0, int64_t bq);
/* delta (T) = rowsum(dy * y), rows ld apart: the backward's D of FlashAttention-2. */
void kern_simd_attn_delta(float *delta, const float *dy, const float *y, int64_t ld, int64_t D,
                          int64_t T);
/* Backward: the probabilities recomputed in place, p = exp(scale s - lse) (masked 0). */
void kern_simd_attn_probs(const struct kern_attn_tile *t, float scale, const float *lse);
/* Backward: the tile t holds dp; it becomes the scaled score gradient scale p (dp - delta). */
void kern_simd_attn_dscores(const struct kern_attn_tile *t, const float *p, const float *delta,
                            float scale);

/* The matrix-vector product of decoding: whether the oneDNN backend runs the matmul d as our
 * own GEMV rather than a oneDNN primitive (one row, fp32, C = A B^T [+ bias]: a linear layer on
 * one token, where oneDNN's per-call cost measured larger than the product itself), and that
 * product: y (n) = w (n, k) x (k) [+ bias], each output a dot product of one row of w in the
 * sixteen logical lanes (the same bits at every level and thread count). */
bool kern_simd_gemv_takes(const struct kern_matmul_desc *d);
void kern_simd_gemv(const struct kern_matmul_desc *d, float *y, const float *x, const float *w,
                    const float *bias);

/* kern_round_bf16's loop (shared by both backends), and its one value. */
void kern_simd_round_bf16(kern_bf16 *dst, const float *src, int64_t n);
kern_bf16 kern_simd_bf16(float f);
/* kern_colsum_round's loop (shared by both backends). */
void kern_simd_colsum_round(float *sums, kern_bf16 *dst, const float *src, int64_t rows,
                            int64_t cols);

/* The vectorized exp of those kernels: y[i] = exp(x[i]) with relative error < 1e-6 for normal
 * results; results below FLT_MIN are flushed to 0.  Exposed so the tests can check its accuracy
 * directly. */
void kern_simd_exp(float *y, const float *x, int64_t n);

#endif
