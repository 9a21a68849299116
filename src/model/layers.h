/* layers.h: the model's layers as forward/backward pairs (internal to model/, exposed for the
 * finite-difference tests).  Each layer holds only its planned kernel ops; tensors are passed in,
 * arguments ordered outputs, inputs, saved state.  Backward functions ADD parameter gradients and
 * OVERWRITE input gradients unless the comment says otherwise.
 * Sizes: N = B*T rows, C model width, F feed-forward width, V vocab.  The attention core is one
 * kernel op (kern_attention, kernels.h), called by model.c directly. */
#ifndef RZ_MODEL_LAYERS_H
#define RZ_MODEL_LAYERS_H

#include <stdint.h>

#include "core/status.h"
#include "kernels/kernels.h"

/* ---- linear: y (N, out) = x (N, in) @ w^T + b,  w (out, in), b (out) ----------------------
 * The matmuls' operands x, w and the gradient are float, or kern_bf16 for a layer made with
 * bf16 (the caller rounds x and w with kern_round_bf16); y, b, dx, dw, db and dy are always
 * float. */
struct linear {
    int64_t rows, in, out;
    bool bf16;
    struct kern_matmul *fwd;   /* y = x w^T + b */
    struct kern_matmul *bwd_x; /* dx = dy w */
    struct kern_matmul *bwd_w; /* dw += dy^T x */
};
/* bias false: y = x @ w^T, forward's b must be NULL and backward's db NULL. */
enum rz_status linear_init(struct linear *l, struct kern_ctx *ctx, int64_t rows, int64_t in,
                           int64_t out, bool bf16, bool bias, struct rz_err *err);
void linear_free(struct linear *l);
void linear_forward(struct linear *l, float *y, const void *x, const void *w, const float *b);
/* From dy (N, out): db += its column sums, and a bf16 layer rounds it into dy_h (N, out) for
 * its matmuls, both in one pass (kern_colsum_round).  A layer whose gradient was made ready
 * elsewhere gets db NULL and, in bf16, dy NULL, and reads dy_h as it is (the head: the
 * cross-entropy rounds its gradient and sums its bias gradient in its own pass; the MLP's fc:
 * the GELU's backward does).  dx may be NULL (not needed); dw and db accumulate; dy_h is unused
 * by an fp32 layer. */
void linear_backward(struct linear *l, float *dx, float *dw, float *db, const float *dy,
                     kern_bf16 *dy_h, const void *x, const void *w);

/* ---- token + position embedding: x (B, T, C) = wte[tokens] + wpe[t] ------------------------ */
void embedding_forward(float *x, const int32_t *tokens, const float *wte, const float *wpe,
                       int64_t B, int64_t T, int64_t C);
/* dwte, dwpe accumulate. */
void embedding_backward(float *dwte, float *dwpe, const float *dx, const int32_t *tokens,
                        int64_t B, int64_t T, int64_t C);

/* ---- inverted dropout (Srivastava et al. 2014): y = x * keep / (1 - p) -----------------------
 * keep is 0 with probability p, a pure function of (seed, step, global sample index, layer, site)
 * and the element's (t, c): the mask needs no storage, is the same in a recomputed forward and
 * in the backward, and the same for a sample at any batch position, rank or world size.
 * Rows of x are (B, T) with row b*T + t belonging to global sample first_sample + b. */
struct dropout_site {
    float p;                  /* drop probability, [0, 1) */
    uint64_t seed, step, first_sample;
    int layer, site;          /* which mask: a block (or the embeddings) and a place in it */
};
/* y (B, T, C) = dropout(x); y may alias x. */
void dropout_forward(float *y, const float *x, const struct dropout_site *s, int64_t B,
                     int64_t T, int64_t C);
/* dx (B, T, C) = dy through the same mask and scale; dx may alias dy. */
void dropout_backward(float *dx, const float *dy, const struct dropout_site *s, int64_t B,
                      int64_t T, int64_t C);


#endif
