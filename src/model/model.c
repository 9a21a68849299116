/* model.c: the transformer LM (see model.h): its lifecycle (the one parameter / gradient /
 * activation buffers, laid out by model_layout.c), the gradient segments' hand-over to
 * communication (ZeRO-2), activation recomputation by block, dropout, and the forward and
 * backward passes, which read like the math, one layer call per line.  Mixed precision is bf16 matmul operands only (fp32 master weights, sums, LayerNorm,
 * attention, loss and optimizer); the rounding is deterministic, so resume stays bit-exact in
 * either precision. */
#include "config.h"

#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/util.h"
#include "model/layers.h"
#include "model/model_internal.h"

/* ---- gradient segments in backward, parameters in forward ------------------------------------- */

/* Backward is about to write segment s's gradients.  With segment_grads: wait until its buffer
 * is no longer being sent, zero it and point the gradient views at it. */
static void seg_begin(struct model *m, size_t s)
{
    const struct grad_seg *g = &m->seg[s];
    if (!m->dims.segment_grads)
        return;
    if (m->hooks.grad_reuse != NULL)
        m->hooks.grad_reuse(m->hooks.user, g->buf, g->hi - g->lo);
    memset(g->buf, 0, (g->hi - g->lo) * sizeof(float));
    mdl_bind_range(&m->g, m->gview, m, g->first, g->count, g->buf, g->lo);
}

/* Segment s's gradients are final for this micro-step. */
static void seg_ready(struct model *m, size_t s)
{
    const struct grad_seg *g = &m->seg[s];
    if (m->hooks.grad_ready != NULL)
        m->hooks.grad_ready(m->hooks.user, g->lo, g->hi - g->lo,
                            m->dims.segment_grads ? g->buf : m->grads + g->lo);
}

/* A progress point for communication in flight (model.h). */
static void progress(struct model *m)
{
    if (m->hooks.progress != NULL)
        m->hooks.progress(m->hooks.user);
}

/* Forward is about to read segment s's parameters: wait for them (ZeRO's gather) and, in bf16
 * mode, round them to the copy the matmuls read (elementwise, so segment by segment gives the
 * same bits as the whole buffer at once). */
static void seg_needed(struct model *m, size_t s)
{
    size_t lo = m->seg[s].lo, n = m->seg[s].hi - lo;
    if (m->hooks.params_needed != NULL)
        m->hooks.params_needed(m->hooks.user, lo, n);
    if (m->dims.bf16)
        kern_round_bf16(m->params_h + lo, m->params + lo, (int64_t)n);
}

/* ---- lifecycle --------------------------------------------------------------------------------- */

static enum rz_status check_dims(const struct model_dims *d, struct rz_err *err)
{
    if (d->vocab < 2 || d->d_model < 1 || d->n_heads < 1 || d->n_layers < 1 || d->d_ff < 1 ||
        d->seq_len < 1 || d->batch < 1)
        return rz_fail(err, RZ_ECONFIG, "model: every size must be positive (vocab >= 2)");
    if (d->d_model % d->n_heads != 0)
        return rz_fail(err, RZ_ECONFIG, "model: d_model %lld is not divisible by n_heads %lld",
                       (long long)d->d_model, (long long)d->n_heads);
    if (!(d->dropout >= 0.0f && d->dropout < 1.0f))
        return rz_fail(err, RZ_ECONFIG, "model: dropout %g is not in [0, 1)", (double)d->dropout);
    if (d->recompute != MODEL_RECOMPUTE_NONE && d->recompute != MODEL_RECOMPUTE_BLOCK)
        return rz_fail(err, RZ_ECONFIG, "model: unknown recompute mode %d", d->recompute);
    return RZ_OK;
}

static enum rz_status plan_ops(struct model *m, struct kern_ctx *ctx, struct rz_err *err)
{
    const struct model_dims *d = &m->dims;
    int64_t N = d->batch * d->seq_len, C = d->d_model, F = d->d_ff, V = d->vocab;
    bool h = d->bf16;
    enum rz_status st = linear_init(&m->qkv, ctx, N, C, 3 * C, h, true, err);
    if (st == RZ_OK) st = linear_init(&m->proj, ctx, N, C, C, h, true, err);
    if (st == RZ_OK) st = linear_init(&m->fc, ctx, N, C, F, h, true, err);
    if (st == RZ_OK) st = linear_init(&m->fc2, ctx, N, F, C, h, true, err);
    if (st == RZ_OK) st = linear_init(&m->head, ctx, N, C, V, h, !d->no_head_bias,
                                             err);
    if (st == RZ_OK) st = kern_attention_create(&m->attn, ctx, d->batch, d->seq_len, d->n_heads,
                                                C / d->n_heads, 0, err);
    if (st == RZ_OK) st = kern_layernorm_create(&m->ln, ctx, N, C, d->ln_eps, h, err);
    if (st == RZ_OK) st = kern_gelu_create(&m->gelu, ctx, N, F, h, err);
    if (st == RZ_OK) st = kern_xent_create(&m->xent, ctx, N, V, h, err);
    return st;
}

enum rz_status model_create(struct model **out, const struct model_dims *dims,
                            struct kern_ctx *ctx, struct rz_err *err)
{
    *out = NULL;
    enum rz_status st = check_dims(dims, err);
    if (st != RZ_OK)
        return st;
    struct model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return rz_fail(err, RZ_ENOMEM, "model: out of memory");
    m->dims = *dims;
    int64_t N = dims->batch * dims->seq_len;
    m->n_tensors = mdl_table_count(dims);
    m->tensors = calloc(m->n_tensors, sizeof *m->tensors);
    struct layer_params *pl = calloc((size_t)dims->n_layers, sizeof *pl);
    struct layer_params *gl = calloc((size_t)dims->n_layers, sizeof *gl);
    m->a.blocks = calloc((size_t)dims->n_layers, sizeof *m->a.blocks);
    m->inputs = calloc((size_t)N, sizeof *m->inputs);
    m->targets = calloc((size_t)N, sizeof *m->targets);
    if (m->tensors == NULL || pl == NULL || gl == NULL || m->a.blocks == NULL ||
        m->inputs == NULL || m->targets == NULL) {
        free(pl);
        free(gl);
        model_destroy(m);
        return rz_fail(err, RZ_ENOMEM, "model: out of memory for tables");
    }
    m->n_params = mdl_build_table(dims, m->tensors);
    m->p.layers = pl;
    m->g.layers = gl;
    size_t act_halves = 0, act_floats = mdl_layout_acts(m, NULL, NULL, &act_halves);
    size_t halves = dims->bf16 ? ((m->n_params + 31) & ~(size_t)31) + act_halves : 0;
    m->params = rz_alloc_aligned(m->n_params * sizeof(float));
    m->act_buf = rz_alloc_aligned(act_floats * sizeof(float));
    m->half_buf = halves > 0 ? rz_alloc_aligned(halves * sizeof(kern_bf16)) : NULL;
    m->gview = calloc(m->n_tensors, sizeof *m->gview);
    m->seg = calloc((size_t)dims->n_layers + 2, sizeof *m->seg);
    bool ok = m->params != NULL && m->act_buf != NULL && m->gview != NULL && m->seg != NULL &&
              (halves == 0 || m->half_buf != NULL);
    if (ok) {
        mdl_build_segments(m->seg, m->tensors, m->n_tensors, m->n_params, dims->n_layers);
        mdl_view_slots(&m->g, gl, dims, m->gview);
        if (dims->segment_grads)
            ok = mdl_alloc_segments(m) == RZ_OK;
        else
            ok = (m->grads = rz_alloc_aligned(m->n_params * sizeof(float))) != NULL;
    }
    if (ok)
        ok = mdl_bind_views(&m->p, pl, m->params, m) == RZ_OK;
    if (ok && !dims->segment_grads)
        mdl_bind_range(&m->g, m->gview, m, 0, m->n_tensors, m->grads, 0);
    if (!ok) {
        model_destroy(m);
        return rz_fail(err, RZ_ENOMEM, "model: cannot allocate %zu parameters and %zu "
                       "activation floats", m->n_params, act_floats);
    }
    m->params_h = m->half_buf;
    mdl_layout_acts(m, m->act_buf, halves > 0 ? m->half_buf + (halves - act_halves) : NULL,
                &act_halves);
    st = plan_ops(m, ctx, err);
    if (st != RZ_OK) {
        model_destroy(m);
        return st;
    }
    *out = m;
    return RZ_OK;
}

void model_destroy(struct model *m)
{
    if (m == NULL)
        return;
    linear_free(&m->qkv);
    linear_free(&m->proj);
    linear_free(&m->fc);
    linear_free(&m->fc2);
    linear_free(&m->head);
    kern_attention_destroy(m->attn);
    kern_layernorm_destroy(m->ln);
    kern_gelu_destroy(m->gelu);
    kern_xent_destroy(m->xent);
    free(m->tensors);
    free(m->p.layers);
    free(m->g.layers);
    free(m->a.blocks);
    free(m->inputs);
    free(m->targets);
    free(m->params);
    free(m->grads);
    free(m->seg_bufs);
    free(m->gview);
    free(m->seg);
    free(m->act_buf);
    free(m->half_buf);
    free(m);
}

const struct model_dims *model_get_dims(const struct model *m) { return &m->dims; }
size_t model_num_params(const struct model *m) { return m->n_params; }
float *model_params(struct model *m) { return m->params; }
float *model_grads(struct model *m) { return m->grads; }

const struct model_tensor *model_tensors(const struct model *m, size_t *count)
{
    *count = m->n_tensors;
    return m->tensors;
}

void model_set_hooks(struct model *m, const struct model_hooks *hooks)
{
    if (hooks != NULL)
        m->hooks = *hooks;
    else
        memset(&m->hooks, 0, sizeof m->hooks);
}

void model_init_params(struct model *m, uint64_t seed)
{
    for (size_t i = 0; i < m->n_tensors; i++) {
        const struct model_tensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        size_t n = (size_t)(t->rows * t->cols);
        for (size_t j = 0; j < n; j++) {
            if (t->kind == MODEL_INIT_NORMAL)
                p[j] = (float)((double)m->dims.init_std * rz_rand_normal(seed, t->offset + j));
            else
                p[j] = t->kind == MODEL_INIT_ONE ? 1.0f : 0.0f;
        }
    }
}

void model_zero_grads(struct model *m)
{
    if (m->grads != NULL)
        memset(m->grads, 0, m->n_params * sizeof(float));
}

/* ---- dropout ---------------------------------------------------------------------------------- */

/* Where a dropout mask sits: the embeddings' output, and each block's two residual branches
 * (attention after its projection, the MLP after fc2), as GPT-2 places them. */
enum { DROP_EMBED, DROP_ATTN, DROP_MLP };

/* The mask of (layer, site) for the current forward, or NULL when dropout is off. */
static const struct dropout_site *drop_site(struct model *m, int64_t layer, int site)
{
    if (m->drop.p <= 0.0f)
        return NULL;
    m->drop.layer = (int)layer;
    m->drop.site = site;
    return &m->drop;
}

/* x (B, T, C) through the mask, in place. */
static void drop_forward(struct model *m, float *x, int64_t layer, int site)
{
    const struct dropout_site *s = drop_site(m, layer, site);
    if (s != NULL)
        dropout_forward(x, x, s, m->dims.batch, m->dims.seq_len, m->dims.d_model);
}

/* The gradient of a residual branch's output through its mask: dy itself without dropout, else
 * a masked copy in `scratch` (dy is the residual stream's gradient, still needed unmasked). */
static const float *drop_backward(struct model *m, const float *dy, float *scratch,
                                  int64_t layer, int site)
{
    const struct dropout_site *s = drop_site(m, layer, site);
    if (s == NULL)
        return dy;
    dropout_backward(scratch, dy, s, m->dims.batch, m->dims.seq_len, m->dims.d_model);
    return scratch;
}

void model_set_dropout(struct model *m, bool on, uint64_t seed, uint64_t step,
                       uint64_t first_sample)
{
    m->drop = (struct dropout_site){.p = on ? m->dims.dropout : 0.0f, .seed = seed, .step = step,
                                    .first_sample = first_sample};
}

/* ---- matmul operands: fp32, or their bf16 rounding in bf16 mode ------------------------------- */

/* The operand the matmuls read for x (n floats): x itself, or in bf16 mode h, which gets x
 * rounded (kept for the backward when h is a saved activation). */
static const void *mm_round(const struct model *m, kern_bf16 *h, const float *x, int64_t n)
{
    if (!m->dims.bf16)
        return x;
    kern_round_bf16(h, x, n);
    return h;
}

/* A matmul operand kept in one form: x in fp32 mode, h in bf16 mode (written by mm_round or by
 * a kernel with bf16 output). */
static void *mm_saved(const struct model *m, kern_bf16 *h, float *x)
{
    return m->dims.bf16 ? (void *)h : (void *)x;
}

/* A weight as the matmuls read it: the parameter, or its bf16 copy (rounded at each forward). */
static const void *mm_weight(const struct model *m, const float *w)
{
    return m->dims.bf16 ? (const void *)(m->params_h + (w - m->params)) : (const void *)w;
}

/* ---- forward ----------------------------------------------------------------------------------- */

/* Block l from a->x to x_next; x_next NULL stops after the MLP's GELU, all that backward needs
 * (a recomputation). */
static void block_forward(struct model *m, const struct layer_params *p, struct block_acts *a,
                          float *x_next, int64_t l)
{
    struct acts *s = &m->a;
    int64_t NC = m->dims.batch * m->dims.seq_len * m->dims.d_model;
    kern_layernorm_forward(m->ln, mm_saved(m, a->ln1_h, a->ln1), a->ln1_mean, a->ln1_var, a->x,
                           p->ln1_w, p->ln1_b);
    linear_forward(&m->qkv, a->qkv, mm_saved(m, a->ln1_h, a->ln1), mm_weight(m, p->qkv_w),
                   p->qkv_b);
    kern_attention_forward(m->attn, a->atty, a->lse, a->qkv);
    linear_forward(&m->proj, s->tmp, mm_round(m, a->atty_h, a->atty, NC),
                   mm_weight(m, p->proj_w), p->proj_b);
    drop_forward(m, s->tmp, l, DROP_ATTN);
    kern_add(a->x2, a->x, s->tmp, NC);
    kern_layernorm_forward(m->ln, mm_saved(m, a->ln2_h, a->ln2), a->ln2_mean, a->ln2_var, a->x2,
                           p->ln2_w, p->ln2_b);
    linear_forward(&m->fc, a->fc, mm_saved(m, a->ln2_h, a->ln2), mm_weight(m, p->fc_w), p->fc_b);
    kern_gelu_forward(m->gelu, mm_saved(m, a->fcg_h, a->fcg), a->fc); /* fc2's operand, saved */
    if (x_next == NULL)
        return;
    linear_forward(&m->fc2, s->tmp, mm_saved(m, a->fcg_h, a->fcg), mm_weight(m, p->fc2_w),
                   p->fc2_b);
    drop_forward(m, s->tmp, l, DROP_MLP);
    kern_add(x_next, a->x2, s->tmp, NC);
}

float model_forward(struct model *m, const int32_t *inputs, const int32_t *targets)
{
    const struct model_dims *d = &m->dims;
    int64_t N = d->batch * d->seq_len, L = d->n_layers;
    struct acts *a = &m->a;
    memcpy(m->inputs, inputs, (size_t)N * sizeof *inputs);
    memcpy(m->targets, targets, (size_t)N * sizeof *targets);
    seg_needed(m, 0);
    embedding_forward(a->blocks[0].x, inputs, m->p.wte, m->p.wpe, d->batch, d->seq_len, d->d_model);
    drop_forward(m, a->blocks[0].x, 0, DROP_EMBED);
    for (int64_t l = 0; l < L; l++) {
        seg_needed(m, (size_t)(1 + l));
        block_forward(m, &m->p.layers[l], &a->blocks[l], l + 1 < L ? a->blocks[l + 1].x : a->x_out,
                      l);
        progress(m);
    }
    seg_needed(m, (size_t)(L + 1));
    kern_layernorm_forward(m->ln, mm_saved(m, a->lnf_h, a->lnf), a->lnf_mean, a->lnf_var,
                           a->x_out, m->p.lnf_w, m->p.lnf_b);
    linear_forward(&m->head, a->probs, mm_saved(m, a->lnf_h, a->lnf), mm_weight(m, m->p.head_w),
                   m->p.head_b);
    kern_xent_forward(m->xent, a->losses, a->probs, a->probs, targets);
    double sum = 0.0;
    for (int64_t i = 0; i < N; i++)
        sum += (double)a->losses[i];
    return (float)(sum / (double)N);
}

const float *model_token_losses(const struct model *m)
{
    return m->a.losses;
}

/* ---- backward ---------------------------------------------------------------------------------- */

/* On entry s->dresid holds d(block output); on exit d(block input). */
static void block_backward(struct model *m, const struct layer_params *p, struct layer_params *g,
                           const struct block_acts *a, int64_t l)
{
    struct acts *s = &m->a;
    const float *dy = drop_backward(m, s->dresid, s->ddrop, l, DROP_MLP);
    linear_backward(&m->fc2, s->dfcg, g->fc2_w, g->fc2_b, dy, s->dy_h,
                    mm_saved(m, a->fcg_h, a->fcg), mm_weight(m, p->fc2_w));
    progress(m);
    /* d fc pre-activation, in place or (bf16) rounded into dy_h, with fc's bias gradient summed
     * in the same pass */
    kern_gelu_backward(m->gelu, mm_saved(m, s->dy_h, s->dfcg), g->fc_b, s->dfcg, a->fc);
    linear_backward(&m->fc, s->dln, g->fc_w, NULL, m->dims.bf16 ? NULL : s->dfcg, s->dy_h,
                    mm_saved(m, a->ln2_h, a->ln2), mm_weight(m, p->fc_w));
    progress(m);
    kern_layernorm_backward(m->ln, s->dresid, g->ln2_w, g->ln2_b, s->dln, a->x2, a->ln2_mean,
                            a->ln2_var, p->ln2_w, true);
    dy = drop_backward(m, s->dresid, s->ddrop, l, DROP_ATTN);
    linear_backward(&m->proj, s->datty, g->proj_w, g->proj_b, dy, s->dy_h,
                    mm_saved(m, a->atty_h, a->atty), mm_weight(m, p->proj_w));
    progress(m);
    kern_attention_backward(m->attn, s->dqkv, s->datty, a->qkv, a->atty, a->lse);
    progress(m);
    linear_backward(&m->qkv, s->dln, g->qkv_w, g->qkv_b, s->dqkv, s->dy_h,
                    mm_saved(m, a->ln1_h, a->ln1), mm_weight(m, p->qkv_w));
    progress(m);
    kern_layernorm_backward(m->ln, s->dresid, g->ln1_w, g->ln1_b, s->dln, a->x, a->ln1_mean,
                            a->ln1_var, p->ln1_w, true);
}

void model_backward(struct model *m, float loss_scale)
{
    const struct model_dims *d = &m->dims;
    int64_t N = d->batch * d->seq_len, L = d->n_layers;
    size_t head = (size_t)(L + 1);
    struct acts *a = &m->a;
    struct param_views *g = &m->g;
    if (d->tie_embeddings)
        seg_begin(m, 0); /* the head's weight gradient is wte's */
    seg_begin(m, head);
    /* d logits in place of the probabilities, or (bf16) rounded into dy_h; the head's bias
     * gradient is summed in the same pass */
    kern_xent_backward(m->xent, mm_saved(m, a->dy_h, a->probs), g->head_b, a->probs, m->targets,
                       loss_scale / (float)N);
    linear_backward(&m->head, a->dln, g->head_w, NULL, d->bf16 ? NULL : a->probs, a->dy_h,
                    mm_saved(m, a->lnf_h, a->lnf), mm_weight(m, m->p.head_w));
    progress(m);
    kern_layernorm_backward(m->ln, a->dresid, g->lnf_w, g->lnf_b, a->dln, a->x_out, a->lnf_mean,
                            a->lnf_var, m->p.lnf_w, false);
    seg_ready(m, head);
    for (int64_t l = L - 1; l >= 0; l--) {
        seg_begin(m, (size_t)(1 + l));
        /* recomputation: block l's activations again from its input (the last block's are
         * still there from the forward); the same kernels on the same inputs give the same bits */
        if (d->recompute == MODEL_RECOMPUTE_BLOCK && l + 1 < L) {
            block_forward(m, &m->p.layers[l], &a->blocks[l], NULL, l);
            progress(m);
        }
        block_backward(m, &m->p.layers[l], &g->layers[l], &a->blocks[l], l);
        seg_ready(m, (size_t)(1 + l));
    }
    if (!d->tie_embeddings)
        seg_begin(m, 0);
    drop_backward(m, a->dresid, a->dresid, 0, DROP_EMBED); /* in place: nothing else reads it */
    embedding_backward(g->wte, g->wpe, a->dresid, m->inputs, d->batch, d->seq_len, d->d_model);
    seg_ready(m, 0);
}
