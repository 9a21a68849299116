/* kern_impl.h: the op structs shared by kern_common.c, kern_ref.c and kern_dnnl.c, and the
 * backend entry points that kern_common.c dispatches to.
 *
 * kern_common.c validates arguments, allocates the op struct and fills its common fields; it then
 * calls kern_<backend>_<op>_init to plan the op and kern_<backend>_<op>_fini to undo it.  The
 * backend state of the oneDNN backend is an opaque struct defined in kern_dnnl.c, so this header
 * (and everything but kern_dnnl.c) stays free of dnnl.h.  Not a public header: only the kernels
 * module and its white-box test include it.
 *
 * Ownership: an op owns its backend state; fini releases it and accepts a half-built op. */
#ifndef RZ_KERNELS_KERN_IMPL_H
#define RZ_KERNELS_KERN_IMPL_H

#include <stdint.h>

#include "kernels/kernels.h"

struct kern_dnnl_ctx;
struct kern_dnnl_matmul;
struct kern_dnnl_layernorm;
struct kern_dnnl_gelu;
struct kern_dnnl_softmax;

struct kern_ctx {
    enum kern_backend backend;
    struct kern_dnnl_ctx *dnnl; /* engine + stream; NULL for KERN_REF */
};

struct kern_matmul {
    struct kern_ctx *ctx;
    struct kern_matmul_desc desc;
    double *ref_b;   /* ref: op(B_b) widened to double (k, n) */
    double *ref_acc; /* ref: one output row accumulator (n) */
    struct kern_dnnl_matmul *dnnl;
};

struct kern_layernorm {
    struct kern_ctx *ctx;
    int64_t rows, cols;
    float eps;
    struct kern_dnnl_layernorm *dnnl;
};

struct kern_gelu {
    struct kern_ctx *ctx;
    int64_t n;
    struct kern_dnnl_gelu *dnnl;
};

struct kern_softmax {
    struct kern_ctx *ctx;
    int64_t rows, cols;
    bool causal;
    struct kern_dnnl_softmax *dnnl; /* oneDNN primitives; NULL when causal (own row kernel) */
};

struct kern_xent {
    struct kern_ctx *ctx;
    int64_t rows, vocab; /* the oneDNN backend uses its own row kernel: no backend state */
};

/* ---- reference backend (kern_ref.c) ---- */
enum rz_status kern_ref_matmul_init(struct kern_matmul *op, struct rz_err *err);
void kern_ref_matmul_fini(struct kern_matmul *op);
void kern_ref_matmul_run(struct kern_matmul *op, float *c, const float *a, const float *b,
                         const float *bias);
void kern_ref_layernorm_forward(struct kern_layernorm *op, float *y, float *mean, float *var,
                                const float *x, const float *gamma, const float *beta);
void kern_ref_layernorm_backward(struct kern_layernorm *op, float *dx, float *dgamma,
                                 float *dbeta, const float *dy, const float *x,
                                 const float *mean, const float *var, const float *gamma);
void kern_ref_gelu_forward(struct kern_gelu *op, float *y, const float *x);
void kern_ref_gelu_backward(struct kern_gelu *op, float *dx, const float *dy, const float *x);
void kern_ref_softmax_forward(struct kern_softmax *op, float *y, const float *x);
void kern_ref_softmax_backward(struct kern_softmax *op, float *dx, const float *dy,
                               const float *y);
void kern_ref_xent_forward(struct kern_xent *op, float *losses, float *probs,
                           const float *logits, const int32_t *targets);
void kern_ref_xent_backward(struct kern_xent *op, float *dlogits, const float *probs,
                            const int32_t *targets, float scale);

/* ---- oneDNN backend (kern_dnnl.c) ---- */
enum rz_status kern_dnnl_ctx_init(struct kern_ctx *ctx, struct rz_err *err);
void kern_dnnl_ctx_fini(struct kern_ctx *ctx);
const char *kern_dnnl_isa(const struct kern_ctx *ctx);

enum rz_status kern_dnnl_matmul_init(struct kern_matmul *op, struct rz_err *err);
void kern_dnnl_matmul_fini(struct kern_matmul *op);
void kern_dnnl_matmul_run(struct kern_matmul *op, float *c, const float *a, const float *b,
                          const float *bias);

enum rz_status kern_dnnl_layernorm_init(struct kern_layernorm *op, struct rz_err *err);
void kern_dnnl_layernorm_fini(struct kern_layernorm *op);
void kern_dnnl_layernorm_forward(struct kern_layernorm *op, float *y, float *mean, float *var,
                                 const float *x, const float *gamma, const float *beta);
void kern_dnnl_layernorm_backward(struct kern_layernorm *op, float *dx, float *dgamma,
                                  float *dbeta, const float *dy, const float *x,
                                  const float *mean, const float *var, const float *gamma);

enum rz_status kern_dnnl_gelu_init(struct kern_gelu *op, struct rz_err *err);
void kern_dnnl_gelu_fini(struct kern_gelu *op);
void kern_dnnl_gelu_forward(struct kern_gelu *op, float *y, const float *x);
void kern_dnnl_gelu_backward(struct kern_gelu *op, float *dx, const float *dy, const float *x);

enum rz_status kern_dnnl_softmax_init(struct kern_softmax *op, struct rz_err *err);
void kern_dnnl_softmax_fini(struct kern_softmax *op);
void kern_dnnl_softmax_forward(struct kern_softmax *op, float *y, const float *x);
void kern_dnnl_softmax_backward(struct kern_softmax *op, float *dx, const float *dy,
                                const float *y);

void kern_dnnl_xent_forward(struct kern_xent *op, float *losses, float *probs,
                            const float *logits, const int32_t *targets);
void kern_dnnl_xent_backward(struct kern_xent *op, float *dlogits, const float *probs,
                             const int32_t *targets, float scale);

/* The vectorized exp used by the oneDNN backend's own row kernels: y[i] = exp(x[i]) with relative
 * error < 1e-6 for normal results; results below FLT_MIN are flushed to 0.  Exposed so the tests
 * can check its accuracy directly. */
void kern_dnnl_exp(float *y, const float *x, int64_t n);

#endif
