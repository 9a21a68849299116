#include "config.h"

/* check_ckpt_export: the "export" test case of check_ckpt (check_ckpt.c builds the suite): the
 * safetensors writer and reader (export/safetensors.h) round trip bit for bit and refuse damaged
 * headers naming the file and the cause; the GPT-2 names and layouts (export/gpt2_map.h) cover
 * every tensor once, transpose the Conv1D weights, and refuse a head bias GPT-2 cannot hold;
 * config.json reads back as written; a checkpoint exported and imported (export/export.h) has
 * the same params_sha256, and import refuses what our model cannot run.  Fixtures from
 * ckpt_fixtures.c. */

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "config/cfg.h"
#include "core/sha256.h"
#include "core/status.h"
#include "export/export.h"
#include "export/gpt2_map.h"
#include "export/safetensors.h"
#include "testutil.h"

#include "ckpt_fixtures.h"

/* ---- safetensors ----------------------------------------------------------------------------- */

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* A file of the 8-byte length of `header`, the header, and `data_len` bytes of data. */
static void write_st(const char *path, const char *header, size_t data_len)
{
    size_t h = strlen(header);
    uint8_t *buf = calloc(8 + h + data_len + 1, 1);
    ck_assert_ptr_nonnull(buf);
    for (int b = 0; b < 8; b++)
        buf[b] = (uint8_t)((uint64_t)h >> (8 * b));
    memcpy(buf + 8, header, h);
    write_bytes(path, buf, 8 + h + data_len);
    free(buf);
}

START_TEST(safetensors_round_trip_is_bit_exact)
{
    char path[512];
    path_in(path, sizeof path, "rt.safetensors");
    float a[6] = {1.0f, -0.0f, 3.5e-42f, -2.0f, 1e30f, 0.25f}, b[3] = {7.0f, 8.0f, 9.0f};
    uint32_t nan_bits = 0x7fc01234u; /* a NaN with a payload */
    memcpy(&b[1], &nan_bits, sizeof nan_bits);
    float s = 42.0f;
    const struct st_entry e[] = {{.name = "h.0.w", .ndim = 2, .shape = {2, 3}, .data = a},
                                 {.name = "b", .ndim = 1, .shape = {3}, .data = b},
                                 {.name = "scalar", .ndim = 0, .data = &s}};
    const struct st_meta md[] = {{"format", "pt"}, {"note", "q\"uote"}};
    struct rz_err err;
    ck_assert_msg(st_write(path, e, 3, md, 2, &err) == RZ_OK, "%s", err.msg);
    struct st_file *f = NULL;
    ck_assert_msg(st_read(&f, path, &err) == RZ_OK, "%s", err.msg);
    ck_assert_uint_eq(f->n, 3);
    ck_assert_uint_eq((size_t)(f->data - f->bytes) % 8, 0); /* the header is padded */
    ck_assert_str_eq(st_meta_get(f, "note"), "q\"uote");
    ck_assert_ptr_null(st_meta_get(f, "absent"));
    const struct st_tensor *t = st_find(f, "h.0.w");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->ndim, 2);
    ck_assert_int_eq(t->shape[0], 2);
    ck_assert_int_eq(t->shape[1], 3);
    ck_assert_uint_eq(t->begin, 0);
    ck_assert_uint_eq(t->end, 24);
    float got[6];
    st_copy(f, t, got);
    ck_assert(memcmp(got, a, sizeof a) == 0);
    t = st_find(f, "b");
    ck_assert_uint_eq(st_numel(t), 3);
    st_copy(f, t, got);
    ck_assert(memcmp(got, b, sizeof b) == 0);
    t = st_find(f, "scalar");
    ck_assert_int_eq(t->ndim, 0);
    ck_assert_uint_eq(st_numel(t), 1);
    ck_assert_ptr_null(st_find(f, "missing"));
    st_file_free(f);
    /* a repeated name is refused before anything is written */
    const struct st_entry twice[] = {e[1], e[1]};
    path_in(path, sizeof path, "twice.safetensors");
    ck_assert_int_eq(st_write(path, twice, 2, NULL, 0, &err), RZ_ECONFIG);
    ck_assert(!exists(path));
}
END_TEST

/* Each damaged header and the words its message must hold. */
static const struct {
    const char *header; /* NULL: the raw bytes below */
    size_t data_len;
    const char *cause;
} damaged[] = {
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[100],\"data_offsets\":[0,400]}}", 16, "outside"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlap"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, "no tensor"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "end at byte 4"},
    {"{\"a\":{\"dtype\":\"Q7\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "unknown dtype 'Q7'"},
    {"{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "only F32"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "not the shape"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "outside"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape[0]"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "data_offsets"},
    {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "no dtype"},
    {"{\"__metadata__\":{\"k\":1}}", 0, "not a string"},
    {"{\"a\": nope}", 0, "header"},
    {"[1, 2]     ", 0, "does not start with '{'"},
};

START_TEST(safetensors_damaged_headers_are_refused_by_cause)
{
    char path[512];
    struct rz_err err;
    struct st_file *f = NULL;
    path_in(path, sizeof path, "bad.safetensors");
    write_st(path, damaged[_i].header, damaged[_i].data_len);
    rz_err_clear(&err);
    ck_assert_int_eq(st_read(&f, path, &err), RZ_EDATA);
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(err.msg, path) != NULL, "no file name in: %s", err.msg);
    ck_assert_msg(strstr(err.msg, damaged[_i].cause) != NULL, "case %d: '%s' not in: %s", _i,
                  damaged[_i].cause, err.msg);
}
END_TEST

START_TEST(safetensors_truncated_files_are_refused)
{
    char path[512];
    struct rz_err err;
    struct st_file *f = NULL;
    path_in(path, sizeof path, "short.safetensors");
    write_bytes(path, "\x10\x00\x00", 3); /* shorter than the length itself */
    ck_assert_int_eq(st_read(&f, path, &err), RZ_EDATA);
    ck_assert_msg(strstr(err.msg, "truncated") && strstr(err.msg, path), "%s", err.msg);
    const uint8_t len_only[12] = {0xe8, 0x03, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    write_bytes(path, len_only, sizeof len_only); /* says 1000 header bytes, has 4 */
    ck_assert_int_eq(st_read(&f, path, &err), RZ_EDATA);
    ck_assert_msg(strstr(err.msg, "header length 1000 runs past the end"), "%s", err.msg);
    path_in(path, sizeof path, "absent.safetensors");
    ck_assert_int_eq(st_read(&f, path, &err), RZ_EIO);
    ck_assert_msg(strstr(err.msg, path) != NULL, "%s", err.msg);
}
END_TEST

/* ---- the GPT-2 mapping ----------------------------------------------------------------------- */

static const struct model_dims tiny_dims = {.vocab = 64, .d_model = 16, .n_heads = 2,
                                            .n_layers = 2, .d_ff = 32, .seq_len = 8, .batch = 2,
                                            .ln_eps = 1e-5f, .init_std = 0.02f};

START_TEST(gpt2_names_cover_every_tensor_once)
{
    struct model_dims d = tiny_dims;
    d.tie_embeddings = _i;
    struct model_tensor *t = NULL;
    size_t n = 0, named = 0, transposed = 0;
    ck_assert_uint_gt(model_describe(&d, &t, &n), 0);
    char names[64][GPT2_NAME_MAX];
    for (size_t i = 0; i < n; i++) {
        bool tr;
        ck_assert_msg(gpt2_name_of(&t[i], names[named], &tr), "%s has no name", t[i].name);
        transposed += tr;
        ck_assert_msg(!tr || t[i].cols > 1, "%s", t[i].name);
        for (size_t j = 0; j < named; j++)
            ck_assert_str_ne(names[j], names[named]);
        named++;
    }
    ck_assert_uint_eq(transposed, 4 * (size_t)d.n_layers);
    ck_assert_str_eq(names[0], "wte.weight");
    ck_assert_str_eq(names[1], "wpe.weight");
    ck_assert_str_eq(names[2 + 12 + 2], "h.1.attn.c_attn.weight");
    ck_assert_str_eq(names[2 + 12 + 11], "h.1.mlp.c_proj.bias");
    ck_assert_str_eq(names[n - 1], "lm_head.bias");
    ck_assert_str_eq(names[n - 2], _i ? "ln_f.bias" : "lm_head.weight");
    struct model_tensor odd = {.name = "h0.attn.rope", .rows = 1, .cols = 1};
    bool tr;
    ck_assert(!gpt2_name_of(&odd, names[0], &tr));
    free(t);
}
END_TEST

START_TEST(gpt2_transpose_is_conv1d_layout)
{
    const float w[6] = {1, 2, 3, 4, 5, 6}; /* (out 2, in 3), as nn.Linear */
    float c[6];
    gpt2_transpose(c, w, 2, 3);                /* (in 3, out 2), as Conv1D */
    const float want[6] = {1, 4, 2, 5, 3, 6};
    ck_assert(memcmp(c, want, sizeof want) == 0);
}
END_TEST

START_TEST(gpt2_head_bias_is_refused_unless_allowed)
{
    struct model_dims d = tiny_dims;
    struct model_tensor *t = NULL;
    size_t n = 0;
    size_t np = model_describe(&d, &t, &n);
    float *p = calloc(np, sizeof *p);
    bool hb = true;
    struct rz_err err;
    ck_assert_int_eq(gpt2_check(t, n, p, false, &hb, &err), RZ_OK);
    ck_assert(!hb);
    p[t[n - 1].offset + 3] = -0.0f; /* not +0.0: import could not give these bits back */
    ck_assert_int_eq(gpt2_check(t, n, p, false, &hb, &err), RZ_ECONFIG);
    ck_assert_msg(strstr(err.msg, "lm_head has none") && strstr(err.msg, "--head-bias"), "%s",
                  err.msg);
    ck_assert_int_eq(gpt2_check(t, n, p, true, &hb, &err), RZ_OK);
    ck_assert(hb);
    free(p);
    free(t);
}
END_TEST

START_TEST(gpt2_config_json_reads_back)
{
    char path[512];
    path_in(path, sizeof path, "config.json");
    struct model_dims d = tiny_dims, back;
    d.tie_embeddings = 1;
    struct gpt2_extra x = {.head_bias = true, .zero_head_bias = true, .dropout = 0.1f,
                           .has_tokenizer = true}, y;
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    gpt2_config_write(f, &d, &x);
    ck_assert_int_eq(fclose(f), 0);
    memset(&back, 0, sizeof back);
    struct rz_err err;
    ck_assert_msg(gpt2_config_read(path, &back, &y, &err) == RZ_OK, "%s", err.msg);
    ck_assert_int_eq(back.vocab, d.vocab);
    ck_assert_int_eq(back.d_model, d.d_model);
    ck_assert_int_eq(back.n_heads, d.n_heads);
    ck_assert_int_eq(back.n_layers, d.n_layers);
    ck_assert_int_eq(back.d_ff, d.d_ff);
    ck_assert_int_eq(back.seq_len, d.seq_len);
    ck_assert(back.ln_eps == d.ln_eps && back.init_std == d.init_std);
    ck_assert_int_eq(back.tie_embeddings, 1);
    ck_assert(y.head_bias && y.dropout == 0.1f && y.has_tokenizer);
    ck_assert(!y.zero_head_bias); /* lm_head.bias in the file: the zero head bias cannot be */
    x.head_bias = false;          /* a zero head bias left out of the file */
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    gpt2_config_write(f, &d, &x);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_msg(gpt2_config_read(path, &back, &y, &err) == RZ_OK, "%s", err.msg);
    ck_assert(!y.head_bias && y.zero_head_bias);
    /* a stock GPT-2 config.json, without our keys: no head bias at all */
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"model_type\":\"gpt2\",\"activation_function\":\"gelu\",\"vocab_size\":64,"
          "\"n_positions\":8,\"n_embd\":16,\"n_layer\":2,\"n_head\":2}", f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_msg(gpt2_config_read(path, &back, &y, &err) == RZ_OK, "%s", err.msg);
    ck_assert(!y.head_bias && !y.zero_head_bias);
}
END_TEST

/* config.json texts import must refuse, and the words of the reason. */
static const struct {
    const char *json, *cause;
    enum rz_status st;
} unsupported[] = {
    {"{\"model_type\":\"gpt2\",\"activation_function\":\"gelu_new\"}", "tanh approximation",
     RZ_ECONFIG},
    {"{\"model_type\":\"gpt2\"}", "gelu_new", RZ_ECONFIG}, /* GPT2Config's default */
    {"{\"model_type\":\"llama\"}", "not \"gpt2\"", RZ_ECONFIG},
    {"{\"model_type\":\"gpt2\",\"activation_function\":\"gelu\","
     "\"scale_attn_by_inverse_layer_idx\":true}", "1/sqrt(head size)", RZ_ECONFIG},
    {"{\"model_type\":\"gpt2\",\"activation_function\":\"gelu\",\"n_embd\":16}", "vocab_size",
     RZ_EDATA},
};

START_TEST(gpt2_config_refuses_what_we_cannot_run)
{
    char path[512];
    path_in(path, sizeof path, "config.json");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(unsupported[_i].json, f);
    ck_assert_int_eq(fclose(f), 0);
    struct model_dims d;
    struct gpt2_extra x;
    struct rz_err err;
    ck_assert_int_eq(gpt2_config_read(path, &d, &x, &err), unsupported[_i].st);
    ck_assert_msg(strstr(err.msg, unsupported[_i].cause) && strstr(err.msg, path), "%d: %s", _i,
                  err.msg);
}
END_TEST

/* ---- export, then import --------------------------------------------------------------------- */

/* The head bias of a test checkpoint: all +0.0, trained (not zero), or none at all
 * (model.head_bias false). */
enum bias_kind { BIAS_ZERO, BIAS_TRAINED, BIAS_NONE };

/* A checkpoint of the tiny model as the trainer writes one (its config loads), filled with
 * deterministic values, its head bias as `bias` says; tok_hex ("": none) is the tokenizer it
 * records.  Its path in path. */
static void save_trained(char *path, size_t len, bool tied, enum bias_kind bias,
                         const char *tok_hex)
{
    struct cfg c;
    struct rz_err err;
    cfg_defaults(&c);
    const char *sets[] = {"model.vocab_size=64", "model.d_model=16", "model.n_heads=2",
                          "model.n_layers=2", "model.d_ff=32", "model.seq_len=8",
                          "training.batch_size=2"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        ck_assert_msg(cfg_set(&c, sets[i], &err) == RZ_OK, "%s", err.msg);
    snprintf(c.model.tie_embeddings, sizeof c.model.tie_embeddings, "%s", tied ? "true" : "false");
    snprintf(c.model.head_bias, sizeof c.model.head_bias, "%s",
             bias == BIAS_NONE ? "false" : "true");
    char *yaml = NULL;
    size_t ylen = 0;
    FILE *f = open_memstream(&yaml, &ylen);
    cfg_write_yaml(&c, f);
    fclose(f);
    struct model_dims d = tiny_dims;
    d.tie_embeddings = tied;
    d.no_head_bias = bias == BIAS_NONE;
    struct model_tensor *t = NULL;
    size_t n = 0, np = model_describe(&d, &t, &n);
    float *buf = calloc(3 * np, sizeof *buf);
    for (size_t i = 0; i < np; i++)
        buf[i] = (float)((i * 2654435761u) % 1000u) / 997.0f - 0.5f;
    for (size_t k = 0; bias != BIAS_NONE && k < (size_t)d.vocab; k++)
        buf[t[n - 1].offset + k] = bias == BIAS_TRAINED ? 0.125f * (float)k : 0.0f;
    struct ckpt_tensors x = {.table = t, .count = n, .n_floats = np, .params = buf,
                             .adam_m = buf + np, .adam_v = buf + 2 * np};
    struct ckpt_meta meta = {.step = 7, .global_batch = 2, .world_size = 1, .dims = d,
                             .config_yaml = yaml, .format_version = CKPT_FORMAT_VERSION};
    snprintf(meta.tokenizer_sha256, sizeof meta.tokenizer_sha256, "%s", tok_hex);
    char dir[512];
    path_in(dir, sizeof dir, "run/checkpoints");
    ck_assert_msg(ckpt_save(dir, &meta, &x, path, len, &err) == RZ_OK, "%s", err.msg);
    free(buf);
    free(t);
    free(yaml);
}

static void sha_of(const char *path, char out[65])
{
    struct ckpt_meta m;
    struct rz_err err;
    ck_assert_msg(ckpt_inspect(path, &m, &err) == RZ_OK, "%s", err.msg);
    snprintf(out, 65, "%s", m.params_sha256);
    ckpt_meta_free(&m);
}

/* The whole file's bytes (NUL-terminated; free() them). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    char *buf = malloc(1 << 16);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, (1 << 16) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

/* Export of the run imported from `out` gives out's tensors and config.json again. */
static void assert_export_again(const char *out, const char *run2)
{
    char out2[512], p1[600], p2[600];
    struct rz_err err;
    struct export_result er;
    path_in(out2, sizeof out2, "hf2");
    struct export_opts eo = {.source = run2, .out_dir = out2, .allow_head_bias = true};
    ck_assert_msg(export_safetensors(&eo, &er, &err) == RZ_OK, "%s", err.msg);
    struct st_file *f1 = NULL, *f2 = NULL;
    snprintf(p1, sizeof p1, "%s/model.safetensors", out);
    snprintf(p2, sizeof p2, "%s/model.safetensors", out2);
    ck_assert_msg(st_read(&f1, p1, &err) == RZ_OK, "%s", err.msg);
    ck_assert_msg(st_read(&f2, p2, &err) == RZ_OK, "%s", err.msg);
    ck_assert_uint_eq(f1->n, f2->n);
    for (size_t i = 0; i < f1->n; i++)
        ck_assert_str_eq(f1->tensors[i].name, f2->tensors[i].name);
    ck_assert_uint_eq(f1->data_len, f2->data_len);
    ck_assert_int_eq(memcmp(f1->data, f2->data, f1->data_len), 0);
    st_file_free(f1);
    st_file_free(f2);
    size_t n1, n2;
    snprintf(p1, sizeof p1, "%s/config.json", out);
    snprintf(p2, sizeof p2, "%s/config.json", out2);
    char *c1 = slurp(p1, &n1), *c2 = slurp(p2, &n2);
    ck_assert_str_eq(c1, c2);
    free(c1);
    free(c2);
}

/* Tied or not (_i & 1), the head bias zero, trained or absent (_i >> 1): export, import (the
 * same params_sha256, model.head_bias as the model had it), and export again (the same files). */
START_TEST(export_then_import_is_bit_identical)
{
    bool tied = _i & 1;
    enum bias_kind bias = (enum bias_kind)(_i >> 1);
    bool head_bias = bias == BIAS_TRAINED;
    char ckpt[4096], out[512], run[512], run2[512], a[65], b[65];
    struct rz_err err;
    save_trained(ckpt, sizeof ckpt, tied, bias, "");
    path_in(out, sizeof out, "hf");
    path_in(run, sizeof run, "run");
    struct export_opts eo = {.source = run, .out_dir = out, .allow_head_bias = head_bias};
    struct export_result er;
    ck_assert_msg(export_safetensors(&eo, &er, &err) == RZ_OK, "%s", err.msg);
    ck_assert_str_eq(er.checkpoint, ckpt); /* the run directory's newest */
    ck_assert_int_eq(er.step, 7);
    ck_assert(er.head_bias == head_bias);
    ck_assert_uint_eq(er.tensors, 2 + 12 * 2 + 2 + (tied ? 0 : 1) + (head_bias ? 1 : 0));
    /* c_attn is (C, 3C): the transpose of our (3C, C) qkv weight */
    char st_path[600];
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", out);
    struct st_file *f = NULL;
    ck_assert_msg(st_read(&f, st_path, &err) == RZ_OK, "%s", err.msg);
    const struct st_tensor *w = st_find(f, "h.0.attn.c_attn.weight");
    ck_assert(w != NULL && w->shape[0] == 16 && w->shape[1] == 48);
    ck_assert_str_eq(st_meta_get(f, "format"), "pt");
    ck_assert(st_find(f, "lm_head.weight") == NULL || !tied);
    st_file_free(f);
    path_in(run2, sizeof run2, "run2");
    const char *sets[] = {"training.steps=3"};
    struct import_opts io = {.src_dir = out, .run_dir = run2, .sets = sets, .n_sets = 1};
    struct import_result ir;
    ck_assert_msg(import_safetensors(&io, &ir, &err) == RZ_OK, "%s", err.msg);
    sha_of(ckpt, a);
    sha_of(ir.checkpoint, b);
    ck_assert_str_eq(a, b);
    ck_assert_str_eq(ir.params_sha256, a);
    ck_assert(exists(ir.config));
    size_t ylen;
    char *yaml = slurp(ir.config, &ylen);
    ck_assert_msg(strstr(yaml, bias == BIAS_NONE ? "  head_bias: false\n"
                                                  : "  head_bias: true\n"), "%s", yaml);
    free(yaml);
    snprintf(st_path, sizeof st_path, "%s/config.json", out);
    char *json = slurp(st_path, &ylen);
    ck_assert_msg(strstr(json, bias == BIAS_ZERO ? "\"ryzen_zero_head_bias\":true"
                                                 : "\"ryzen_zero_head_bias\":false"), "%s", json);
    free(json);
    assert_export_again(out, run2);
    /* a second import into the same run is refused: import never replaces a run */
    ck_assert_int_eq(import_safetensors(&io, &ir, &err), RZ_ECONFIG);
    ck_assert_msg(strstr(err.msg, "already holds checkpoints"), "%s", err.msg);
}
END_TEST

START_TEST(export_refuses_head_bias_and_wrong_tokenizer)
{
    char ckpt[4096], out[512], tokp[512], abc[65], p[600];
    struct rz_err err;
    struct export_result er;
    rz_sha256_hex("abc", 3, abc); /* the "tokenizer" file below */
    save_trained(ckpt, sizeof ckpt, true, BIAS_TRAINED, abc);
    path_in(out, sizeof out, "hf");
    struct export_opts eo = {.source = ckpt, .out_dir = out};
    ck_assert_int_eq(export_safetensors(&eo, &er, &err), RZ_ECONFIG);
    ck_assert_msg(strstr(err.msg, "head has a bias"), "%s", err.msg);
    ck_assert(!exists(out)); /* nothing written */
    path_in(tokp, sizeof tokp, "tok.model");
    write_bytes(tokp, "abd", 3);
    eo.allow_head_bias = true;
    eo.tokenizer = tokp;
    ck_assert_int_eq(export_safetensors(&eo, &er, &err), RZ_ECONFIG);
    ck_assert_msg(strstr(err.msg, "not the one the checkpoint was trained with"), "%s", err.msg);
    ck_assert(!exists(out));
    write_bytes(tokp, "abc", 3);
    ck_assert_msg(export_safetensors(&eo, &er, &err) == RZ_OK, "%s", err.msg);
    snprintf(p, sizeof p, "%s/tokenizer.model", out);
    ck_assert(exists(p));
    /* without --tokenizer: the weights, and a note naming the tokenizer left out */
    eo.tokenizer = NULL;
    ck_assert_msg(export_safetensors(&eo, &er, &err) == RZ_OK, "%s", err.msg);
    ck_assert_msg(strstr(er.note, abc) != NULL, "%s", er.note);
    /* the imported checkpoint records the exported tokenizer */
    struct import_opts io = {.src_dir = out};
    struct import_result ir;
    struct ckpt_meta m;
    path_in(p, sizeof p, "run2");
    io.run_dir = p;
    ck_assert_msg(import_safetensors(&io, &ir, &err) == RZ_OK, "%s", err.msg);
    ck_assert_msg(ckpt_read_meta(ir.checkpoint, &m, &err) == RZ_OK, "%s", err.msg);
    ck_assert(m.tokenizer_recorded);
    ck_assert_str_eq(m.tokenizer_sha256, abc);
    ckpt_meta_free(&m);
    path_in(p, sizeof p, "nothing-here");
    eo.source = p;
    ck_assert_int_ne(export_safetensors(&eo, &er, &err), RZ_OK);
}
END_TEST

TCase *ckpt_export_tcase(void)
{
    TCase *tc = rz_test_tcase("export");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, safetensors_round_trip_is_bit_exact);
    tcase_add_loop_test(tc, safetensors_damaged_headers_are_refused_by_cause, 0,
                        (int)(sizeof damaged / sizeof damaged[0]));
    tcase_add_test(tc, safetensors_truncated_files_are_refused);
    tcase_add_loop_test(tc, gpt2_names_cover_every_tensor_once, 0, 2);
    tcase_add_test(tc, gpt2_transpose_is_conv1d_layout);
    tcase_add_test(tc, gpt2_head_bias_is_refused_unless_allowed);
    tcase_add_test(tc, gpt2_config_json_reads_back);
    tcase_add_loop_test(tc, gpt2_config_refuses_what_we_cannot_run, 0,
                        (int)(sizeof unsupported / sizeof unsupported[0]));
    tcase_add_loop_test(tc, export_then_import_is_bit_identical, 0, 6);
    tcase_add_test(tc, export_refuses_head_bias_and_wrong_tokenizer);
    return tc;
}
