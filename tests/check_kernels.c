/* check_kernels.c: Check suite of the kernels module.
 *
 * "core":   hand-computed values for the reference backend; the oneDNN backend against the
 *           reference at the model's seed shapes and at odd small shapes (attention: tiles
 *           with edges); finite-difference gradient checks of every reference backward and of
 *           the oneDNN attention's; causality of the attention to the bit; accuracy of the
 *           vectorized exp; bit-identical reruns, and on 1 and 2 threads.
 * "levels": every vector level of the row kernels gives the baseline's bits; "rows-baseline"
 *           and "rows-avx2": the row kernels' tests of "core" again at each level below the
 *           CPU's own.
 * "errors": bad shapes and bad backend names return RZ_ECONFIG with a message naming the op.
 *
 * This file holds the matmuls (hand values, seed and small shapes, bf16, BLIS's weight
 * gradients, the decoder's one-row GEMV, the profile, the measured peak), bf16 rounding, and the suite; the layer norm and
 * GELU are check_kernels_norm.c's, the attention check_kernels_attention.c's, the cross-entropy
 * check_kernels_xent.c's, the levels check_kernels_levels.c's and the errors
 * check_kernels_errors.c's, with the fixtures of kernels_fixtures.c.
 *
 * Tolerance for oneDNN vs reference (fp32 against a double-accumulating reference):
 *     max |dnnl - ref| <= 1e-4 * (1 + max |ref|)            (TOL_DNNL)
 * Finite differences: central, in double, step h = 1e-2 (re-read after rounding to float):
 *     |fd - analytic| <= 2e-3 * (1 + |analytic|)            (TOL_FD)
 *
 * RZ_KERNEL_TIMINGS=1 additionally prints ms per call of every seed-shape op on both backends
 * (after the suite, in the parent process; never asserted on; check_kernels_timings.c). */
#include "config.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/isa.h"
#include "kernels/kern_impl.h"
#include "kernels/kernels.h"
#include "testutil.h"

#include "kernels_fixtures.h"

/* ---- matmul -------------------------------------------------------------------------------- */

START_TEST(test_ref_matmul_hand)
{
    /* [[1 2] [3 4]] @ [[5 6] [7 8]] = [[19 22] [43 50]] */
    const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8}, bias[] = {0.5f, -1};
    float c[4];
    struct kern_matmul_desc d = {.batch = 1, .m = 2, .n = 2, .k = 2, .alpha = 1.0f};
    struct kern_matmul *op = mm_new(g_ref, &d);
    kern_matmul_run(op, c, a, b, NULL);
    ck_assert(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50);
    kern_matmul_destroy(op);
    /* A @ B^T = [[17 23] [39 53]]; * 0.5 + bias + previous C */
    d.trans_b = true;
    d.alpha = 0.5f;
    d.bias = true;
    d.accumulate = true;
    op = mm_new(g_ref, &d);
    kern_matmul_run(op, c, a, b, bias);
    ck_assert(c[0] == 19 + 8.5f + 0.5f && c[1] == 22 + 11.5f - 1);
    ck_assert(c[2] == 43 + 19.5f + 0.5f && c[3] == 50 + 26.5f - 1);
    kern_matmul_destroy(op);
}
END_TEST

/* Runs one matmul on both backends from the same inputs and initial C and compares. */
static void compare_matmul(const struct kern_matmul_desc *d, uint32_t seed)
{
    size_t na = (size_t)(d->batch * d->m * d->k), nb = (size_t)(d->batch * d->k * d->n);
    size_t nc = (size_t)(d->batch * d->m * d->n);
    float *a = random_vec(na, seed), *b = random_vec(nb, seed + 1);
    float *bias = random_vec((size_t)d->n, seed + 2), *c_ref = random_vec(nc, seed + 3);
    float *c_dnnl = copy_of(c_ref, nc);
    struct kern_matmul *r = mm_new(g_ref, d), *o = mm_new(g_dnnl, d);
    kern_matmul_run(r, c_ref, a, b, bias);
    kern_matmul_run(o, c_dnnl, a, b, bias);
    char what[160];
    snprintf(what, sizeof what, "matmul b=%lld m=%lld n=%lld k=%lld ta=%d tb=%d alpha=%g bias=%d acc=%d",
             (long long)d->batch, (long long)d->m, (long long)d->n, (long long)d->k, d->trans_a,
             d->trans_b, (double)d->alpha, d->bias, d->accumulate);
    assert_close(c_dnnl, c_ref, nc, TOL_DNNL, what);
    kern_matmul_destroy(r);
    kern_matmul_destroy(o);
    free(a);
    free(b);
    free(bias);
    free(c_ref);
    free(c_dnnl);
}

START_TEST(test_matmul_small_combos)
{
    /* every trans/bias/accumulate combination, alpha 1 and 1/8, batch 1 and 2, m=3 n=5 k=7 */
    for (int mask = 0; mask < 64; mask++) {
        struct kern_matmul_desc d = {
            .batch = (mask & 16) ? 2 : 1, .m = 3, .n = 5, .k = 7,
            .trans_a = mask & 1, .trans_b = mask & 2, .bias = mask & 4, .accumulate = mask & 8,
            .alpha = (mask & 32) ? 0.125f : 1.0f,
        };
        compare_matmul(&d, (uint32_t)mask);
    }
}
END_TEST

START_TEST(test_matmul_seed_shapes)
{
    compare_matmul(&seed_mm[_i], 100u + (uint32_t)_i);
}
END_TEST

/* The decoder's one-row linear layers (m = 1, C = A B^T [+ bias]) run on our GEMV on the oneDNN
 * backend: the rule takes that form only; at odd and model sizes (rows past a block of four,
 * partial pieces) it matches the reference; its bits are the same on 1 and 2 threads. */
START_TEST(test_gemv)
{
    const struct kern_matmul_desc one = {.batch = 1, .m = 1, .n = 67, .k = 37, .trans_b = true,
                                         .alpha = 1.0f, .bias = true};
    ck_assert(kern_simd_gemv_takes(&one));
    struct kern_matmul_desc d = one;
    d.m = 2;
    ck_assert(!kern_simd_gemv_takes(&d));
    d = one, d.trans_b = false;
    ck_assert(!kern_simd_gemv_takes(&d));
    d = one, d.trans_a = true;
    ck_assert(!kern_simd_gemv_takes(&d));
    d = one, d.accumulate = true;
    ck_assert(!kern_simd_gemv_takes(&d));
    d = one, d.alpha = 0.5f;
    ck_assert(!kern_simd_gemv_takes(&d));
    d = one, d.bf16 = true;
    ck_assert(!kern_simd_gemv_takes(&d));
    d = one, d.batch = 2;
    ck_assert(!kern_simd_gemv_takes(&d));
    const int64_t shapes[][2] = {{1, 1}, {5, 7}, {67, 37}, {130, 16}, {768, 256}, {256, 1024}};
    for (size_t i = 0; i < RZ_ARRAY_LEN(shapes); i++)
        for (int bias = 0; bias < 2; bias++) {
            d = one, d.n = shapes[i][0], d.k = shapes[i][1], d.bias = bias;
            compare_matmul(&d, 300u + (uint32_t)(2 * i) + (uint32_t)bias);
        }
    d = one, d.n = 700, d.k = 129;
    float *a = random_vec((size_t)d.k, 71), *b = random_vec((size_t)(d.n * d.k), 72);
    float *bias = random_vec((size_t)d.n, 73), *c1 = random_vec((size_t)d.n, 74);
    float *c2 = copy_of(c1, (size_t)d.n);
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    kern_simd_gemv(&d, c1, a, b, bias);
    omp_set_num_threads(2);
    kern_simd_gemv(&d, c2, a, b, bias);
    omp_set_num_threads(threads);
    ck_assert_msg(memcmp(c1, c2, (size_t)d.n * sizeof *c1) == 0, "GEMV: 1 and 2 threads differ");
    free(a), free(b), free(bias), free(c1), free(c2);
}
END_TEST

/* ---- bf16 ---------------------------------------------------------------------------------- */

static float bf16_value(kern_bf16 h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

START_TEST(test_round_bf16)
{
    /* 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even 1; 1 + 3 * 2^-8 lies
     * halfway between 1 + 2^-7 and 1 + 2^-6: to the even 1 + 2^-6; just above a half rounds up;
     * FLT_MAX is past the largest bf16 (0x1.fep127) by more than half an ulp: inf */
    const float x[] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f,
                       -2.5f, FLT_MAX, INFINITY, -0.0f, 1e-40f};
    const kern_bf16 want[] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xc020, 0x7f80, 0x7f80, 0x8000,
                              0x0001};
    kern_bf16 h[10];
    kern_round_bf16(h, x, 9);
    for (int i = 0; i < 9; i++)
        ck_assert_msg(h[i] == want[i], "bf16(%a) = %04x, want %04x", (double)x[i], h[i], want[i]);
    const float nan = NAN;
    kern_round_bf16(h, &nan, 1);
    ck_assert(isnan(bf16_value(h[0])));
    /* a long vector (the parallel blocks and every ISA clone's loop): the nearest bf16 */
    enum { N = 100003 };
    float *v = random_vec(N, 9);
    kern_bf16 *hv = malloc(N * sizeof *hv);
    kern_round_bf16(hv, v, N);
    for (int i = 0; i < N; i++) {
        double err = fabs((double)bf16_value(hv[i]) - (double)v[i]);
        ck_assert_msg(err <= fabs((double)v[i]) * 0x1p-8, "bf16(%a) = %a", (double)v[i],
                      (double)bf16_value(hv[i]));
    }
    free(v), free(hv);
}
END_TEST

/* kern_colsum_round: each column summed in row order, so exactly a plain loop's float sums at
 * 1 and 2 threads (odd widths: a band's last vector is partial), onto what sums held; the
 * rounding is kern_round_bf16's; either output may be left out. */
START_TEST(test_colsum_round)
{
    const int64_t shapes[][2] = {{2048, 256}, {2048, 768}, {300, 37}, {1, 5}, {7, 1}};
    for (size_t k = 0; k < RZ_ARRAY_LEN(shapes); k++) {
        int64_t rows = shapes[k][0], cols = shapes[k][1], n = rows * cols;
        float *src = random_vec((size_t)n, 40u + (uint32_t)k);
        float *start = random_vec((size_t)cols, 60u + (uint32_t)k);
        float *want = malloc((size_t)cols * sizeof *want);
        float *got = malloc((size_t)cols * sizeof *got);
        kern_bf16 *wh = malloc((size_t)n * sizeof *wh), *gh = malloc((size_t)n * sizeof *gh);
        memcpy(want, start, (size_t)cols * sizeof *want);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < cols; j++)
                want[j] += src[r * cols + j];
        kern_round_bf16(wh, src, n);
        for (int threads = 1; threads <= 2; threads++) {
            omp_set_num_threads(threads);
            memcpy(got, start, (size_t)cols * sizeof *got);
            memset(gh, 0, (size_t)n * sizeof *gh);
            kern_colsum_round(got, gh, src, rows, cols);
            ck_assert_msg(memcmp(got, want, (size_t)cols * sizeof *got) == 0,
                          "sums differ from a plain loop: %ldx%ld, %d threads", (long)rows,
                          (long)cols, threads);
            ck_assert_msg(memcmp(gh, wh, (size_t)n * sizeof *gh) == 0,
                          "rounding differs: %ldx%ld, %d threads", (long)rows, (long)cols,
                          threads);
            memcpy(got, start, (size_t)cols * sizeof *got);
            kern_colsum_round(got, NULL, src, rows, cols);
            ck_assert(memcmp(got, want, (size_t)cols * sizeof *got) == 0);
            memset(gh, 0, (size_t)n * sizeof *gh);
            kern_colsum_round(NULL, gh, src, rows, cols);
            ck_assert(memcmp(gh, wh, (size_t)n * sizeof *gh) == 0);
        }
        omp_set_num_threads(1);
        free(src), free(start), free(want), free(got), free(wh), free(gh);
    }
}
END_TEST

/* The reference's bf16 matmul is the fp32 one on the rounded values, bit for bit; the oneDNN
 * backend matches it within TOL_DNNL where the CPU runs bf16, and refuses it by name where not. */
START_TEST(test_matmul_bf16)
{
    const struct kern_matmul_desc *d32 = &seed_mm[_i];
    struct kern_matmul_desc d = *d32;
    d.bf16 = true;
    size_t na = (size_t)(d.batch * d.m * d.k), nb = (size_t)(d.batch * d.k * d.n);
    size_t nc = (size_t)(d.batch * d.m * d.n);
    float *a = random_vec(na, 200 + (uint32_t)_i), *b = random_vec(nb, 300 + (uint32_t)_i);
    float *bias = random_vec((size_t)d.n, 3), *c0 = random_vec(nc, 4);
    kern_bf16 *ah = malloc(na * sizeof *ah), *bh = malloc(nb * sizeof *bh);
    kern_round_bf16(ah, a, (int64_t)na);
    kern_round_bf16(bh, b, (int64_t)nb);
    for (size_t i = 0; i < na; i++)
        a[i] = bf16_value(ah[i]);
    for (size_t i = 0; i < nb; i++)
        b[i] = bf16_value(bh[i]);
    float *c_ref32 = copy_of(c0, nc), *c_ref = copy_of(c0, nc), *c_dnnl = copy_of(c0, nc);
    struct kern_matmul *r32 = mm_new(g_ref, d32), *r = mm_new(g_ref, &d);
    kern_matmul_run(r32, c_ref32, a, b, bias);
    kern_matmul_run(r, c_ref, ah, bh, bias);
    ck_assert(memcmp(c_ref, c_ref32, nc * sizeof *c_ref) == 0);
    struct kern_matmul *o = NULL;
    struct rz_err err;
    if (kern_check_bf16(g_dnnl, &err) == RZ_OK) {
        ck_assert_int_eq(kern_matmul_create(&o, g_dnnl, &d, &err), RZ_OK);
        kern_matmul_run(o, c_dnnl, ah, bh, bias);
        assert_close(c_dnnl, c_ref, nc, TOL_DNNL, "bf16 matmul");
    } else {
        ck_assert_int_eq(kern_matmul_create(&o, g_dnnl, &d, &err), RZ_ECONFIG);
        ck_assert_msg(strstr(err.msg, "avx512_bf16") && strstr(err.msg, "amx_bf16"), "%s",
                      err.msg);
    }
    kern_matmul_destroy(o);
    kern_matmul_destroy(r);
    kern_matmul_destroy(r32);
    free(a), free(b), free(bias), free(c0), free(ah), free(bh);
    free(c_ref32), free(c_ref), free(c_dnnl);
}
END_TEST

/* ---- BLIS: the weight gradients where oneDNN runs AVX2 (kern_blis.c) ------------------------ */

/* The rule: only the weight gradients' form, only below AVX-512, never on BLIS's generic
 * kernels. */
START_TEST(test_blis_rule)
{
    const struct kern_matmul_desc tn = seed_mm[13];
    bool known = strcmp(kern_blis_arch(), "generic") != 0;
    ck_assert_msg(kern_blis_usable() == known, "BLIS arch %s", kern_blis_arch());
    ck_assert_msg(kern_blis_takes(&tn, false) == known, "BLIS arch %s", kern_blis_arch());
    ck_assert(!kern_blis_takes(&tn, true));
    struct kern_matmul_desc d = tn;
    d.bf16 = true;
    ck_assert(!kern_blis_takes(&d, false));
    d = tn, d.bias = true;
    ck_assert(!kern_blis_takes(&d, false));
    d = tn, d.alpha = 0.5f;
    ck_assert(!kern_blis_takes(&d, false));
    d = tn, d.batch = 2;
    ck_assert(!kern_blis_takes(&d, false));
    for (int i = 0; i < 9; i++) /* the forwards (NT) and the input gradients (NN) */
        ck_assert_msg(!kern_blis_takes(&seed_mm[i], false), "seed_mm[%d]", i);
}
END_TEST

/* Each weight gradient's shape on BLIS against the reference, accumulating (as in training) and
 * overwriting; and the same bits on 1 and 2 threads. */
START_TEST(test_blis_vs_ref)
{
    const struct kern_matmul_desc *d = &seed_mm[9 + _i];
    size_t na = (size_t)(d->m * d->k), nb = (size_t)(d->k * d->n), nc = (size_t)(d->m * d->n);
    float *a = random_vec(na, 60), *b = random_vec(nb, 61), *c0 = random_vec(nc, 62);
    float *want = copy_of(c0, nc), *got = copy_of(c0, nc), *got2 = copy_of(c0, nc);
    struct kern_matmul *r = mm_new(g_ref, d);
    kern_matmul_run(r, want, a, b, NULL);
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    kern_blis_matmul_run(d, got, a, b);
    omp_set_num_threads(2);
    kern_blis_matmul_run(d, got2, a, b);
    omp_set_num_threads(threads);
    assert_close(got, want, nc, TOL_DNNL, "BLIS weight gradient, accumulated");
    ck_assert_msg(memcmp(got, got2, nc * sizeof *got) == 0, "BLIS: 1 and 2 threads differ");
    struct kern_matmul_desc over = *d;
    over.accumulate = false;
    struct kern_matmul *r2 = mm_new(g_ref, &over);
    kern_matmul_run(r2, want, a, b, NULL);
    kern_blis_matmul_run(&over, got, a, b);
    assert_close(got, want, nc, TOL_DNNL, "BLIS weight gradient, overwritten");
    kern_matmul_destroy(r), kern_matmul_destroy(r2);
    free(a), free(b), free(c0), free(want), free(got), free(got2);
}
END_TEST

/* LayerNorm, cross-entropy and GELU with bf16 outputs write exactly the rounding of their fp32
 * outputs (and the same dbias), on both backends. */
START_TEST(test_bf16_outputs)
{
    const int64_t rows = 70, cols = 33, v = 37; /* a partial row chunk */
    size_t n = (size_t)(rows * cols), nv = (size_t)(rows * v);
    struct kern_ctx *ctx = _i ? g_dnnl : g_ref;
    float *x = random_vec(n, 50), *gamma = random_vec((size_t)cols, 51);
    float *beta = random_vec((size_t)cols, 52), *y = vec(n), *mean = vec((size_t)rows);
    float *var = vec((size_t)rows), *want = vec(n > nv ? n : nv);
    kern_bf16 *yh = malloc((n > nv ? n : nv) * sizeof *yh);
    kern_bf16 *wh = malloc((n > nv ? n : nv) * sizeof *wh);
    struct kern_layernorm *ln32 = NULL, *ln16 = NULL;
    ck_assert_int_eq(kern_layernorm_create(&ln32, ctx, rows, cols, 1e-5f, false, NULL), RZ_OK);
    ck_assert_int_eq(kern_layernorm_create(&ln16, ctx, rows, cols, 1e-5f, true, NULL), RZ_OK);
    kern_layernorm_forward(ln32, want, mean, var, x, gamma, beta);
    kern_layernorm_forward(ln16, yh, mean, var, x, gamma, beta);
    kern_round_bf16(wh, want, (int64_t)n);
    ck_assert_msg(memcmp(yh, wh, n * sizeof *yh) == 0, "layernorm bf16 output (backend %d)", _i);
    float *z = random_vec(nv, 53), *p = vec(nv), *l = vec((size_t)rows);
    float *db32 = vec((size_t)v), *db16 = vec((size_t)v);
    int32_t *t = random_targets(rows, v, 54);
    struct kern_xent *x32 = NULL, *x16 = NULL;
    ck_assert_int_eq(kern_xent_create(&x32, ctx, rows, v, false, NULL), RZ_OK);
    ck_assert_int_eq(kern_xent_create(&x16, ctx, rows, v, true, NULL), RZ_OK);
    kern_xent_forward(x32, l, p, z, t);
    kern_xent_backward(x32, want, db32, p, t, 0.5f);
    kern_xent_backward(x16, yh, db16, p, t, 0.5f);
    kern_round_bf16(wh, want, (int64_t)nv);
    ck_assert_msg(memcmp(yh, wh, nv * sizeof *yh) == 0, "xent bf16 dlogits (backend %d)", _i);
    ck_assert(memcmp(db16, db32, (size_t)v * sizeof *db16) == 0);
    /* the GELU on (rows, cols): x in [-4, 4), its output and its gradient with fc's bias sums */
    struct kern_gelu *g32 = NULL, *g16 = NULL;
    ck_assert_int_eq(kern_gelu_create(&g32, ctx, rows, cols, false, NULL), RZ_OK);
    ck_assert_int_eq(kern_gelu_create(&g16, ctx, rows, cols, true, NULL), RZ_OK);
    fill(x, n, 55, -4.0f, 4.0f);
    kern_gelu_forward(g32, want, x);
    kern_gelu_forward(g16, yh, x);
    kern_round_bf16(wh, want, (int64_t)n);
    ck_assert_msg(memcmp(yh, wh, n * sizeof *yh) == 0, "gelu bf16 output (backend %d)", _i);
    float *dy = random_vec(n, 56);
    fill(db32, (size_t)cols, 57, -1.0f, 1.0f);
    memcpy(db16, db32, (size_t)cols * sizeof *db16);
    kern_gelu_backward(g32, want, db32, dy, x);
    kern_gelu_backward(g16, yh, db16, dy, x);
    kern_round_bf16(wh, want, (int64_t)n);
    ck_assert_msg(memcmp(yh, wh, n * sizeof *yh) == 0, "gelu bf16 dx (backend %d)", _i);
    ck_assert_msg(memcmp(db16, db32, (size_t)cols * sizeof *db16) == 0, "gelu dbias (backend %d)",
                  _i);
    kern_gelu_destroy(g32), kern_gelu_destroy(g16);
    free(dy);
    kern_layernorm_destroy(ln32), kern_layernorm_destroy(ln16);
    kern_xent_destroy(x32), kern_xent_destroy(x16);
    free(x), free(gamma), free(beta), free(y), free(mean), free(var), free(want), free(yh);
    free(wh), free(z), free(p), free(l), free(db32), free(db16), free(t);
}
END_TEST

START_TEST(test_matmul_deterministic)
{
    const struct kern_matmul_desc *d = &seed_mm[4];
    size_t na = (size_t)(d->m * d->k), nb = (size_t)(d->k * d->n), nc = (size_t)(d->m * d->n);
    float *a = random_vec(na, 1), *b = random_vec(nb, 2), *bias = random_vec((size_t)d->n, 3);
    float *c1 = vec(nc), *c2 = vec(nc);
    struct kern_matmul *op = mm_new(g_dnnl, d);
    kern_matmul_run(op, c1, a, b, bias);
    kern_matmul_run(op, c2, a, b, bias);
    ck_assert(memcmp(c1, c2, nc * sizeof *c1) == 0);
    kern_matmul_destroy(op);
    free(a);
    free(b);
    free(bias);
    free(c1);
    free(c2);
}
END_TEST

/* The profile keeps one row per matmul shape and form, in the order first seen: the same shape
 * transposed is another row, and past KERN_PROFILE_SHAPES rows the calls are counted apart. */
START_TEST(test_profile_shapes)
{
    struct kern_ctx *ctx = _i ? g_dnnl : g_ref;
    enum { N = KERN_PROFILE_SHAPES + 2 };
    struct kern_matmul *mm[N];
    float *a = random_vec(4 * N, 1), *b = random_vec(4 * N, 2), *c = vec(4 * N);
    for (int i = 0; i < N; i++) {
        /* rows 0 and 1: (2, 3, 4) as NN and NT; then (i, 1, 2) NN */
        struct kern_matmul_desc d = {1, i < 2 ? 2 : i, i < 2 ? 3 : 1, i < 2 ? 4 : 2, false,
                                     i == 1, 1.0f, false, false, false};
        mm[i] = mm_new(ctx, &d);
    }
    struct kern_profile prof;
    memset(&prof, 0, sizeof prof);
    kern_ctx_profile(ctx, &prof);
    for (int i = 0; i < N; i++)
        kern_matmul_run(mm[i], c, a, b, NULL);
    kern_matmul_run(mm[1], c, a, b, NULL);
    kern_matmul_run(mm[N - 1], c, a, b, NULL);
    kern_ctx_profile(ctx, NULL);
    ck_assert_int_eq(prof.nshapes, KERN_PROFILE_SHAPES);
    ck_assert_int_eq(prof.calls[KERN_MATMUL], N + 2);
    ck_assert(prof.shapes[0].m == 2 && prof.shapes[0].n == 3 && prof.shapes[0].k == 4);
    ck_assert(!prof.shapes[0].trans_b && prof.shapes[0].calls == 1);
    ck_assert(prof.shapes[1].m == 2 && prof.shapes[1].trans_b && prof.shapes[1].calls == 2);
    ck_assert(prof.shapes[1].flops == 2 * 2.0 * (2 * 3 * 4));
    ck_assert_int_eq(prof.shapes[KERN_PROFILE_SHAPES - 1].m, KERN_PROFILE_SHAPES - 1);
    ck_assert_int_eq(prof.unlisted_calls, 3); /* shapes N-2 and N-1, the latter twice */
    double listed = 0.0;
    for (int i = 0; i < prof.nshapes; i++)
        listed += prof.shapes[i].flops;
    ck_assert(listed + 4.0 * (N - 2) + 2 * 4.0 * (N - 1) == prof.matmul_flops); /* 2 i 1 2 */
    for (int i = 0; i < N; i++)
        kern_matmul_destroy(mm[i]);
    free(a), free(b), free(c);
}
END_TEST

/* An attached profile counts every op in its class, and the matmul flops; detached, nothing. */
START_TEST(test_profile_counts)
{
    struct kern_ctx *ctx = _i ? g_dnnl : g_ref;
    struct kern_profile prof;
    memset(&prof, 0, sizeof prof);
    const struct kern_matmul_desc d = {2, 3, 5, 7, false, false, 1.0f, false, false, false};
    float *a = random_vec(2 * 3 * 7, 1), *b = random_vec(2 * 7 * 5, 2), *c = vec(2 * 3 * 5);
    float *x = random_vec(12, 3), *y = vec(12), *g = random_vec(4, 4), *mean = vec(3);
    float *var = vec(3);
    struct kern_matmul *mm = mm_new(ctx, &d);
    struct kern_layernorm *ln = ln_new(ctx, 3, 4, 1e-5f);
    kern_ctx_profile(ctx, &prof);
    kern_matmul_run(mm, c, a, b, NULL);
    kern_matmul_run(mm, c, a, b, NULL);
    kern_layernorm_forward(ln, y, mean, var, x, g, g);
    kern_ctx_profile(ctx, NULL);
    kern_matmul_run(mm, c, a, b, NULL);
    ck_assert_int_eq(prof.calls[KERN_MATMUL], 2);
    ck_assert_int_eq(prof.calls[KERN_NORM], 1);
    ck_assert_int_eq(prof.calls[KERN_ATTENTION] + prof.calls[KERN_LOSS] + prof.calls[KERN_OTHER],
                     0);
    ck_assert(prof.matmul_flops == 2.0 * 2 * (2.0 * 3 * 5 * 7));
    ck_assert(prof.seconds[KERN_MATMUL] > 0.0 && prof.seconds[KERN_NORM] > 0.0);
    ck_assert_int_eq(prof.nshapes, 1);
    const struct kern_profile_shape *s = &prof.shapes[0];
    ck_assert(s->batch == 2 && s->m == 3 && s->n == 5 && s->k == 7);
    ck_assert(!s->trans_a && !s->trans_b && !s->bf16);
    ck_assert_int_eq(s->calls, 2);
    ck_assert(s->flops == prof.matmul_flops && s->seconds == prof.seconds[KERN_MATMUL]);
    ck_assert_int_eq(prof.unlisted_calls, 0);
    kern_matmul_destroy(mm);
    kern_layernorm_destroy(ln);
    free(a), free(b), free(c), free(x), free(y), free(g), free(mean), free(var);
}
END_TEST

START_TEST(test_measure_peak)
{
    double gf = 0.0;
    struct rz_err err;
    ck_assert_msg(kern_measure_peak(g_dnnl, 512, 512, 512, false, 0.1, &gf, &err) == RZ_OK, "%s",
                  err.msg);
    ck_assert_msg(isfinite(gf) && gf > 1.0 && gf < 1e5, "dnnl peak %g GFLOP/s", gf);
    ck_assert_str_ne(kern_ctx_isa(g_dnnl), "unknown (oneDNN)");
    ck_assert_str_eq(kern_ctx_isa(g_ref), "reference C");
    ck_assert_int_eq(kern_ctx_backend(g_dnnl), KERN_DNNL);
    ck_assert_int_eq(kern_ctx_backend(g_ref), KERN_REF);
}
END_TEST

/* The row kernels' accuracy tests again at each level below the CPU's own (the core case runs
 * that one): these fixtures set the level in the forked test process, before its setup. */
static void level_avx2(void)
{
    rz_isa_set(RZ_ISA_AVX2);
}

static void level_baseline(void)
{
    rz_isa_set(RZ_ISA_BASELINE);
}

static void add_row_tests(TCase *tc)
{
    tcase_add_test(tc, test_round_bf16);
    tcase_add_test(tc, test_colsum_round);
    tcase_add_loop_test(tc, test_bf16_outputs, 0, 2);
    kernels_norm_row_tests(tc);
    kernels_attention_row_tests(tc);
    kernels_xent_row_tests(tc);
}

/* ---- suite --------------------------------------------------------------------------------- */

static Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, test_ref_matmul_hand);
    tcase_add_test(core, test_matmul_small_combos);
    tcase_add_loop_test(core, test_matmul_seed_shapes, 0, (int)RZ_ARRAY_LEN(seed_mm));
    tcase_add_test(core, test_matmul_deterministic);
    tcase_add_test(core, test_gemv);
    tcase_add_loop_test(core, test_matmul_bf16, 0, 14); /* the linear layers' shapes */
    tcase_add_test(core, test_blis_rule);
    tcase_add_loop_test(core, test_blis_vs_ref, 0, 5); /* the five weight-gradient shapes */
    tcase_add_test(core, test_measure_peak);
    tcase_add_loop_test(core, test_profile_counts, 0, 2);
    tcase_add_loop_test(core, test_profile_shapes, 0, 2);
    kernels_norm_core_tests(core);
    kernels_attention_core_tests(core);
    kernels_xent_core_tests(core);
    add_row_tests(core); /* at the CPU's own level */
    suite_add_tcase(s, core);

    suite_add_tcase(s, kernels_levels_tcase());
    void (*const fixture[])(void) = {level_baseline, level_avx2};
    static const char *const names[] = {"rows-baseline", "rows-avx2"};
    for (int i = 0; i < (int)rz_isa_detect(); i++) {
        TCase *tc = rz_test_tcase(names[i]);
        tcase_add_checked_fixture(tc, fixture[i], NULL);
        tcase_add_checked_fixture(tc, setup, teardown);
        add_row_tests(tc);
        suite_add_tcase(s, tc);
    }

    suite_add_tcase(s, kernels_errors_tcase());
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(kernels_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    const char *timings = getenv("RZ_KERNEL_TIMINGS");
    if (timings != NULL && strcmp(timings, "1") == 0)
        print_timings();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
