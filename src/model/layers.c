/* layers.c: forward/backward pairs of the transformer's layers (see layers.h).
 * The heavy math is in kernels/; this file only arranges tensors (residual adds; bias sums go
 * through kern_colsum_round).
 * It does not own activation memory: model.c passes views of its one buffer. */
#include "config.h"

#include "model/layers.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "core/util.h"

/* ---- linear ----------------------------------------------------------------------------------- */

enum rz_status linear_init(struct linear *l, struct kern_ctx *ctx, int64_t rows, int64_t in,
                           int64_t out, bool bf16, bool bias, struct rz_err *err)
{
    memset(l, 0, sizeof *l);
    l->rows = rows;
    l->in = in;
    l->out = out;
    l->bf16 = bf16;
    struct kern_matmul_desc fwd = {.batch = 1, .m = rows, .n = out, .k = in, .trans_b = true,
                                   .alpha = 1.0f, .bias = bias, .bf16 = bf16};
    struct kern_matmul_desc bx = {.batch = 1, .m = rows, .n = in, .k = out, .alpha = 1.0f,
                                  .bf16 = bf16};
    struct kern_matmul_desc bw = {.batch = 1, .m = out, .n = in, .k = rows, .trans_a = true,
                                  .alpha = 1.0f, .accumulate = true, .bf16 = bf16};
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

void linear_forward(struct linear *l, float *y, const void *x, const void *w, const float *b)
{
    kern_matmul_run(l->fwd, y, x, w, b);
}

void linear_backward(struct linear *l, float *dx, float *dw, float *db, const float *dy,
                     kern_bf16 *dy_h, const void *x, const void *w)
{
    assert(dy != NULL ? !l->bf16 || dy_h != NULL : l->bf16 && db == NULL);
    const void *dy_mm = l->bf16 ? (const void *)dy_h : (const void *)dy;
    if (dy != NULL)
        kern_colsum_round(db, l->bf16 ? dy_h : NULL, dy, l->rows, l->out);
    if (dx != NULL)
        kern_matmul_run(l->bwd_x, dx, dy_mm, w, NULL);
    kern_matmul_run(l->bwd_w, dw, dy_mm, x, NULL);
}

/* ---- embedding -------------------------------------------------------------------------------- */

/* ---- dropout ---------------------------------------------------------------------------------- */

/* y = x * keep / (1 - p) over (B, T, C); the forward and the backward are the same map. */
static void dropout_map(float *y, const float *x, const struct dropout_site *s, int64_t B,
                        int64_t T, int64_t C)
{
    /* keep iff the element's 64 random bits are >= p * 2^64 */
    uint64_t below = (uint64_t)ldexp((double)s->p, 64);
    float scale = 1.0f / (1.0f - s->p);
    uint64_t key = rz_rand64(rz_rand64(s->seed, s->step), (uint64_t)(s->layer * 16 + s->site));
    for (int64_t b = 0; b < B; b++) {
        uint64_t sample = rz_rand64(key, s->first_sample + (uint64_t)b);
        for (int64_t i = 0; i < T * C; i++) {
            int64_t at = b * T * C + i;
            y[at] = rz_rand64(sample, (uint64_t)i) >= below ? x[at] * scale : 0.0f;
        }
    }
}

void dropout_forward(float *y, const float *x, const struct dropout_site *s, int64_t B,
                     int64_t T, int64_t C)
{
    dropout_map(y, x, s, B, T, C);
}

void dropout_backward(float *dx, const float *dy, const struct dropout_site *s, int64_t B,
                      int64_t T, int64_t C)
{
    dropout_map(dx, dy, s, B, T, C);
}

void embedding_forward(float *x, const int32_t *tokens, const float *wte, const float *wpe,
                       int64_t B, int64_t T, int64_t C)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            kern_add(x + (b * T + t) * C, wte + (int64_t)tokens[b * T + t] * C, wpe + t * C, C);
}

void embedding_backward(float *dwte, float *dwpe, const float *dx, const int32_t *tokens,
                        int64_t B, int64_t T, int64_t C)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            const float *g = dx + (b * T + t) * C;
            kern_acc(dwte + (int64_t)tokens[b * T + t] * C, g, C);
            kern_acc(dwpe + t * C, g, C);
        }
}
