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
    void *impl;
};

struct kern_gelu {
    struct kern_ctx *ctx;
    int64_t n;
    void *impl;
};

struct kern_softmax {
    struct kern_ctx *ctx;
    int64_t rows, cols;
    bool causal;
    void *impl;
};

struct kern_xent {
    struct kern_ctx *ctx;
    int64_t rows, vocab;
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
    void (*op_free)(void *impl); /* releases the state any x_init left in op->impl */

    enum rz_status (*matmul_init)(struct kern_matmul *op, struct rz_err *err);
    void (*matmul_run)(struct kern_matmul *op, float *c, const float *a, const float *b,
                       const float *bias);

    enum rz_status (*layernorm_init)(struct kern_layernorm *op, struct rz_err *err);
    void (*layernorm_forward)(struct kern_layernorm *op, float *y, float *mean, float *var,
                              const float *x, const float *gamma, const float *beta);
    void (*layernorm_backward)(struct kern_layernorm *op, float *dx, float *dgamma,
                               float *dbeta, const float *dy, const float *x, const float *mean,
                               const float *var, const float *gamma);

    enum rz_status (*gelu_init)(struct kern_gelu *op, struct rz_err *err);
    void (*gelu_forward)(struct kern_gelu *op, float *y, const float *x);
    void (*gelu_backward)(struct kern_gelu *op, float *dx, const float *dy, const float *x);

    enum rz_status (*softmax_init)(struct kern_softmax *op, struct rz_err *err);
    void (*softmax_forward)(struct kern_softmax *op, float *y, const float *x);
    void (*softmax_backward)(struct kern_softmax *op, float *dx, const float *dy,
                             const float *y);

    enum rz_status (*xent_init)(struct kern_xent *op, struct rz_err *err);
    void (*xent_forward)(struct kern_xent *op, float *losses, float *probs, const float *logits,
                         const int32_t *targets);
    void (*xent_backward)(struct kern_xent *op, float *dlogits, const float *probs,
                          const int32_t *targets, float scale);
};

extern const struct kern_ops kern_ref_ops;  /* kern_ref.c */
extern const struct kern_ops kern_dnnl_ops; /* kern_dnnl.c */

/* ---- the oneDNN backend's own row kernels (kern_simd.c), with the signatures of kernels.h -- */
void kern_simd_causal_forward(const struct kern_softmax *op, float *y, const float *x);
void kern_simd_causal_backward(const struct kern_softmax *op, float *dx, const float *dy,
                               const float *y);
void kern_simd_xent_forward(struct kern_xent *op, float *losses, float *probs,
                            const float *logits, const int32_t *targets);
void kern_simd_xent_backward(struct kern_xent *op, float *dlogits, const float *probs,
                             const int32_t *targets, float scale);

/* The vectorized exp of those kernels: y[i] = exp(x[i]) with relative error < 1e-6 for normal
 * results; results below FLT_MIN are flushed to 0.  Exposed so the tests can check its accuracy
 * directly. */
void kern_simd_exp(float *y, const float *x, int64_t n);

#endif
