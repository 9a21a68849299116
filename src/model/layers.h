/* layers.h: the model's layers as forward/backward pairs (internal to model/, exposed for the
 * finite-difference tests).  Each layer holds only its planned kernel ops; tensors are passed in,
 * arguments ordered outputs, inputs, saved state.  Backward functions ADD parameter gradients and
 * OVERWRITE input gradients unless the comment says otherwise.
 * Sizes: N = B*T rows, C model width, F feed-forward width, V vocab, H heads, D = C/H. */
#ifndef RZ_MODEL_LAYERS_H
#define RZ_MODEL_LAYERS_H

#include <stdint.h>

#include "core/status.h"
#include "kernels/kernels.h"

/* ---- linear: y (N, out) = x (N, in) @ w^T + b,  w (out, in), b (out) ---------------------- */
struct linear {
    int64_t rows, in, out;
    struct kern_matmul *fwd;   /* y = x w^T + b */
    struct kern_matmul *bwd_x; /* dx = dy w */
    struct kern_matmul *bwd_w; /* dw += dy^T x */
};
enum rz_status linear_init(struct linear *l, struct kern_ctx *ctx, int64_t rows, int64_t in,
                           int64_t out, struct rz_err *err);
void linear_free(struct linear *l);
void linear_forward(struct linear *l, float *y, const float *x, const float *w, const float *b);
/* dx may be NULL (not needed); dw, db accumulate. */
void linear_backward(struct linear *l, float *dx, float *dw, float *db, const float *dy,
                     const float *x, const float *w);

/* ---- causal multi-head self-attention core (no projections) -------------------------------
 * qkv (N, 3C) -> y (N, C); saves q, k, v (B, H, T, D) and the attention probabilities
 * att (B, H, T, T).  Scratch: scores (B, H, T, T) and heads (B, H, T, D). */
struct attention {
    int64_t B, T, C, H, D;
    struct kern_matmul *scores;   /* S = scale Q K^T        (BH: T x D @ D x T) */
    struct kern_matmul *mix;      /* O = P V                (BH: T x T @ T x D) */
    struct kern_matmul *d_att;    /* dP = dO V^T */
    struct kern_matmul *d_v;      /* dV = P^T dO */
    struct kern_matmul *d_q;      /* dQ = scale dS K */
    struct kern_matmul *d_k;      /* dK = scale dS^T Q */
    struct kern_softmax *softmax; /* causal, rows BHT x T */
};
struct attention_saved {
    float *q, *k, *v;  /* (B, H, T, D) each */
    float *att;        /* (B, H, T, T) probabilities */
};
/* d_scores may alias scores, and dq may alias heads: each is dead before its partner is
 * written (attention_backward relies on in-place softmax backward, kernels.h). */
struct attention_scratch {
    float *scores;     /* (B, H, T, T) */
    float *d_scores;   /* (B, H, T, T) */
    float *heads;      /* (B, H, T, D) */
    float *dq, *dk, *dv; /* (B, H, T, D) each */
};
enum rz_status attention_init(struct attention *a, struct kern_ctx *ctx, int64_t B, int64_t T,
                              int64_t C, int64_t H, struct rz_err *err);
void attention_free(struct attention *a);
void attention_forward(struct attention *a, float *y, struct attention_saved *s,
                       struct attention_scratch *w, const float *qkv);
/* dqkv (N, 3C) overwritten from dy (N, C). */
void attention_backward(struct attention *a, float *dqkv, const float *dy,
                        const struct attention_saved *s, struct attention_scratch *w);

/* ---- token + position embedding: x (B, T, C) = wte[tokens] + wpe[t] ------------------------ */
void embedding_forward(float *x, const int32_t *tokens, const float *wte, const float *wpe,
                       int64_t B, int64_t T, int64_t C);
/* dwte, dwpe accumulate. */
void embedding_backward(float *dwte, float *dwpe, const float *dx, const int32_t *tokens,
                        int64_t B, int64_t T, int64_t C);

/* ---- small elementwise helpers -------------------------------------------------------------- */
void vec_add(float *y, const float *a, const float *b, int64_t n);   /* y = a + b */
void vec_acc(float *y, const float *x, int64_t n);                   /* y += x */

#endif
