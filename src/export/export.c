/* export.c: `ryzen-ckpt export --format safetensors` (export.h): find the checkpoint, load it
 * verified, refuse what GPT-2 cannot hold, write model.safetensors, config.json and the
 * tokenizer's files.  Also the pieces import (export_import.c) shares: the model table of a
 * checkpoint's config, and the tokenizer files.
 * Deliberately not here: import (export_import.c), the format (safetensors.c), the name and
 * layout mapping (gpt2_map.c). */
#include "config.h"

#include "export/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "config/cfg.h"
#include "core/durable.h"
#include "core/json.h"
#include "core/sha256.h"
#include "core/util.h"
#include "export/export_internal.h"
#include "export/gpt2_map.h"
#include "export/safetensors.h"

/* ---- which checkpoint ------------------------------------------------------------------------ */

/* A run directory's checkpoints/, or the directory itself. */
static void checkpoints_dir(const char *dir, char *out, size_t len)
{
    struct stat sb;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/checkpoints", dir);
    snprintf(out, len, "%s", stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode) ? sub : dir);
}

/* The newest checkpoint of DIR that verifies, by ckpt_list (which quarantines nothing). */
static enum rz_status newest_valid(const char *dir, char *path, size_t len, struct rz_err *err)
{
    char cdir[4096];
    struct ckpt_entry *v = NULL;
    size_t n = 0;
    checkpoints_dir(dir, cdir, sizeof cdir);
    enum rz_status st = ckpt_list(cdir, &v, &n, err);
    if (st != RZ_OK)
        return st;
    path[0] = '\0';
    for (size_t i = n; i-- > 0 && path[0] == '\0';)
        if (v[i].valid)
            snprintf(path, len, "%s", v[i].path);
    free(v);
    if (path[0] == '\0')
        return rz_fail(err, RZ_ENOCKPT, "export: %s holds no checkpoint that verifies (%zu "
                       "step-*.h5 file(s) there)", cdir, n);
    return RZ_OK;
}

static enum rz_status resolve_source(const char *source, char *path, size_t len,
                                     struct rz_err *err)
{
    struct stat sb;
    int found = stat(source, &sb) == 0 ? 0 : errno;
    if (found != 0 || !(S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode)))
        return rz_fail(err, RZ_ENOCKPT, "export: %s: %s", source,
                       found == ENOENT ? "no such checkpoint or run directory"
                       : found != 0    ? strerror(found) : "not a checkpoint");
    if (S_ISDIR(sb.st_mode))
        return newest_valid(source, path, len, err);
    snprintf(path, len, "%s", source);
    return RZ_OK;
}

/* ---- the checkpoint's model ------------------------------------------------------------------ */

enum rz_status exp_model_of(struct exp_model *x, const struct ckpt_meta *meta, const char *path,
                            struct rz_err *err)
{
    struct cfg c;
    memset(x, 0, sizeof *x);
    if (cfg_load_string(&c, path, meta->config_yaml != NULL ? meta->config_yaml : "", err) !=
        RZ_OK) {
        char cause[RZ_ERR_MSG_MAX]; /* err->msg cannot be its own argument */
        rz_fmt(cause, sizeof cause, "%s", err->msg);
        return rz_fail(err, RZ_ENOCKPT, "%s: its stored config does not load: %s", path, cause);
    }
    x->dims = meta->dims;
    x->dims.tie_embeddings = strcmp(c.model.tie_embeddings, "true") == 0;
    x->dims.no_head_bias = strcmp(c.model.head_bias, "false") == 0;
    x->dims.dropout = (float)c.model.dropout;
    return exp_model_alloc(x, err);
}

enum rz_status exp_model_alloc(struct exp_model *x, struct rz_err *err)
{
    x->n_floats = model_describe(&x->dims, &x->table, &x->count);
    if (x->table != NULL && x->n_floats > 0)
        x->params = calloc(3 * x->n_floats, sizeof(float)); /* params, adam_m, adam_v */
    if (x->params == NULL)
        return rz_fail(err, RZ_ENOMEM, "out of memory for a model of %zu parameters",
                       x->n_floats);
    return RZ_OK;
}

struct ckpt_tensors exp_tensors(const struct exp_model *x)
{
    return (struct ckpt_tensors){.table = x->table, .count = x->count, .n_floats = x->n_floats,
                                 .params = x->params, .adam_m = x->params + x->n_floats,
                                 .adam_v = x->params + 2 * x->n_floats};
}

void exp_model_free(struct exp_model *x)
{
    free(x->table);
    free(x->params);
    memset(x, 0, sizeof *x);
}

/* ---- the tokenizer --------------------------------------------------------------------------- */

enum rz_status exp_file_sha256(const char *path, char hex[65], struct rz_err *err)
{
    char *bytes = NULL;
    size_t len = 0;
    enum rz_status st = rz_read_file(path, &bytes, &len, err);
    if (st == RZ_OK)
        rz_sha256_hex(bytes, len, hex);
    free(bytes);
    return st;
}

static void tokenizer_config(FILE *f, const void *ctx)
{
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "tokenizer_type", "sentencepiece");
    rz_json_kv_string(&j, "model_file", "tokenizer.model");
    rz_json_kv_string(&j, "sha256", ctx);
    rz_json_kv_string(&j, "unk_token", "<unk>");
    rz_json_kv_string(&j, "bos_token", "<s>");
    rz_json_kv_string(&j, "eos_token", "</s>");
    rz_json_kv_string(&j, "text_model", "each line encoded alone, its newline as the byte piece "
                      "<0x0A>; identity normalizer, no dummy prefix; bytes that are not UTF-8 as "
                      "<0xNN> pieces (ryzen-llm src/tok/tok.h)");
    rz_json_object_end(&j);
    fputc('\n', f);
}

/* The tokenizer named (checked against the checkpoint's record) or a note that there is none. */
static enum rz_status check_tokenizer(const struct export_opts *o, const struct ckpt_meta *meta,
                                      char hex[65], struct export_result *r, struct rz_err *err)
{
    hex[0] = '\0';
    bool recorded = meta->tokenizer_recorded && meta->tokenizer_sha256[0] != '\0';
    if (o->tokenizer == NULL) {
        if (recorded)
            snprintf(r->note, sizeof r->note, "no tokenizer exported: the checkpoint was "
                     "trained with tokenizer %s; pass --tokenizer MODEL to include it",
                     meta->tokenizer_sha256);
        return RZ_OK;
    }
    enum rz_status st = exp_file_sha256(o->tokenizer, hex, err);
    if (st == RZ_OK && recorded && strcmp(hex, meta->tokenizer_sha256) != 0)
        st = rz_fail(err, RZ_ECONFIG, "export: tokenizer %s (SHA-256 %s) is not the one the "
                     "checkpoint was trained with (%s)", o->tokenizer, hex,
                     meta->tokenizer_sha256);
    return st;
}

static enum rz_status copy_file(const char *from, const char *to, struct rz_err *err)
{
    char *bytes = NULL;
    size_t len = 0;
    struct rz_durable d;
    enum rz_status st = rz_read_file(from, &bytes, &len, err);
    if (st == RZ_OK)
        st = rz_durable_open(&d, to, "export", err);
    if (st == RZ_OK) {
        fwrite(bytes, 1, len, d.f);
        st = rz_durable_commit(&d, err);
    }
    free(bytes);
    return st;
}

static enum rz_status write_tokenizer(const char *src, const char *out_dir, const char *hex,
                                      struct rz_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tokenizer.model", out_dir);
    enum rz_status st = copy_file(src, path, err);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", out_dir);
    if (st == RZ_OK)
        st = rz_durable_write(path, "export", tokenizer_config, hex, err);
    return st;
}

/* ---- the files ------------------------------------------------------------------------------- */

/* GPT-2's tensors of x (the head bias only when written), transposed where GPT-2's layout is
 * (in, out); their data in `out` (n_floats floats). */
static size_t gpt2_entries(const struct exp_model *x, bool head_bias, struct st_entry *e,
                           char (*names)[GPT2_NAME_MAX], float *out)
{
    size_t n = 0;
    for (size_t i = 0; i < x->count; i++) {
        const struct model_tensor *t = &x->table[i];
        bool transpose;
        if (!gpt2_name_of(t, names[n], &transpose) ||
            (strcmp(t->name, "head.bias") == 0 && !head_bias))
            continue;
        float *dst = out + t->offset;
        const float *src = x->params + t->offset;
        if (transpose)
            gpt2_transpose(dst, src, t->rows, t->cols);
        else
            memcpy(dst, src, (size_t)(t->rows * t->cols) * sizeof *dst);
        e[n] = (struct st_entry){.name = names[n], .ndim = t->cols == 1 ? 1 : 2, .data = dst,
                                 .shape = {transpose ? t->cols : t->rows,
                                           transpose ? t->rows : t->cols}};
        n++;
    }
    return n;
}

struct config_ctx {
    const struct model_dims *dims;
    const struct gpt2_extra *extra;
};

static void config_json(FILE *f, const void *p)
{
    const struct config_ctx *c = p;
    gpt2_config_write(f, c->dims, c->extra);
}

static enum rz_status write_model(const struct exp_model *x, const struct ckpt_meta *meta,
                                  const char *ckpt_path, const char *tok_hex, bool head_bias,
                                  const char *out_dir, size_t *written, struct rz_err *err)
{
    struct st_entry *e = calloc(x->count, sizeof *e);
    char(*names)[GPT2_NAME_MAX] = calloc(x->count, sizeof *names);
    float *out = malloc(x->n_floats * sizeof *out);
    enum rz_status st = RZ_OK;
    if (e == NULL || names == NULL || out == NULL)
        st = rz_fail(err, RZ_ENOMEM, "export: out of memory for the GPT-2 layout");
    char step[32], path[4200];
    snprintf(step, sizeof step, "%lld", (long long)meta->step);
    const struct st_meta md[] = {
        {"format", "pt"}, {"ryzen_checkpoint", ckpt_path}, {"ryzen_step", step},
        {"ryzen_params_sha256", meta->params_sha256}, {"ryzen_build", meta->build},
        {"ryzen_tokenizer_sha256", tok_hex[0] ? tok_hex : meta->tokenizer_sha256}};
    snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
    if (st == RZ_OK) {
        *written = gpt2_entries(x, head_bias, e, names, out);
        st = st_write(path, e, *written, md, sizeof md / sizeof md[0], err);
    }
    free(out);
    free(names);
    free(e);
    return st;
}

enum rz_status export_safetensors(const struct export_opts *o, struct export_result *r,
                                  struct rz_err *err)
{
    struct ckpt_meta meta;
    struct exp_model x;
    char tok_hex[65] = "";
    memset(r, 0, sizeof *r);
    memset(&meta, 0, sizeof meta);
    memset(&x, 0, sizeof x);
    enum rz_status st = resolve_source(o->source, r->checkpoint, sizeof r->checkpoint, err);
    if (st == RZ_OK)
        st = ckpt_read_meta(r->checkpoint, &meta, err);
    if (st == RZ_OK)
        st = exp_model_of(&x, &meta, r->checkpoint, err);
    ckpt_meta_free(&meta);
    struct ckpt_tensors t = exp_tensors(&x);
    if (st == RZ_OK)
        st = ckpt_load(r->checkpoint, &meta, &t, err);
    if (st == RZ_OK)
        st = gpt2_check(x.table, x.count, x.params, o->allow_head_bias, &r->head_bias, err);
    if (st == RZ_OK)
        st = check_tokenizer(o, &meta, tok_hex, r, err);
    if (st == RZ_OK)
        st = rz_mkdirs(o->out_dir, err);
    if (st == RZ_OK)
        st = write_model(&x, &meta, r->checkpoint, tok_hex, r->head_bias, o->out_dir,
                         &r->tensors, err);
    struct gpt2_extra extra = {.head_bias = r->head_bias,
                               .zero_head_bias = !x.dims.no_head_bias && !r->head_bias,
                               .dropout = x.dims.dropout, .has_tokenizer = tok_hex[0] != '\0'};
    struct config_ctx cc = {&x.dims, &extra};
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", o->out_dir);
    if (st == RZ_OK)
        st = rz_durable_write(path, "export", config_json, &cc, err);
    if (st == RZ_OK && tok_hex[0] != '\0')
        st = write_tokenizer(o->tokenizer, o->out_dir, tok_hex, err);
    if (st == RZ_OK) {
        r->step = meta.step;
        snprintf(r->params_sha256, sizeof r->params_sha256, "%s", meta.params_sha256);
    }
    ckpt_meta_free(&meta);
    exp_model_free(&x);
    return st;
}
