/* export_import.c: `ryzen-ckpt import --format safetensors` (export.h): config.json to a config
 * (defaults, GPT2Config's model keys, the caller's overrides), model.safetensors to the
 * parameter buffer in our layout, and a step-0 checkpoint with zero Adam moments that
 * ryzen-train resumes from.
 * Deliberately not here: export (export.c), the format (safetensors.c), the mapping
 * (gpt2_map.c). */
#include "config.h"

#include "export/export.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "config/cfg.h"
#include "core/durable.h"
#include "core/json_read.h"
#include "core/sha256.h"
#include "core/util.h"
#include "export/export_internal.h"
#include "export/gpt2_map.h"
#include "export/safetensors.h"

/* ---- the config ------------------------------------------------------------------------------ */

static enum rz_status set_key(struct cfg *c, const char *key, const char *value,
                              struct rz_err *err)
{
    char assignment[512];
    snprintf(assignment, sizeof assignment, "%s=%s", key, value);
    return cfg_set(c, assignment, err);
}

static enum rz_status set_int(struct cfg *c, const char *key, int64_t v, struct rz_err *err)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    return set_key(c, key, buf, err);
}

static enum rz_status set_float(struct cfg *c, const char *key, float v, struct rz_err *err)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.9g", (double)v);
    return set_key(c, key, buf, err);
}

/* The defaults, config.json's model, then the overrides; validated. */
static enum rz_status build_config(struct cfg *c, const struct model_dims *d,
                                   const struct gpt2_extra *x, const struct import_opts *o,
                                   const char *json_path, struct rz_err *err)
{
    cfg_defaults(c);
    enum rz_status st = set_int(c, "model.vocab_size", d->vocab, err);
    if (st == RZ_OK) st = set_int(c, "model.d_model", d->d_model, err);
    if (st == RZ_OK) st = set_int(c, "model.n_heads", d->n_heads, err);
    if (st == RZ_OK) st = set_int(c, "model.n_layers", d->n_layers, err);
    if (st == RZ_OK) st = set_int(c, "model.d_ff", d->d_ff, err);
    if (st == RZ_OK) st = set_int(c, "model.seq_len", d->seq_len, err);
    if (st == RZ_OK) st = set_float(c, "model.ln_eps", d->ln_eps, err);
    if (st == RZ_OK) st = set_float(c, "model.init_std", d->init_std, err);
    if (st == RZ_OK) st = set_float(c, "model.dropout", x->dropout, err);
    if (st == RZ_OK)
        st = set_key(c, "model.tie_embeddings", d->tie_embeddings ? "true" : "false", err);
    if (st == RZ_OK) /* GPT-2's head has no bias; ours had one when the file says so */
        st = set_key(c, "model.head_bias", x->head_bias || x->zero_head_bias ? "true" : "false",
                     err);
    if (st != RZ_OK) {
        char cause[RZ_ERR_MSG_MAX];
        rz_fmt(cause, sizeof cause, "%s", err->msg);
        return rz_fail(err, RZ_ECONFIG, "import: %s does not fit our config: %s", json_path,
                       cause);
    }
    for (int i = 0; i < o->n_sets && st == RZ_OK; i++)
        st = cfg_set(c, o->sets[i], err);
    if (st == RZ_OK)
        st = cfg_validate(c, err);
    return st;
}

/* The model the config describes (as the trainer builds it from the same config). */
static struct model_dims dims_of(const struct cfg *c)
{
    return (struct model_dims){
        .vocab = c->model.vocab_size, .d_model = c->model.d_model, .n_heads = c->model.n_heads,
        .n_layers = c->model.n_layers, .d_ff = c->model.d_ff, .seq_len = c->model.seq_len,
        .batch = c->training.batch_size, .ln_eps = (float)c->model.ln_eps,
        .init_std = (float)c->model.init_std,
        .tie_embeddings = strcmp(c->model.tie_embeddings, "true") == 0,
        .no_head_bias = strcmp(c->model.head_bias, "false") == 0,
        .dropout = (float)c->model.dropout};
}

/* ---- the tensors ----------------------------------------------------------------------------- */

/* The file's tensor for a GPT-2 name, with or without GPT2LMHeadModel's "transformer." prefix. */
static const struct st_tensor *find_gpt2(const struct st_file *f, const char *name)
{
    char prefixed[GPT2_NAME_MAX + 16];
    snprintf(prefixed, sizeof prefixed, "transformer.%s", name);
    const struct st_tensor *t = st_find(f, name);
    return t != NULL ? t : st_find(f, prefixed);
}

static enum rz_status read_entry(const struct st_file *f, const struct model_tensor *e,
                                 const char *name, bool transpose, float *dst, float *scratch,
                                 struct rz_err *err)
{
    const struct st_tensor *t = find_gpt2(f, name);
    int64_t want0 = transpose ? e->cols : e->rows, want1 = transpose ? e->rows : e->cols;
    if (t == NULL)
        return rz_fail(err, RZ_EDATA, "import: %s has no tensor '%s' (our %s)", f->path, name,
                       e->name);
    bool ok = e->cols == 1 ? t->ndim == 1 && t->shape[0] == e->rows
                           : t->ndim == 2 && t->shape[0] == want0 && t->shape[1] == want1;
    if (!ok)
        return rz_fail(err, RZ_EDATA, "import: %s: tensor '%s' has %d dimension(s) %lld x %lld; "
                       "config.json's model needs %s(%lld, %lld)", f->path, t->name, t->ndim,
                       (long long)(t->ndim > 0 ? t->shape[0] : 1),
                       (long long)(t->ndim > 1 ? t->shape[1] : 1), e->cols == 1 ? "1-D " : "",
                       (long long)want0, (long long)(e->cols == 1 ? 1 : want1));
    if (!transpose) {
        st_copy(f, t, dst);
        return RZ_OK;
    }
    st_copy(f, t, scratch);
    gpt2_transpose(dst, scratch, want0, want1);
    return RZ_OK;
}

/* GPT-2's causal-mask buffers (h.N.attn.bias, h.N.attn.masked_bias), which older files hold:
 * not parameters. */
static bool is_mask_buffer(const char *name)
{
    const char *p = strncmp(name, "transformer.", 12) == 0 ? name + 12 : name;
    int layer, used = 0;
    if (sscanf(p, "h.%d.%n", &layer, &used) != 1 || used == 0)
        return false;
    return strcmp(p + used, "attn.bias") == 0 || strcmp(p + used, "attn.masked_bias") == 0;
}

/* Every tensor of the file must have been read (or be a mask buffer): anything else is a model
 * ours is not (an untied head with tie_word_embeddings true, a bias GPT-2 does not have). */
static enum rz_status check_all_used(const struct st_file *f, const bool *used,
                                     struct rz_err *err)
{
    for (size_t i = 0; i < f->n; i++)
        if (!used[i] && !is_mask_buffer(f->tensors[i].name))
            return rz_fail(err, RZ_EDATA, "import: %s: tensor '%s' has no place in the model "
                           "config.json describes", f->path, f->tensors[i].name);
    return RZ_OK;
}

static enum rz_status read_params(const struct st_file *f, const struct exp_model *x,
                                  bool head_bias, struct rz_err *err)
{
    bool *used = calloc(f->n ? f->n : 1, sizeof *used);
    size_t largest = 1;
    for (size_t i = 0; i < x->count; i++)
        if ((size_t)(x->table[i].rows * x->table[i].cols) > largest)
            largest = (size_t)(x->table[i].rows * x->table[i].cols);
    float *scratch = malloc(largest * sizeof *scratch);
    enum rz_status st = RZ_OK;
    if (used == NULL || scratch == NULL)
        st = rz_fail(err, RZ_ENOMEM, "import: out of memory");
    for (size_t i = 0; i < x->count && st == RZ_OK; i++) {
        const struct model_tensor *e = &x->table[i];
        char name[GPT2_NAME_MAX];
        bool transpose;
        if (!gpt2_name_of(e, name, &transpose))
            continue;
        if (strcmp(e->name, "head.bias") == 0 && !head_bias)
            continue; /* not in the file: zero, as calloc left it (ryzen_zero_head_bias, or
                       * --set model.head_bias=true) */
        st = read_entry(f, e, name, transpose, x->params + e->offset, scratch, err);
        if (st == RZ_OK)
            used[find_gpt2(f, name) - f->tensors] = true;
    }
    if (st == RZ_OK)
        st = check_all_used(f, used, err);
    free(scratch);
    free(used);
    return st;
}

/* ---- the tokenizer and the checkpoint -------------------------------------------------------- */

/* tokenizer_config.json's sha256, when the directory has one ("" otherwise). */
static enum rz_status tokenizer_sha(const char *dir, char hex[65], bool *recorded,
                                    struct rz_err *err)
{
    char path[4200];
    struct gj_value *v = NULL;
    hex[0] = '\0';
    *recorded = false;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    FILE *probe = fopen(path, "rb");
    if (probe == NULL)
        return RZ_OK;
    fclose(probe);
    enum rz_status st = gj_parse_file(path, &v, err);
    const char *s = st == RZ_OK ? gj_get_str(v, "sha256") : NULL;
    bool ok = s != NULL && strlen(s) == 64;
    for (size_t i = 0; ok && i < 64; i++)
        ok = isxdigit((unsigned char)s[i]) && !isupper((unsigned char)s[i]);
    if (st == RZ_OK && !ok)
        st = rz_fail(err, RZ_EDATA, "import: %s: \"sha256\" is not 64 lowercase hex digits",
                     path);
    if (st == RZ_OK) {
        snprintf(hex, 65, "%s", s);
        *recorded = true;
    }
    gj_free(v);
    return st;
}

static enum rz_status write_config(const struct cfg *c, const char *path, char **yaml,
                                   char sha[65], struct rz_err *err)
{
    size_t len = 0;
    FILE *f = open_memstream(yaml, &len);
    if (f == NULL)
        return rz_fail(err, RZ_ENOMEM, "import: out of memory for the config text");
    cfg_write_yaml(c, f);
    if (fclose(f) != 0 || *yaml == NULL)
        return rz_fail(err, RZ_ENOMEM, "import: out of memory for the config text");
    rz_sha256_hex(*yaml, len, sha);
    return rz_durable_write_text(path, "import", *yaml, err);
}

static enum rz_status save_step0(const struct import_opts *o, const struct cfg *c,
                                 const struct exp_model *x, const char *tok_hex, bool tok_recorded,
                                 struct import_result *r, struct rz_err *err)
{
    char dir[4200];
    char *yaml = NULL;
    struct ckpt_meta meta = {
        .global_batch = c->training.batch_size * c->training.grad_accum, .world_size = 1,
        .init_seed = (uint64_t)c->training.seed, .data_seed = (uint64_t)c->data.seed,
        .dims = x->dims, .format_version = CKPT_FORMAT_VERSION,
        .tokenizer_recorded = tok_recorded};
    snprintf(meta.tokenizer_sha256, sizeof meta.tokenizer_sha256, "%s", tok_hex);
    snprintf(r->config, sizeof r->config, "%s/config.yaml", o->run_dir);
    enum rz_status st = write_config(c, r->config, &yaml, meta.config_sha256, err);
    meta.config_yaml = yaml;
    struct ckpt_tensors t = exp_tensors(x);
    snprintf(dir, sizeof dir, "%s/checkpoints", o->run_dir);
    if (st == RZ_OK)
        st = ckpt_save(dir, &meta, &t, r->checkpoint, sizeof r->checkpoint, err);
    if (st == RZ_OK)
        ckpt_params_sha256(&t, r->params_sha256);
    free(yaml);
    return st;
}

/* Import starts a run: a run directory that has a checkpoint already is not overwritten. */
static enum rz_status check_fresh(const char *run_dir, struct rz_err *err)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/checkpoints", run_dir);
    int64_t step = ckpt_newest_committed(dir);
    if (step >= 0)
        return rz_fail(err, RZ_ECONFIG, "import: %s already holds checkpoints (the newest is step "
                       "%lld); import into a new run directory", dir, (long long)step);
    return RZ_OK;
}

enum rz_status import_safetensors(const struct import_opts *o, struct import_result *r,
                                  struct rz_err *err)
{
    char json_path[4200], st_path[4200], tok_hex[65] = "";
    struct model_dims d;
    struct gpt2_extra extra;
    struct cfg c;
    struct exp_model x;
    struct st_file *f = NULL;
    bool tok_recorded = false;
    memset(r, 0, sizeof *r);
    memset(&d, 0, sizeof d);
    memset(&x, 0, sizeof x);
    snprintf(json_path, sizeof json_path, "%s/config.json", o->src_dir);
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", o->src_dir);
    enum rz_status st = check_fresh(o->run_dir, err);
    if (st == RZ_OK)
        st = gpt2_config_read(json_path, &d, &extra, err);
    if (st == RZ_OK)
        st = build_config(&c, &d, &extra, o, json_path, err);
    if (st == RZ_OK) {
        x.dims = dims_of(&c);
        st = exp_model_alloc(&x, err);
    }
    if (st == RZ_OK)
        st = tokenizer_sha(o->src_dir, tok_hex, &tok_recorded, err);
    if (st == RZ_OK)
        st = st_read(&f, st_path, err);
    if (st == RZ_OK)
        st = read_params(f, &x, extra.head_bias, err);
    if (st == RZ_OK)
        st = rz_mkdirs(o->run_dir, err);
    if (st == RZ_OK)
        st = save_step0(o, &c, &x, tok_hex, tok_recorded, r, err);
    if (st == RZ_OK && extra.head_bias)
        snprintf(r->note, sizeof r->note, "the head bias came from lm_head.bias "
                 "(\"ryzen_lm_head_bias\": true)");
    st_file_free(f);
    exp_model_free(&x);
    return st;
}
