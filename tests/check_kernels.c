/* check_kernels.c: Check suite of the kernels module.
 *
 * "core":   hand-computed values for the reference backend; the oneDNN backend against the
 *           reference at the model's seed shapes and at odd small shapes (attention: tiles
 *           with edges); finite-difference gradient checks of every reference backward and of
 *           the oneDNN attention's; causality of the attention to the bit; accuracy of the
 *           vectorized exp; bit-identical reruns, and on 1 and 2 threads.
 * "errors": bad shapes and bad backend names return RZ_ECONFIG with a message naming the op.
 *
 * Tolerance for oneDNN vs reference (fp32 against a double-accumulating reference):
 *     max |dnnl - ref| <= 1e-4 * (1 + max |ref|)            (TOL_DNNL)
 * Finite differences: central, in double, step h = 1e-2 (re-read after rounding to float):
 *     |fd - analytic| <= 2e-3 * (1 + |analytic|)            (TOL_FD)
 *
 * RZ_KERNEL_TIMINGS=1 additionally prints ms per call of every seed-shape op on both backends
 * (after the suite, in the parent process; never asserted on). */
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
#include "kernels/kern_rows.h"
#include "kernels/kernels.h"
#include "testutil.h"

#define TOL_DNNL 1e-4
#define TOL_FD 2e-3
#define FD_H 1e-2f

static struct kern_ctx *g_ref, *g_dnnl;

static void setup(void)
{
    struct rz_err err;
    ck_assert_int_eq(kern_ctx_create(&g_ref, KERN_REF, &err), RZ_OK);
    ck_assert_msg(kern_ctx_create(&g_dnnl, KERN_DNNL, &err) == RZ_OK, "%s", err.msg);
}

static void teardown(void)
{
    kern_ctx_destroy(g_ref);
    kern_ctx_destroy(g_dnnl);
    g_ref = g_dnnl = NULL;
}

/* ---- helpers ------------------------------------------------------------------------------- */

static float *vec(size_t n)
{
    float *p = rz_alloc_aligned(n * sizeof(float));
    ck_assert_ptr_nonnull(p);
    return p;
}

static float *copy_of(const float *x, size_t n)
{
    float *p = vec(n);
    memcpy(p, x, n * sizeof *p);
    return p;
}

/* Deterministic uniform values in [lo, hi). */
static void fill(float *x, size_t n, uint32_t seed, float lo, float hi)
{
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = lo + (hi - lo) * ((float)(s >> 8) / 16777216.0f);
    }
}

static float *random_vec(size_t n, uint32_t seed)
{
    float *p = vec(n);
    fill(p, n, seed, -1.0f, 1.0f);
    return p;
}

static double max_abs(const float *x, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)x[i]));
    return m;
}

/* max |got - ref| <= tol * (1 + max |ref|), NaN fails. */
static void assert_close(const float *got, const float *ref, size_t n, double tol,
                         const char *what)
{
    double worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        if (!(d <= worst)) {
            worst = d;
            at = i;
        }
    }
    double bound = tol * (1.0 + max_abs(ref, n));
    ck_assert_msg(worst <= bound, "%s: max |got - ref| = %g at %zu (got %g, ref %g) > %g", what,
                  worst, at, (double)got[at], (double)ref[at], bound);
}

static void assert_grad(double fd, double an, const char *what, size_t i)
{
    ck_assert_msg(fabs(fd - an) <= TOL_FD * (1.0 + fabs(an)),
                  "%s[%zu]: finite difference %.8g vs analytic %.8g", what, i, fd, an);
}

static double dot_d(const float *w, const float *y, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)w[i] * (double)y[i];
    return s;
}

static struct kern_matmul *mm_new(struct kern_ctx *ctx, const struct kern_matmul_desc *d)
{
    struct kern_matmul *op = NULL;
    struct rz_err err;
    ck_assert_msg(kern_matmul_create(&op, ctx, d, &err) == RZ_OK, "%s", err.msg);
    return op;
}

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

/* The model's matmuls: weights (out, in); BT = 2048 rows; attention batched over B*H = 64. */
static const struct kern_matmul_desc seed_mm[] = {
    /* forward Y (BT, out) = X (BT, in) W^T + b */
    {1, 2048, 768, 256, false, true, 1.0f, true, false, false},
    {1, 2048, 256, 256, false, true, 1.0f, true, false, false},
    {1, 2048, 512, 256, false, true, 1.0f, true, false, false},
    {1, 2048, 256, 512, false, true, 1.0f, true, false, false},
    {1, 2048, 2048, 256, false, true, 1.0f, true, false, false},
    /* backward data dX (BT, in) = dY (BT, out) W (out, in) */
    {1, 2048, 256, 768, false, false, 1.0f, false, false, false},
    {1, 2048, 256, 512, false, false, 1.0f, false, false, false},
    {1, 2048, 512, 256, false, false, 1.0f, false, false, false},
    {1, 2048, 256, 2048, false, false, 1.0f, false, false, false},
    /* backward weights dW (out, in) += dY^T (out, BT) X (BT, in) */
    {1, 768, 256, 2048, true, false, 1.0f, false, true, false},
    {1, 256, 256, 2048, true, false, 1.0f, false, true, false},
    {1, 512, 256, 2048, true, false, 1.0f, false, true, false},
    {1, 256, 512, 2048, true, false, 1.0f, false, true, false},
    {1, 2048, 256, 2048, true, false, 1.0f, false, true, false},
    /* attention: S = Q K^T / 8; O = P V and dQ = dS K; dP = dO V^T; dV = P^T dO and dK = dS^T Q */
    {64, 128, 128, 64, false, true, 0.125f, false, false, false},
    {64, 128, 64, 128, false, false, 1.0f, false, false, false},
    {64, 128, 128, 64, false, true, 1.0f, false, false, false},
    {64, 128, 64, 128, true, false, 1.0f, false, false, false},
};

START_TEST(test_matmul_seed_shapes)
{
    compare_matmul(&seed_mm[_i], 100u + (uint32_t)_i);
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

static int32_t *random_targets(int64_t rows, int64_t vocab, uint32_t seed);

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

static struct kern_layernorm *ln_new(struct kern_ctx *ctx, int64_t rows, int64_t cols, float eps);

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

/* ---- layer normalization ------------------------------------------------------------------- */

static struct kern_layernorm *ln_new(struct kern_ctx *ctx, int64_t rows, int64_t cols, float eps)
{
    struct kern_layernorm *op = NULL;
    struct rz_err err;
    ck_assert_msg(kern_layernorm_create(&op, ctx, rows, cols, eps, false, &err) == RZ_OK, "%s", err.msg);
    return op;
}

START_TEST(test_ref_layernorm_hand)
{
    /* x = [1 2 3 4]: mean 2.5, biased var 1.25, xhat = [-3 -1 1 3] / sqrt(5) */
    const float x[] = {1, 2, 3, 4}, gamma[] = {2, 2, 2, 2}, beta[] = {1, 1, 1, 1};
    float y[4], mean, var;
    struct kern_layernorm *op = ln_new(g_ref, 1, 4, 0.0f);
    kern_layernorm_forward(op, y, &mean, &var, x, gamma, beta);
    ck_assert(mean == 2.5f);
    ck_assert(var == 1.25f);
    const double s5 = sqrt(5.0);
    const double want[] = {1 - 6 / s5, 1 - 2 / s5, 1 + 2 / s5, 1 + 6 / s5};
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol((double)y[i], want[i], 1e-6);
    kern_layernorm_destroy(op);
}
END_TEST

static void compare_layernorm(int64_t rows, int64_t cols, uint32_t seed)
{
    size_t n = (size_t)(rows * cols);
    float *x = random_vec(n, seed), *dy = random_vec(n, seed + 1);
    float *gamma = random_vec((size_t)cols, seed + 2), *beta = random_vec((size_t)cols, seed + 3);
    float *y[2], *mean[2], *var[2], *dx[2], *dg[2], *db[2], *acc[2];
    struct kern_ctx *ctx[2] = {g_ref, g_dnnl};
    for (int i = 0; i < 2; i++) {
        y[i] = vec(n), dx[i] = vec(n), mean[i] = vec((size_t)rows), var[i] = vec((size_t)rows);
        dg[i] = random_vec((size_t)cols, seed + 4), db[i] = random_vec((size_t)cols, seed + 5);
        acc[i] = random_vec(n, seed + 6);
        struct kern_layernorm *op = ln_new(ctx[i], rows, cols, 1e-5f);
        kern_layernorm_forward(op, y[i], mean[i], var[i], x, gamma, beta);
        /* both backwards from the reference statistics, so only the backward is compared;
         * dgamma and dbeta add to what they held, acc gets dx added */
        kern_layernorm_backward(op, dx[i], dg[i], db[i], dy, x, mean[0], var[0], gamma, false);
        kern_layernorm_backward(op, acc[i], dg[i], db[i], dy, x, mean[0], var[0], gamma, true);
        kern_layernorm_destroy(op);
    }
    float *want = random_vec(n, seed + 6); /* acc's initial values + dx */
    for (size_t j = 0; j < n; j++)
        want[j] += dx[0][j];
    assert_close(acc[0], want, n, 1e-6, "ref layernorm dx accumulated");
    assert_close(acc[1], want, n, TOL_DNNL, "dnnl layernorm dx accumulated");
    free(want), free(acc[0]), free(acc[1]);
    assert_close(y[1], y[0], n, TOL_DNNL, "layernorm y");
    assert_close(mean[1], mean[0], (size_t)rows, TOL_DNNL, "layernorm mean");
    assert_close(var[1], var[0], (size_t)rows, TOL_DNNL, "layernorm var");
    assert_close(dx[1], dx[0], n, TOL_DNNL, "layernorm dx");
    assert_close(dg[1], dg[0], (size_t)cols, TOL_DNNL, "layernorm dgamma");
    assert_close(db[1], db[0], (size_t)cols, TOL_DNNL, "layernorm dbeta");
    for (int i = 0; i < 2; i++) {
        free(y[i]), free(dx[i]), free(mean[i]), free(var[i]), free(dg[i]), free(db[i]);
    }
    free(x), free(dy), free(gamma), free(beta);
}

START_TEST(test_layernorm_dnnl_vs_ref)
{
    compare_layernorm(2048, 256, 10);
    compare_layernorm(3, 5, 20);
}
END_TEST

/* L = sum(w * layernorm(x; gamma, beta)) for the FD checks. */
static double ln_loss(struct kern_layernorm *op, const float *w, const float *x,
                      const float *gamma, const float *beta, size_t n)
{
    float y[15], mean[3], var[3];
    kern_layernorm_forward(op, y, mean, var, x, gamma, beta);
    return dot_d(w, y, n);
}

/* Central difference of ln_loss in p[i] (p is x, gamma or beta). */
static double ln_fd(struct kern_layernorm *op, const float *w, float *x, float *gamma,
                    float *beta, size_t n, float *p, size_t i)
{
    float p0 = p[i];
    p[i] = p0 + FD_H;
    double up = (double)p[i], lp = ln_loss(op, w, x, gamma, beta, n);
    p[i] = p0 - FD_H;
    double um = (double)p[i], lm = ln_loss(op, w, x, gamma, beta, n);
    p[i] = p0;
    return (lp - lm) / (up - um);
}

START_TEST(test_layernorm_grad_fd)
{
    enum { R = 3, C = 5, N = R * C };
    float x[N], w[N], gamma[C], beta[C], y[N], mean[R], var[R], dx[N], dg[C] = {0}, db[C] = {0};
    fill(x, N, 1, -2.0f, 2.0f);
    fill(w, N, 2, -1.0f, 1.0f);
    fill(gamma, C, 3, 0.5f, 1.5f);
    fill(beta, C, 4, -1.0f, 1.0f);
    struct kern_layernorm *op = ln_new(g_ref, R, C, 1e-5f);
    kern_layernorm_forward(op, y, mean, var, x, gamma, beta);
    kern_layernorm_backward(op, dx, dg, db, w, x, mean, var, gamma, false);
    for (size_t i = 0; i < N; i++)
        assert_grad(ln_fd(op, w, x, gamma, beta, N, x, i), (double)dx[i], "layernorm dx", i);
    for (size_t j = 0; j < C; j++) {
        assert_grad(ln_fd(op, w, x, gamma, beta, N, gamma, j), (double)dg[j], "dgamma", j);
        assert_grad(ln_fd(op, w, x, gamma, beta, N, beta, j), (double)db[j], "dbeta", j);
    }
    kern_layernorm_destroy(op);
}
END_TEST

/* ---- GELU ---------------------------------------------------------------------------------- */

static struct kern_gelu *gelu_new(struct kern_ctx *ctx, int64_t rows, int64_t cols)
{
    struct kern_gelu *op = NULL;
    struct rz_err err;
    ck_assert_msg(kern_gelu_create(&op, ctx, rows, cols, false, &err) == RZ_OK, "%s", err.msg);
    return op;
}

START_TEST(test_ref_gelu_hand)
{
    /* gelu(x) = x Phi(x): Phi(1) = 0.8413447461, Phi(-1) = 0.1586552539, Phi(2) = 0.9772498681 */
    const float x[] = {0, 1, -1, 2};
    const double want[] = {0, 0.8413447461, -0.1586552539, 1.9544997361};
    float y[4], dx[4], db[2] = {0.25f, 0};
    const float dy[] = {1, 1, 1, 1};
    struct kern_gelu *op = gelu_new(g_ref, 2, 2);
    kern_gelu_forward(op, y, x);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq_tol((double)y[i], want[i], 1e-6);
    kern_gelu_backward(op, dx, db, dy, x);
    ck_assert_double_eq_tol((double)dx[0], 0.5, 1e-7);
    /* gelu'(1) = Phi(1) + phi(1) = 0.8413447461 + 0.2419707245 */
    ck_assert_double_eq_tol((double)dx[1], 1.0833154706, 1e-6);
    /* the bias gradient adds each column: 0.25 + gelu'(0) + gelu'(-1), 0 + gelu'(1) + gelu'(2) */
    ck_assert_double_eq_tol((double)db[0], 0.25 + 0.5 + (1.0 - 1.0833154706), 1e-6);
    ck_assert_double_eq_tol((double)db[1], 1.0833154706 + (double)dx[3], 1e-6);
    kern_gelu_destroy(op);
}
END_TEST

/* The oneDNN backend's GELU against the reference: outputs within TOL_DNNL; its bias gradient is
 * each column of its own dx summed in row order, to the bit (what kern_colsum_round gives). */
static void compare_gelu(int64_t rows, int64_t cols, uint32_t seed)
{
    size_t n = (size_t)(rows * cols);
    float *x = vec(n), *dy = random_vec(n, seed + 1);
    fill(x, n, seed, -6.0f, 6.0f);
    float *y[2], *dx[2], *db[2];
    struct kern_ctx *ctx[2] = {g_ref, g_dnnl};
    for (int i = 0; i < 2; i++) {
        y[i] = vec(n), dx[i] = vec(n), db[i] = vec((size_t)cols);
        fill(db[i], (size_t)cols, seed + 2, -1.0f, 1.0f);
        struct kern_gelu *op = gelu_new(ctx[i], rows, cols);
        kern_gelu_forward(op, y[i], x);
        kern_gelu_backward(op, dx[i], db[i], dy, x);
        kern_gelu_destroy(op);
    }
    assert_close(y[1], y[0], n, TOL_DNNL, "gelu y");
    assert_close(dx[1], dx[0], n, TOL_DNNL, "gelu dx");
    assert_close(db[1], db[0], (size_t)cols, TOL_DNNL, "gelu dbias");
    float *sums = vec((size_t)cols);
    fill(sums, (size_t)cols, seed + 2, -1.0f, 1.0f);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++)
            sums[j] += dx[1][r * cols + j];
    ck_assert(memcmp(sums, db[1], (size_t)cols * sizeof *sums) == 0);
    for (int i = 0; i < 2; i++)
        free(y[i]), free(dx[i]), free(db[i]);
    free(x), free(dy), free(sums);
}

START_TEST(test_gelu_dnnl_vs_ref)
{
    compare_gelu(2048, 512, 30);
    compare_gelu(1, 7, 40);
    compare_gelu(65, 37, 41); /* a partial chunk of rows, a band that is not whole vectors */
}
END_TEST

/* The oneDNN backend's own GELU (kern_simd.c: erf by Abramowitz & Stegun 7.1.26 on the
 * vectorized exp) against libm in double on a dense grid over [-12, 12], where the GELU leaves
 * x or 0 within fp32's resolution: |gelu error| <= 2e-7 (1 + |x|), |gelu' error| <= 4e-7
 * (measured: 1.02e-7 and 2.85e-7). */
START_TEST(test_gelu_accuracy)
{
    enum { N = 240001 };
    float *x = vec(N), *y = vec(N), *dx = vec(N), *ones = vec(N);
    for (int i = 0; i < N; i++) {
        x[i] = -12.0f + 24.0f * (float)i / (float)(N - 1);
        ones[i] = 1.0f;
    }
    struct kern_gelu *op = gelu_new(g_dnnl, 1, N);
    kern_gelu_forward(op, y, x);
    kern_gelu_backward(op, dx, NULL, ones, x);
    double worst_y = 0.0, worst_d = 0.0;
    for (int i = 0; i < N; i++) {
        double v = (double)x[i], cdf = 0.5 * (1.0 + erf(v / sqrt(2.0)));
        double slope = cdf + v * exp(-0.5 * v * v) * 0.39894228040143267794;
        worst_y = fmax(worst_y, fabs((double)y[i] - v * cdf) / (1.0 + fabs(v)));
        worst_d = fmax(worst_d, fabs((double)dx[i] - slope));
    }
    ck_assert_msg(worst_y <= 2e-7, "gelu: max |error| / (1 + |x|) = %g", worst_y);
    ck_assert_msg(worst_d <= 4e-7, "gelu': max |error| = %g", worst_d);
    x[0] = 0.0f, x[1] = -INFINITY, x[2] = INFINITY, x[3] = NAN, x[4] = -30.0f;
    kern_gelu_forward(op, y, x);
    ck_assert(y[0] == 0.0f && y[2] == INFINITY && isnan(y[3]) && y[4] == 0.0f);
    kern_gelu_destroy(op);
    free(x), free(y), free(dx), free(ones);
}
END_TEST

START_TEST(test_gelu_grad_fd)
{
    enum { N = 9 };
    float x[N] = {0, 0.5f, -0.5f, 1, -1, 2.5f, -2.5f, 3, -4}, w[N], y[N], dx[N];
    fill(w, N, 5, -1.0f, 1.0f);
    struct kern_gelu *op = gelu_new(g_ref, 3, 3);
    kern_gelu_backward(op, dx, NULL, w, x);
    for (size_t i = 0; i < N; i++) {
        float x0 = x[i];
        x[i] = x0 + FD_H;
        double up = (double)x[i];
        kern_gelu_forward(op, y, x);
        double lp = dot_d(w, y, N);
        x[i] = x0 - FD_H;
        double um = (double)x[i];
        kern_gelu_forward(op, y, x);
        double lm = dot_d(w, y, N);
        x[i] = x0;
        assert_grad((lp - lm) / (up - um), (double)dx[i], "gelu dx", i);
    }
    kern_gelu_destroy(op);
}
END_TEST

/* ---- attention ----------------------------------------------------------------------------- */

struct attn_shape {
    int64_t B, T, H, D, tile;
};

/* The seed model's shape with the backend's tile; small shapes whose tiles leave an edge (T = 7
 * in tiles of 3, T = 10 in tiles of 4), one tile of 1 (every tile a diagonal), and one tile. */
static const struct attn_shape attn_shapes[] = {
    {16, 128, 4, 64, 0}, {2, 7, 3, 5, 3}, {1, 10, 2, 8, 4}, {2, 4, 1, 3, 1}, {1, 5, 2, 4, 0},
};

static struct kern_attention *attn_new(struct kern_ctx *ctx, const struct attn_shape *s)
{
    struct kern_attention *op = NULL;
    struct rz_err err;
    ck_assert_msg(kern_attention_create(&op, ctx, s->B, s->T, s->H, s->D, s->tile, &err) == RZ_OK,
                  "%s", err.msg);
    return op;
}

/* The tensors of one attention call: qkv (B, T, 3C), y and dy (B, T, C), lse (B, H, T). */
struct attn_bufs {
    size_t nqkv, ny, nlse;
    float *qkv, *y, *dy, *lse, *dqkv;
};

static struct attn_bufs attn_bufs(const struct attn_shape *s, uint32_t seed, float range)
{
    struct attn_bufs b = {.nqkv = (size_t)(s->B * s->T * 3 * s->H * s->D),
                          .ny = (size_t)(s->B * s->T * s->H * s->D),
                          .nlse = (size_t)(s->B * s->H * s->T)};
    b.qkv = vec(b.nqkv), b.dy = random_vec(b.ny, seed + 1);
    fill(b.qkv, b.nqkv, seed, -range, range);
    b.y = vec(b.ny), b.lse = vec(b.nlse), b.dqkv = vec(b.nqkv);
    fill(b.y, b.ny, 7, 1.0f, 2.0f); /* garbage: every output must be written */
    fill(b.dqkv, b.nqkv, 8, 1.0f, 2.0f);
    return b;
}

static void attn_bufs_free(struct attn_bufs *b)
{
    free(b->qkv), free(b->y), free(b->dy), free(b->lse), free(b->dqkv);
}

static void attn_run(struct kern_attention *op, struct attn_bufs *b)
{
    kern_attention_forward(op, b->y, b->lse, b->qkv);
    kern_attention_backward(op, b->dqkv, b->dy, b->qkv, b->y, b->lse);
}

START_TEST(test_ref_attention_hand)
{
    /* B = H = D = 1, T = 2: q = (1, 2), k = (3, 3 + ln 2 / 2), v = (5, 7).  Token 0 sees only
     * itself: y0 = v0, lse0 = q0 k0 = 3.  Token 1: scores 2 * 3 = 6 and 6 + ln 2, so
     * p = (1/3, 2/3), y1 = 5/3 + 14/3 = 19/3, lse1 = 6 + ln 3. */
    const float k1 = 3.0f + 0.5f * 0.69314718f;
    const float qkv[] = {1, 3, 5, 2, k1, 7};
    float y[2], lse[2];
    const struct attn_shape s = {1, 2, 1, 1, 0};
    struct kern_attention *op = attn_new(g_ref, &s);
    kern_attention_forward(op, y, lse, qkv);
    ck_assert(y[0] == 5.0f && lse[0] == 3.0f);
    ck_assert_double_eq_tol((double)y[1], 19.0 / 3.0, 1e-6);
    ck_assert_double_eq_tol((double)lse[1], 6.0 + log(3.0), 1e-6);
    kern_attention_destroy(op);
}
END_TEST

/* Both backends from the same inputs; the backward from the reference's y and lse. */
START_TEST(test_attention_dnnl_vs_ref)
{
    const struct attn_shape *s = &attn_shapes[_i];
    struct attn_bufs b[2] = {attn_bufs(s, 40, 2.0f), attn_bufs(s, 40, 2.0f)};
    struct kern_ctx *ctx[2] = {g_ref, g_dnnl};
    for (int i = 0; i < 2; i++) {
        struct kern_attention *op = attn_new(ctx[i], s);
        kern_attention_forward(op, b[i].y, b[i].lse, b[i].qkv);
        kern_attention_backward(op, b[i].dqkv, b[i].dy, b[i].qkv, b[0].y, b[0].lse);
        kern_attention_destroy(op);
    }
    char what[96];
    snprintf(what, sizeof what, "attention B=%lld T=%lld H=%lld D=%lld tile %lld",
             (long long)s->B, (long long)s->T, (long long)s->H, (long long)s->D,
             (long long)s->tile);
    assert_close(b[1].y, b[0].y, b[0].ny, TOL_DNNL, what);
    assert_close(b[1].lse, b[0].lse, b[0].nlse, TOL_DNNL, what);
    assert_close(b[1].dqkv, b[0].dqkv, b[0].nqkv, TOL_DNNL, what);
    attn_bufs_free(&b[0]);
    attn_bufs_free(&b[1]);
}
END_TEST

/* L = sum(w * y) for the finite differences. */
static double attn_loss(struct kern_attention *op, struct attn_bufs *b)
{
    kern_attention_forward(op, b->y, b->lse, b->qkv);
    return dot_d(b->dy, b->y, b->ny);
}

/* dqkv of both backends against central differences of L, on shapes with edge tiles. */
START_TEST(test_attention_grad_fd)
{
    struct kern_ctx *ctx[2] = {g_ref, g_dnnl};
    const struct attn_shape *s = &attn_shapes[1 + _i % 3];
    struct attn_bufs b = attn_bufs(s, 41, 1.0f);
    struct kern_attention *op = attn_new(ctx[_i / 3], s);
    attn_run(op, &b);
    float *an = copy_of(b.dqkv, b.nqkv);
    for (size_t i = 0; i < b.nqkv; i++) {
        float x0 = b.qkv[i];
        b.qkv[i] = x0 + FD_H;
        double up = (double)b.qkv[i], lp = attn_loss(op, &b);
        b.qkv[i] = x0 - FD_H;
        double um = (double)b.qkv[i], lm = attn_loss(op, &b);
        b.qkv[i] = x0;
        assert_grad((lp - lm) / (up - um), (double)an[i], _i < 3 ? "ref dqkv" : "dnnl dqkv", i);
    }
    kern_attention_destroy(op);
    free(an);
    attn_bufs_free(&b);
}
END_TEST

/* Causality: changing the last token's q, k and v changes no earlier output, to the bit. */
START_TEST(test_attention_causal)
{
    const struct attn_shape *s = &attn_shapes[_i % 2 ? 2 : 0];
    struct kern_ctx *ctx = _i < 2 ? g_ref : g_dnnl;
    struct attn_bufs b = attn_bufs(s, 42, 2.0f);
    struct kern_attention *op = attn_new(ctx, s);
    kern_attention_forward(op, b.y, b.lse, b.qkv);
    float *y0 = copy_of(b.y, b.ny);
    size_t C = (size_t)(s->H * s->D);
    for (int64_t bb = 0; bb < s->B; bb++)
        fill(b.qkv + ((size_t)(bb * s->T + s->T - 1)) * 3 * C, 3 * C, 43, -2.0f, 2.0f);
    kern_attention_forward(op, b.y, b.lse, b.qkv);
    for (int64_t bb = 0; bb < s->B; bb++) {
        size_t first = (size_t)(bb * s->T) * C, n = (size_t)(s->T - 1) * C;
        ck_assert_msg(memcmp(b.y + first, y0 + first, n * sizeof *y0) == 0,
                      "an earlier token's output moved (backend %d)", _i < 2 ? 0 : 1);
        ck_assert(memcmp(b.y + first + n, y0 + first + n, C * sizeof *y0) != 0);
    }
    kern_attention_destroy(op);
    free(y0);
    attn_bufs_free(&b);
}
END_TEST

/* Bit-identical when run again and on 1 or 2 threads (exact resume and world-size invariance
 * rely on it).  Each op is made at the thread count it runs at, as in a process: oneDNN plans
 * some matmuls for the thread count at creation. */
START_TEST(test_attention_deterministic)
{
    const struct attn_shape *s = &attn_shapes[_i];
    struct attn_bufs a = attn_bufs(s, 44, 2.0f), b = attn_bufs(s, 44, 2.0f);
    struct attn_bufs c = attn_bufs(s, 44, 2.0f);
    omp_set_num_threads(1);
    struct kern_attention *op = attn_new(g_dnnl, s);
    attn_run(op, &a);
    attn_run(op, &b);
    omp_set_num_threads(2);
    struct kern_attention *op2 = attn_new(g_dnnl, s);
    attn_run(op2, &c);
    kern_attention_destroy(op2);
    omp_set_num_threads(1);
    ck_assert(memcmp(a.y, b.y, a.ny * sizeof *a.y) == 0);
    ck_assert(memcmp(a.dqkv, b.dqkv, a.nqkv * sizeof *a.y) == 0);
    ck_assert_msg(memcmp(a.y, c.y, a.ny * sizeof *a.y) == 0, "y differs on 2 threads");
    ck_assert_msg(memcmp(a.lse, c.lse, a.nlse * sizeof *a.y) == 0, "lse differs on 2 threads");
    ck_assert_msg(memcmp(a.dqkv, c.dqkv, a.nqkv * sizeof *a.y) == 0,
                  "dqkv differs on 2 threads");
    kern_attention_destroy(op);
    attn_bufs_free(&a);
    attn_bufs_free(&b);
    attn_bufs_free(&c);
}
END_TEST

START_TEST(test_backward_in_place)
{
    struct kern_ctx *ctxs[2] = {g_ref, g_dnnl};
    for (int b = 0; b < 2; b++) {
        const int64_t n = 4096;
        float *x = random_vec((size_t)n, 23), *dy = random_vec((size_t)n, 24), *dx = vec((size_t)n);
        struct kern_gelu *g = NULL;
        ck_assert_int_eq(kern_gelu_create(&g, ctxs[b], 64, n / 64, false, NULL), RZ_OK);
        kern_gelu_backward(g, dx, NULL, dy, x);
        kern_gelu_backward(g, dy, NULL, dy, x);
        ck_assert_msg(memcmp(dx, dy, (size_t)n * sizeof *dx) == 0, "gelu backend %d", b);
        kern_gelu_destroy(g);
        free(x), free(dy), free(dx);
    }
}
END_TEST

START_TEST(test_exp_accuracy)
{
    enum { N = 200001 };
    float *x = vec(N), *y = vec(N);
    for (int i = 0; i < N; i++) /* [-87.3, 88] */
        x[i] = -87.3f + 175.3f * (float)i / (float)(N - 1);
    kern_simd_exp(y, x, N);
    double worst = 0.0;
    for (int i = 0; i < N; i++) {
        double want = exp((double)x[i]);
        worst = fmax(worst, fabs((double)y[i] - want) / want);
    }
    ck_assert_msg(worst < 1e-6, "max relative error of kern_simd_exp %g", worst);
    x[0] = -INFINITY, x[1] = -100.0f, x[2] = 0.0f;
    kern_simd_exp(y, x, 3);
    ck_assert(y[0] == 0.0f && y[1] == 0.0f && y[2] == 1.0f);
    free(x), free(y);
}
END_TEST

/* ---- cross-entropy ------------------------------------------------------------------------- */

static struct kern_xent *xent_new(struct kern_ctx *ctx, int64_t rows, int64_t vocab)
{
    struct kern_xent *op = NULL;
    struct rz_err err;
    ck_assert_msg(kern_xent_create(&op, ctx, rows, vocab, false, &err) == RZ_OK, "%s", err.msg);
    return op;
}

START_TEST(test_ref_xent_hand)
{
    /* row 0: uniform over 4 -> loss ln 4; row 1: [0, ln 3, -inf-ish...]: p = [1/4, 3/4, 0, 0]
     * roughly, with two very negative logits contributing ~e^-100 */
    const float logits[] = {0, 0, 0, 0, 0, (float)log(3.0), -100, -100};
    const int32_t targets[] = {2, 1};
    float losses[2], probs[8], dl[8];
    struct kern_xent *op = xent_new(g_ref, 2, 4);
    kern_xent_forward(op, losses, probs, logits, targets);
    ck_assert_double_eq_tol((double)losses[0], log(4.0), 1e-7);
    ck_assert_double_eq_tol((double)losses[1], log(4.0 / 3.0), 1e-7);
    ck_assert_double_eq_tol((double)probs[2], 0.25, 1e-7);
    ck_assert_double_eq_tol((double)probs[5], 0.75, 1e-7);
    kern_xent_backward(op, dl, NULL, probs, targets, 0.5f);
    ck_assert_double_eq_tol((double)dl[2], 0.5 * (0.25 - 1), 1e-7);
    ck_assert_double_eq_tol((double)dl[4], 0.5 * 0.25, 1e-7);
    ck_assert_double_eq_tol((double)dl[5], 0.5 * (0.75 - 1), 1e-7);
    kern_xent_destroy(op);
}
END_TEST

static int32_t *random_targets(int64_t rows, int64_t vocab, uint32_t seed)
{
    int32_t *t = malloc((size_t)rows * sizeof *t);
    ck_assert_ptr_nonnull(t);
    uint32_t s = seed;
    for (int64_t r = 0; r < rows; r++) {
        s = s * 1664525u + 1013904223u;
        t[r] = (int32_t)((s >> 8) % (uint32_t)vocab);
    }
    return t;
}

/* Compares the backends; the dnnl run is in place (probs and dlogits alias logits). */
static void compare_xent(int64_t rows, int64_t vocab, uint32_t seed)
{
    size_t n = (size_t)(rows * vocab);
    float *logits = vec(n), *probs = vec(n), *dl = vec(n);
    fill(logits, n, seed, -10.0f, 10.0f);
    int32_t *t = random_targets(rows, vocab, seed);
    float *inplace = copy_of(logits, n), *loss_r = vec((size_t)rows), *loss_d = vec((size_t)rows);
    float *db_r = random_vec((size_t)vocab, seed + 1), *db_d = copy_of(db_r, (size_t)vocab);
    float *want = copy_of(db_r, (size_t)vocab);
    struct kern_xent *r = xent_new(g_ref, rows, vocab), *o = xent_new(g_dnnl, rows, vocab);
    kern_xent_forward(r, loss_r, probs, logits, t);
    kern_xent_backward(r, dl, db_r, probs, t, 1.0f / (float)rows);
    kern_xent_forward(o, loss_d, inplace, inplace, t);
    assert_close(inplace, probs, n, TOL_DNNL, "xent probs");
    assert_close(loss_d, loss_r, (size_t)rows, TOL_DNNL, "xent losses");
    kern_xent_backward(o, inplace, db_d, inplace, t, 1.0f / (float)rows);
    assert_close(inplace, dl, n, TOL_DNNL, "xent dlogits");
    for (int64_t j = 0; j < vocab; j++) { /* dbias += column sums of dlogits */
        double sum = 0.0;
        for (int64_t i = 0; i < rows; i++)
            sum += (double)dl[i * vocab + j];
        want[j] = (float)((double)want[j] + sum);
    }
    assert_close(db_r, want, (size_t)vocab, 1e-6, "ref xent dbias");
    assert_close(db_d, want, (size_t)vocab, TOL_DNNL, "dnnl xent dbias");
    free(db_r), free(db_d), free(want);
    kern_xent_destroy(r);
    kern_xent_destroy(o);
    free(logits), free(probs), free(dl), free(t), free(inplace), free(loss_r), free(loss_d);
}

START_TEST(test_xent_dnnl_vs_ref)
{
    compare_xent(2048, 2048, 90);
    compare_xent(3, 7, 91);
}
END_TEST

static double xent_loss(struct kern_xent *op, const float *logits, const int32_t *t, int64_t rows,
                        float *probs, float scale)
{
    float losses[4];
    kern_xent_forward(op, losses, probs, logits, t);
    double s = 0.0;
    for (int64_t r = 0; r < rows; r++)
        s += (double)scale * (double)losses[r];
    return s;
}

START_TEST(test_xent_grad_fd)
{
    enum { R = 3, V = 6, N = R * V };
    float z[N], p[N], dl[N], losses[R];
    const int32_t t[R] = {0, 5, 2};
    const float scale = 1.0f / R;
    fill(z, N, 13, -3.0f, 3.0f);
    struct kern_xent *op = xent_new(g_ref, R, V);
    kern_xent_forward(op, losses, p, z, t);
    kern_xent_backward(op, dl, NULL, p, t, scale);
    for (size_t i = 0; i < N; i++) {
        float z0 = z[i];
        z[i] = z0 + FD_H;
        double up = (double)z[i], lp = xent_loss(op, z, t, R, p, scale);
        z[i] = z0 - FD_H;
        double um = (double)z[i], lm = xent_loss(op, z, t, R, p, scale);
        z[i] = z0;
        assert_grad((lp - lm) / (up - um), (double)dl[i], "xent dlogits", i);
    }
    kern_xent_destroy(op);
}
END_TEST

START_TEST(test_xent_extreme_logits)
{
    /* a target logit 200 below the max: the loss must be ~200, finite, on both backends */
    float z[4] = {100, -100, 0, 0}, p[4], loss;
    const int32_t t = 1;
    struct kern_ctx *ctx[2] = {g_ref, g_dnnl};
    for (int i = 0; i < 2; i++) {
        struct kern_xent *op = xent_new(ctx[i], 1, 4);
        kern_xent_forward(op, &loss, p, z, &t);
        ck_assert_double_eq_tol((double)loss, 200.0, 1e-4);
        ck_assert(p[0] == 1.0f && p[1] == 0.0f);
        kern_xent_destroy(op);
    }
}
END_TEST

START_TEST(test_layernorm_gelu_xent_deterministic)
{
    const int64_t rows = 2048, v = 2048;
    size_t n = (size_t)(rows * v);
    float *z = random_vec(n, 14), *p1 = vec(n), *p2 = vec(n), *l1 = vec(2048), *l2 = vec(2048);
    int32_t *t = random_targets(rows, v, 15);
    struct kern_xent *xo = xent_new(g_dnnl, rows, v);
    kern_xent_forward(xo, l1, p1, z, t);
    kern_xent_forward(xo, l2, p2, z, t);
    ck_assert(memcmp(p1, p2, n * sizeof *p1) == 0 && memcmp(l1, l2, 2048 * sizeof *l1) == 0);
    kern_xent_destroy(xo);
    struct kern_gelu *go = gelu_new(g_dnnl, rows, v);
    kern_gelu_forward(go, p1, z);
    kern_gelu_forward(go, p2, z);
    ck_assert(memcmp(p1, p2, n * sizeof *p1) == 0);
    kern_gelu_destroy(go);
    struct kern_layernorm *lo = ln_new(g_dnnl, rows, v, 1e-5f);
    float *gamma = random_vec((size_t)v, 16), *beta = random_vec((size_t)v, 17);
    kern_layernorm_forward(lo, p1, l1, l2, z, gamma, beta);
    kern_layernorm_forward(lo, p2, l1, l2, z, gamma, beta);
    ck_assert(memcmp(p1, p2, n * sizeof *p1) == 0);
    kern_layernorm_destroy(lo);
    free(z), free(p1), free(p2), free(l1), free(l2), free(t), free(gamma), free(beta);
}
END_TEST

/* ---- errors -------------------------------------------------------------------------------- */

/* The call failed with RZ_ECONFIG, and err names `op`. */
static void assert_config_error(enum rz_status st, const struct rz_err *err, const char *op)
{
    ck_assert_int_eq(st, RZ_ECONFIG);
    ck_assert_int_eq(err->status, RZ_ECONFIG);
    ck_assert_msg(strstr(err->msg, op) != NULL, "message '%s' does not name '%s'", err->msg, op);
}

START_TEST(test_bad_backend_name)
{
    struct rz_err err;
    enum kern_backend b = KERN_DNNL;
    ck_assert_int_eq(kern_backend_parse("ref", &b, &err), RZ_OK);
    ck_assert_int_eq(b, KERN_REF);
    ck_assert_int_eq(kern_backend_parse("dnnl", &b, &err), RZ_OK);
    ck_assert_int_eq(b, KERN_DNNL);
    assert_config_error(kern_backend_parse("mkl", &b, &err), &err, "kernel backend");
    ck_assert_ptr_nonnull(strstr(err.msg, "mkl"));
    ck_assert_ptr_nonnull(strstr(err.msg, "ref, dnnl"));
    assert_config_error(kern_backend_parse("", &b, &err), &err, "kernel backend");
    assert_config_error(kern_backend_parse(NULL, &b, &err), &err, "kernel backend");
}
END_TEST

START_TEST(test_bad_matmul_sizes)
{
    struct kern_ctx *ctx = _i ? g_dnnl : g_ref;
    struct rz_err err;
    struct kern_matmul *op = (struct kern_matmul *)&err; /* must be reset to NULL */
    const int64_t huge = (int64_t)1 << 40;
    const struct kern_matmul_desc bad[] = {
        {0, 2, 2, 2, false, false, 1.0f, false, false, false},
        {1, 0, 2, 2, false, false, 1.0f, false, false, false},
        {1, 2, -3, 2, false, false, 1.0f, false, false, false},
        {1, 2, 2, -1, false, false, 1.0f, false, false, false},
        {1, huge, huge, huge, false, false, 1.0f, false, false, false}, /* m*n*k overflows size_t */
        {huge, huge, 1, 1, false, false, 1.0f, false, false, false},
        {1, 2, 2, 2, false, false, NAN, false, false, false},
    };
    for (size_t i = 0; i < RZ_ARRAY_LEN(bad); i++) {
        assert_config_error(kern_matmul_create(&op, ctx, &bad[i], &err), &err, "matmul");
        ck_assert_ptr_null(op);
    }
    double gf = 1.0;
    assert_config_error(kern_measure_peak(ctx, 0, 8, 8, false, 0.1, &gf, &err), &err, "matmul");
    assert_config_error(kern_measure_peak(ctx, 8, 8, 8, false, -1.0, &gf, &err), &err, "measure peak");
}
END_TEST

START_TEST(test_bad_other_sizes)
{
    struct kern_ctx *ctx = _i ? g_dnnl : g_ref;
    struct rz_err err;
    struct kern_layernorm *ln = NULL;
    struct kern_gelu *ge = NULL;
    struct kern_attention *at = NULL;
    struct kern_xent *xe = NULL;
    const int64_t huge = (int64_t)1 << 62;
    assert_config_error(kern_layernorm_create(&ln, ctx, 0, 256, 1e-5f, false, &err), &err, "layernorm");
    assert_config_error(kern_layernorm_create(&ln, ctx, 8, -1, 1e-5f, false, &err), &err, "layernorm");
    assert_config_error(kern_layernorm_create(&ln, ctx, huge, huge, 1e-5f, false, &err), &err,
                        "layernorm");
    assert_config_error(kern_layernorm_create(&ln, ctx, 8, 8, -1.0f, false, &err), &err, "layernorm");
    assert_config_error(kern_gelu_create(&ge, ctx, 0, 512, false, &err), &err, "gelu");
    assert_config_error(kern_gelu_create(&ge, ctx, 2048, -1, false, &err), &err, "gelu");
    assert_config_error(kern_gelu_create(&ge, ctx, huge, huge, false, &err), &err, "gelu");
    assert_config_error(kern_attention_create(&at, ctx, 2, 128, 0, 64, 0, &err), &err,
                        "attention");
    assert_config_error(kern_attention_create(&at, ctx, 2, -1, 4, 64, 0, &err), &err, "attention");
    assert_config_error(kern_attention_create(&at, ctx, 1, huge, 1, 1, 0, &err), &err,
                        "attention"); /* T^2 overflows */
    assert_config_error(kern_attention_create(&at, ctx, 2, 128, 4, 64, -1, &err), &err,
                        "attention");
    assert_config_error(kern_xent_create(&xe, ctx, 16, 0, false, &err), &err, "xent");
    assert_config_error(kern_xent_create(&xe, ctx, 1, (int64_t)INT32_MAX + 1, false, &err), &err,
                        "xent");
    ck_assert(ln == NULL && ge == NULL && at == NULL && xe == NULL);
}
END_TEST

/* ---- optional timings ---------------------------------------------------------------------- */

/* ms per call of fn(arg) averaged over `reps` calls after one warm-up call. */
static double time_ms(void (*fn)(void *), void *arg, int reps)
{
    fn(arg);
    double t0 = rz_now();
    for (int i = 0; i < reps; i++)
        fn(arg);
    return (rz_now() - t0) * 1e3 / reps;
}

struct timing_bufs {
    float *a, *b, *c, *d, *e, *f, *g;
    int32_t *t;
    void *op;
};

static void run_mm(void *p)
{
    struct timing_bufs *tb = p;
    kern_matmul_run(tb->op, tb->c, tb->a, tb->b, tb->d);
}

static void run_ln_fwd(void *p)
{
    struct timing_bufs *tb = p;
    kern_layernorm_forward(tb->op, tb->b, tb->e, tb->f, tb->a, tb->g, tb->d);
}

static void run_ln_bwd(void *p)
{
    struct timing_bufs *tb = p;
    kern_layernorm_backward(tb->op, tb->c, tb->e + 4096, tb->d, tb->b, tb->a, tb->e, tb->f,
                            tb->g, true);
}

static void run_gelu_fwd(void *p)
{
    struct timing_bufs *tb = p;
    kern_gelu_forward(tb->op, tb->b, tb->a);
}

static void run_gelu_bwd(void *p)
{
    struct timing_bufs *tb = p;
    kern_gelu_backward(tb->op, tb->c, tb->d, tb->b, tb->a);
}

static void run_attn_fwd(void *p)
{
    struct timing_bufs *tb = p;
    kern_attention_forward(tb->op, tb->b, tb->e, tb->a);
}

static void run_attn_bwd(void *p)
{
    struct timing_bufs *tb = p;
    kern_attention_backward(tb->op, tb->c, tb->b, tb->a, tb->b, tb->e);
}

static void run_xent_fwd(void *p)
{
    struct timing_bufs *tb = p;
    kern_xent_forward(tb->op, tb->e, tb->b, tb->a, tb->t);
}

static void run_xent_bwd(void *p)
{
    struct timing_bufs *tb = p;
    kern_xent_backward(tb->op, tb->c, tb->d, tb->b, tb->t, 1.0f / 2048);
}

static void time_matmuls(struct kern_ctx *ctx, struct timing_bufs *tb, int reps)
{
    for (size_t i = 0; i < RZ_ARRAY_LEN(seed_mm); i++) {
        const struct kern_matmul_desc *d = &seed_mm[i];
        struct rz_err err;
        struct kern_matmul *op = NULL;
        if (kern_matmul_create(&op, ctx, d, &err) != RZ_OK) {
            printf("  matmul %zu: %s\n", i, err.msg);
            continue;
        }
        tb->op = op;
        double ms = time_ms(run_mm, tb, reps);
        double gf = 2.0 * (double)(d->batch * d->m * d->n * d->k) / (ms * 1e6);
        printf("  matmul b=%-2lld %4lldx%-4lld @ %4lldx%-4lld %s%s%s%s %9.3f ms %7.1f GFLOP/s\n",
               (long long)d->batch, (long long)d->m, (long long)d->k, (long long)d->k,
               (long long)d->n, d->trans_a ? "ta " : "", d->trans_b ? "tb " : "",
               d->bias ? "bias " : "", d->accumulate ? "acc" : "", ms, gf);
        kern_matmul_destroy(op);
    }
}

static void time_rows(struct kern_ctx *ctx, struct timing_bufs *tb, int reps)
{
    struct kern_layernorm *ln = NULL;
    struct kern_gelu *ge = NULL;
    struct kern_attention *at = NULL;
    struct kern_xent *xe = NULL;
    struct rz_err err;
    if (kern_layernorm_create(&ln, ctx, 2048, 256, 1e-5f, false, &err) == RZ_OK) {
        tb->op = ln;
        printf("  layernorm 2048x256 fwd %9.3f ms\n", time_ms(run_ln_fwd, tb, reps));
        printf("  layernorm 2048x256 bwd %9.3f ms\n", time_ms(run_ln_bwd, tb, reps));
    }
    if (kern_gelu_create(&ge, ctx, 2048, 512, false, &err) == RZ_OK) {
        tb->op = ge;
        printf("  gelu 2048x512 fwd      %9.3f ms\n", time_ms(run_gelu_fwd, tb, reps));
        printf("  gelu 2048x512 bwd+bias %9.3f ms\n", time_ms(run_gelu_bwd, tb, reps));
    }
    if (kern_attention_create(&at, ctx, 16, 128, 4, 64, 0, &err) == RZ_OK) {
        tb->op = at; /* qkv (2048, 768) in a, y and dy in b, lse in e */
        printf("  attention 16x128, 4x64 fwd %9.3f ms\n", time_ms(run_attn_fwd, tb, reps));
        printf("  attention 16x128, 4x64 bwd %9.3f ms\n", time_ms(run_attn_bwd, tb, reps));
    }
    if (kern_xent_create(&xe, ctx, 2048, 2048, false, &err) == RZ_OK) {
        tb->op = xe;
        printf("  xent 2048x2048 fwd     %9.3f ms\n", time_ms(run_xent_fwd, tb, reps));
        printf("  xent 2048x2048 bwd     %9.3f ms\n", time_ms(run_xent_bwd, tb, reps));
    }
    kern_layernorm_destroy(ln);
    kern_gelu_destroy(ge);
    kern_attention_destroy(at);
    kern_xent_destroy(xe);
}

/* Timing-only buffers: no ck_assert here, print_timings runs outside the test runner. */
static float *timing_vec(size_t n, uint32_t seed, float lo, float hi)
{
    float *p = rz_alloc_aligned(n * sizeof(float));
    if (p != NULL)
        fill(p, n, seed, lo, hi);
    return p;
}

static void time_backends(struct timing_bufs *tb)
{
    struct rz_err err;
    for (int i = 0; i < 2; i++) {
        struct kern_ctx *ctx = NULL;
        if (kern_ctx_create(&ctx, i ? KERN_DNNL : KERN_REF, &err) != RZ_OK) {
            printf("timings: %s\n", err.msg);
            continue;
        }
        printf("kernel timings, backend %s (%s), ms per call:\n", i ? "dnnl" : "ref",
               kern_ctx_isa(ctx));
        time_matmuls(ctx, tb, i ? 20 : 1);
        time_rows(ctx, tb, i ? 50 : 2);
        double gf = 0.0;
        if (i && kern_measure_peak(ctx, 2048, 2048, 256, false, 1.0, &gf, &err) == RZ_OK)
            printf("  measured peak (2048x256 @ 256x2048): %.1f GFLOP/s\n", gf);
        kern_ctx_destroy(ctx);
    }
}

static void print_timings(void)
{
    const size_t big = (size_t)2048 * 2048;
    struct timing_bufs tb = {
        .a = timing_vec(big, 1, -1, 1), .b = timing_vec(big, 2, -1, 1),
        .c = timing_vec(big, 3, -1, 1), .d = timing_vec(2048, 4, -1, 1),
        .e = timing_vec(8192, 5, -1, 1), .f = timing_vec(8192, 8, 0.5f, 1.5f), /* variances */
        .g = timing_vec(2048, 6, -1, 1), .t = malloc(2048 * sizeof(int32_t)),
    };
    if (tb.a && tb.b && tb.c && tb.d && tb.e && tb.f && tb.g && tb.t) {
        for (int r = 0; r < 2048; r++)
            tb.t[r] = (int32_t)((r * 7919) % 2048);
        time_backends(&tb);
    } else {
        printf("timings: out of memory\n");
    }
    free(tb.a), free(tb.b), free(tb.c), free(tb.d), free(tb.e), free(tb.f), free(tb.g);
    free(tb.t);
}

/* ---- vector levels: every level of our row kernels gives the baseline's bits ----------------- */

/* Runs every entry of one level's table on fixed inputs whose sizes leave partial vectors
 * (37 columns, a 53-word vocabulary, 23-key tiles), and appends every output to out (floats)
 * and outh (bf16); returns how many floats were written. */
enum { LV_R = 5, LV_C = 37, LV_V = 53, LV_BQ = 7, LV_BK = 23, LV_LD = 24, LV_D = 19 };
enum { LV_FLOATS = 64 * 1024, LV_HALVES = 8 * 1024 };

static size_t run_level(const struct kern_rows *k, float *out, kern_bf16 *outh)
{
    float *x = random_vec(LV_R * LV_V, 11), *y = random_vec(LV_R * LV_V, 12);
    float *g = random_vec(LV_C, 13), *b = random_vec(LV_C, 14);
    float *o = out;
    kern_bf16 *h = outh;
    /* exp over [-90, 90], with -inf, NaN and the clamps */
    fill(o, 301, 15, -90.0f, 90.0f);
    o[0] = -INFINITY, o[1] = NAN, o[2] = 100.0f, o[3] = -87.33654f;
    k->exp(o + 301, o, 301);
    o += 602;
    /* bf16 rounding, adds, column sums (with and without the rounded copy) */
    k->round_bf16(h, x, LV_R * LV_C), h += LV_R * LV_C;
    k->add(o, x, y, LV_R * LV_C), o += LV_R * LV_C;
    memcpy(o, x, LV_C * sizeof *o), k->acc(o, y, LV_C), o += LV_C;
    memset(o, 0, LV_C * sizeof *o), k->colsum(o, h, x, LV_R, LV_C, 0, LV_C);
    o += LV_C, h += LV_R * LV_C;
    memset(o, 0, LV_C * sizeof *o), k->colsum(o, NULL, x, LV_R, LV_C, 5, 21), o += LV_C;
    memcpy(o, y, LV_C * sizeof *o), k->sum_partials(o, x, LV_R, LV_C), o += LV_C;
    /* cross-entropy forward, then backward in float (with the bias partial) and bf16 */
    int32_t t[LV_R] = {0, 52, 17, 16, 31};
    float *probs = o + LV_R;
    k->xent_forward(o, probs, x, t, 0, LV_R, LV_V), o += LV_R + LV_R * LV_V;
    k->xent_backward(o, false, o + LV_R * LV_V, probs, t, 0.25f, 0, LV_R, LV_V);
    o += LV_R * LV_V + LV_V;
    k->xent_backward(h, true, NULL, probs, t, 0.25f, 1, LV_R, LV_V), h += LV_R * LV_V;
    /* layer norm forward (float and bf16) and backward (set and accumulated dx) */
    struct kern_layernorm ln = {.rows = LV_R, .cols = LV_C, .eps = 1e-5f};
    float *mean = o, *var = o + LV_R;
    k->ln_forward(&ln, o + 2 * LV_R, mean, var, x, g, b, 0, LV_R), o += 2 * LV_R + LV_R * LV_C;
    ln.bf16_out = true;
    k->ln_forward(&ln, h, o, o + LV_R, x, g, b, 1, LV_R), o += 2 * LV_R, h += LV_R * LV_C;
    k->ln_backward(&ln, o, o + LV_R * LV_C, o + LV_R * LV_C + LV_C, y, x, mean, var, g, false, 0,
                   LV_R);
    memcpy(o + LV_R * LV_C + 2 * LV_C, y, LV_R * LV_C * sizeof *o);
    k->ln_backward(&ln, o + LV_R * LV_C + 2 * LV_C, o + 2 * LV_R * LV_C + 2 * LV_C,
                   o + 2 * LV_R * LV_C + 3 * LV_C, y, x, mean, var, g, true, 2, LV_R);
    o += 2 * LV_R * LV_C + 4 * LV_C;
    /* GELU forward (rows 1..4, float and bf16) and backward (a band, with and without sums) */
    struct kern_gelu ge = {.rows = LV_R, .cols = LV_C};
    k->gelu_forward(&ge, o, x, 1, LV_R), o += LV_R * LV_C;
    ge.bf16_out = true;
    k->gelu_forward(&ge, h, x, 0, LV_R), h += LV_R * LV_C;
    k->gelu_backward(&ge, h, NULL, y, x, 3, 30), h += LV_R * LV_C;
    ge.bf16_out = false;
    memset(o + LV_R * LV_C, 0, LV_C * sizeof *o);
    k->gelu_backward(&ge, o, o + LV_R * LV_C, y, x, 0, LV_C), o += LV_R * LV_C + LV_C;
    /* attention: a diagonal tile, then the next key tile, finish, delta, probs, dscores */
    float *s = o, *yy = o + LV_BQ * LV_LD, *m = yy + (LV_BK + LV_BQ) * LV_D, *l = m + LV_BQ;
    float *lse = l + LV_BQ, *delta = lse + LV_BK + LV_BQ;
    fill(s, LV_BQ * LV_LD, 16, -3.0f, 3.0f);
    fill(yy, (LV_BK + LV_BQ) * LV_D, 17, -1.0f, 1.0f);
    struct kern_attn_tile diag = {.s = s, .ld = LV_LD, .q0 = 0, .bq = LV_BQ, .k0 = 0, .bk = LV_BQ};
    k->attn_online(&diag, 0.3f, m, l, yy, LV_D, LV_D);
    fill(s, LV_BQ * LV_LD, 18, -3.0f, 3.0f);
    struct kern_attn_tile next = {.s = s, .ld = LV_LD, .q0 = LV_BK, .bq = LV_BQ, .k0 = 3,
                                  .bk = LV_BK};
    k->attn_online(&next, 0.3f, m, l, yy, LV_D, LV_D);
    k->attn_finish(yy, LV_D, LV_D, lse, m, l, 0, LV_BQ);
    k->attn_delta(delta, x, yy, LV_D, LV_D, LV_BQ);
    float *p = delta + LV_BK + LV_BQ;
    fill(p, LV_BQ * LV_LD, 19, -3.0f, 3.0f);
    struct kern_attn_tile pt = {.s = p, .ld = LV_LD, .q0 = 0, .bq = LV_BQ, .k0 = 0, .bk = LV_BK};
    k->attn_probs(&pt, 0.3f, lse);
    k->attn_dscores(&next, p, delta, 0.3f);
    o = p + LV_BQ * LV_LD;
    free(x), free(y), free(g), free(b);
    ck_assert((size_t)(o - out) <= LV_FLOATS && (size_t)(h - outh) <= LV_HALVES);
    return (size_t)(o - out);
}

/* _i: a level above the baseline, up to the CPU's own (the loop's range) */
START_TEST(test_levels_agree_bitwise)
{
    float *want = vec(LV_FLOATS), *got = vec(LV_FLOATS);
    kern_bf16 *wanth = calloc(LV_HALVES, sizeof *wanth), *goth = calloc(LV_HALVES, sizeof *goth);
    ck_assert(wanth && goth);
    size_t n = run_level(&kern_rows_baseline, want, wanth);
    ck_assert_uint_eq(run_level(kern_rows_for((enum rz_isa)_i), got, goth), n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&got[i], &want[i], sizeof got[i]) == 0,
                      "%s: float %zu is %a, the baseline's %a", rz_isa_name((enum rz_isa)_i), i,
                      (double)got[i], (double)want[i]);
    for (size_t i = 0; i < LV_HALVES; i++)
        ck_assert_msg(goth[i] == wanth[i], "%s: bf16 %zu is %04x, the baseline's %04x",
                      rz_isa_name((enum rz_isa)_i), i, goth[i], wanth[i]);
    ck_assert_int_eq(kern_rows_for((enum rz_isa)_i)->isa, _i);
    free(want), free(got), free(wanth), free(goth);
}
END_TEST

/* Each level's table says its own level, and the process runs the level it was set to. */
START_TEST(test_levels_named)
{
    for (int i = 0; i < RZ_ISA_LEVELS; i++)
        ck_assert_int_eq(kern_rows_for((enum rz_isa)i)->isa, i);
    ck_assert_str_eq(kern_rows_isa(), rz_isa_name(rz_isa_detect()));
    rz_isa_set(RZ_ISA_BASELINE);
    ck_assert_str_eq(kern_rows_isa(), "baseline");
    ck_assert_ptr_eq(kern_rows_active(), &kern_rows_baseline);
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
    tcase_add_test(tc, test_layernorm_dnnl_vs_ref);
    tcase_add_test(tc, test_layernorm_grad_fd);
    tcase_add_test(tc, test_gelu_dnnl_vs_ref);
    tcase_add_test(tc, test_gelu_accuracy);
    tcase_add_test(tc, test_gelu_grad_fd);
    tcase_add_loop_test(tc, test_attention_dnnl_vs_ref, 0, (int)RZ_ARRAY_LEN(attn_shapes));
    tcase_add_loop_test(tc, test_attention_grad_fd, 0, 6);
    tcase_add_loop_test(tc, test_attention_causal, 0, 4);
    tcase_add_test(tc, test_exp_accuracy);
    tcase_add_test(tc, test_xent_dnnl_vs_ref);
    tcase_add_test(tc, test_xent_grad_fd);
    tcase_add_test(tc, test_xent_extreme_logits);
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
    tcase_add_loop_test(core, test_matmul_bf16, 0, 14); /* the linear layers' shapes */
    tcase_add_test(core, test_blis_rule);
    tcase_add_loop_test(core, test_blis_vs_ref, 0, 5); /* the five weight-gradient shapes */
    tcase_add_test(core, test_measure_peak);
    tcase_add_loop_test(core, test_profile_counts, 0, 2);
    tcase_add_loop_test(core, test_profile_shapes, 0, 2);
    tcase_add_test(core, test_ref_layernorm_hand);
    tcase_add_test(core, test_ref_gelu_hand);
    tcase_add_test(core, test_ref_attention_hand);
    tcase_add_loop_test(core, test_attention_deterministic, 0, 3);
    tcase_add_test(core, test_backward_in_place);
    tcase_add_test(core, test_ref_xent_hand);
    tcase_add_test(core, test_layernorm_gelu_xent_deterministic);
    add_row_tests(core); /* at the CPU's own level */
    suite_add_tcase(s, core);

    TCase *levels = rz_test_tcase("levels");
    tcase_add_loop_test(levels, test_levels_agree_bitwise, RZ_ISA_AVX2, (int)rz_isa_detect() + 1);
    tcase_add_test(levels, test_levels_named);
    suite_add_tcase(s, levels);
    void (*const fixture[])(void) = {level_baseline, level_avx2};
    static const char *const names[] = {"rows-baseline", "rows-avx2"};
    for (int i = 0; i < (int)rz_isa_detect(); i++) {
        TCase *tc = rz_test_tcase(names[i]);
        tcase_add_checked_fixture(tc, fixture[i], NULL);
        tcase_add_checked_fixture(tc, setup, teardown);
        add_row_tests(tc);
        suite_add_tcase(s, tc);
    }

    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, test_bad_backend_name);
    tcase_add_loop_test(errors, test_bad_matmul_sizes, 0, 2);
    tcase_add_loop_test(errors, test_bad_other_sizes, 0, 2);
    suite_add_tcase(s, errors);
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
