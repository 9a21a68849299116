/* check_gen: ryzen-generate's library (src/gen/).
 *   core     the KV-cache decoder against the trainer's model_forward on the same parameters
 *            (per-position losses within 1e-5 relative; tied and untied heads; both kernel
 *            backends), a reset replaying the same bits, and --perplexity against the cache
 *   sample   greedy and its ties, the same seed giving the same draws, top-k and top-p edge
 *            cases, frequencies, log-probabilities
 *   errors   option ranges, a damaged or missing checkpoint, a run directory without one,
 *            token ids and positions out of range, a tokenizer that does not match
 *   cli      gen_main as the program runs: same seed same text, greedy deterministic, --json,
 *            --logits-out's size, an empty prompt, a prompt longer than the context
 * Checkpoints are written by ckpt_save from a small model with random parameters; the cli case
 * trains a tokenizer once, in main, on a generated corpus.  No test depends on CPU speed. */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "core/rng.h"
#include "core/sha256.h"
#include "core/util.h"
#include "data/data.h"
#include "gen/gen.h"
#include "model/model.h"
#include "record/tokfile.h"
#include "testutil.h"
#include "tok/tok.h"

static char tok_dir[64];      /* the tokenizer trained in main */
static char tok_path[160];
static int64_t tok_vocab;

/* ---- fixtures ------------------------------------------------------------------------------- */

struct shape {
    int64_t V, C, H, L, F, T, B;
    int tie;
    const char *backend;      /* kernels.backend */
    int64_t eval_samples;
    const char *tok_sha;      /* recorded in the checkpoint ("" none) */
    int no_bias;              /* model.head_bias false: no head.bias */
};

static const struct shape small = {61, 32, 4, 2, 80, 12, 2, 0, "ref", 5, "", 0};

/* Save a model of shape s with random parameters (N(0, 0.3), LayerNorm gains around 1) as
 * DIR/checkpoints/step-00000001.h5; its path in path. */
static void save_model(const char *dir, const struct shape *s, char *path, size_t len)
{
    struct model_dims d = {.vocab = s->V, .d_model = s->C, .n_heads = s->H, .n_layers = s->L,
                           .d_ff = s->F, .seq_len = s->T, .batch = s->B, .ln_eps = 1e-5f,
                           .init_std = 0.02f, .tie_embeddings = s->tie,
                           .no_head_bias = s->no_bias};
    struct kern_ctx *ctx = NULL;
    struct model *m = NULL;
    struct rz_err e = {0};
    ck_assert_int_eq(kern_ctx_create(&ctx, KERN_REF, &e), RZ_OK);
    ck_assert_msg(model_create(&m, &d, ctx, &e) == RZ_OK, "%s", e.msg);
    size_t n = model_num_params(m), count;
    const struct model_tensor *tab = model_tensors(m, &count);
    float *p = model_params(m);
    for (size_t i = 0; i < count; i++)
        for (int64_t j = 0; j < tab[i].rows * tab[i].cols; j++) {
            size_t k = tab[i].offset + (size_t)j;
            float r = 0.3f * (float)rz_rand_normal(77, k);
            p[k] = tab[i].kind == MODEL_INIT_ONE ? 1.0f + r : r;
        }
    float *zeros = calloc(n, sizeof *zeros);
    char yaml[1024], ckdir[512];
    snprintf(yaml, sizeof yaml,
             "model:\n  vocab_size: %lld\n  d_model: %lld\n  n_heads: %lld\n  n_layers: %lld\n"
             "  d_ff: %lld\n  seq_len: %lld\n  tie_embeddings: %s\n  head_bias: %s\n"
             "training:\n  batch_size: %lld\n"
             "  eval_samples: %lld\nkernels:\n  backend: %s\ndata:\n  seed: 5\n",
             (long long)s->V, (long long)s->C, (long long)s->H, (long long)s->L, (long long)s->F,
             (long long)s->T, s->tie ? "true" : "false", s->no_bias ? "false" : "true",
             (long long)s->B,
             (long long)s->eval_samples, s->backend);
    struct ckpt_meta meta = {.step = 1, .global_batch = s->B, .world_size = 1, .dims = d,
                             .config_yaml = yaml};
    rz_sha256_hex(yaml, strlen(yaml), meta.config_sha256);
    snprintf(meta.tokenizer_sha256, sizeof meta.tokenizer_sha256, "%s", s->tok_sha);
    struct ckpt_tensors t = {.table = tab, .count = count, .n_floats = n, .params = p,
                             .adam_m = zeros, .adam_v = zeros};
    snprintf(ckdir, sizeof ckdir, "%s/checkpoints", dir);
    ck_assert_msg(ckpt_save(ckdir, &meta, &t, path, len, &e) == RZ_OK, "%s", e.msg);
    free(zeros);
    model_destroy(m);
    kern_ctx_destroy(ctx);
}

static struct gen *open_model(const char *path)
{
    struct gen *g = NULL;
    struct rz_err e = {0};
    ck_assert_msg(gen_open(&g, path, &e) == RZ_OK, "%s", e.msg);
    return g;
}

/* A fresh scratch directory (dir) with the small model saved in it, opened. */
static struct gen *small_model(char *dir, size_t len)
{
    char path[4096];
    rz_test_tmpdir(dir, len, "gen");
    save_model(dir, &small, path, sizeof path);
    return open_model(path);
}

/* |a - b| <= rel max(|a|, |b|) + 1e-6 */
static void assert_close(double a, double b, double rel, const char *what, int64_t i)
{
    double tol = rel * fmax(fabs(a), fabs(b)) + 1e-6;
    ck_assert_msg(fabs(a - b) <= tol, "%s %lld: %.9g vs %.9g (diff %.3g > %.3g)", what,
                  (long long)i, a, b, fabs(a - b), tol);
}

/* ---- core --------------------------------------------------------------------------------- */

/* The cached decoder's logits at every position of a full-context prompt give the same
 * per-position losses as the trainer's model_forward (B = 1) on the same parameters, for three
 * sets of targets: 0 untied ref, 1 tied ref, 2 untied dnnl, 3 tied dnnl; 4, 5 and 6, 7 the
 * same without the head bias (model.head_bias false, GPT-2's head). */
START_TEST(cached_matches_full_forward)
{
    struct shape s = small;
    s.tie = _i % 2;
    s.backend = _i % 4 < 2 ? "ref" : "dnnl";
    s.no_bias = _i >= 4;
    char dir[64], path[4096];
    rz_test_tmpdir(dir, sizeof dir, "gen");
    save_model(dir, &s, path, sizeof path);
    struct gen *g = open_model(path);
    int64_t T = s.T, V = s.V;
    int32_t in[64], tg[64];
    float *rows = malloc((size_t)(T * V) * sizeof *rows);
    struct rz_err e = {0};
    for (int64_t t = 0; t < T; t++) {
        in[t] = (int32_t)(rz_rand64(3, (uint64_t)t) % (uint64_t)V);
        ck_assert_int_eq(gen_feed(g, in[t], &e), RZ_OK);
        memcpy(rows + t * V, gen_logits(g), (size_t)V * sizeof *rows);
    }
    struct model_dims d = *gen_dims(g);
    ck_assert(d.no_head_bias == (s.no_bias != 0)); /* from the checkpoint's stored config */
    d.segment_grads = 0;
    struct kern_ctx *ctx = NULL;
    struct model *m = NULL;
    ck_assert_int_eq(kern_ctx_create(&ctx, KERN_REF, &e), RZ_OK);
    ck_assert_msg(model_create(&m, &d, ctx, &e) == RZ_OK, "%s", e.msg);
    memcpy(model_params(m), gen_params(g), model_num_params(m) * sizeof(float));
    double worst = 0.0;
    for (uint64_t k = 0; k < 3; k++) {
        for (int64_t t = 0; t < T; t++)
            tg[t] = (int32_t)(rz_rand64(10 + k, (uint64_t)t) % (uint64_t)V);
        model_forward(m, in, tg);
        const float *loss = model_token_losses(m);
        for (int64_t t = 0; t < T; t++) {
            double mine = -gen_logprob(rows + t * V, V, tg[t]);
            assert_close(mine, loss[t], 1e-5, "position", t);
            worst = fmax(worst, fabs(mine - loss[t]) / fabs(loss[t]));
        }
    }
    ck_assert(worst < 1e-5);
    model_destroy(m);
    kern_ctx_destroy(ctx);
    free(rows);
    gen_close(g);
    rz_test_rmtree(dir);
}
END_TEST

/* After gen_reset the same prompt gives the same bits: the cache holds nothing stale. */
START_TEST(reset_replays_the_same_bits)
{
    char dir[64];
    struct gen *g = small_model(dir, sizeof dir);
    struct rz_err e = {0};
    int64_t V = small.V;
    float *first = malloc((size_t)V * sizeof *first);
    const int32_t prompt[] = {5, 9, 60, 0, 33};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(gen_feed(g, prompt[i], &e), RZ_OK);
    memcpy(first, gen_logits(g), (size_t)V * sizeof *first);
    for (int i = 0; i < 4; i++) /* other tokens at later positions, then start again */
        ck_assert_int_eq(gen_feed(g, 7, &e), RZ_OK);
    gen_reset(g);
    ck_assert_int_eq(gen_pos(g), 0);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(gen_feed(g, prompt[i], &e), RZ_OK);
    ck_assert_int_eq(gen_pos(g), 5);
    ck_assert(memcmp(first, gen_logits(g), (size_t)V * sizeof *first) == 0);
    free(first);
    gen_close(g);
    rz_test_rmtree(dir);
}
END_TEST

/* The batched prefill (gen_prefill from position 0) gives every position's logits as the
 * token-by-token path does, within fp32 rounding (1e-5 relative to the row's largest logit),
 * leaves the same cache behind (the 3 tokens fed after it agree too), and a chunk after
 * position 0 goes token by token to the very same bits: 0 untied ref, 1 tied ref, 2 untied dnnl, 3 tied
 * dnnl, the prompt n = T - 3 long (T - 3 prefilled, then 3 decoded). */
START_TEST(prefill_matches_token_by_token)
{
    struct shape s = small;
    s.tie = _i % 2;
    s.backend = _i < 2 ? "ref" : "dnnl";
    char dir[64], path[4096];
    rz_test_tmpdir(dir, sizeof dir, "gen");
    save_model(dir, &s, path, sizeof path);
    struct gen *g = open_model(path);
    int64_t T = s.T, V = s.V, n = T - 3;
    int32_t in[64];
    float *one = malloc((size_t)(T * V) * sizeof *one), *all = malloc((size_t)(T * V) * sizeof *all);
    struct rz_err e = {0};
    for (int64_t t = 0; t < T; t++) {
        in[t] = (int32_t)(rz_rand64(4, (uint64_t)t) % (uint64_t)V);
        ck_assert_int_eq(gen_feed(g, in[t], &e), RZ_OK);
        memcpy(one + t * V, gen_logits(g), (size_t)V * sizeof *one);
    }
    gen_reset(g);
    ck_assert_msg(gen_prefill(g, in, n, all, &e) == RZ_OK, "%s", e.msg);
    ck_assert_int_eq(gen_pos(g), n);
    ck_assert(memcmp(gen_logits(g), all + (n - 1) * V, (size_t)V * sizeof *all) == 0);
    ck_assert_msg(gen_prefill(g, in + n, T - n, all + n * V, &e) == RZ_OK, "%s", e.msg);
    double worst = 0.0;
    for (int64_t t = 0; t < T; t++) {
        double big = 0.0;
        for (int64_t v = 0; v < V; v++)
            big = fmax(big, fabs(one[t * V + v]));
        for (int64_t v = 0; v < V; v++)
            worst = fmax(worst, fabs(all[t * V + v] - one[t * V + v]) / big);
    }
    ck_assert_msg(worst < 1e-5, "prefill vs token by token: %.3g relative", worst);
    gen_reset(g); /* from position 1 on, gen_prefill is gen_feed's loop: the same bits */
    ck_assert_int_eq(gen_feed(g, in[0], &e), RZ_OK);
    ck_assert_msg(gen_prefill(g, in + 1, T - 1, all + V, &e) == RZ_OK, "%s", e.msg);
    ck_assert(memcmp(one + V, all + V, (size_t)((T - 1) * V) * sizeof *all) == 0);
    free(one), free(all);
    gen_close(g);
    rz_test_rmtree(dir);
}
END_TEST

/* A prefill that does not fit the context, or with an id outside the vocabulary, runs nothing. */
START_TEST(prefill_refuses_bad_prompts)
{
    char dir[64];
    struct gen *g = small_model(dir, sizeof dir);
    struct rz_err e = {0};
    int32_t ids[64] = {0};
    ck_assert_int_eq(gen_prefill(g, ids, small.T + 1, NULL, &e), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(e.msg, "do not fit the context"));
    ids[3] = (int32_t)small.V;
    ck_assert_int_eq(gen_prefill(g, ids, 5, NULL, &e), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(e.msg, "outside the vocabulary"));
    ck_assert_int_eq(gen_pos(g), 0);
    ids[3] = 0;
    ck_assert_int_eq(gen_prefill(g, ids, small.T - 1, NULL, &e), RZ_OK);
    ck_assert_int_eq(gen_prefill(g, ids, 2, NULL, &e), RZ_EDATA);
    ck_assert_int_eq(gen_pos(g), small.T - 1);
    gen_close(g);
    rz_test_rmtree(dir);
}
END_TEST

/* A token file of n random ids below V, with a header naming no tokenizer. */
static void write_tokens(const char *path, int64_t V, size_t n, uint64_t seed)
{
    struct tokfile_writer w;
    struct rz_err e = {0};
    uint8_t none[32] = {0};
    int32_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = (int32_t)(rz_rand64(seed, i) % (uint64_t)V);
    ck_assert_msg(tokfile_writer_open(&w, path, 0, (uint64_t)V, none, &e) == RZ_OK, "%s", e.msg);
    ck_assert_int_eq(tokfile_writer_append(&w, ids, n, &e), RZ_OK);
    ck_assert_msg(tokfile_writer_commit(&w, NULL, &e) == RZ_OK, "%s", e.msg);
    free(ids);
}

/* --perplexity's loss (model_forward on the trainer's validation windows, batch 2 with a
 * padded last batch: 5 windows) equals the same windows scored through the KV cache. */
START_TEST(perplexity_matches_the_cache)
{
    char dir[64], path[4096], tokf[128];
    rz_test_tmpdir(dir, sizeof dir, "gen");
    save_model(dir, &small, path, sizeof path);
    snprintf(tokf, sizeof tokf, "%s/val.tok", dir);
    write_tokens(tokf, small.V, 300, 21);
    struct gen *g = open_model(path);
    struct gen_score sc;
    struct rz_err e = {0};
    ck_assert_msg(gen_perplexity(g, tokf, &sc, &e) == RZ_OK, "%s", e.msg);
    ck_assert_int_eq(sc.windows, 5);
    ck_assert_int_eq(sc.tokens, 5 * small.T);
    ck_assert_int_eq(sc.batch, 2);
    struct data_opts o = {.kind = DATA_TOKENS, .vocab_size = small.V, .seq_len = small.T,
                          .seed = 5, .path = tokf, .val_path = tokf};
    struct data *data = NULL;
    ck_assert_msg(data_create(&data, &o, &e) == RZ_OK, "%s", e.msg);
    int32_t w[64];
    double total = 0.0;
    for (uint64_t j = 0; j < 5; j++) {
        data_val_sample(data, j, w);
        gen_reset(g);
        double sum = 0.0;
        for (int64_t t = 0; t < small.T; t++) {
            ck_assert_int_eq(gen_feed(g, w[t], &e), RZ_OK);
            sum -= gen_logprob(gen_logits(g), small.V, w[t + 1]);
        }
        total += sum / (double)small.T;
    }
    assert_close(sc.loss, total / 5.0, 1e-5, "mean loss", 0);
    ck_assert(sc.loss > 0.5); /* random parameters: far from a trivial zero */
    data_destroy(data);
    gen_close(g);
    rz_test_rmtree(dir);
}
END_TEST

/* ---- sample ---------------------------------------------------------------------------------- */

static void *scratch_for(int64_t V)
{
    void *s = malloc(gen_sample_scratch_bytes(V));
    ck_assert_ptr_nonnull(s);
    return s;
}

/* Greedy is the argmax, the lowest id among equal maxima, whatever the seed; temperature 0 and
 * top-k 1 are greedy too. */
START_TEST(greedy_is_argmax_lowest_id_on_ties)
{
    const float lg[6] = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f, 2.0f};
    void *sc = scratch_for(6);
    struct gen_sample_opts o = {.greedy = true, .temperature = 1.0, .top_p = 1.0};
    for (uint64_t seed = 0; seed < 20; seed++) {
        o.seed = seed;
        ck_assert_int_eq(gen_sample(lg, 6, &o, seed * 7, sc), 1);
    }
    struct gen_sample_opts t0 = {.temperature = 0.0, .top_p = 1.0, .seed = 3};
    struct gen_sample_opts k1 = {.temperature = 5.0, .top_k = 1, .top_p = 1.0, .seed = 3};
    for (uint64_t step = 0; step < 20; step++) {
        ck_assert_int_eq(gen_sample(lg, 6, &t0, step, sc), 1);
        ck_assert_int_eq(gen_sample(lg, 6, &k1, step, sc), 1);
    }
    free(sc);
}
END_TEST

/* The same seed gives the same draws, step by step; another seed another sequence. */
START_TEST(same_seed_same_draws)
{
    enum { V = 100, STEPS = 200 };
    float lg[V];
    for (int i = 0; i < V; i++)
        lg[i] = (float)rz_rand_normal(8, (uint64_t)i);
    void *sc = scratch_for(V);
    struct gen_sample_opts a = {.temperature = 1.3, .top_k = 40, .top_p = 0.95, .seed = 42};
    struct gen_sample_opts b = a;
    b.seed = 43;
    int32_t first[STEPS];
    int differ = 0;
    for (uint64_t s = 0; s < STEPS; s++)
        first[s] = gen_sample(lg, V, &a, s, sc);
    for (uint64_t s = 0; s < STEPS; s++) {
        ck_assert_int_eq(gen_sample(lg, V, &a, s, sc), first[s]);
        differ += gen_sample(lg, V, &b, s, sc) != first[s];
    }
    ck_assert_int_gt(differ, STEPS / 4);
    free(sc);
}
END_TEST

/* log p of 4 tokens: 0.5, 0.3, 0.15, 0.05. */
static void four(float lg[4])
{
    const double p[4] = {0.5, 0.3, 0.15, 0.05};
    for (int i = 0; i < 4; i++)
        lg[i] = (float)log(p[i]) + 3.0f; /* a shift changes nothing */
}

/* Counts of n draws into c[4]. */
static void draw(const float *lg, const struct gen_sample_opts *o, int n, int c[4], void *sc)
{
    memset(c, 0, 4 * sizeof *c);
    for (int s = 0; s < n; s++)
        c[gen_sample(lg, 4, o, (uint64_t)s, sc)]++;
}

/* top-k keeps exactly the k most likely, the lower ids on a tie at the cut; k >= V keeps all;
 * the kept ones renormalize. */
START_TEST(top_k_edges)
{
    float lg[4];
    int c[4];
    four(lg);
    void *sc = scratch_for(4);
    struct gen_sample_opts o = {.temperature = 1.0, .top_k = 2, .top_p = 1.0, .seed = 9};
    draw(lg, &o, 20000, c, sc);
    ck_assert_int_eq(c[2] + c[3], 0);
    ck_assert_msg(fabs(c[0] / 20000.0 - 0.625) < 0.02, "top-2 share of id 0: %d", c[0]);
    o.top_k = 4;
    draw(lg, &o, 20000, c, sc);
    ck_assert_msg(fabs(c[3] / 20000.0 - 0.05) < 0.01, "id 3: %d of 20000", c[3]);
    o.top_k = 1000; /* more than V */
    draw(lg, &o, 2000, c, sc);
    ck_assert_int_gt(c[3], 0);
    const float tie[4] = {0.0f, 1.0f, 1.0f, 1.0f}; /* a tie across the cut: the lower ids stay */
    o.top_k = 2;
    draw(tie, &o, 2000, c, sc);
    ck_assert_int_eq(c[0] + c[3], 0);
    ck_assert_int_gt(c[1], 0);
    ck_assert_int_gt(c[2], 0);
    free(sc);
}
END_TEST

/* top-p keeps the smallest most-likely set reaching p: 0.49 is reached by one token; 0.51
 * needs two; 1 all; a tiny p the argmax; with top-k both apply. */
START_TEST(top_p_edges)
{
    float lg[4];
    int c[4];
    four(lg);
    void *sc = scratch_for(4);
    struct gen_sample_opts o = {.temperature = 1.0, .top_p = 1e-9, .seed = 4};
    draw(lg, &o, 500, c, sc);
    ck_assert_int_eq(c[0], 500);
    o.top_p = 0.49;
    draw(lg, &o, 500, c, sc);
    ck_assert_int_eq(c[0], 500);
    o.top_p = 0.51;
    draw(lg, &o, 20000, c, sc);
    ck_assert_int_eq(c[2] + c[3], 0);
    ck_assert_msg(fabs(c[0] / 20000.0 - 0.625) < 0.02, "id 0: %d of 20000", c[0]);
    o.top_p = 0.9; /* 0.5 + 0.3 + 0.15 = 0.95 >= 0.9: three tokens */
    draw(lg, &o, 20000, c, sc);
    ck_assert_int_eq(c[3], 0);
    ck_assert_int_gt(c[2], 0);
    o.top_k = 2;   /* top-k first, then top-p of what is left (0.9 of 0.8: both) */
    draw(lg, &o, 5000, c, sc);
    ck_assert_int_eq(c[2] + c[3], 0);
    ck_assert_int_gt(c[1], 0);
    o.top_k = 0;
    o.top_p = 1.0;
    draw(lg, &o, 20000, c, sc);
    ck_assert_int_gt(c[3], 0);
    free(sc);
}
END_TEST

/* Temperature: a low one concentrates on the argmax, a high one flattens toward uniform. */
START_TEST(temperature_sharpens_and_flattens)
{
    float lg[4];
    int c[4];
    four(lg);
    void *sc = scratch_for(4);
    struct gen_sample_opts o = {.temperature = 0.01, .top_p = 1.0, .seed = 2};
    draw(lg, &o, 1000, c, sc);
    ck_assert_int_eq(c[0], 1000);
    o.temperature = 1000.0;
    draw(lg, &o, 20000, c, sc);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(fabs(c[i] / 20000.0 - 0.25) < 0.02, "id %d: %d of 20000", i, c[i]);
    free(sc);
}
END_TEST

/* The log-probabilities are log softmax: exp sums to 1, and known values come out. */
START_TEST(logprob_is_log_softmax)
{
    const float lg[2] = {0.0f, (float)log(3.0)};
    ck_assert_double_eq_tol(gen_logprob(lg, 2, 0), log(0.25), 1e-7);
    ck_assert_double_eq_tol(gen_logprob(lg, 2, 1), log(0.75), 1e-7);
    float big[50];
    double sum = 0.0;
    for (int i = 0; i < 50; i++)
        big[i] = 80.0f * (float)rz_rand_normal(1, (uint64_t)i); /* exp would overflow naively */
    for (int i = 0; i < 50; i++)
        sum += exp(gen_logprob(big, 50, i));
    ck_assert_double_eq_tol(sum, 1.0, 1e-12);
}
END_TEST

/* ---- errors ---------------------------------------------------------------------------------- */

START_TEST(sample_options_are_checked)
{
    struct rz_err e = {0};
    struct gen_sample_opts ok = {.temperature = 1.0, .top_p = 1.0};
    ck_assert_int_eq(gen_sample_check(&ok, &e), RZ_OK);
    struct gen_sample_opts bad[] = {
        {.temperature = -1.0, .top_p = 1.0}, {.temperature = NAN, .top_p = 1.0},
        {.temperature = INFINITY, .top_p = 1.0}, {.temperature = 1.0, .top_k = -1, .top_p = 1.0},
        {.temperature = 1.0, .top_p = 0.0}, {.temperature = 1.0, .top_p = 1.5}};
    const char *what[] = {"--temperature", "--temperature", "--temperature", "--top-k",
                          "--top-p", "--top-p"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(gen_sample_check(&bad[i], &e), RZ_ECONFIG);
        ck_assert_msg(strstr(e.msg, what[i]) != NULL, "%zu: %s", i, e.msg);
    }
}
END_TEST

/* Ids outside the vocabulary and a full context are refused, naming the cause. */
START_TEST(bad_token_and_full_context)
{
    char dir[64];
    struct gen *g = small_model(dir, sizeof dir);
    struct rz_err e = {0};
    ck_assert_int_eq(gen_feed(g, -1, &e), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(e.msg, "outside the vocabulary"));
    ck_assert_int_eq(gen_feed(g, (int32_t)small.V, &e), RZ_EDATA);
    ck_assert_int_eq(gen_pos(g), 0);
    for (int64_t t = 0; t < small.T; t++)
        ck_assert_int_eq(gen_feed(g, 1, &e), RZ_OK);
    ck_assert_int_eq(gen_feed(g, 1, &e), RZ_EDATA);
    ck_assert_ptr_nonnull(strstr(e.msg, "context is full"));
    gen_close(g);
    rz_test_rmtree(dir);
}
END_TEST

/* A damaged file, a missing one and a run directory without a valid checkpoint are RZ_ENOCKPT
 * (exit 65); a directory's newest valid checkpoint is found past a damaged newer one, and the
 * damaged one is left where it is (read only). */
START_TEST(damaged_or_missing_checkpoint)
{
    char dir[64], path[4096], found[4096], bad[4200];
    struct rz_err e = {0};
    struct gen *g = NULL;
    rz_test_tmpdir(dir, sizeof dir, "gen");
    ck_assert_int_eq(gen_resolve_checkpoint(dir, found, sizeof found, &e), RZ_ENOCKPT);
    save_model(dir, &small, path, sizeof path);
    ck_assert_int_eq(gen_resolve_checkpoint(dir, found, sizeof found, &e), RZ_OK);
    ck_assert_str_eq(found, path);
    /* a newer, damaged copy: half of the file */
    snprintf(bad, sizeof bad, "%s/checkpoints/step-00000002.h5", dir);
    char *bytes = NULL;
    size_t len = 0;
    ck_assert_int_eq(rz_read_file(path, &bytes, &len, &e), RZ_OK);
    FILE *f = fopen(bad, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, len / 2, f), len / 2);
    fclose(f);
    free(bytes);
    ck_assert_int_eq(gen_resolve_checkpoint(dir, found, sizeof found, &e), RZ_OK);
    ck_assert_str_eq(found, path);
    ck_assert_int_eq(access(bad, F_OK), 0);
    ck_assert_int_eq(gen_open(&g, bad, &e), RZ_ENOCKPT);
    ck_assert_ptr_null(g);
    ck_assert_ptr_nonnull(strstr(e.msg, "step-00000002.h5"));
    snprintf(bad, sizeof bad, "%s/none.h5", dir);
    ck_assert_int_eq(gen_open(&g, bad, &e), RZ_ENOCKPT);
    ck_assert_ptr_null(g);
    rz_test_rmtree(dir);
}
END_TEST

/* A tokenizer of another vocabulary size, or another SHA-256 than the one the checkpoint
 * records, is refused naming both; a checkpoint that records none checks the size alone. */
START_TEST(tokenizer_must_match)
{
    char dir[64], path[4096];
    const char *sha = "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12";
    const char *other = "cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34cd34";
    struct rz_err e = {0};
    struct shape s = small;
    s.tok_sha = sha;
    rz_test_tmpdir(dir, sizeof dir, "gen");
    save_model(dir, &s, path, sizeof path);
    struct gen *g = open_model(path);
    ck_assert_int_eq(gen_check_tokenizer(g, small.V, sha, "t.model", &e), RZ_OK);
    ck_assert_int_eq(gen_check_tokenizer(g, small.V + 1, sha, "t.model", &e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "model.vocab_size 61"));
    ck_assert_int_eq(gen_check_tokenizer(g, small.V, other, "t.model", &e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, other));
    ck_assert_ptr_nonnull(strstr(e.msg, sha));
    gen_close(g);
    rz_test_rmtree(dir);
    rz_test_tmpdir(dir, sizeof dir, "gen");
    save_model(dir, &small, path, sizeof path); /* no tokenizer recorded */
    g = open_model(path);
    ck_assert_int_eq(gen_check_tokenizer(g, small.V, other, "t.model", &e), RZ_OK);
    gen_close(g);
    rz_test_rmtree(dir);
}
END_TEST

/* ---- cli ------------------------------------------------------------------------------------- */

/* gen_main with argv (NULL-terminated), stdout into out (a file); returns the exit code. */
static int run_main(const char *out, const char *const *argv)
{
    int argc = 0;
    while (argv[argc] != NULL)
        argc++;
    fflush(stdout);
    int saved = dup(1), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    dup2(fd, 1);
    close(fd);
    struct gen_env env = {"", ""};
    int rc = gen_main(argc, (char **)argv, &env);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return rc;
}

static char *slurp(const char *path)
{
    char *s = NULL;
    size_t n;
    struct rz_err e = {0};
    ck_assert_int_eq(rz_read_file(path, &s, &n, &e), RZ_OK);
    return s;
}

/* A run directory with a checkpoint of the tokenizer's vocabulary (into dir). */
static void cli_model(char *dir, size_t len)
{
    char path[4096];
    struct shape s = small;
    s.V = tok_vocab;
    s.T = 16;
    rz_test_tmpdir(dir, len, "gen");
    save_model(dir, &s, path, sizeof path);
}

/* The same seed gives the same text; greedy is deterministic; --json has the fields;
 * --logits-out has one row per prompt position and per generated token but the last. */
START_TEST(cli_same_seed_same_text)
{
    char dir[64], o1[128], o2[128], o3[128], lg[128];
    cli_model(dir, sizeof dir);
    snprintf(o1, sizeof o1, "%s/o1", dir);
    snprintf(o2, sizeof o2, "%s/o2", dir);
    snprintf(o3, sizeof o3, "%s/o3", dir);
    snprintf(lg, sizeof lg, "%s/logits.f32", dir);
    const char *a[] = {"ryzen-generate", "--checkpoint", dir, "--tokenizer", tok_path, "--prompt",
                       "the time", "--max-new-tokens", "6", "--seed", "7", "--top-k", "50", "--json",
                       "--logits-out", lg, NULL};
    ck_assert_int_eq(run_main(o1, a), 0);
    ck_assert_int_eq(run_main(o2, a), 0);
    char *s1 = slurp(o1), *s2 = slurp(o2);
    ck_assert_str_eq(s1, s2);
    ck_assert_ptr_nonnull(strstr(s1, "\"prompt_ids\":["));
    ck_assert_ptr_nonnull(strstr(s1, "\"logprob\":"));
    ck_assert_ptr_nonnull(strstr(s1, "\"seed\":7"));
    /* prompt ids: count the commas of the first array */
    const char *p = strstr(s1, "[") + 1, *q = strchr(p, ']');
    int64_t n_prompt = 1;
    for (const char *c = p; c < q; c++)
        n_prompt += *c == ',';
    struct stat sb;
    ck_assert_int_eq(stat(lg, &sb), 0);
    ck_assert_int_eq(sb.st_size, (n_prompt + 6 - 1) * tok_vocab * (int64_t)sizeof(float));
    const char *b[] = {"ryzen-generate", "--checkpoint", dir, "--tokenizer", tok_path, "--prompt",
                       "the time", "--max-new-tokens", "6", "--seed", "8", "--greedy", NULL};
    ck_assert_int_eq(run_main(o3, b), 0);
    char *g1 = slurp(o3);
    b[10] = "9"; /* another seed: greedy does not draw */
    ck_assert_int_eq(run_main(o3, b), 0);
    char *g2 = slurp(o3);
    ck_assert_str_eq(g1, g2);
    ck_assert_ptr_nonnull(strstr(g1, "the time"));
    free(s1), free(s2), free(g1), free(g2);
    rz_test_rmtree(dir);
}
END_TEST

/* Bad input: an empty prompt, one longer than the context, a tokenizer of another vocabulary,
 * a missing checkpoint, usage errors: the documented exit codes and a message. */
START_TEST(cli_bad_input)
{
    char dir[64], out[128], other[64], path[4096], longp[2048] = "";
    cli_model(dir, sizeof dir);
    snprintf(out, sizeof out, "%s/out", dir);
    for (int i = 0; i < 40; i++)
        strcat(longp, "water people ");
    const char *empty[] = {"g", "--checkpoint", dir, "--tokenizer", tok_path, "--prompt", "", NULL};
    ck_assert_int_eq(run_main(out, empty), 64);
    const char *toolong[] = {"g", "--checkpoint", dir, "--tokenizer", tok_path, "--prompt", longp,
                             NULL};
    ck_assert_int_eq(run_main(out, toolong), 64);
    rz_test_tmpdir(other, sizeof other, "gen");
    save_model(other, &small, path, sizeof path); /* vocabulary 61 */
    const char *mismatch[] = {"g", "--checkpoint", path, "--tokenizer", tok_path, "--prompt", "a",
                              NULL};
    ck_assert_int_eq(run_main(out, mismatch), 64);
    const char *nockpt[] = {"g", "--checkpoint", "/nonexistent/x.h5", "--tokenizer", tok_path,
                            "--prompt", "a", NULL};
    ck_assert_int_eq(run_main(out, nockpt), 65);
    const char *usage1[] = {"g", "--prompt", "a", NULL};
    ck_assert_int_eq(run_main(out, usage1), 64);
    const char *usage2[] = {"g", "--checkpoint", dir, "--tokenizer", tok_path, "--prompt", "a",
                            "--top-p", "2", NULL};
    ck_assert_int_eq(run_main(out, usage2), 64);
    const char *usage3[] = {"g", "--checkpoint", dir, "--bogus", NULL};
    ck_assert_int_eq(run_main(out, usage3), 64);
    const char *help[] = {"g", "--help", NULL};
    ck_assert_int_eq(run_main(out, help), 0);
    char *h = slurp(out);
    ck_assert_ptr_nonnull(strstr(h, "usage: ryzen-generate"));
    free(h);
    rz_test_rmtree(other);
    rz_test_rmtree(dir);
}
END_TEST

/* ---- suite ----------------------------------------------------------------------------------- */

/* A corpus of common words, then a BPE tokenizer of it (once per run). */
static int train_tokenizer(void)
{
    static const char *const words[] = {"the", "of", "and", "time", "water", "people", "day",
                                        "could", "first", "number", "sound", "write", "fortune"};
    char corpus[128], prefix[128];
    snprintf(tok_dir, sizeof tok_dir, "/tmp/rz-gentok-XXXXXX");
    if (mkdtemp(tok_dir) == NULL)
        return -1;
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", tok_dir);
    snprintf(prefix, sizeof prefix, "%s/t", tok_dir);
    FILE *f = fopen(corpus, "w");
    if (f == NULL)
        return -1;
    for (uint64_t i = 0; i < 6000; i++)
        fprintf(f, "%s%s", words[rz_rand64(1, i) % 13], i % 9 == 8 ? ".\n" : " ");
    fclose(f);
    const char *in[] = {corpus};
    struct tok_train_opts o = {.inputs = in, .n_inputs = 1, .model_prefix = prefix,
                               .vocab_size = 300, .model_type = "bpe", .threads = 1};
    struct rz_err e = {0};
    struct tok *t = NULL;
    snprintf(tok_path, sizeof tok_path, "%s.model", prefix);
    if (tok_train(&o, &e) != RZ_OK || tok_load(&t, tok_path, &e) != RZ_OK) {
        fprintf(stderr, "check_gen: tokenizer: %s\n", e.msg);
        return -1;
    }
    tok_vocab = tok_vocab_size(t);
    tok_free(t);
    return 0;
}

int main(void)
{
    if (train_tokenizer() != 0)
        return EXIT_FAILURE;
    Suite *s = suite_create("gen");
    TCase *core = rz_test_tcase("core");
    tcase_add_loop_test(core, cached_matches_full_forward, 0, 8);
    tcase_add_test(core, reset_replays_the_same_bits);
    tcase_add_loop_test(core, prefill_matches_token_by_token, 0, 4);
    tcase_add_test(core, perplexity_matches_the_cache);
    suite_add_tcase(s, core);
    TCase *sample = rz_test_tcase("sample");
    tcase_add_test(sample, greedy_is_argmax_lowest_id_on_ties);
    tcase_add_test(sample, same_seed_same_draws);
    tcase_add_test(sample, top_k_edges);
    tcase_add_test(sample, top_p_edges);
    tcase_add_test(sample, temperature_sharpens_and_flattens);
    tcase_add_test(sample, logprob_is_log_softmax);
    suite_add_tcase(s, sample);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, sample_options_are_checked);
    tcase_add_test(errors, bad_token_and_full_context);
    tcase_add_test(errors, prefill_refuses_bad_prompts);
    tcase_add_test(errors, damaged_or_missing_checkpoint);
    tcase_add_test(errors, tokenizer_must_match);
    suite_add_tcase(s, errors);
    TCase *cli = rz_test_tcase("cli");
    tcase_add_test(cli, cli_same_seed_same_text);
    tcase_add_test(cli, cli_bad_input);
    suite_add_tcase(s, cli);
    int rc = rz_test_main(s);
    rz_test_rmtree(tok_dir);
    return rc;
}
