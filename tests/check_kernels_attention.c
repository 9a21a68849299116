/* check_kernels_attention: the attention, in check_kernels' test cases (check_kernels.c builds
 * the suite): hand-computed values of the reference backend, bit-identical reruns and a backward
 * in place, in "core"; and, for the row kernels at every level, oneDNN against the reference at
 * the model's shape and at small shapes whose tiles leave edges, finite-difference gradients,
 * causality to the bit, and the accuracy of the vectorized exp.  Fixtures from
 * kernels_fixtures.c. */

#include "config.h"

#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kernels/kern_impl.h"
#include "kernels/kernels.h"

#include "kernels_fixtures.h"

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

void kernels_attention_core_tests(TCase *tc)
{
    tcase_add_test(tc, test_ref_attention_hand);
    tcase_add_loop_test(tc, test_attention_deterministic, 0, 3);
    tcase_add_test(tc, test_backward_in_place);
}

void kernels_attention_row_tests(TCase *tc)
{
    tcase_add_loop_test(tc, test_attention_dnnl_vs_ref, 0, (int)RZ_ARRAY_LEN(attn_shapes));
    tcase_add_loop_test(tc, test_attention_grad_fd, 0, 6);
    tcase_add_loop_test(tc, test_attention_causal, 0, 4);
    tcase_add_test(tc, test_exp_accuracy);
}
