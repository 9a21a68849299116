/* gpt2_map.c: our tensor names and layouts against Hugging Face GPT-2's, and config.json with
 * GPT2Config's keys (gpt2_map.h says what maps to what and what is refused).
 * Deliberately not here: reading or writing checkpoints and safetensors files (export.c). */
#include "config.h"

#include "export/gpt2_map.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/json_read.h"

/* Per block: our name after "hL." -> GPT-2's after "h.L.", and whether it is a Conv1D weight. */
static const struct {
    const char *ours, *theirs;
    bool transpose;
} block_names[] = {
    {"ln1.weight", "ln_1.weight", false},        {"ln1.bias", "ln_1.bias", false},
    {"attn.qkv.weight", "attn.c_attn.weight", true}, {"attn.qkv.bias", "attn.c_attn.bias", false},
    {"attn.proj.weight", "attn.c_proj.weight", true},
    {"attn.proj.bias", "attn.c_proj.bias", false},
    {"ln2.weight", "ln_2.weight", false},        {"ln2.bias", "ln_2.bias", false},
    {"mlp.fc.weight", "mlp.c_fc.weight", true},  {"mlp.fc.bias", "mlp.c_fc.bias", false},
    {"mlp.proj.weight", "mlp.c_proj.weight", true}, {"mlp.proj.bias", "mlp.c_proj.bias", false},
};

/* The model-wide tensors. */
static const struct {
    const char *ours, *theirs;
} top_names[] = {
    {"wte", "wte.weight"},         {"wpe", "wpe.weight"},       {"ln_f.weight", "ln_f.weight"},
    {"ln_f.bias", "ln_f.bias"},    {"head.weight", "lm_head.weight"},
    {"head.bias", "lm_head.bias"},
};

bool gpt2_name_of(const struct model_tensor *e, char name[GPT2_NAME_MAX], bool *transpose)
{
    *transpose = false;
    for (size_t i = 0; i < sizeof top_names / sizeof top_names[0]; i++)
        if (strcmp(e->name, top_names[i].ours) == 0) {
            snprintf(name, GPT2_NAME_MAX, "%s", top_names[i].theirs);
            return true;
        }
    int layer = -1, used = 0;
    if (sscanf(e->name, "h%d.%n", &layer, &used) != 1 || used == 0 || layer < 0)
        return false;
    for (size_t i = 0; i < sizeof block_names / sizeof block_names[0]; i++)
        if (strcmp(e->name + used, block_names[i].ours) == 0) {
            snprintf(name, GPT2_NAME_MAX, "h.%d.%s", layer, block_names[i].theirs);
            *transpose = block_names[i].transpose;
            return true;
        }
    return false;
}

enum rz_status gpt2_check(const struct model_tensor *table, size_t count, const float *params,
                          bool allow_head_bias, bool *head_bias, struct rz_err *err)
{
    *head_bias = false;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(table[i].name, "head.bias") != 0)
            continue;
        const float *b = params + table[i].offset;
        size_t n = (size_t)(table[i].rows * table[i].cols), nonzero = 0;
        float most = 0.0f;
        for (size_t k = 0; k < n; k++) {
            uint32_t bits;
            memcpy(&bits, &b[k], sizeof bits);
            nonzero += bits != 0;
            most = fabsf(b[k]) > most ? fabsf(b[k]) : most;
        }
        *head_bias = nonzero > 0;
        if (*head_bias && !allow_head_bias)
            return rz_fail(err, RZ_ECONFIG, "the output head has a bias (%zu of its %zu values "
                           "are not zero, the largest %g in magnitude) and GPT-2's lm_head has "
                           "none, so a GPT-2 reader would compute other logits; pass "
                           "--head-bias to write it as lm_head.bias with config.json "
                           "\"ryzen_lm_head_bias\": true (readers must add it themselves), "
                           "or train with model.head_bias: false for GPT-2's head",
                           nonzero, n, (double)most);
    }
    return RZ_OK;
}

void gpt2_transpose(float *dst, const float *src, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            dst[c * rows + r] = src[r * cols + c];
}

static void token_id(struct rz_json *j, const char *key, bool known, int64_t id)
{
    rz_json_key(j, key);
    if (known)
        rz_json_int(j, id);
    else
        rz_json_null(j);
}

void gpt2_config_write(FILE *f, const struct model_dims *d, const struct gpt2_extra *x)
{
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_key(&j, "architectures");
    rz_json_array_begin(&j);
    rz_json_string(&j, "GPT2LMHeadModel");
    rz_json_array_end(&j);
    rz_json_kv_string(&j, "model_type", "gpt2");
    rz_json_kv_int(&j, "vocab_size", d->vocab);
    rz_json_kv_int(&j, "n_positions", d->seq_len);
    rz_json_kv_int(&j, "n_ctx", d->seq_len);
    rz_json_kv_int(&j, "n_embd", d->d_model);
    rz_json_kv_int(&j, "n_layer", d->n_layers);
    rz_json_kv_int(&j, "n_head", d->n_heads);
    rz_json_kv_int(&j, "n_inner", d->d_ff);
    rz_json_kv_string(&j, "activation_function", "gelu"); /* exact erf, not gelu_new */
    rz_json_kv_float(&j, "resid_pdrop", x->dropout);
    rz_json_kv_float(&j, "embd_pdrop", x->dropout);
    rz_json_kv_double(&j, "attn_pdrop", 0.0);
    rz_json_kv_float(&j, "layer_norm_epsilon", d->ln_eps);
    rz_json_kv_float(&j, "initializer_range", d->init_std);
    rz_json_kv_bool(&j, "scale_attn_weights", true);
    rz_json_kv_bool(&j, "scale_attn_by_inverse_layer_idx", false);
    rz_json_kv_bool(&j, "reorder_and_upcast_attn", false);
    rz_json_kv_bool(&j, "use_cache", true);
    rz_json_kv_bool(&j, "tie_word_embeddings", d->tie_embeddings != 0);
    token_id(&j, "bos_token_id", x->has_tokenizer, 1); /* SentencePiece's <s>, </s> (tok.h) */
    token_id(&j, "eos_token_id", x->has_tokenizer, 2);
    rz_json_kv_string(&j, "torch_dtype", "float32");
    rz_json_kv_bool(&j, "ryzen_lm_head_bias", x->head_bias);
    rz_json_kv_bool(&j, "ryzen_zero_head_bias", x->zero_head_bias);
    rz_json_object_end(&j);
    fputc('\n', f);
}

/* ---- reading --------------------------------------------------------------------------------- */

static enum rz_status need_int(const char *path, const struct gj_value *c, const char *key,
                               int64_t *out, struct rz_err *err)
{
    if (!gj_get_int(c, key, out) || *out < 1)
        return rz_fail(err, RZ_EDATA, "%s: \"%s\" is missing or not a positive integer", path,
                       key);
    return RZ_OK;
}

/* An optional number (the default when absent or null). */
static enum rz_status opt_num(const char *path, const struct gj_value *c, const char *key,
                              double dflt, double *out, struct rz_err *err)
{
    const struct gj_value *v = gj_get(c, key);
    *out = dflt;
    if (v == NULL || v->type == GJ_NULL)
        return RZ_OK;
    if (v->type != GJ_NUM || !isfinite(v->num) || v->num < 0.0)
        return rz_fail(err, RZ_EDATA, "%s: \"%s\" is not a non-negative number", path, key);
    *out = v->num;
    return RZ_OK;
}

static bool opt_bool(const struct gj_value *c, const char *key, bool dflt)
{
    bool b;
    return gj_get_bool(c, key, &b) ? b : dflt;
}

/* What our model cannot run, by GPT2Config's keys (absent: GPT2Config's default). */
static enum rz_status check_supported(const char *path, const struct gj_value *c,
                                      struct rz_err *err)
{
    const char *type = gj_get_str(c, "model_type");
    const char *act = gj_get_str(c, "activation_function");
    if (type == NULL || strcmp(type, "gpt2") != 0)
        return rz_fail(err, RZ_ECONFIG, "%s: model_type is %s%s%s, not \"gpt2\": only GPT-2's "
                       "architecture maps onto ours", path, type ? "\"" : "",
                       type ? type : "missing", type ? "\"" : "");
    if (act == NULL)
        act = "gelu_new";
    if (strcmp(act, "gelu") != 0)
        return rz_fail(err, RZ_ECONFIG, "%s: activation_function \"%s\": our MLP computes the "
                       "exact GELU (0.5 x (1 + erf(x / sqrt 2)), \"gelu\"), so a model trained "
                       "with %s would compute other values here", path, act,
                       strcmp(act, "gelu_new") == 0 ? "GPT-2's tanh approximation (gelu_new)"
                                                    : "another activation");
    if (!opt_bool(c, "scale_attn_weights", true) ||
        opt_bool(c, "scale_attn_by_inverse_layer_idx", false))
        return rz_fail(err, RZ_ECONFIG, "%s: the attention scores are not scaled by "
                       "1/sqrt(head size) alone (scale_attn_weights false or "
                       "scale_attn_by_inverse_layer_idx true), as ours are", path);
    return RZ_OK;
}

static enum rz_status read_dims(const char *path, const struct gj_value *c, struct model_dims *d,
                                struct rz_err *err)
{
    enum rz_status st = need_int(path, c, "vocab_size", &d->vocab, err);
    if (st == RZ_OK)
        st = need_int(path, c, "n_positions", &d->seq_len, err);
    if (st == RZ_OK)
        st = need_int(path, c, "n_embd", &d->d_model, err);
    if (st == RZ_OK)
        st = need_int(path, c, "n_layer", &d->n_layers, err);
    if (st == RZ_OK)
        st = need_int(path, c, "n_head", &d->n_heads, err);
    const struct gj_value *inner = gj_get(c, "n_inner");
    if (st == RZ_OK && (inner == NULL || inner->type == GJ_NULL))
        d->d_ff = 4 * d->d_model; /* GPT2Config's default */
    else if (st == RZ_OK)
        st = need_int(path, c, "n_inner", &d->d_ff, err);
    double eps = 1e-5, std = 0.02;
    if (st == RZ_OK)
        st = opt_num(path, c, "layer_norm_epsilon", 1e-5, &eps, err);
    if (st == RZ_OK)
        st = opt_num(path, c, "initializer_range", 0.02, &std, err);
    d->ln_eps = (float)eps;
    d->init_std = (float)std;
    d->tie_embeddings = opt_bool(c, "tie_word_embeddings", true);
    return st;
}

enum rz_status gpt2_config_read(const char *path, struct model_dims *dims, struct gpt2_extra *x,
                                struct rz_err *err)
{
    struct gj_value *c = NULL;
    enum rz_status st = gj_parse_file(path, &c, err);
    if (st == RZ_OK && c->type != GJ_OBJ)
        st = rz_fail(err, RZ_EDATA, "%s: not a JSON object", path);
    if (st == RZ_OK)
        st = check_supported(path, c, err);
    if (st == RZ_OK)
        st = read_dims(path, c, dims, err);
    double p = 0.0;
    if (st == RZ_OK)
        st = opt_num(path, c, "resid_pdrop", 0.1, &p, err);
    if (st == RZ_OK) {
        x->dropout = (float)p;
        x->head_bias = opt_bool(c, "ryzen_lm_head_bias", false);
        x->zero_head_bias = !x->head_bias && opt_bool(c, "ryzen_zero_head_bias", false);
        x->has_tokenizer = gj_get(c, "bos_token_id") != NULL;
    }
    gj_free(c);
    return st;
}
