/* check_model: the parameter table, finite-difference gradient checks of every layer and of the
 * whole model (reference backend), oneDNN against the reference on the whole model, gradient
 * accumulation, the overlap hook, and the error paths.
 *
 * The attention core's own finite-difference checks are in check_kernels.
 * Finite differences are central, h = 1e-3, in fp32 forward passes with the objective summed in
 * double; the model is run with a large init_std so gradients are far above fp32 rounding.
 * Tolerance per element: |fd - analytic| <= 2e-3 + 3e-2 |analytic|, and over the whole vector
 * ||fd - analytic|| / ||analytic|| <= 5e-3. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/kernels.h"
#include "model/layers.h"
#include "model/model.h"
#include "testutil.h"

static struct kern_ctx *ref_ctx;

static void setup(void)
{
    ck_assert_int_eq(kern_ctx_create(&ref_ctx, KERN_REF, NULL), RZ_OK);
}

static void teardown(void)
{
    kern_ctx_destroy(ref_ctx);
    ref_ctx = NULL;
}

static void fill(float *x, size_t n, uint64_t seed, float scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = scale * (float)rz_rand_normal(seed, i);
}

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * (double)b[i];
    return s;
}

/* Tolerances of a gradient check: per element |fd - an| <= abs + rel |an|, and over the vector
 * ||fd - an|| / ||an|| <= vec. */
struct grad_tol {
    double abs, rel, vec;
};

static const struct grad_tol fp32_tol = {2e-3, 3e-2, 5e-3};

/* Compare an analytic gradient with finite differences; returns the vector relative error. */
static double compare_grads_tol(const char *what, const float *fd, const float *an, size_t n,
                                const struct grad_tol *tol)
{
    double diff2 = 0, norm2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)fd[i] - (double)an[i];
        diff2 += d * d;
        norm2 += (double)an[i] * (double)an[i];
        if (fabs(d) > tol->abs + tol->rel * fabs((double)an[i]))
            ck_abort_msg("%s[%zu]: finite difference %.6g vs analytic %.6g", what, i,
                         (double)fd[i], (double)an[i]);
    }
    ck_assert_msg(norm2 > 0, "%s: analytic gradient is all zero", what);
    double rel = sqrt(diff2 / norm2);
    ck_assert_msg(rel <= tol->vec, "%s: relative error %.3g", what, rel);
    return rel;
}

static double compare_grads(const char *what, const float *fd, const float *an, size_t n)
{
    return compare_grads_tol(what, fd, an, n, &fp32_tol);
}

/* ---- the table ------------------------------------------------------------------------------ */

static const struct model_dims seed_dims = {.vocab = 2048, .d_model = 256, .n_heads = 4,
                                            .n_layers = 2, .d_ff = 512, .seq_len = 128,
                                            .batch = 16, .ln_eps = 1e-5f, .init_std = 0.02f};

START_TEST(seed_model_size_and_flops)
{
    ck_assert_uint_eq(model_count_params(&seed_dims), 2138112);
    /* 1.309 GFLOP of matmuls per sample, as measured for the reference workload */
    ck_assert_double_eq_tol(model_flops_per_sample(&seed_dims), 1.3086e9, 1e6);
}
END_TEST

static const struct model_dims tiny = {.vocab = 13, .d_model = 8, .n_heads = 2, .n_layers = 2,
                                       .d_ff = 12, .seq_len = 5, .batch = 2, .ln_eps = 1e-5f,
                                       .init_std = 0.3f};

START_TEST(table_is_contiguous_and_named)
{
    struct model *m;
    ck_assert_int_eq(model_create(&m, &tiny, ref_ctx, NULL), RZ_OK);
    size_t n;
    const struct model_tensor *t = model_tensors(m, &n);
    ck_assert_uint_eq(n, 6 + 12 * 2);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(t[i].offset, off);
        off += (size_t)(t[i].rows * t[i].cols);
        for (size_t j = 0; j < i; j++)
            ck_assert_str_ne(t[i].name, t[j].name);
    }
    ck_assert_uint_eq(off, model_num_params(m));
    ck_assert_uint_eq(off, model_count_params(&tiny));
    ck_assert_str_eq(t[0].name, "wte");
    ck_assert_str_eq(t[12].name, "h0.mlp.proj.weight");
    ck_assert_int_eq(t[12].rows, 8);
    ck_assert_int_eq(t[12].cols, 12);
    ck_assert_str_eq(t[n - 1].name, "head.bias");
    model_destroy(m);
}
END_TEST

START_TEST(init_is_deterministic)
{
    struct model *a, *b;
    ck_assert_int_eq(model_create(&a, &tiny, ref_ctx, NULL), RZ_OK);
    ck_assert_int_eq(model_create(&b, &tiny, ref_ctx, NULL), RZ_OK);
    model_init_params(a, 5);
    model_init_params(b, 5);
    size_t n = model_num_params(a);
    ck_assert_int_eq(memcmp(model_params(a), model_params(b), n * sizeof(float)), 0);
    model_init_params(b, 6);
    ck_assert_int_ne(memcmp(model_params(a), model_params(b), n * sizeof(float)), 0);
    size_t nt;
    const struct model_tensor *t = model_tensors(a, &nt);
    ck_assert(model_params(a)[t[2].offset] == 1.0f);  /* h0.ln1.weight */
    ck_assert(model_params(a)[t[3].offset] == 0.0f);  /* h0.ln1.bias */
    model_destroy(a);
    model_destroy(b);
}
END_TEST

/* ---- layer finite-difference checks -------------------------------------------------------- */

START_TEST(linear_gradients)
{
    enum { R = 3, I = 4, O = 5 };
    struct linear lin;
    ck_assert_int_eq(linear_init(&lin, ref_ctx, R, I, O, false, true, NULL), RZ_OK);
    float x[R * I], w[O * I], b[O], r[R * O], y[R * O];
    float dx[R * I], dw[O * I] = {0}, db[O] = {0}, fd[O * I];
    fill(x, R * I, 1, 1.0f);
    fill(w, O * I, 2, 1.0f);
    fill(b, O, 3, 1.0f);
    fill(r, R * O, 4, 1.0f);
    linear_forward(&lin, y, x, w, b);
    /* y[0][0] by hand */
    double y00 = b[0];
    for (int k = 0; k < I; k++)
        y00 += (double)x[k] * (double)w[k];
    ck_assert_double_eq_tol((double)y[0], y00, 1e-5);
    linear_backward(&lin, dx, dw, db, r, NULL, x, w);
    const float h = 1e-3f;
    float *params[3] = {x, w, b};
    float *grads[3] = {dx, dw, db};
    size_t sizes[3] = {R * I, O * I, O};
    const char *names[3] = {"linear dx", "linear dw", "linear db"};
    for (int p = 0; p < 3; p++) {
        for (size_t i = 0; i < sizes[p]; i++) {
            float keep = params[p][i];
            params[p][i] = keep + h;
            linear_forward(&lin, y, x, w, b);
            double up = dot(y, r, R * O);
            params[p][i] = keep - h;
            linear_forward(&lin, y, x, w, b);
            double down = dot(y, r, R * O);
            params[p][i] = keep;
            fd[i] = (float)((up - down) / (2.0 * (double)h));
        }
        compare_grads(names[p], fd, grads[p], sizes[p]);
    }
    linear_free(&lin);
}
END_TEST

/* Activation memory grows linearly in the sequence length: no (T, T) tensor is kept (the
 * attention keeps O(B H T) statistics; issue 13).  Doubling T from 2048 to 4096 at most doubles
 * the bytes; with (B, H, T, T) scores it would multiply them by 3.4 here. */
static double activation_bytes(const struct model_dims *d)
{
    struct model_memory mm;
    model_memory_plan(d, &mm);
    return (double)mm.acts * sizeof(float) + (double)mm.acts_halves * sizeof(kern_bf16);
}

START_TEST(activation_memory_is_linear_in_seq_len)
{
    struct model_dims d = seed_dims;
    d.batch = 2;
    d.seq_len = 2048;
    double a2048 = activation_bytes(&d);
    d.seq_len = 4096;
    double a4096 = activation_bytes(&d);
    ck_assert_msg(a4096 <= 2.0 * a2048, "activations %.0f MB at T=4096, %.0f MB at T=2048",
                  a4096 / 1e6, a2048 / 1e6);
    ck_assert_msg(a4096 < 500e6, "activations at T=4096, B=2: %.0f MB", a4096 / 1e6);
}
END_TEST

START_TEST(embedding_gradients)
{
    enum { B = 2, T = 3, C = 4, V = 5 };
    int32_t tok[B * T] = {1, 4, 1, 0, 2, 1};
    float wte[V * C], wpe[T * C], x[B * T * C], r[B * T * C];
    float dwte[V * C] = {0}, dwpe[T * C] = {0};
    fill(wte, V * C, 21, 1.0f);
    fill(wpe, T * C, 22, 1.0f);
    fill(r, B * T * C, 23, 1.0f);
    embedding_forward(x, tok, wte, wpe, B, T, C);
    ck_assert_float_eq_tol(x[C + 2], wte[4 * C + 2] + wpe[C + 2], 1e-7);
    embedding_backward(dwte, dwpe, r, tok, B, T, C);
    /* token 1 appears at (0,0), (0,2), (1,2): its gradient is the sum of those rows of r */
    for (int c = 0; c < C; c++) {
        float want = r[0 * C + c] + r[2 * C + c] + r[5 * C + c];
        ck_assert_float_eq_tol(dwte[1 * C + c], want, 1e-6);
        ck_assert(dwte[3 * C + c] == 0.0f); /* token 3 never occurs */
        ck_assert_float_eq_tol(dwpe[1 * C + c], r[1 * C + c] + r[4 * C + c], 1e-6);
    }
}
END_TEST

/* ---- whole model --------------------------------------------------------------------------- */

static void tiny_tokens(int32_t *in, int32_t *tg, const struct model_dims *d, uint64_t seed)
{
    int64_t n = d->batch * d->seq_len;
    for (int64_t i = 0; i < n; i++) {
        in[i] = (int32_t)(rz_rand64(seed, (uint64_t)i) % (uint64_t)d->vocab);
        tg[i] = (int32_t)(rz_rand64(seed + 1, (uint64_t)i) % (uint64_t)d->vocab);
    }
}

/* model.head_bias false (GPT-2's head): no head.bias in the table, V parameters fewer, and the
 * model computes what the one with a zero bias computes: the same loss and, for every tensor
 * but the bias, the same gradient bits (untied, then tied: _i). */
START_TEST(table_without_head_bias)
{
    struct model_dims with = tiny, without = tiny;
    with.tie_embeddings = without.tie_embeddings = _i;
    without.no_head_bias = true;
    struct model *a, *b;
    ck_assert_int_eq(model_create(&a, &with, ref_ctx, NULL), RZ_OK);
    ck_assert_int_eq(model_create(&b, &without, ref_ctx, NULL), RZ_OK);
    size_t na, nb;
    const struct model_tensor *ta = model_tensors(a, &na), *tb = model_tensors(b, &nb);
    ck_assert_uint_eq(nb, na - 1);
    for (size_t i = 0; i < nb; i++) {
        ck_assert_str_ne(tb[i].name, "head.bias");
        ck_assert_str_eq(tb[i].name, ta[i].name);
        ck_assert_uint_eq(tb[i].offset, ta[i].offset);
    }
    ck_assert_str_eq(tb[nb - 1].name, _i ? "ln_f.bias" : "head.weight");
    ck_assert_uint_eq(model_num_params(b), model_num_params(a) - (size_t)tiny.vocab);
    ck_assert_uint_eq(model_count_params(&without), model_num_params(b));
    struct model_memory ma, mb;
    model_memory_plan(&with, &ma);
    model_memory_plan(&without, &mb);
    ck_assert_uint_eq(mb.params, ma.params - (size_t)tiny.vocab);
    model_init_params(a, 31);
    model_init_params(b, 31); /* keyed by flat index: the same values, a's bias zero */
    size_t n = model_num_params(b);
    ck_assert_int_eq(memcmp(model_params(a), model_params(b), n * sizeof(float)), 0);
    int32_t in[10], tg[10];
    tiny_tokens(in, tg, &tiny, 32);
    model_zero_grads(a);
    model_zero_grads(b);
    float la = model_forward(a, in, tg), lb = model_forward(b, in, tg);
    ck_assert(isfinite(la) && la == lb);
    model_backward(a, 1.0f);
    model_backward(b, 1.0f);
    ck_assert_int_eq(memcmp(model_grads(a), model_grads(b), n * sizeof(float)), 0);
    double bias2 = 0.0; /* what b does not compute: a's bias gradient, which is not zero */
    for (size_t k = n; k < model_num_params(a); k++)
        bias2 += (double)model_grads(a)[k] * (double)model_grads(a)[k];
    ck_assert(bias2 > 0.0);
    model_destroy(a);
    model_destroy(b);
}
END_TEST

/* The gradient check of the whole model (reference backend), in fp32 and in bf16 (_i & 4), tied
 * or not (_i & 1), with or without dropout (_i & 2), and in fp32 without the head bias (_i & 8,
 * model.head_bias false).  A bf16 model's loss is a step function of its weights at the bf16
 * grid (spacing 2^-8 relative), so its finite differences are those of the fp32 model with the
 * same weights; the bf16 gradient must match them within bf16's precision:
 *     |fd - an| <= 2e-2 + 0.25 |an| per element and ||fd - an|| / ||an|| <= 5e-2 per tensor. */
START_TEST(whole_model_gradients)
{
    const struct grad_tol bf16_tol = {2e-2, 0.25, 5e-2};
    struct model_dims dims = tiny;
    dims.tie_embeddings = _i & 1; /* loop: untied, then the head's weight is wte */
    dims.dropout = _i & 2 ? 0.25f : 0.0f; /* with dropout, its masks fixed by the context */
    dims.no_head_bias = (_i & 8) != 0;
    struct model_dims fp32 = dims;
    dims.bf16 = (_i & 4) != 0;
    struct model *m, *f; /* f: the fp32 model the finite differences run on */
    ck_assert_int_eq(model_create(&m, &dims, ref_ctx, NULL), RZ_OK);
    ck_assert_int_eq(model_create(&f, &fp32, ref_ctx, NULL), RZ_OK);
    ck_assert_uint_eq(model_num_params(m), model_count_params(&tiny) - (_i & 1 ? 13 * 8 : 0) -
                                               (_i & 8 ? 13 : 0));
    model_init_params(m, 77);
    model_init_params(f, 77);
    model_set_dropout(m, true, 5, 3, 100);
    model_set_dropout(f, true, 5, 3, 100);
    int32_t in[10], tg[10];
    tiny_tokens(in, tg, &tiny, 99);
    size_t n = model_num_params(m);
    float *p = model_params(f), *g = model_grads(m);
    float *fd = calloc(n, sizeof *fd);
    model_zero_grads(m);
    float loss = model_forward(m, in, tg);
    ck_assert(isfinite(loss) && loss > 0.0f);
    model_backward(m, 1.0f);
    const float h = 1e-3f;
    for (size_t i = 0; i < n; i++) {
        float keep = p[i];
        p[i] = keep + h;
        double up = (double)model_forward(f, in, tg);
        p[i] = keep - h;
        double down = (double)model_forward(f, in, tg);
        p[i] = keep;
        fd[i] = (float)((up - down) / (2.0 * (double)h));
    }
    size_t nt;
    const struct model_tensor *t = model_tensors(m, &nt);
    double worst = 0.0;
    for (size_t i = 0; i < nt; i++) {
        size_t cnt = (size_t)(t[i].rows * t[i].cols);
        /* wte rows of tokens that never occur have zero gradient; check the whole tensor */
        double rel = compare_grads_tol(t[i].name, fd + t[i].offset, g + t[i].offset, cnt,
                                       dims.bf16 ? &bf16_tol : &fp32_tol);
        worst = fmax(worst, rel);
    }
    if (getenv("RZ_TEST_VERBOSE") != NULL)
        printf("whole-model gradient check (%s): worst tensor relative error %.3g\n",
               dims.bf16 ? "bf16" : "fp32", worst);
    free(fd);
    model_destroy(m);
    model_destroy(f);
}
END_TEST

/* training.recompute block: the same loss and the same gradient bits as keeping everything, on
 * both backends, with and without dropout (its masks are recomputed too), in fp32 and in bf16
 * (the recomputation rounds the same matmul inputs again); less memory kept. */
START_TEST(recomputation_is_bit_identical)
{
    struct kern_ctx *ctx = ref_ctx, *dctx = NULL;
    if ((_i & 1) && !(_i & 4)) { /* bf16 (4, 5): the reference's emulation, on any CPU */
        ck_assert_int_eq(kern_ctx_create(&dctx, KERN_DNNL, NULL), RZ_OK);
        ctx = dctx;
    }
    struct model_dims d = {.vocab = 64, .d_model = 32, .n_heads = 4, .n_layers = 3, .d_ff = 48,
                           .seq_len = 16, .batch = 3, .ln_eps = 1e-5f, .init_std = 0.1f,
                           .dropout = _i & 2 ? 0.1f : 0.0f, .bf16 = (_i & 4) != 0};
    struct model_dims r = d;
    r.recompute = MODEL_RECOMPUTE_BLOCK;
    struct model *a, *b;
    ck_assert_int_eq(model_create(&a, &d, ctx, NULL), RZ_OK);
    ck_assert_int_eq(model_create(&b, &r, ctx, NULL), RZ_OK);
    model_init_params(a, 21);
    model_init_params(b, 21);
    int32_t in[48], tg[48];
    tiny_tokens(in, tg, &d, 22);
    for (int micro = 0; micro < 2; micro++) { /* two micro-steps: accumulated gradients too */
        model_set_dropout(a, true, 9, 4, 48 + 3 * (uint64_t)micro);
        model_set_dropout(b, true, 9, 4, 48 + 3 * (uint64_t)micro);
        float la = model_forward(a, in, tg), lb = model_forward(b, in, tg);
        ck_assert_msg(la == lb, "loss %.9g vs %.9g", (double)la, (double)lb);
        model_backward(a, 0.5f);
        model_backward(b, 0.5f);
    }
    ck_assert_int_eq(memcmp(model_grads(a), model_grads(b), model_num_params(a) * sizeof(float)),
                     0);
    struct model_memory ma, mb;
    model_memory_plan(&d, &ma);
    model_memory_plan(&r, &mb);
    /* 3 blocks' activations kept vs 3 inputs and one block's */
    ck_assert_uint_lt(mb.acts_kept, ma.acts_kept);
    model_destroy(a);
    model_destroy(b);
    kern_ctx_destroy(dctx);
}
END_TEST

/* A dropout mask belongs to a global sample, not to a batch position: sample 11 in position 1 of
 * a batch of 2 gets the same losses as alone in a batch of 1; another step, other masks. */
START_TEST(dropout_masks_follow_the_global_sample)
{
    struct model_dims two = tiny, one = tiny;
    two.dropout = one.dropout = 0.3f;
    one.batch = 1;
    struct model *a, *b;
    ck_assert_int_eq(model_create(&a, &two, ref_ctx, NULL), RZ_OK);
    ck_assert_int_eq(model_create(&b, &one, ref_ctx, NULL), RZ_OK);
    model_init_params(a, 31);
    model_init_params(b, 31);
    int32_t in[10], tg[10];
    tiny_tokens(in, tg, &tiny, 32);
    model_set_dropout(a, true, 7, 2, 10); /* rows 0..4: sample 10, rows 5..9: sample 11 */
    model_set_dropout(b, true, 7, 2, 11);
    model_forward(a, in, tg);
    model_forward(b, in + 5, tg + 5);
    ck_assert_int_eq(memcmp(model_token_losses(a) + 5, model_token_losses(b), 5 * sizeof(float)),
                     0);
    float with = model_forward(b, in + 5, tg + 5);
    model_set_dropout(b, true, 7, 3, 11);
    ck_assert(model_forward(b, in + 5, tg + 5) != with);
    model_set_dropout(b, false, 7, 3, 11); /* validation: no dropout at all */
    struct model *c;
    struct model_dims plain = one;
    plain.dropout = 0.0f;
    ck_assert_int_eq(model_create(&c, &plain, ref_ctx, NULL), RZ_OK);
    model_init_params(c, 31);
    ck_assert(model_forward(b, in + 5, tg + 5) == model_forward(c, in + 5, tg + 5));
    model_destroy(a);
    model_destroy(b);
    model_destroy(c);
}
END_TEST

START_TEST(dropout_drops_p_and_rescales)
{
    enum { B = 4, T = 50, C = 100, N = B * T * C };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *dy = malloc(N * sizeof *dy);
    for (int i = 0; i < N; i++)
        x[i] = 1.0f;
    struct dropout_site s = {.p = 0.2f, .seed = 1, .step = 2, .first_sample = 3, .layer = 1,
                             .site = 2};
    dropout_forward(y, x, &s, B, T, C);
    int zeros = 0;
    double sum = 0;
    for (int i = 0; i < N; i++) {
        zeros += y[i] == 0.0f;
        sum += (double)y[i];
        ck_assert(y[i] == 0.0f || y[i] == 1.25f);
    }
    ck_assert_double_eq_tol((double)zeros / N, 0.2, 0.01); /* 20000 draws: 4 sigma ~ 0.011 */
    ck_assert_double_eq_tol(sum / N, 1.0, 0.015);
    dropout_backward(dy, x, &s, B, T, C); /* the same mask */
    ck_assert_int_eq(memcmp(dy, y, N * sizeof *y), 0);
    s.site = 1;
    dropout_forward(dy, x, &s, B, T, C); /* another site: another mask */
    ck_assert_int_ne(memcmp(dy, y, N * sizeof *y), 0);
    free(x);
    free(y);
    free(dy);
}
END_TEST

START_TEST(dnnl_matches_reference_on_the_model)
{
    struct kern_ctx *dctx;
    ck_assert_int_eq(kern_ctx_create(&dctx, KERN_DNNL, NULL), RZ_OK);
    struct model_dims d = {.vocab = 64, .d_model = 32, .n_heads = 4, .n_layers = 2, .d_ff = 48,
                           .seq_len = 16, .batch = 3, .ln_eps = 1e-5f, .init_std = 0.1f,
                           .no_head_bias = _i}; /* then the head's matmul without a bias */
    struct model *a, *b;
    ck_assert_int_eq(model_create(&a, &d, ref_ctx, NULL), RZ_OK);
    ck_assert_int_eq(model_create(&b, &d, dctx, NULL), RZ_OK);
    model_init_params(a, 3);
    model_init_params(b, 3);
    int32_t in[48], tg[48];
    tiny_tokens(in, tg, &d, 4);
    model_zero_grads(a);
    model_zero_grads(b);
    float la = model_forward(a, in, tg), lb = model_forward(b, in, tg);
    ck_assert_float_eq_tol(la, lb, 1e-5f * la);
    model_backward(a, 1.0f);
    model_backward(b, 1.0f);
    size_t n = model_num_params(a);
    double diff2 = 0, norm2 = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)model_grads(a)[i] - (double)model_grads(b)[i];
        diff2 += e * e;
        norm2 += (double)model_grads(a)[i] * (double)model_grads(a)[i];
    }
    ck_assert_msg(sqrt(diff2 / norm2) < 1e-4, "dnnl vs ref gradient rel error %.3g",
                  sqrt(diff2 / norm2));
    model_destroy(a);
    model_destroy(b);
    kern_ctx_destroy(dctx);
}
END_TEST

/* Two backward passes at loss_scale 0.5 add up to one at 1.0 (gradient accumulation). */
START_TEST(backward_accumulates)
{
    struct model *m;
    ck_assert_int_eq(model_create(&m, &tiny, ref_ctx, NULL), RZ_OK);
    model_init_params(m, 8);
    int32_t in[10], tg[10];
    tiny_tokens(in, tg, &tiny, 9);
    size_t n = model_num_params(m);
    float *once = malloc(n * sizeof *once);
    model_zero_grads(m);
    model_forward(m, in, tg);
    model_backward(m, 1.0f);
    memcpy(once, model_grads(m), n * sizeof *once);
    model_zero_grads(m);
    for (int i = 0; i < 2; i++) {
        model_forward(m, in, tg);
        model_backward(m, 0.5f);
    }
    for (size_t i = 0; i < n; i++)
        ck_assert_float_eq_tol(model_grads(m)[i], once[i], 1e-6f + 1e-5f * fabsf(once[i]));
    free(once);
    model_destroy(m);
}
END_TEST

struct hook_log {
    size_t n;
    unsigned char *seen;
    size_t calls, last_end, progress_points, needed_calls, needed_end;
    int ordered;
};

static void record_progress(void *user)
{
    ((struct hook_log *)user)->progress_points++;
}

static void record_needed(void *user, size_t offset, size_t count)
{
    struct hook_log *h = user;
    if (offset != h->needed_end) /* forward asks for the ranges in order, start to end */
        h->ordered = 0;
    h->needed_end = offset + count;
    h->needed_calls++;
}

static void record_ready(void *user, size_t offset, size_t count, float *data)
{
    struct hook_log *h = user;
    (void)data;
    for (size_t i = offset; i < offset + count && i < h->n; i++)
        h->seen[i]++;
    if (h->calls > 0 && offset + count != h->last_end)
        h->ordered = 0; /* ranges must be adjacent, moving towards the start */
    h->last_end = offset;
    h->calls++;
}

START_TEST(grad_ready_hook_covers_every_parameter_once)
{
    struct model *m;
    ck_assert_int_eq(model_create(&m, &tiny, ref_ctx, NULL), RZ_OK);
    model_init_params(m, 1);
    struct hook_log h = {.n = model_num_params(m), .ordered = 1};
    h.seen = calloc(h.n, 1);
    struct model_hooks hooks = {.user = &h, .grad_ready = record_ready,
                                .params_needed = record_needed, .progress = record_progress};
    model_set_hooks(m, &hooks);
    int32_t in[10], tg[10];
    tiny_tokens(in, tg, &tiny, 2);
    model_forward(m, in, tg);
    ck_assert_uint_eq(h.needed_calls, (size_t)tiny.n_layers + 2);
    ck_assert_uint_eq(h.needed_end, h.n);
    ck_assert_uint_eq(h.progress_points, (size_t)tiny.n_layers); /* one per block */
    h.progress_points = 0;
    model_backward(m, 1.0f);
    ck_assert_uint_eq(h.calls, (size_t)tiny.n_layers + 2);
    ck_assert_uint_eq(h.progress_points, 1 + 5 * (size_t)tiny.n_layers);
    ck_assert_int_eq(h.ordered, 1);
    ck_assert_uint_eq(h.last_end, 0);
    for (size_t i = 0; i < h.n; i++)
        ck_assert_int_eq(h.seen[i], 1);
    free(h.seen);
    model_destroy(m);
}
END_TEST

/* segment_grads (ZeRO-2): a segment's buffer is handed over at grad_ready and must not be
 * written again before grad_reuse.  This hook copies a segment only when its buffer is reused
 * (as a send would finish late), so an early overwrite would show in the copies. */
struct deferred {
    float *full;               /* the gradients collected in table layout */
    struct { size_t offset, count; float *data; } pending[16];
    size_t n_pending, reuses;
};

static void deferred_flush(struct deferred *d, const float *data, size_t count)
{
    size_t kept = 0;
    for (size_t i = 0; i < d->n_pending; i++) {
        if (data == NULL || (d->pending[i].data < data + count && data < d->pending[i].data +
                                                                       d->pending[i].count))
            memcpy(d->full + d->pending[i].offset, d->pending[i].data,
                   d->pending[i].count * sizeof(float));
        else
            d->pending[kept++] = d->pending[i];
    }
    d->n_pending = kept;
}

static void deferred_ready(void *user, size_t offset, size_t count, float *data)
{
    struct deferred *d = user;
    ck_assert_uint_lt(d->n_pending, 16);
    d->pending[d->n_pending].offset = offset;
    d->pending[d->n_pending].count = count;
    d->pending[d->n_pending++].data = data;
}

static void deferred_reuse(void *user, const float *data, size_t count)
{
    struct deferred *d = user;
    d->reuses++;
    deferred_flush(d, data, count);
}

START_TEST(segment_grads_match_the_full_buffer)
{
    struct model_dims full = tiny, seg = tiny;
    full.n_layers = seg.n_layers = 4; /* the two small buffers are each reused */
    full.tie_embeddings = seg.tie_embeddings = _i & 1;
    full.no_head_bias = seg.no_head_bias = (_i & 2) != 0; /* a head segment without the bias */
    seg.segment_grads = 1;
    struct model *a, *b;
    ck_assert_int_eq(model_create(&a, &full, ref_ctx, NULL), RZ_OK);
    ck_assert_int_eq(model_create(&b, &seg, ref_ctx, NULL), RZ_OK);
    ck_assert_ptr_null(model_grads(b));
    struct model_memory ma, mb;
    model_memory_plan(&full, &ma);
    model_memory_plan(&seg, &mb);
    ck_assert_uint_eq(ma.grads, model_num_params(a));
    ck_assert_uint_lt(mb.grads, ma.grads);
    size_t n = model_num_params(a);
    model_init_params(a, 5);
    model_init_params(b, 5);
    struct deferred d = {.full = calloc(n, sizeof(float))};
    struct model_hooks h = {.user = &d, .grad_ready = deferred_ready,
                            .grad_reuse = deferred_reuse};
    model_set_hooks(b, &h);
    int32_t in[10], tg[10];
    tiny_tokens(in, tg, &tiny, 6);
    model_zero_grads(a);
    ck_assert(model_forward(a, in, tg) == model_forward(b, in, tg));
    model_backward(a, 0.5f);
    model_backward(b, 0.5f);
    deferred_flush(&d, NULL, 0);
    ck_assert_uint_eq(d.reuses, (size_t)seg.n_layers + 2); /* once per segment */
    ck_assert_int_eq(memcmp(d.full, model_grads(a), n * sizeof(float)), 0);
    /* a second micro-step: the segments start from zero again (no accumulation) */
    memset(d.full, 0, n * sizeof(float));
    model_forward(b, in, tg); /* backward consumes the forward's probabilities */
    model_backward(b, 0.5f);
    deferred_flush(&d, NULL, 0);
    ck_assert_int_eq(memcmp(d.full, model_grads(a), n * sizeof(float)), 0);
    free(d.full);
    model_destroy(a);
    model_destroy(b);
}
END_TEST

START_TEST(bad_dims_are_refused)
{
    struct model *m = (struct model *)1;
    struct rz_err e;
    struct model_dims d = tiny;
    d.n_heads = 3;
    ck_assert_int_eq(model_create(&m, &d, ref_ctx, &e), RZ_ECONFIG);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(e.msg, "not divisible by n_heads 3"));
    d = tiny;
    d.seq_len = 0;
    ck_assert_int_eq(model_create(&m, &d, ref_ctx, &e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "positive"));
    model_destroy(NULL);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, seed_model_size_and_flops);
    tcase_add_test(core, table_is_contiguous_and_named);
    tcase_add_loop_test(core, table_without_head_bias, 0, 2);
    tcase_add_test(core, init_is_deterministic);
    tcase_add_test(core, linear_gradients);
    tcase_add_test(core, activation_memory_is_linear_in_seq_len);
    tcase_add_test(core, embedding_gradients);
    tcase_add_loop_test(core, whole_model_gradients, 0, 12);
    tcase_add_loop_test(core, recomputation_is_bit_identical, 0, 8);
    tcase_add_test(core, dropout_masks_follow_the_global_sample);
    tcase_add_test(core, dropout_drops_p_and_rescales);
    tcase_add_loop_test(core, segment_grads_match_the_full_buffer, 0, 4);
    tcase_add_loop_test(core, dnnl_matches_reference_on_the_model, 0, 2);
    tcase_add_test(core, backward_accumulates);
    tcase_add_test(core, grad_ready_hook_covers_every_parameter_once);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, bad_dims_are_refused);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(model_suite());
}
