/* layers.c: forward/backward pairs of the transformer's layers (see layers.h).
 * The heavy math is in kernels/; this file only arranges tensors (head permutes, residual adds,
 * bias sums).  It does not own activation memory: model.c passes views of its one buffer. */
#include "config.h"

#include "model/layers.h"

#include <math.h>
#include <string.h>

#include "core/util.h"

/* ---- elementwise ---------------------------------------------------------------------------- */

RZ_SIMD_CLONES void vec_add(float *y, const float *a, const float *b, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
}

RZ_SIMD_CLONES void vec_acc(float *y, const float *x, int64_t n)
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        y[i] += x[i];
}

/* db (cols) += column sums of dy (rows, cols); row-order accumulation keeps it deterministic. */
RZ_SIMD_CLONES static void bias_grad(float *db, const float *dy, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *row = dy + r * cols;
#pragma omp simd
        for (int64_t j = 0; j < cols; j++)
            db[j] += row[j];
    }
}

/* ---- linear ----------------------------------------------------------------------------------- */

enum rz_status linear_init(struct linear *l, struct kern_ctx *ctx, int64_t rows, int64_t in,
                           int64_t out, struct rz_err *err)
{
    memset(l, 0, sizeof *l);
    l->rows = rows;
    l->in = in;
    l->out = out;
    struct kern_matmul_desc fwd = {.batch = 1, .m = rows, .n = out, .k = in, .trans_b = true,
                                   .alpha = 1.0f, .bias = true};
    struct kern_matmul_desc bx = {.batch = 1, .m = rows, .n = in, .k = out, .alpha = 1.0f};
    struct kern_matmul_desc bw = {.batch = 1, .m = out, .n = in, .k = rows, .trans_a = true,
                                  .alpha = 1.0f, .accumulate = true};
    enum rz_status st = kern_matmul_create(&l->fwd, ctx, &fwd, err);
    if (st == RZ_OK)
        st = kern_matmul_create(&l->bwd_x, ctx, &bx, err);
    if (st == RZ_OK)
        st = kern_matmul_create(&l->bwd_w, ctx, &bw, err);
    if (st != RZ_OK)
        linear_free(l);
    return st;
}

void linear_free(struct linear *l)
{
    kern_matmul_destroy(l->fwd);
    kern_matmul_destroy(l->bwd_x);
    kern_matmul_destroy(l->bwd_w);
    l->fwd = l->bwd_x = l->bwd_w = NULL;
}

void linear_forward(struct linear *l, float *y, const float *x, const float *w, const float *b)
{
    kern_matmul_run(l->fwd, y, x, w, b);
}

void linear_backward(struct linear *l, float *dx, float *dw, float *db, const float *dy,
                     const float *x, const float *w)
{
    if (dx != NULL)
        kern_matmul_run(l->bwd_x, dx, dy, w, NULL);
    kern_matmul_run(l->bwd_w, dw, dy, x, NULL);
    bias_grad(db, dy, l->rows, l->out);
}

/* ---- attention -------------------------------------------------------------------------------- */

enum rz_status attention_init(struct attention *a, struct kern_ctx *ctx, int64_t B, int64_t T,
                              int64_t C, int64_t H, struct rz_err *err)
{
    memset(a, 0, sizeof *a);
    a->B = B;
    a->T = T;
    a->C = C;
    a->H = H;
    a->D = C / H;
    int64_t bh = B * H, D = a->D;
    float scale = 1.0f / sqrtf((float)D); /* Vaswani et al. 2017, eq. 1 */
    struct kern_matmul_desc d_scores = {.batch = bh, .m = T, .n = T, .k = D, .trans_b = true,
                                        .alpha = scale};
    struct kern_matmul_desc d_mix = {.batch = bh, .m = T, .n = D, .k = T, .alpha = 1.0f};
    struct kern_matmul_desc d_datt = {.batch = bh, .m = T, .n = T, .k = D, .trans_b = true,
                                      .alpha = 1.0f};
    struct kern_matmul_desc d_dv = {.batch = bh, .m = T, .n = D, .k = T, .trans_a = true,
                                    .alpha = 1.0f};
    struct kern_matmul_desc d_dq = {.batch = bh, .m = T, .n = D, .k = T, .alpha = scale};
    struct kern_matmul_desc d_dk = {.batch = bh, .m = T, .n = D, .k = T, .trans_a = true,
                                    .alpha = scale};
    enum rz_status st = kern_matmul_create(&a->scores, ctx, &d_scores, err);
    if (st == RZ_OK)
        st = kern_matmul_create(&a->mix, ctx, &d_mix, err);
    if (st == RZ_OK)
        st = kern_matmul_create(&a->d_att, ctx, &d_datt, err);
    if (st == RZ_OK)
        st = kern_matmul_create(&a->d_v, ctx, &d_dv, err);
    if (st == RZ_OK)
        st = kern_matmul_create(&a->d_q, ctx, &d_dq, err);
    if (st == RZ_OK)
        st = kern_matmul_create(&a->d_k, ctx, &d_dk, err);
    if (st == RZ_OK)
        st = kern_softmax_create(&a->softmax, ctx, bh * T, T, true, err);
    if (st != RZ_OK)
        attention_free(a);
    return st;
}

void attention_free(struct attention *a)
{
    kern_matmul_destroy(a->scores);
    kern_matmul_destroy(a->mix);
    kern_matmul_destroy(a->d_att);
    kern_matmul_destroy(a->d_v);
    kern_matmul_destroy(a->d_q);
    kern_matmul_destroy(a->d_k);
    kern_softmax_destroy(a->softmax);
    memset(a, 0, sizeof *a);
}

/* Split qkv (B, T, 3C) into q, k, v (B, H, T, D), or (inverse) gather them back. */
static void heads_split(const struct attention *a, float *q, float *k, float *v, const float *qkv)
{
    int64_t T = a->T, C = a->C, H = a->H, D = a->D;
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t t = 0; t < T; t++) {
            const float *row = qkv + (b * T + t) * 3 * C;
            for (int64_t h = 0; h < H; h++) {
                size_t dst = (size_t)(((b * H + h) * T + t) * D);
                memcpy(q + dst, row + h * D, (size_t)D * sizeof(float));
                memcpy(k + dst, row + C + h * D, (size_t)D * sizeof(float));
                memcpy(v + dst, row + 2 * C + h * D, (size_t)D * sizeof(float));
            }
        }
}

static void heads_join(const struct attention *a, float *qkv, const float *q, const float *k,
                       const float *v)
{
    int64_t T = a->T, C = a->C, H = a->H, D = a->D;
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t t = 0; t < T; t++) {
            float *row = qkv + (b * T + t) * 3 * C;
            for (int64_t h = 0; h < H; h++) {
                size_t src = (size_t)(((b * H + h) * T + t) * D);
                memcpy(row + h * D, q + src, (size_t)D * sizeof(float));
                memcpy(row + C + h * D, k + src, (size_t)D * sizeof(float));
                memcpy(row + 2 * C + h * D, v + src, (size_t)D * sizeof(float));
            }
        }
}

/* (B, H, T, D) <-> (B, T, C) for one tensor. */
static void heads_merge(const struct attention *a, float *y, const float *heads)
{
    int64_t T = a->T, C = a->C, H = a->H, D = a->D;
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++)
                memcpy(y + (b * T + t) * C + h * D, heads + ((b * H + h) * T + t) * D,
                       (size_t)D * sizeof(float));
}

static void heads_unmerge(const struct attention *a, float *heads, const float *y)
{
    int64_t T = a->T, C = a->C, H = a->H, D = a->D;
    for (int64_t b = 0; b < a->B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < T; t++)
                memcpy(heads + ((b * H + h) * T + t) * D, y + (b * T + t) * C + h * D,
                       (size_t)D * sizeof(float));
}

void attention_forward(struct attention *a, float *y, struct attention_saved *s,
                       struct attention_scratch *w, const float *qkv)
{
    heads_split(a, s->q, s->k, s->v, qkv);
    kern_matmul_run(a->scores, w->scores, s->q, s->k, NULL); /* S = Q K^T / sqrt(D) */
    kern_softmax_forward(a->softmax, s->att, w->scores);      /* P = causal softmax(S) */
    kern_matmul_run(a->mix, w->heads, s->att, s->v, NULL);    /* O = P V */
    heads_merge(a, y, w->heads);
}

void attention_backward(struct attention *a, float *dqkv, const float *dy,
                        const struct attention_saved *s, struct attention_scratch *w)
{
    heads_unmerge(a, w->heads, dy);                             /* dO */
    kern_matmul_run(a->d_att, w->scores, w->heads, s->v, NULL); /* dP = dO V^T */
    kern_matmul_run(a->d_v, w->dv, s->att, w->heads, NULL);     /* dV = P^T dO */
    kern_softmax_backward(a->softmax, w->d_scores, w->scores, s->att);
    kern_matmul_run(a->d_q, w->dq, w->d_scores, s->k, NULL);    /* dQ = dS K / sqrt(D) */
    kern_matmul_run(a->d_k, w->dk, w->d_scores, s->q, NULL);    /* dK = dS^T Q / sqrt(D) */
    heads_join(a, dqkv, w->dq, w->dk, w->dv);
}

/* ---- embedding -------------------------------------------------------------------------------- */

void embedding_forward(float *x, const int32_t *tokens, const float *wte, const float *wpe,
                       int64_t B, int64_t T, int64_t C)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            vec_add(x + (b * T + t) * C, wte + (int64_t)tokens[b * T + t] * C, wpe + t * C, C);
}

void embedding_backward(float *dwte, float *dwpe, const float *dx, const int32_t *tokens,
                        int64_t B, int64_t T, int64_t C)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            const float *g = dx + (b * T + t) * C;
            vec_acc(dwte + (int64_t)tokens[b * T + t] * C, g, C);
            vec_acc(dwpe + t * C, g, C);
        }
}
