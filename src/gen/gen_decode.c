/* gen_decode.c: the decoder's forward, one token at a time with a KV cache (gen.h).
 *
 * For the token at position t, each block computes its q, k and v (1 row), appends k and v to
 * the cache at row t, and attends over the cache's rows 0..t: O(t C) per block, so a token costs
 * O(T) and not the O(T^2) of running the whole prefix again.  The math is the training
 * forward's (model.c's block_forward, pre-LayerNorm GPT): the same LayerNorm (its eps) and exact
 * GELU kernels on the trainer's backend, the 1-row linear layers as that backend's matmul
 * (y = x W^T + b: on the oneDNN backend our GEMV, kern_simd.c, which streams each weight matrix
 * once: a token is bound by reading the weights), the attention's softmax(q k^T / sqrt(D)) v
 * in plain loops (one query row; the training kernel works on whole (T, T) tiles).  fp32
 * throughout; no dropout.  A prompt's positions go in one batched pass instead (gen_prefill.c).
 * Deliberately not here: batches of sequences, a sliding window past model.seq_len, bf16. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gen/gen_internal.h"

enum rz_status gen_plan_linear(struct kern_matmul **op, struct kern_ctx *ctx, int64_t rows,
                               int64_t in, int64_t out, bool bias, struct rz_err *err)
{
    struct kern_matmul_desc d = {.batch = 1, .m = rows, .n = out, .k = in, .trans_b = true,
                                 .alpha = 1.0f, .bias = bias};
    return kern_matmul_create(op, ctx, &d, err);
}

static float *fbuf(size_t n)
{
    return rz_alloc_aligned((n > 0 ? n : 1) * sizeof(float));
}

enum rz_status gen_decode_init(struct gen *g, struct rz_err *err)
{
    const struct model_dims *d = &g->dims;
    int64_t C = d->d_model, F = d->d_ff, V = d->vocab, T = d->seq_len, L = d->n_layers;
    enum rz_status st = gen_plan_linear(&g->mm_qkv, g->kern, 1, C, 3 * C, true, err);
    if (st == RZ_OK) st = gen_plan_linear(&g->mm_proj, g->kern, 1, C, C, true, err);
    if (st == RZ_OK) st = gen_plan_linear(&g->mm_fc, g->kern, 1, C, F, true, err);
    if (st == RZ_OK) st = gen_plan_linear(&g->mm_fc2, g->kern, 1, F, C, true, err);
    if (st == RZ_OK) st = gen_plan_linear(&g->mm_head, g->kern, 1, C, V, !d->no_head_bias, err);
    if (st == RZ_OK) st = kern_layernorm_create(&g->ln, g->kern, 1, C, d->ln_eps, false, err);
    if (st == RZ_OK) st = kern_gelu_create(&g->gelu, g->kern, 1, F, false, err);
    if (st != RZ_OK)
        return st;
    size_t cache = (size_t)(L * T * C);
    g->kc = fbuf(cache);
    g->vc = fbuf(cache);
    g->x = fbuf((size_t)C);
    g->h = fbuf((size_t)C);
    g->qkv = fbuf((size_t)(3 * C));
    g->att = fbuf((size_t)C);
    g->tmp = fbuf((size_t)C);
    g->fc = fbuf((size_t)F);
    g->fcg = fbuf((size_t)F);
    g->logits = fbuf((size_t)V);
    g->p = fbuf((size_t)T);
    if (g->kc == NULL || g->vc == NULL || g->x == NULL || g->h == NULL || g->qkv == NULL ||
        g->att == NULL || g->tmp == NULL || g->fc == NULL || g->fcg == NULL ||
        g->logits == NULL || g->p == NULL)
        return rz_fail(err, RZ_ENOMEM, "generate: cannot allocate the KV cache (2 x %zu floats)",
                       cache);
    gen_reset(g);
    return RZ_OK;
}

void gen_decode_free(struct gen *g)
{
    kern_matmul_destroy(g->mm_qkv);
    kern_matmul_destroy(g->mm_proj);
    kern_matmul_destroy(g->mm_fc);
    kern_matmul_destroy(g->mm_fc2);
    kern_matmul_destroy(g->mm_head);
    kern_layernorm_destroy(g->ln);
    kern_gelu_destroy(g->gelu);
    free(g->kc);
    free(g->vc);
    free(g->x);
    free(g->h);
    free(g->qkv);
    free(g->att);
    free(g->tmp);
    free(g->fc);
    free(g->fcg);
    free(g->logits);
    free(g->p);
}

void gen_reset(struct gen *g)
{
    g->pos = 0;
}

int64_t gen_pos(const struct gen *g)
{
    return g->pos;
}

const float *gen_logits(const struct gen *g)
{
    return g->logits;
}

/* q . k over D floats in 16 independent partial sums: a plain loop's one running sum is a
 * dependency chain the compiler may not reorder (no -ffast-math), so it would not vectorize. */
static float dot(const float *restrict q, const float *restrict k, int64_t D)
{
    enum { LANES = 16 };
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= D; i += LANES)
        for (int j = 0; j < LANES; j++)
            acc[j] += q[i + j] * k[i + j];
    float s = 0.0f;
    for (; i < D; i++)
        s += q[i] * k[i];
    for (int j = 0; j < LANES; j++)
        s += acc[j];
    return s;
}

/* y (D) += w x, in blocks of 16 the compiler turns into vector instructions at -O2. */
static void axpy(float *restrict y, float w, const float *restrict x, int64_t D)
{
    enum { LANES = 16 };
    int64_t i = 0;
    for (; i + LANES <= D; i += LANES)
        for (int j = 0; j < LANES; j++)
            y[i + j] += w * x[i + j];
    for (; i < D; i++)
        y[i] += w * x[i];
}

/* y (D) = softmax(q . k_j / sqrt(D), j = 0..t) v over the cached rows of one head: k and v
 * (T, D) are the head's cache. */
static void attend_head(float *restrict y, float *restrict p, const float *restrict q,
                        const float *restrict k, const float *restrict v, int64_t t, int64_t D)
{
    float scale = 1.0f / sqrtf((float)D), mx = -INFINITY;
    for (int64_t j = 0; j <= t; j++) {
        p[j] = dot(q, k + j * D, D) * scale;
        mx = p[j] > mx ? p[j] : mx;
    }
    double sum = 0.0;
    for (int64_t j = 0; j <= t; j++) {
        p[j] = expf(p[j] - mx);
        sum += (double)p[j];
    }
    float inv = (float)(1.0 / sum);
    memset(y, 0, (size_t)D * sizeof *y);
    for (int64_t j = 0; j <= t; j++)
        axpy(y, p[j] * inv, v + j * D, D);
}

/* The cache of layer l, head h: (T, D) keys or values, contiguous, so that one head's rows
 * stream through memory (the cache is read once per token: decoding is memory bound). */
static float *cache_at(const struct gen *g, float *cache, int64_t l, int64_t h)
{
    int64_t H = g->dims.n_heads, T = g->dims.seq_len, D = g->dims.d_model / H;
    return cache + (l * H + h) * T * D;
}

void gen_cache_store(struct gen *g, int64_t l, int64_t t, const float *qkv)
{
    int64_t C = g->dims.d_model, H = g->dims.n_heads, D = C / H;
    for (int64_t h = 0; h < H; h++) {
        memcpy(cache_at(g, g->kc, l, h) + t * D, qkv + C + h * D, (size_t)D * sizeof(float));
        memcpy(cache_at(g, g->vc, l, h) + t * D, qkv + 2 * C + h * D, (size_t)D * sizeof(float));
    }
}

/* att (C) from this position's q (in g->qkv) and the cache's rows 0..t of layer l. */
static void attention(struct gen *g, int64_t l, int64_t t)
{
    int64_t H = g->dims.n_heads, D = g->dims.d_model / H;
    for (int64_t h = 0; h < H; h++)
        attend_head(g->att + h * D, g->p, g->qkv + h * D, cache_at(g, g->kc, l, h),
                    cache_at(g, g->vc, l, h), t, D);
}

/* Block l on the residual stream g->x (C) of the token at position t. */
static void block_step(struct gen *g, const struct gen_layer *p, int64_t l, int64_t t)
{
    int64_t C = g->dims.d_model;
    float mean, var;
    kern_layernorm_forward(g->ln, g->h, &mean, &var, g->x, p->ln1_w, p->ln1_b);
    kern_matmul_run(g->mm_qkv, g->qkv, g->h, p->qkv_w, p->qkv_b);        /* q | k | v */
    gen_cache_store(g, l, t, g->qkv);
    attention(g, l, t);
    kern_matmul_run(g->mm_proj, g->tmp, g->att, p->proj_w, p->proj_b);
    kern_acc(g->x, g->tmp, C);                                           /* x += attn */
    kern_layernorm_forward(g->ln, g->h, &mean, &var, g->x, p->ln2_w, p->ln2_b);
    kern_matmul_run(g->mm_fc, g->fc, g->h, p->fc_w, p->fc_b);
    kern_gelu_forward(g->gelu, g->fcg, g->fc);
    kern_matmul_run(g->mm_fc2, g->tmp, g->fcg, p->fc2_w, p->fc2_b);
    kern_acc(g->x, g->tmp, C);                                           /* x += mlp */
}

enum rz_status gen_feed(struct gen *g, int32_t token, struct rz_err *err)
{
    const struct model_dims *d = &g->dims;
    int64_t C = d->d_model, t = g->pos;
    if (token < 0 || token >= d->vocab)
        return rz_fail(err, RZ_EDATA, "generate: token id %d at position %lld is outside the "
                       "vocabulary [0, %lld)", (int)token, (long long)t, (long long)d->vocab);
    if (t >= d->seq_len)
        return rz_fail(err, RZ_EDATA, "generate: the context is full (model.seq_len %lld "
                       "positions)", (long long)d->seq_len);
    kern_add(g->x, g->wte + (int64_t)token * C, g->wpe + t * C, C);     /* (C) */
    for (int64_t l = 0; l < d->n_layers; l++)
        block_step(g, &g->layers[l], l, t);
    float mean, var;
    kern_layernorm_forward(g->ln, g->h, &mean, &var, g->x, g->lnf_w, g->lnf_b);
    kern_matmul_run(g->mm_head, g->logits, g->h, g->head_w, g->head_b); /* (V) */
    g->pos = t + 1;
    return RZ_OK;
}
