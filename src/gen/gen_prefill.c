/* gen_prefill.c: a prompt in one batched forward pass (gen.h's gen_prefill), filling the KV
 * cache that gen_decode.c then extends one token at a time.
 *
 * The n prompt tokens go through each block as (n, C) rows, as the training forward runs a
 * sequence (model.c's block_forward, pre-LayerNorm GPT): LayerNorm, GELU and the linear layers
 * as the backend's (n, ...) kernels, which read each weight matrix once for all n rows instead
 * of once a token; the causal attention as the trainer's kern_attention over the n positions
 * (FlashAttention-style tiles on the oneDNN backend).  Each block's k and v rows are stored in
 * the cache as gen_feed would have stored them, so decoding continues from position n.  The
 * results equal the token-by-token path within fp32 rounding (the summation order of the
 * matmuls and the attention differs; tests/check_gen compares both).
 * The ops are planned for the prompt's length at each call (once per prompt, not per token) and
 * freed with their (n, F)-sized activations when it returns.
 * Deliberately not here: a chunk after position 0 (the training attention starts every sequence
 * at position 0: gen_prefill feeds such a chunk token by token instead), bf16, batches of
 * prompts. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gen/gen_internal.h"

/* The (n, ...) ops and activations of one prefill. */
struct prefill {
    int64_t n;
    struct kern_matmul *qkv, *proj, *fc, *fc2, *head;
    struct kern_layernorm *ln;
    struct kern_gelu *gelu;
    struct kern_attention *attn;
    float *mem;                       /* one allocation; the views below point into it */
    float *x, *h, *att, *tmp;         /* (n, C) */
    float *qkvr;                      /* (n, 3C) */
    float *fcr, *fcg;                 /* (n, F) */
    float *lse;                       /* (H, n) */
    float *mean, *var;                /* (n) */
};

static void prefill_free(struct prefill *p)
{
    kern_matmul_destroy(p->qkv);
    kern_matmul_destroy(p->proj);
    kern_matmul_destroy(p->fc);
    kern_matmul_destroy(p->fc2);
    kern_matmul_destroy(p->head);
    kern_layernorm_destroy(p->ln);
    kern_gelu_destroy(p->gelu);
    kern_attention_destroy(p->attn);
    free(p->mem);
}

/* Carve the views out of one allocation, each rounded up to 16 floats (64 bytes). */
static enum rz_status prefill_buffers(struct prefill *p, const struct model_dims *d,
                                      struct rz_err *err)
{
    int64_t n = p->n, C = d->d_model, F = d->d_ff, H = d->n_heads;
    float **view[] = {&p->x, &p->h, &p->att, &p->tmp, &p->qkvr, &p->fcr, &p->fcg, &p->lse,
                      &p->mean, &p->var};
    const int64_t size[] = {n * C, n * C, n * C, n * C, 3 * n * C, n * F, n * F, H * n, n, n};
    size_t total = 0;
    for (size_t i = 0; i < RZ_ARRAY_LEN(size); i++)
        total += ((size_t)size[i] + 15) / 16 * 16;
    if ((p->mem = rz_alloc_aligned(total * sizeof(float))) == NULL)
        return rz_fail(err, RZ_ENOMEM, "generate: cannot allocate the prefill of %lld prompt "
                       "tokens (%zu floats)", (long long)n, total);
    size_t off = 0;
    for (size_t i = 0; i < RZ_ARRAY_LEN(size); i++) {
        *view[i] = p->mem + off;
        off += ((size_t)size[i] + 15) / 16 * 16;
    }
    return RZ_OK;
}

/* Plan the ops for n rows; the head for head_rows of them (n, or 1: the last row only). */
static enum rz_status prefill_init(struct prefill *p, struct gen *g, int64_t n,
                                   int64_t head_rows, struct rz_err *err)
{
    const struct model_dims *d = &g->dims;
    int64_t C = d->d_model, F = d->d_ff, V = d->vocab, H = d->n_heads;
    *p = (struct prefill){.n = n};
    enum rz_status st = gen_plan_linear(&p->qkv, g->kern, n, C, 3 * C, true, err);
    if (st == RZ_OK) st = gen_plan_linear(&p->proj, g->kern, n, C, C, true, err);
    if (st == RZ_OK) st = gen_plan_linear(&p->fc, g->kern, n, C, F, true, err);
    if (st == RZ_OK) st = gen_plan_linear(&p->fc2, g->kern, n, F, C, true, err);
    if (st == RZ_OK && head_rows > 1)
        st = gen_plan_linear(&p->head, g->kern, head_rows, C, V, !d->no_head_bias, err);
    if (st == RZ_OK) st = kern_layernorm_create(&p->ln, g->kern, n, C, d->ln_eps, false, err);
    if (st == RZ_OK) st = kern_gelu_create(&p->gelu, g->kern, n, F, false, err);
    if (st == RZ_OK) st = kern_attention_create(&p->attn, g->kern, 1, n, H, C / H, 0, err);
    if (st == RZ_OK) st = prefill_buffers(p, d, err);
    return st;
}

/* Block l on the residual stream p->x (n, C) of positions 0..n-1: block_step's math on n rows,
 * its k and v rows stored in the cache. */
static void block_prefill(struct gen *g, struct prefill *p, const struct gen_layer *w, int64_t l)
{
    int64_t C = g->dims.d_model, n = p->n;
    kern_layernorm_forward(p->ln, p->h, p->mean, p->var, p->x, w->ln1_w, w->ln1_b);
    kern_matmul_run(p->qkv, p->qkvr, p->h, w->qkv_w, w->qkv_b);      /* (n, 3C): q | k | v */
    for (int64_t t = 0; t < n; t++)
        gen_cache_store(g, l, t, p->qkvr + t * 3 * C);
    kern_attention_forward(p->attn, p->att, p->lse, p->qkvr);         /* (n, C) */
    kern_matmul_run(p->proj, p->tmp, p->att, w->proj_w, w->proj_b);
    kern_acc(p->x, p->tmp, n * C);                                     /* x += attn */
    kern_layernorm_forward(p->ln, p->h, p->mean, p->var, p->x, w->ln2_w, w->ln2_b);
    kern_matmul_run(p->fc, p->fcr, p->h, w->fc_w, w->fc_b);           /* (n, F) */
    kern_gelu_forward(p->gelu, p->fcg, p->fcr);
    kern_matmul_run(p->fc2, p->tmp, p->fcg, w->fc2_w, w->fc2_b);
    kern_acc(p->x, p->tmp, n * C);                                     /* x += mlp */
}

/* The final LayerNorm and the head: every row's logits into all (n, V) when it is not NULL,
 * and the last row's into g->logits. */
static void prefill_head(struct gen *g, struct prefill *p, float *all)
{
    int64_t C = g->dims.d_model, V = g->dims.vocab, n = p->n;
    if (all == NULL) {
        float mean, var;
        kern_layernorm_forward(g->ln, g->h, &mean, &var, p->x + (n - 1) * C, g->lnf_w, g->lnf_b);
        kern_matmul_run(g->mm_head, g->logits, g->h, g->head_w, g->head_b); /* (V) */
        return;
    }
    kern_layernorm_forward(p->ln, p->h, p->mean, p->var, p->x, g->lnf_w, g->lnf_b);
    kern_matmul_run(p->head, all, p->h, g->head_w, g->head_b);             /* (n, V) */
    memcpy(g->logits, all + (n - 1) * V, (size_t)V * sizeof *all);
}

/* Token by token through gen_feed: a chunk after position 0, or a single token. */
static enum rz_status feed_each(struct gen *g, const int32_t *ids, int64_t n, float *logits,
                                struct rz_err *err)
{
    int64_t V = g->dims.vocab;
    for (int64_t i = 0; i < n; i++) {
        enum rz_status st = gen_feed(g, ids[i], err);
        if (st != RZ_OK)
            return st;
        if (logits != NULL)
            memcpy(logits + i * V, g->logits, (size_t)V * sizeof *logits);
    }
    return RZ_OK;
}

enum rz_status gen_prefill(struct gen *g, const int32_t *ids, int64_t n, float *logits,
                           struct rz_err *err)
{
    const struct model_dims *d = &g->dims;
    int64_t C = d->d_model;
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= d->vocab)
            return rz_fail(err, RZ_EDATA, "generate: token id %d at position %lld is outside "
                           "the vocabulary [0, %lld)", (int)ids[i], (long long)(g->pos + i),
                           (long long)d->vocab);
    if (n > d->seq_len - g->pos)
        return rz_fail(err, RZ_EDATA, "generate: %lld tokens from position %lld do not fit the "
                       "context (model.seq_len %lld positions)", (long long)n,
                       (long long)g->pos, (long long)d->seq_len);
    if (n < 2 || g->pos != 0)
        return feed_each(g, ids, n, logits, err);
    struct prefill p;
    enum rz_status st = prefill_init(&p, g, n, logits != NULL ? n : 1, err);
    if (st == RZ_OK) {
        for (int64_t t = 0; t < n; t++)
            kern_add(p.x + t * C, g->wte + (int64_t)ids[t] * C, g->wpe + t * C, C); /* (n, C) */
        for (int64_t l = 0; l < d->n_layers; l++)
            block_prefill(g, &p, &g->layers[l], l);
        prefill_head(g, &p, logits);
        g->pos = n;
    }
    prefill_free(&p);
    return st;
}
