/* check_train_text: training on token files with a header (record/tokfile.h), in check_train's
 * suite (check_train.c adds these cases): the tokenizer's hash and the unigram entropy reach
 * summary.json and the checkpoint, a resume on data of another tokenizer is refused naming both
 * hashes (exit 64) while an older checkpoint without the hash resumes, and the preflight's data
 * check passes a manifest's shards and refuses a missing or changed one by its name, in the
 * verdict's lines.  Test code only. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "ckpt/ckpt_debug.h"
#include "comm/comm.h"
#include "config/cfg.h"
#include "core/util.h"
#include "record/manifest.h"
#include "record/tokfile.h"
#include "train/preflight_internal.h"
#include "train/train.h"
#include "testutil.h"

#include "train_text.h"

#define V 64
#define N_TOKENS 4096 /* a multiple of 8: ids 0..7 equally often, unigram entropy ln 8 */

static char dir[64];

static void text_setup(void)
{
    rz_test_tmpdir(dir, sizeof dir, "train-text");
}

static void text_teardown(void)
{
    rz_test_rmtree(dir);
}

/* dir/name: n ids (i * 5 + seed) % 8 with a header naming tokenizer `tok` (every byte of its
 * hash); its file SHA-256 into sha (may be NULL). */
static void write_tokens(const char *name, uint8_t tok, uint64_t n, int seed, char sha[65])
{
    char path[256];
    uint8_t hash[32];
    memset(hash, tok, sizeof hash);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct tokfile_writer w;
    struct rz_err err;
    ck_assert_msg(tokfile_writer_open(&w, path, 2, V, hash, &err) == RZ_OK, "%s", err.msg);
    for (uint64_t i = 0; i < n; i++) {
        int32_t id = (int32_t)((i * 5 + (uint64_t)seed) % 8);
        ck_assert_int_eq(tokfile_writer_append(&w, &id, 1, &err), RZ_OK);
    }
    ck_assert_msg(tokfile_writer_commit(&w, sha, &err) == RZ_OK, "%s", err.msg);
}

static void hex_of(uint8_t tok, char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", tok);
}

static void text_cfg(struct cfg *c, const char *data)
{
    cfg_defaults(c);
    c->model.vocab_size = V;
    c->model.d_model = 32;
    c->model.n_heads = 2;
    c->model.n_layers = 1;
    c->model.d_ff = 64;
    c->model.seq_len = 16;
    c->training.batch_size = 4;
    c->training.steps = 6;
    c->training.log_interval = 100;
    snprintf(c->data.kind, sizeof c->data.kind, "tokens");
    snprintf(c->data.path, sizeof c->data.path, "%s/%s", dir, data);
}

static enum rz_status train_in(const struct cfg *c, struct train_result *r, struct rz_err *err)
{
    char run[128];
    snprintf(run, sizeof run, "%s/run", dir);
    struct train_opts o = {.cfg = c, .run_dir = run, .run_id = "test"};
    rz_err_clear(err);
    return train_run(&o, r, err);
}

/* The run's summary.json and its last checkpoint carry the data's tokenizer and unigram
 * entropy; a resume on data of another tokenizer is refused with both hashes, before any
 * step; a checkpoint without the attribute (an older writer's) resumes. */
START_TEST(tokenizer_reaches_the_records_and_guards_the_resume)
{
    static struct cfg c;
    struct train_result r;
    struct rz_err err;
    char ab[65], cd[65], path[256];
    hex_of(0xab, ab);
    hex_of(0xcd, cd);
    write_tokens("a.tok", 0xab, N_TOKENS, 0, NULL);
    text_cfg(&c, "a.tok");
    ck_assert_msg(train_in(&c, &r, &err) == RZ_OK, "%s", err.msg);
    ck_assert_str_eq(r.tokenizer_sha256, ab);
    ck_assert_double_eq_tol(r.unigram_entropy, log(8.0), 1e-12);
    snprintf(path, sizeof path, "%s/run/summary.json", dir);
    char *text = NULL;
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_msg(strstr(text, "\"tokenizer_sha256\":\"abababab") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "\"unigram_entropy\":2.07944") != NULL, "%s", text);
    free(text);
    struct ckpt_meta m;
    snprintf(path, sizeof path, "%s/run/checkpoints/step-00000006.h5", dir);
    ck_assert_msg(ckpt_read_meta(path, &m, &err) == RZ_OK, "%s", err.msg);
    ck_assert(m.tokenizer_recorded);
    ck_assert_str_eq(m.tokenizer_sha256, ab);
    ckpt_meta_free(&m);
    /* the same path, now encoded with another tokenizer */
    write_tokens("a.tok", 0xcd, N_TOKENS, 0, NULL);
    c.training.steps = 8;
    ck_assert_int_eq(train_in(&c, &r, &err), RZ_ECONFIG);
    ck_assert_int_eq(rz_exit_code(err.status), 64);
    ck_assert_msg(strstr(err.msg, ab) != NULL && strstr(err.msg, cd) != NULL &&
                  strstr(err.msg, "step-00000006.h5") != NULL, "%s", err.msg);
    ck_assert_int_eq(r.steps, 0); /* nothing trained */
    /* the checkpoint as an older ryzen-train wrote it: not recorded, nothing to compare */
    ck_assert_int_eq(ckpt_debug_delete_attr(path, "/", "tokenizer_sha256", &err), RZ_OK);
    ck_assert_msg(train_in(&c, &r, &err) == RZ_OK, "%s", err.msg);
    ck_assert_int_eq(r.start_step, 6);
    ck_assert_int_eq(r.steps, 8);
    ck_assert_str_eq(r.tokenizer_sha256, cd);
}
END_TEST

/* Random data names no tokenizer and has no unigram entropy: summary.json has neither. */
START_TEST(random_data_records_no_tokenizer)
{
    static struct cfg c;
    struct train_result r;
    struct rz_err err;
    text_cfg(&c, "unused");
    snprintf(c.data.kind, sizeof c.data.kind, "random");
    c.data.path[0] = '\0';
    ck_assert_msg(train_in(&c, &r, &err) == RZ_OK, "%s", err.msg);
    ck_assert_str_eq(r.tokenizer_sha256, "");
    ck_assert(!(r.unigram_entropy > 0.0));
    char path[256], *text = NULL;
    snprintf(path, sizeof path, "%s/run/summary.json", dir);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_ptr_null(strstr(text, "tokenizer_sha256"));
    ck_assert_ptr_null(strstr(text, "unigram_entropy"));
    free(text);
}
END_TEST

/* The verdict's lines, as the job output shows them. */
static char *verdict_lines(const struct verdict *v)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    pf_log_verdict(f, v);
    fclose(f);
    return text;
}

/* The data check of a manifest of two shards: passes as written; a changed shard (same size)
 * and a missing one are refused by name with RZ_EDATA (exit 64), on the data line of the
 * verdict.  Random data: no check, no line. */
START_TEST(preflight_verifies_the_manifest_shards)
{
    static struct cfg c;
    static struct verdict v;
    struct comm *comm = NULL;
    struct rz_err err;
    enum rz_status data_st;
    struct manifest m = {.vocab_size = V, .id_width = 2, .tokens = 2 * N_TOKENS, .n_shards = 2};
    static char s0[] = "s0.tok", s1[] = "s1.tok";
    struct manifest_shard sh[2] = {{.path = s0, .tokens = N_TOKENS},
                                   {.path = s1, .tokens = N_TOKENS}};
    hex_of(0xab, m.tokenizer_sha256);
    for (int i = 0; i < 2; i++) {
        write_tokens(sh[i].path, 0xab, N_TOKENS, i, sh[i].sha256);
        sh[i].bytes = TOKFILE_HEADER_BYTES + 2 * N_TOKENS;
    }
    m.shards = sh;
    char path[256];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    ck_assert_msg(manifest_write(path, &m, &err) == RZ_OK, "%s", err.msg);
    ck_assert_int_eq(comm_create_local(&comm, &err), RZ_OK);
    text_cfg(&c, "manifest.json");
    ck_assert(pf_data_applies(&c));
    memset(&v, 0, sizeof v);
    ck_assert_int_eq(pf_check_data(&c, comm, &v, &data_st, &err), RZ_OK);
    ck_assert_msg(data_st == RZ_OK && v.ok[CHECK_DATA], "%s", v.detail[CHECK_DATA]);
    char *lines = verdict_lines(&v);
    ck_assert_msg(strstr(lines, "ryzen-train: preflight: data           ok  ") != NULL, "%s",
                  lines);
    free(lines);
    /* shard 1 changed, same size: one id 0..7 replaced by another */
    snprintf(path, sizeof path, "%s/s1.tok", dir);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, TOKFILE_HEADER_BYTES + 2 * 100, SEEK_SET), 0);
    ck_assert_int_eq(fputc(9, f), 9);
    fclose(f);
    memset(&v, 0, sizeof v);
    ck_assert_int_eq(pf_check_data(&c, comm, &v, &data_st, &err), RZ_OK);
    ck_assert_int_eq(data_st, RZ_EDATA);
    ck_assert_int_eq(rz_exit_code(data_st), 64);
    ck_assert(!v.ok[CHECK_DATA]);
    ck_assert_msg(strstr(v.detail[CHECK_DATA], "s1.tok") != NULL, "%s", v.detail[CHECK_DATA]);
    lines = verdict_lines(&v);
    ck_assert_msg(strstr(lines, "ryzen-train: preflight: data           FAIL  ") != NULL, "%s",
                  lines);
    free(lines);
    /* shard 0 missing */
    snprintf(path, sizeof path, "%s/s0.tok", dir);
    ck_assert_int_eq(unlink(path), 0);
    memset(&v, 0, sizeof v);
    ck_assert_int_eq(pf_check_data(&c, comm, &v, &data_st, &err), RZ_OK);
    ck_assert_int_eq(data_st, RZ_EDATA);
    ck_assert_msg(strstr(v.detail[CHECK_DATA], "s0.tok") != NULL, "%s", v.detail[CHECK_DATA]);
    /* random data: nothing to check, nothing shown */
    snprintf(c.data.kind, sizeof c.data.kind, "random");
    ck_assert(!pf_data_applies(&c));
    memset(&v, 0, sizeof v);
    ck_assert_int_eq(pf_check_data(&c, comm, &v, &data_st, &err), RZ_OK);
    ck_assert(data_st == RZ_OK && v.ok[CHECK_DATA] && v.skipped[CHECK_DATA]);
    lines = verdict_lines(&v);
    ck_assert_ptr_null(strstr(lines, "preflight: data"));
    free(lines);
    comm_finalize(comm);
}
END_TEST

TCase *train_text_tcase(void)
{
    TCase *tc = rz_test_tcase("text");
    tcase_add_checked_fixture(tc, text_setup, text_teardown);
    tcase_add_test(tc, tokenizer_reaches_the_records_and_guards_the_resume);
    tcase_add_test(tc, random_data_records_no_tokenizer);
    tcase_add_test(tc, preflight_verifies_the_manifest_shards);
    return tc;
}
