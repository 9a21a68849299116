/* model.c: the transformer LM (see model.h): descriptor table, the one parameter / gradient /
 * activation buffers with their views, gradient segments (ZeRO-2), activation recomputation by
 * block, dropout, and the forward and backward passes, which read like the math, one layer call
 * per line.  Mixed precision is bf16 matmul operands only (fp32 master weights, sums, LayerNorm,
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

enum { LAYER_TENSORS = 12 };

/* Per-layer parameter views (into the parameter or the gradient buffer). */
struct layer_params {
    float *ln1_w, *ln1_b;     /* (C) */
    float *qkv_w, *qkv_b;     /* (3C, C), (3C) */
    float *proj_w, *proj_b;   /* (C, C), (C) */
    float *ln2_w, *ln2_b;     /* (C) */
    float *fc_w, *fc_b;       /* (F, C), (F) */
    float *fc2_w, *fc2_b;     /* (C, F), (C) */
};

struct param_views {
    float *wte;               /* (V, C) */
    float *wpe;               /* (T, C) */
    struct layer_params *layers; /* L of them */
    float *lnf_w, *lnf_b;     /* (C) */
    float *head_w, *head_b;   /* (V, C), (V) */
};

/* What one block keeps from its forward for its backward: views into the activation buffer.
 * Everything here but `x`, the block's input, can be computed again from x and the parameters by
 * block_forward: activation recomputation keeps x alone per block, plus one more struct like
 * this for the block being recomputed (carve_block lays one out anywhere). */
struct block_acts {
    float *x;                 /* (N, C) residual stream entering the block */
    float *ln1, *ln1_mean, *ln1_var;   /* (N, C) (fp32 mode only: see ln1_h), (N), (N) */
    float *qkv;               /* (N, 3C) q | k | v, read in place by the attention */
    float *atty;              /* (N, C) attention output before the projection */
    float *lse;               /* (B, H, T) log-sum-exp of the attention rows */
    float *x2;                /* (N, C) residual stream after attention */
    float *ln2, *ln2_mean, *ln2_var;   /* (N, C) (fp32 mode only), (N), (N) */
    float *fc;                /* (N, F) before GELU */
    float *fcg;               /* (N, F) after GELU (fp32 mode only: see fcg_h) */
    /* bf16 mode only (else NULL): the matmul inputs, rounded, which the backward reads again;
     * the LayerNorms and the GELU write theirs directly, so ln1, ln2 and fcg have no fp32 copy
     * then */
    kern_bf16 *ln1_h, *atty_h, *ln2_h; /* (N, C) */
    kern_bf16 *fcg_h;                   /* (N, F) */
};

struct acts {
    struct block_acts *blocks; /* L of them */
    float *x_out;             /* (N, C) residual stream after the last block */
    float *lnf, *lnf_mean, *lnf_var;   /* lnf: fp32 mode only (lnf_h in bf16 mode) */
    float *probs;             /* (N, V) logits, then probabilities, then d logits (fp32 mode;
                               * in bf16 mode the cross-entropy writes those to dy_h) */
    float *losses;            /* (N) */
    /* scratch shared by all blocks */
    float *dqkv;              /* (N, 3C) */
    float *tmp;               /* (N, C) */
    float *dresid, *dln, *datty;  /* (N, C) */
    float *dfcg;              /* (N, F): d gelu output, then (in place, fp32 mode; bf16 mode:
                               * into dy_h) d fc pre-activation */
    float *ddrop;             /* (N, C): a residual branch's gradient through its dropout mask
                               * (dropout only) */
    /* bf16 mode only (else NULL) */
    kern_bf16 *lnf_h;         /* (N, C) */
    kern_bf16 *dy_h;          /* the matmuls' rounding of the gradient at hand: (N, max(V, 3C, F)) */
    /* of each buffer, what forward keeps for backward (the rest is scratch): model_memory_plan */
    size_t kept_floats, kept_halves;
};

/* A gradient segment (model.h): floats [lo, hi) of the layout, table entries [first, first +
 * count), and with segment_grads the buffer its gradients live in during backward. */
struct grad_seg {
    size_t lo, hi;
    size_t first, count;
    float *buf;
};

struct model {
    struct model_dims dims;
    struct model_tensor *tensors;
    size_t n_tensors;
    size_t n_params;
    float *params, *grads, *act_buf;
    kern_bf16 *half_buf;       /* bf16 mode: params_h, then the bf16 activations */
    kern_bf16 *params_h;       /* bf16 mode: the parameters rounded, at each forward */
    struct param_views p, g;
    float ***gview;           /* (n_tensors) address of each tensor's view in g, table order */
    struct grad_seg *seg;     /* (L + 2): 0 embeddings, 1 + l block l, L + 1 head */
    float *seg_bufs;          /* segment_grads: one big and two small segment buffers */
    struct acts a;
    int32_t *inputs, *targets; /* (N) copies of the last forward's tokens */
    struct linear qkv, proj, fc, fc2, head;
    struct kern_attention *attn;
    struct kern_layernorm *ln;
    struct kern_gelu *gelu;
    struct kern_xent *xent;
    struct model_hooks hooks;
    struct dropout_site drop; /* the next forward's dropout (p = 0: off) */
};

/* ---- descriptor table -------------------------------------------------------------------------- */

static void add_tensor(struct model_tensor *t, size_t *n, size_t *off, const char *name,
                       int64_t rows, int64_t cols, int kind)
{
    struct model_tensor *e = &t[(*n)++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->rows = rows;
    e->cols = cols;
    e->offset = *off;
    e->kind = kind;
    *off += (size_t)(rows * cols);
}

static size_t table_count(const struct model_dims *d)
{
    return (d->tie_embeddings ? 5 : 6) + LAYER_TENSORS * (size_t)d->n_layers;
}

/* Fill the table t (table_count entries) in buffer order; returns the number of floats. */
static size_t build_table(const struct model_dims *d, struct model_tensor *t)
{
    static const char *const names[LAYER_TENSORS] = {
        "ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
        "attn.proj.bias", "ln2.weight", "ln2.bias", "mlp.fc.weight", "mlp.fc.bias",
        "mlp.proj.weight", "mlp.proj.bias"};
    static const int kinds[LAYER_TENSORS] = {
        MODEL_INIT_ONE, MODEL_INIT_ZERO, MODEL_INIT_NORMAL, MODEL_INIT_ZERO, MODEL_INIT_NORMAL,
        MODEL_INIT_ZERO, MODEL_INIT_ONE, MODEL_INIT_ZERO, MODEL_INIT_NORMAL, MODEL_INIT_ZERO,
        MODEL_INIT_NORMAL, MODEL_INIT_ZERO};
    int64_t V = d->vocab, C = d->d_model, F = d->d_ff, T = d->seq_len;
    const int64_t rows[LAYER_TENSORS] = {C, C, 3 * C, 3 * C, C, C, C, C, F, F, C, C};
    const int64_t cols[LAYER_TENSORS] = {1, 1, C, 1, C, 1, 1, 1, C, 1, F, 1};
    size_t n = 0, off = 0;
    char nm[MODEL_TENSOR_NAME_MAX];
    add_tensor(t, &n, &off, "wte", V, C, MODEL_INIT_NORMAL);
    add_tensor(t, &n, &off, "wpe", T, C, MODEL_INIT_NORMAL);
    for (int64_t l = 0; l < d->n_layers; l++)
        for (int j = 0; j < LAYER_TENSORS; j++) {
            snprintf(nm, sizeof nm, "h%d.%s", (int)l, names[j]);
            add_tensor(t, &n, &off, nm, rows[j], cols[j], kinds[j]);
        }
    add_tensor(t, &n, &off, "ln_f.weight", C, 1, MODEL_INIT_ONE);
    add_tensor(t, &n, &off, "ln_f.bias", C, 1, MODEL_INIT_ZERO);
    if (!d->tie_embeddings) /* tied: the head's weight is wte */
        add_tensor(t, &n, &off, "head.weight", V, C, MODEL_INIT_NORMAL);
    add_tensor(t, &n, &off, "head.bias", V, 1, MODEL_INIT_ZERO);
    return off;
}

size_t model_count_params(const struct model_dims *dims)
{
    struct model_tensor *t = calloc(table_count(dims), sizeof *t);
    if (t == NULL)
        return 0;
    size_t params = build_table(dims, t);
    free(t);
    return params;
}

double model_flops_per_sample(const struct model_dims *d)
{
    double C = (double)d->d_model, F = (double)d->d_ff, T = (double)d->seq_len;
    double L = (double)d->n_layers, V = (double)d->vocab;
    double matmul_weights = L * (3 * C * C + C * C + 2 * C * F) + C * V;
    return 6.0 * T * matmul_weights + 12.0 * L * T * T * C;
}

/* The address of each tensor's view pointer in v, in table order (table_count entries). */
static void view_slots(struct param_views *v, struct layer_params *layers,
                       const struct model_dims *d, float ***out)
{
    size_t i = 0;
    v->layers = layers;
    out[i++] = &v->wte;
    out[i++] = &v->wpe;
    for (int64_t l = 0; l < d->n_layers; l++) {
        float **f[LAYER_TENSORS] = {
            &layers[l].ln1_w, &layers[l].ln1_b, &layers[l].qkv_w, &layers[l].qkv_b,
            &layers[l].proj_w, &layers[l].proj_b, &layers[l].ln2_w, &layers[l].ln2_b,
            &layers[l].fc_w, &layers[l].fc_b, &layers[l].fc2_w, &layers[l].fc2_b};
        for (int j = 0; j < LAYER_TENSORS; j++)
            out[i++] = f[j];
    }
    out[i++] = &v->lnf_w;
    out[i++] = &v->lnf_b;
    if (!d->tie_embeddings)
        out[i++] = &v->head_w;
    out[i++] = &v->head_b;
}

/* Point the views of table entries [first, first + count) at base, where base holds the floats
 * from layout offset `lo` on.  Tied embeddings: head_w follows wte. */
static void bind_range(struct param_views *v, float ***slots, const struct model *m, size_t first,
                       size_t count, float *base, size_t lo)
{
    for (size_t i = first; i < first + count; i++)
        *slots[i] = base + (m->tensors[i].offset - lo);
    if (m->dims.tie_embeddings)
        v->head_w = v->wte;
}

/* Point every view at `base` (a whole buffer in table layout). */
static enum rz_status bind_views(struct param_views *v, struct layer_params *layers, float *base,
                                 const struct model *m)
{
    float ***slots = calloc(m->n_tensors, sizeof *slots);
    if (slots == NULL)
        return RZ_ENOMEM;
    view_slots(v, layers, &m->dims, slots);
    bind_range(v, slots, m, 0, m->n_tensors, base, 0);
    free(slots);
    return RZ_OK;
}

/* ---- gradient segments ------------------------------------------------------------------------- */

/* Fill seg (L + 2 entries) from the table t (n entries, n_params floats). */
static void build_segments(struct grad_seg *seg, const struct model_tensor *t, size_t n,
                           size_t n_params, int64_t L)
{
    size_t first = 0;
    for (int64_t s = 0; s < L + 2; s++) {
        size_t count = s == 0 ? 2 : s <= L ? LAYER_TENSORS : n - first;
        seg[s] = (struct grad_seg){.lo = t[first].offset, .first = first, .count = count};
        first += count;
        seg[s].hi = first < n ? t[first].offset : n_params;
    }
}

/* segment_grads: the segments' buffer sizes.  The embeddings (and an untied head, whose backward
 * is done before the embeddings' starts) share the big buffer; blocks (and a tied head) take
 * turns in two small ones, so one can be sent while the next is written. */
static void segment_sizes(const struct grad_seg *seg, int64_t L, int tied, size_t *big,
                          size_t *small)
{
    size_t head = seg[L + 1].hi - seg[L + 1].lo;
    *big = seg[0].hi - seg[0].lo;
    *small = tied ? head : 0;
    if (!tied && head > *big)
        *big = head;
    for (int64_t l = 0; l < L; l++)
        if (seg[1 + l].hi - seg[1 + l].lo > *small)
            *small = seg[1 + l].hi - seg[1 + l].lo;
}

/* segment_grads: one allocation, cut into the big buffer and two small ones, assigned in the
 * order backward visits the segments (head, L-1, ..., 0, embeddings). */
static enum rz_status alloc_segments(struct model *m)
{
    int64_t L = m->dims.n_layers;
    int tied = m->dims.tie_embeddings;
    size_t big, small;
    segment_sizes(m->seg, L, tied, &big, &small);
    m->seg_bufs = rz_alloc_aligned((big + 2 * small) * sizeof(float));
    if (m->seg_bufs == NULL)
        return RZ_ENOMEM;
    float *slot[2] = {m->seg_bufs + big, m->seg_bufs + big + small};
    int turn = 0;
    m->seg[0].buf = m->seg_bufs;
    m->seg[L + 1].buf = tied ? slot[turn++ % 2] : m->seg_bufs;
    for (int64_t l = L - 1; l >= 0; l--)
        m->seg[1 + l].buf = slot[turn++ % 2];
    return RZ_OK;
}

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
    bind_range(&m->g, m->gview, m, g->first, g->count, g->buf, g->lo);
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

/* ---- activation buffer ------------------------------------------------------------------------- */

/* Carve `count` floats from the buffer cursor (sizes rounded to 16 floats = 64 bytes). */
static float *carve(float **cursor, size_t *total, int64_t count)
{
    size_t n = ((size_t)count + 15) & ~(size_t)15;
    float *p = *cursor;
    if (p != NULL)
        *cursor = p + n;
    *total += n;
    return p;
}

/* The same for a bf16 buffer (NULL and no count outside bf16 mode). */
static kern_bf16 *carve_h(kern_bf16 **cursor, size_t *total, const struct model_dims *d,
                          int64_t count)
{
    if (!d->bf16)
        return NULL;
    size_t n = ((size_t)count + 31) & ~(size_t)31;
    kern_bf16 *p = *cursor;
    if (p != NULL)
        *cursor = p + n;
    *total += n;
    return p;
}

/* A cursor and a running count in each of the two activation buffers. */
struct act_cursor {
    float *f;
    kern_bf16 *h;
    size_t nf, nh;
};

/* Lays out one block's activations at the cursor (with_x: its input x too). */
static void carve_block(struct block_acts *k, struct act_cursor *c, const struct model_dims *d,
                        bool with_x)
{
    int64_t N = d->batch * d->seq_len, C = d->d_model, F = d->d_ff;
    float **cur = &c->f;
    size_t *total = &c->nf;
    if (with_x)
        k->x = carve(cur, total, N * C);
    k->ln1 = d->bf16 ? NULL : carve(cur, total, N * C);
    k->ln1_mean = carve(cur, total, N);
    k->ln1_var = carve(cur, total, N);
    k->qkv = carve(cur, total, 3 * N * C);
    k->atty = carve(cur, total, N * C);
    k->lse = carve(cur, total, d->batch * d->n_heads * d->seq_len);
    k->x2 = carve(cur, total, N * C);
    k->ln2 = d->bf16 ? NULL : carve(cur, total, N * C);
    k->ln2_mean = carve(cur, total, N);
    k->ln2_var = carve(cur, total, N);
    k->fc = carve(cur, total, N * F);
    k->fcg = d->bf16 ? NULL : carve(cur, total, N * F);
    k->ln1_h = carve_h(&c->h, &c->nh, d, N * C);
    k->atty_h = carve_h(&c->h, &c->nh, d, N * C);
    k->ln2_h = carve_h(&c->h, &c->nh, d, N * C);
    k->fcg_h = carve_h(&c->h, &c->nh, d, N * F);
}

/* The blocks' activations.  recompute none: each block keeps all of its own.  block: each keeps
 * its input x; the rest is one set that every block's forward writes in turn and the backward
 * recomputes a block into (Chen et al. 2016, "Training deep nets with sublinear memory cost"). */
static void layout_blocks(struct acts *a, struct act_cursor *c, const struct model_dims *d)
{
    int64_t L = d->n_layers;
    if (d->recompute != MODEL_RECOMPUTE_BLOCK) {
        for (int64_t l = 0; l < L; l++)
            carve_block(&a->blocks[l], c, d, true);
        return;
    }
    for (int64_t l = 0; l < L; l++)
        a->blocks[l].x = carve(&c->f, &c->nf, d->batch * d->seq_len * d->d_model);
    struct block_acts work;
    carve_block(&work, c, d, false);
    for (int64_t l = 0; l < L; l++) {
        float *x = a->blocks[l].x;
        a->blocks[l] = work;
        a->blocks[l].x = x;
    }
}

/* With base and base_h NULL, only counts: *halves gets the number of bf16 values needed; returns
 * the number of floats. */
static size_t layout_acts(struct model *m, float *base, kern_bf16 *base_h, size_t *halves)
{
    const struct model_dims *d = &m->dims;
    int64_t N = d->batch * d->seq_len, C = d->d_model, F = d->d_ff, V = d->vocab;
    struct act_cursor c = {.f = base, .h = base_h};
    float *cur = base;
    size_t total = 0;
    struct acts *a = &m->a;
    layout_blocks(a, &c, d);
    cur = c.f;
    total = c.nf;
    a->x_out = carve(&cur, &total, N * C);
    a->lnf = d->bf16 ? NULL : carve(&cur, &total, N * C);
    a->lnf_mean = carve(&cur, &total, N);
    a->lnf_var = carve(&cur, &total, N);
    a->probs = carve(&cur, &total, N * V);
    a->losses = carve(&cur, &total, N);
    a->kept_floats = total; /* the rest is backward's scratch */
    a->dqkv = carve(&cur, &total, 3 * N * C);
    a->tmp = carve(&cur, &total, N * C);
    a->datty = a->tmp; /* tmp is forward-only scratch (layers.h allows the sharing) */
    a->dresid = carve(&cur, &total, N * C);
    a->dln = carve(&cur, &total, N * C);
    a->dfcg = carve(&cur, &total, N * F);
    a->ddrop = d->dropout > 0.0f ? carve(&cur, &total, N * C) : NULL;
    a->lnf_h = carve_h(&c.h, &c.nh, d, N * C);
    a->kept_halves = c.nh; /* the rest is backward's scratch */
    int64_t widest = V > 3 * C ? V : 3 * C;
    a->dy_h = carve_h(&c.h, &c.nh, d, N * (widest > F ? widest : F));
    *halves = c.nh;
    return total;
}

void model_memory_plan(const struct model_dims *dims, struct model_memory *out)
{
    memset(out, 0, sizeof *out);
    struct model m;
    memset(&m, 0, sizeof m);
    m.dims = *dims;
    size_t n = table_count(dims);
    m.a.blocks = calloc((size_t)dims->n_layers, sizeof *m.a.blocks);
    struct model_tensor *t = calloc(n, sizeof *t);
    struct grad_seg *seg = calloc((size_t)dims->n_layers + 2, sizeof *seg);
    if (m.a.blocks != NULL && t != NULL && seg != NULL) {
        size_t halves = 0;
        out->params = build_table(dims, t);
        out->acts = layout_acts(&m, NULL, NULL, &halves); /* counts only: nothing is touched */
        out->acts_kept = m.a.kept_floats;
        out->acts_halves = halves;
        out->acts_halves_kept = m.a.kept_halves;
        out->params_halves = dims->bf16 ? (out->params + 31) & ~(size_t)31 : 0;
        for (size_t i = 0; i < n; i++)
            if ((size_t)(t[i].rows * t[i].cols) > out->largest_tensor)
                out->largest_tensor = (size_t)(t[i].rows * t[i].cols);
        build_segments(seg, t, n, out->params, dims->n_layers);
        size_t big, small;
        segment_sizes(seg, dims->n_layers, dims->tie_embeddings, &big, &small);
        out->grads = dims->segment_grads ? big + 2 * small : out->params;
        for (int64_t k = 0; k < dims->n_layers + 2; k++)
            if (seg[k].hi - seg[k].lo > out->largest_segment)
                out->largest_segment = seg[k].hi - seg[k].lo;
    }
    free(seg);
    free(t);
    free(m.a.blocks);
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
    enum rz_status st = linear_init(&m->qkv, ctx, N, C, 3 * C, h, err);
    if (st == RZ_OK) st = linear_init(&m->proj, ctx, N, C, C, h, err);
    if (st == RZ_OK) st = linear_init(&m->fc, ctx, N, C, F, h, err);
    if (st == RZ_OK) st = linear_init(&m->fc2, ctx, N, F, C, h, err);
    if (st == RZ_OK) st = linear_init(&m->head, ctx, N, C, V, h, err);
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
    m->n_tensors = table_count(dims);
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
    m->n_params = build_table(dims, m->tensors);
    m->p.layers = pl;
    m->g.layers = gl;
    size_t act_halves = 0, act_floats = layout_acts(m, NULL, NULL, &act_halves);
    size_t halves = dims->bf16 ? ((m->n_params + 31) & ~(size_t)31) + act_halves : 0;
    m->params = rz_alloc_aligned(m->n_params * sizeof(float));
    m->act_buf = rz_alloc_aligned(act_floats * sizeof(float));
    m->half_buf = halves > 0 ? rz_alloc_aligned(halves * sizeof(kern_bf16)) : NULL;
    m->gview = calloc(m->n_tensors, sizeof *m->gview);
    m->seg = calloc((size_t)dims->n_layers + 2, sizeof *m->seg);
    bool ok = m->params != NULL && m->act_buf != NULL && m->gview != NULL && m->seg != NULL &&
              (halves == 0 || m->half_buf != NULL);
    if (ok) {
        build_segments(m->seg, m->tensors, m->n_tensors, m->n_params, dims->n_layers);
        view_slots(&m->g, gl, dims, m->gview);
        if (dims->segment_grads)
            ok = alloc_segments(m) == RZ_OK;
        else
            ok = (m->grads = rz_alloc_aligned(m->n_params * sizeof(float))) != NULL;
    }
    if (ok)
        ok = bind_views(&m->p, pl, m->params, m) == RZ_OK;
    if (ok && !dims->segment_grads)
        bind_range(&m->g, m->gview, m, 0, m->n_tensors, m->grads, 0);
    if (!ok) {
        model_destroy(m);
        return rz_fail(err, RZ_ENOMEM, "model: cannot allocate %zu parameters and %zu "
                       "activation floats", m->n_params, act_floats);
    }
    m->params_h = m->half_buf;
    layout_acts(m, m->act_buf, halves > 0 ? m->half_buf + (halves - act_halves) : NULL,
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
