/* gen_load.c: a checkpoint for inference (gen.h): which file (a run directory's newest valid
 * checkpoint, read only), its verified load into a batch-1 fp32 model built from the shape the
 * checkpoint and its config give, the parameter views the decoder reads, and the tokenizer
 * match.  Deliberately not here: the forward (gen_decode.c) and the options (gen_cli.c). */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "core/util.h"
#include "gen/gen_internal.h"
#include "plan/plan.h"

/* ---- which checkpoint ----------------------------------------------------------------------- */

/* The newest entry of dir's listing that verified ("" when none). */
static enum rz_status newest_valid(const char *dir, char *path, size_t len, size_t *seen,
                                   struct rz_err *err)
{
    struct ckpt_entry *v = NULL;
    size_t n = 0;
    path[0] = '\0';
    enum rz_status st = ckpt_list(dir, &v, &n, err);
    if (st != RZ_OK)
        return st;
    for (size_t i = n; i-- > 0;)
        if (v[i].valid) {
            rz_fmt(path, len, "%s", v[i].path);
            break;
        }
    *seen = n;
    free(v);
    return RZ_OK;
}

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

enum rz_status gen_resolve_checkpoint(const char *ckpt_or_dir, char *path, size_t len,
                                      struct rz_err *err)
{
    if (!is_dir(ckpt_or_dir)) {
        rz_fmt(path, len, "%s", ckpt_or_dir);
        return RZ_OK;
    }
    char dir[4096];
    rz_fmt(dir, sizeof dir, "%s/checkpoints", ckpt_or_dir);
    size_t seen = 0;
    enum rz_status st = newest_valid(is_dir(dir) ? dir : ckpt_or_dir, path, len, &seen, err);
    if (st == RZ_OK && path[0] == '\0')
        return rz_fail(err, RZ_ENOCKPT, "checkpoint: '%s' holds no valid checkpoint (%zu "
                       "step-*.h5 file%s, none verifies)", ckpt_or_dir, seen, seen == 1 ? "" : "s");
    if (st != RZ_OK)
        err->status = st = RZ_ENOCKPT; /* the message names the directory and the cause */
    return st;
}

/* ---- the model ------------------------------------------------------------------------------ */

/* The config the checkpoint carries, and the inference shape: the checkpoint's dims (what
 * ckpt_load checks the file against), tied or not as the config says, batch 1, fp32. */
static enum rz_status read_shape(struct gen *g, struct rz_err *err)
{
    if (g->meta.config_yaml == NULL || g->meta.config_yaml[0] == '\0')
        return rz_fail(err, RZ_ENOCKPT, "checkpoint '%s' carries no config", g->path);
    if ((g->cfg = calloc(1, sizeof *g->cfg)) == NULL)
        return rz_fail(err, RZ_ENOMEM, "checkpoint '%s': out of memory", g->path);
    char name[4200];
    rz_fmt(name, sizeof name, "%s:/config", g->path);
    enum rz_status st = cfg_load_string(g->cfg, name, g->meta.config_yaml, err);
    if (st != RZ_OK) /* the message names the checkpoint (name) */
        err->status = st = RZ_ENOCKPT;
    if (st != RZ_OK)
        return st;
    struct plan_settings s = {.batch = 1, .accum = 1};
    struct model_dims d = plan_model_dims(g->cfg, &s);
    const struct model_dims *m = &g->meta.dims;
    if (d.vocab != m->vocab || d.d_model != m->d_model || d.n_heads != m->n_heads ||
        d.n_layers != m->n_layers || d.d_ff != m->d_ff || d.seq_len != m->seq_len)
        return rz_fail(err, RZ_ENOCKPT, "checkpoint '%s': its config's model shape differs from "
                       "the shape it records", g->path);
    d.ln_eps = m->ln_eps;
    d.init_std = m->init_std;
    d.bf16 = false;
    d.dropout = 0.0f;
    /* The model only holds the parameters (and serves the tests' full forward): no gradient
     * buffer, and of the activations only each block's input (a forward's values are the same) */
    d.recompute = MODEL_RECOMPUTE_BLOCK;
    d.segment_grads = 1;
    g->dims = d;
    return RZ_OK;
}

static const float *tensor(const struct gen *g, const char *name)
{
    size_t n;
    const struct model_tensor *t = model_tensors(g->model, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0)
            return model_params(g->model) + t[i].offset;
    return NULL;
}

/* The views of a block, by their names in the table (h<l>.NAME). */
static const struct {
    const char *name;
    size_t offset;            /* of the view in struct gen_layer */
} layer_views[] = {
    {"ln1.weight", offsetof(struct gen_layer, ln1_w)},
    {"ln1.bias", offsetof(struct gen_layer, ln1_b)},
    {"attn.qkv.weight", offsetof(struct gen_layer, qkv_w)},
    {"attn.qkv.bias", offsetof(struct gen_layer, qkv_b)},
    {"attn.proj.weight", offsetof(struct gen_layer, proj_w)},
    {"attn.proj.bias", offsetof(struct gen_layer, proj_b)},
    {"ln2.weight", offsetof(struct gen_layer, ln2_w)},
    {"ln2.bias", offsetof(struct gen_layer, ln2_b)},
    {"mlp.fc.weight", offsetof(struct gen_layer, fc_w)},
    {"mlp.fc.bias", offsetof(struct gen_layer, fc_b)},
    {"mlp.proj.weight", offsetof(struct gen_layer, fc2_w)},
    {"mlp.proj.bias", offsetof(struct gen_layer, fc2_b)},
};

static enum rz_status bind_layer(struct gen *g, int64_t l, struct rz_err *err)
{
    char full[MODEL_TENSOR_NAME_MAX];
    for (size_t i = 0; i < sizeof layer_views / sizeof *layer_views; i++) {
        rz_fmt(full, sizeof full, "h%lld.%s", (long long)l, layer_views[i].name);
        const float *t = tensor(g, full);
        if (t == NULL)
            return rz_fail(err, RZ_ENOCKPT, "generate: the model table lacks '%s'", full);
        memcpy((char *)&g->layers[l] + layer_views[i].offset, &t, sizeof t);
    }
    return RZ_OK;
}

/* Point the views at the parameter buffer, by the table's names. */
static enum rz_status bind_views(struct gen *g, struct rz_err *err)
{
    int64_t L = g->dims.n_layers;
    if ((g->layers = calloc((size_t)L, sizeof *g->layers)) == NULL)
        return rz_fail(err, RZ_ENOMEM, "generate: out of memory");
    g->wte = tensor(g, "wte");
    g->wpe = tensor(g, "wpe");
    g->lnf_w = tensor(g, "ln_f.weight");
    g->lnf_b = tensor(g, "ln_f.bias");
    g->head_w = g->dims.tie_embeddings ? g->wte : tensor(g, "head.weight");
    g->head_b = g->dims.no_head_bias ? NULL : tensor(g, "head.bias"); /* NULL: GPT-2's head */
    if (g->wte == NULL || g->wpe == NULL || g->lnf_w == NULL || g->lnf_b == NULL ||
        g->head_w == NULL || (g->head_b == NULL && !g->dims.no_head_bias))
        return rz_fail(err, RZ_ENOCKPT, "generate: the model table lacks a tensor");
    enum rz_status st = RZ_OK;
    for (int64_t l = 0; l < L && st == RZ_OK; l++)
        st = bind_layer(g, l, err);
    return st;
}

static enum rz_status load_params(struct gen *g, struct rz_err *err)
{
    size_t n;
    const struct model_tensor *table = model_tensors(g->model, &n);
    struct ckpt_tensors t = {.table = table, .count = n, .n_floats = model_num_params(g->model),
                             .params = model_params(g->model), .moments_sharded = 1,
                             .moment_lo = 0, .moment_hi = 0}; /* moments verified, not kept */
    struct ckpt_meta meta;
    enum rz_status st = ckpt_load(g->path, &meta, &t, err);
    if (st == RZ_OK)
        ckpt_meta_free(&meta);
    return st;
}

enum rz_status gen_open(struct gen **out, const char *path, struct rz_err *err)
{
    *out = NULL;
    struct gen *g = calloc(1, sizeof *g);
    if (g == NULL)
        return rz_fail(err, RZ_ENOMEM, "generate: out of memory");
    rz_fmt(g->path, sizeof g->path, "%s", path);
    enum kern_backend backend = KERN_DNNL;
    enum rz_status st = ckpt_read_meta(path, &g->meta, err);
    if (st == RZ_EIO) /* a file that does not open as a checkpoint is no usable checkpoint */
        err->status = st = RZ_ENOCKPT;
    if (st == RZ_OK) st = read_shape(g, err);
    if (st == RZ_OK) st = kern_backend_parse(g->cfg->kernels.backend, &backend, err);
    if (st == RZ_OK) st = kern_ctx_create(&g->kern, backend, err);
    if (st == RZ_OK) st = model_create(&g->model, &g->dims, g->kern, err);
    if (st == RZ_OK) st = load_params(g, err);
    if (st == RZ_OK) st = bind_views(g, err);
    if (st == RZ_OK) st = gen_decode_init(g, err);
    if (st != RZ_OK) {
        gen_close(g);
        return st;
    }
    *out = g;
    return RZ_OK;
}

void gen_close(struct gen *g)
{
    if (g == NULL)
        return;
    gen_decode_free(g);
    model_destroy(g->model);
    kern_ctx_destroy(g->kern);
    ckpt_meta_free(&g->meta);
    free(g->layers);
    free(g->cfg);
    free(g);
}

const struct model_dims *gen_dims(const struct gen *g) { return &g->dims; }
const struct ckpt_meta *gen_meta(const struct gen *g) { return &g->meta; }
const struct cfg *gen_cfg(const struct gen *g) { return g->cfg; }
const float *gen_params(const struct gen *g) { return model_params(g->model); }

/* ---- the tokenizer ------------------------------------------------------------------------- */

enum rz_status gen_check_tokenizer(const struct gen *g, int64_t vocab, const char *sha_hex,
                                   const char *tok_path, struct rz_err *err)
{
    if (vocab != g->dims.vocab)
        return rz_fail(err, RZ_ECONFIG, "tokenizer '%s' has %lld tokens but checkpoint '%s' was "
                       "trained with model.vocab_size %lld: they do not belong together",
                       tok_path, (long long)vocab, g->path, (long long)g->dims.vocab);
    const char *rec = g->meta.tokenizer_sha256;
    if (rec[0] != '\0' && sha_hex != NULL && strcmp(rec, sha_hex) != 0)
        return rz_fail(err, RZ_ECONFIG, "tokenizer '%s' (SHA-256 %s) is not the one checkpoint "
                       "'%s' was trained with (SHA-256 %s)", tok_path, sha_hex, g->path, rec);
    return RZ_OK;
}
