/* model_layout.c: where the model's numbers live (model_internal.h): the descriptor table of
 * the parameters (names, shapes, offsets, init), the views into the parameter and gradient
 * buffers, the gradient segments (ZeRO-2) and their buffers, the activation buffer's layout (with
 * recomputation by block and bf16 copies), and the memory plan (--plan) counted by the same
 * layout, touching nothing.  The mdl_* functions' contracts are in model_internal.h; comments
 * here say only what the header does not. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model/model_internal.h"

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

size_t mdl_table_count(const struct model_dims *d)
{
    return (size_t)4 + !d->tie_embeddings + !d->no_head_bias + LAYER_TENSORS * (size_t)d->n_layers;
}

size_t mdl_build_table(const struct model_dims *d, struct model_tensor *t)
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
    if (!d->no_head_bias) /* GPT-2's lm_head has none */
        add_tensor(t, &n, &off, "head.bias", V, 1, MODEL_INIT_ZERO);
    return off;
}

size_t model_count_params(const struct model_dims *dims)
{
    struct model_tensor *t = calloc(mdl_table_count(dims), sizeof *t);
    if (t == NULL)
        return 0;
    size_t params = mdl_build_table(dims, t);
    free(t);
    return params;
}

size_t model_describe(const struct model_dims *dims, struct model_tensor **table, size_t *count)
{
    *count = mdl_table_count(dims);
    *table = calloc(*count, sizeof **table);
    if (*table == NULL)
        return 0;
    return mdl_build_table(dims, *table);
}

double model_flops_per_sample(const struct model_dims *d)
{
    double C = (double)d->d_model, F = (double)d->d_ff, T = (double)d->seq_len;
    double L = (double)d->n_layers, V = (double)d->vocab;
    double matmul_weights = L * (3 * C * C + C * C + 2 * C * F) + C * V;
    return 6.0 * T * matmul_weights + 12.0 * L * T * T * C;
}

void mdl_view_slots(struct param_views *v, struct layer_params *layers,
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
    if (!d->no_head_bias) /* without: head_b stays NULL (no bias, no gradient) */
        out[i++] = &v->head_b;
}

void mdl_bind_range(struct param_views *v, float ***slots, const struct model *m, size_t first,
                    size_t count, float *base, size_t lo)
{
    for (size_t i = first; i < first + count; i++)
        *slots[i] = base + (m->tensors[i].offset - lo);
    if (m->dims.tie_embeddings)
        v->head_w = v->wte;
}

enum rz_status mdl_bind_views(struct param_views *v, struct layer_params *layers, float *base,
                              const struct model *m)
{
    float ***slots = calloc(m->n_tensors, sizeof *slots);
    if (slots == NULL)
        return RZ_ENOMEM;
    mdl_view_slots(v, layers, &m->dims, slots);
    mdl_bind_range(v, slots, m, 0, m->n_tensors, base, 0);
    free(slots);
    return RZ_OK;
}

/* ---- gradient segments ------------------------------------------------------------------------- */

void mdl_build_segments(struct grad_seg *seg, const struct model_tensor *t, size_t n,
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
enum rz_status mdl_alloc_segments(struct model *m)
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

size_t mdl_layout_acts(struct model *m, float *base, kern_bf16 *base_h, size_t *halves)
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
    size_t n = mdl_table_count(dims);
    m.a.blocks = calloc((size_t)dims->n_layers, sizeof *m.a.blocks);
    struct model_tensor *t = calloc(n, sizeof *t);
    struct grad_seg *seg = calloc((size_t)dims->n_layers + 2, sizeof *seg);
    if (m.a.blocks != NULL && t != NULL && seg != NULL) {
        size_t halves = 0;
        out->params = mdl_build_table(dims, t);
        out->acts = mdl_layout_acts(&m, NULL, NULL, &halves); /* counts only: nothing is touched */
        out->acts_kept = m.a.kept_floats;
        out->acts_halves = halves;
        out->acts_halves_kept = m.a.kept_halves;
        out->params_halves = dims->bf16 ? (out->params + 31) & ~(size_t)31 : 0;
        for (size_t i = 0; i < n; i++)
            if ((size_t)(t[i].rows * t[i].cols) > out->largest_tensor)
                out->largest_tensor = (size_t)(t[i].rows * t[i].cols);
        mdl_build_segments(seg, t, n, out->params, dims->n_layers);
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
