/* check_optim: Adam, AdamW, the LR schedule and clipping against hand-computed values. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/isa.h"
#include "optim/optim.h"
#include "optim/optim_rows.h"
#include "testutil.h"

static struct optim_opts base_opts(void)
{
    struct optim_opts o = {.kind = OPTIM_ADAM, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999,
                           .eps = 1e-8, .schedule = SCHED_COSINE, .total_steps = 100};
    return o;
}

/* Adam's first step moves every parameter by lr * sign(g) (m_hat = g, v_hat = g^2). Second step
 * by hand: g2 = 0.5 after g1 = 1: m = 0.9*0.1 + 0.1*0.5 = 0.14, v = 0.999*0.001 + 0.001*0.25 =
 * 0.001249; m_hat = 0.14 / 0.19 = 0.736842; v_hat = 0.001249 / 0.001999 = 0.624812;
 * step = 0.1 * 0.736842 / (0.790451 + 1e-8) = 0.0932179. */
START_TEST(adam_two_steps_by_hand)
{
    struct optim_opts o = base_opts();
    struct optim *opt;
    struct rz_err e;
    ck_assert_int_eq(optim_create(&opt, &o, 2, &e), RZ_OK);
    float p[2] = {1.0f, -2.0f};
    float g1[2] = {1.0f, -3.0f};
    optim_step(opt, p, g1, 0.1);
    ck_assert_float_eq_tol(p[0], 0.9f, 1e-6f);
    ck_assert_float_eq_tol(p[1], -1.9f, 1e-6f);
    float g2[2] = {0.5f, 0.0f};
    optim_step(opt, p, g2, 0.1);
    ck_assert_float_eq_tol(p[0], 0.9f - 0.0932179f, 2e-6f);
    ck_assert_int_eq(opt->t, 2);
    optim_destroy(opt);
}
END_TEST

/* AdamW decays decoupled from the gradient: with g = 0 only p *= (1 - lr*wd) happens. */
START_TEST(adamw_decoupled_decay)
{
    struct optim_opts o = base_opts();
    o.kind = OPTIM_ADAMW;
    o.weight_decay = 0.5;
    struct optim *opt;
    ck_assert_int_eq(optim_create(&opt, &o, 1, NULL), RZ_OK);
    float p[1] = {2.0f}, g[1] = {0.0f};
    optim_step(opt, p, g, 0.1);
    ck_assert_float_eq_tol(p[0], 2.0f * (1.0f - 0.05f), 1e-6f);
    optim_destroy(opt);
    /* Adam's L2 decay goes through the moments: first step moves by lr * sign(wd * p). */
    o.kind = OPTIM_ADAM;
    ck_assert_int_eq(optim_create(&opt, &o, 1, NULL), RZ_OK);
    p[0] = 2.0f;
    optim_step(opt, p, g, 0.1);
    ck_assert_float_eq_tol(p[0], 1.9f, 1e-6f);
    optim_destroy(opt);
}
END_TEST

START_TEST(cosine_schedule_values)
{
    struct optim_opts o = base_opts();
    o.lr = 5e-4;
    ck_assert_double_eq_tol(optim_lr_at(&o, 0), 5e-4, 1e-15);
    ck_assert_double_eq_tol(optim_lr_at(&o, 50), 2.5e-4, 1e-15);  /* cos(pi/2) = 0 */
    ck_assert_double_eq_tol(optim_lr_at(&o, 25), 5e-4 * (1 + cos(M_PI / 4)) / 2, 1e-15);
    ck_assert_double_eq_tol(optim_lr_at(&o, 100), 0.0, 1e-15);
    o.min_lr_ratio = 0.1;
    ck_assert_double_eq_tol(optim_lr_at(&o, 100), 5e-5, 1e-15);
    /* warm-up: linear from lr/warmup to lr, then cosine over the remaining steps */
    o.min_lr_ratio = 0.0;
    o.warmup_steps = 10;
    ck_assert_double_eq_tol(optim_lr_at(&o, 0), 5e-5, 1e-15);
    ck_assert_double_eq_tol(optim_lr_at(&o, 9), 5e-4, 1e-15);
    ck_assert_double_eq_tol(optim_lr_at(&o, 10), 5e-4, 1e-15);
    ck_assert_double_eq_tol(optim_lr_at(&o, 55), 2.5e-4, 1e-15);
    o.schedule = SCHED_LINEAR;
    ck_assert_double_eq_tol(optim_lr_at(&o, 55), 2.5e-4, 1e-15);
    ck_assert_double_eq_tol(optim_lr_at(&o, 32), 5e-4 * (1 - 22.0 / 90.0), 1e-15);
    o.schedule = SCHED_CONSTANT;
    ck_assert_double_eq_tol(optim_lr_at(&o, 80), 5e-4, 1e-15);
}
END_TEST

/* optim_step runs at every vector level the CPU has (_i, optim_rows.c): at each, its bits must
 * equal this plain scalar loop in the documented order, for a length that leaves a remainder
 * after whole vectors, over several steps with L2 decay on. */
START_TEST(vector_step_matches_scalar_bits)
{
    rz_isa_set((enum rz_isa)_i);
    ck_assert_str_eq(optim_isa(), rz_isa_name((enum rz_isa)_i));
    enum { N = 1000 + 13, STEPS = 3 };
    struct optim_opts o = base_opts();
    o.weight_decay = 0.01;
    struct optim *opt;
    ck_assert_int_eq(optim_create(&opt, &o, N, NULL), RZ_OK);
    static float p[N], q[N], g[N], m[N], v[N];
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = q[i] = (float)((double)(x >> 40) / (double)(1u << 24) - 0.5);
        m[i] = v[i] = 0.0f;
    }
    for (int t = 1; t <= STEPS; t++) {
        for (int i = 0; i < N; i++)
            g[i] = 0.25f * p[i] - 0.01f * (float)(i % 7) + 0.001f * (float)t;
        double lr = 0.05 / t;
        optim_step(opt, p, g, lr);
        float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, l2 = 0.01f;
        float step = (float)(lr / (1.0 - pow(0.9, t)));
        float rc2 = (float)(1.0 / sqrt(1.0 - pow(0.999, t)));
        for (int i = 0; i < N; i++) {
            float gi = g[i] + l2 * q[i];
            m[i] = b1 * m[i] + (1.0f - b1) * gi;
            v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
            q[i] = 1.0f * q[i] - step * m[i] / (sqrtf(v[i]) * rc2 + eps);
        }
        ck_assert_msg(memcmp(p, q, sizeof p) == 0, "step %d: the vector update differs from the "
                      "scalar one", t);
        ck_assert_msg(memcmp(opt->m, m, sizeof m) == 0 && memcmp(opt->v, v, sizeof v) == 0,
                      "step %d: the moments differ from the scalar ones", t);
    }
    optim_destroy(opt);
}
END_TEST

START_TEST(norm_and_clip)
{
    rz_isa_set((enum rz_isa)_i);
    float g[3] = {3.0f, 4.0f, 0.0f};
    double n = optim_grad_norm(g, 3);
    ck_assert_double_eq_tol(n, 5.0, 1e-12);
    ck_assert_float_eq(optim_clip(g, 3, n, 0.0), 1.0f);   /* off */
    ck_assert_float_eq(optim_clip(g, 3, n, 10.0), 1.0f);  /* below the bound */
    optim_clip(g, 3, n, 1.0);
    ck_assert_double_eq_tol(optim_grad_norm(g, 3), 1.0, 1e-6);
    ck_assert_float_eq_tol(g[0], 0.6f, 1e-6f);
}
END_TEST

/* The blocked norm is the same bits whether one holder has every block or several hold parts
 * (ZeRO shards at multiples of the block), and whole-buffer optim_grad_norm agrees with it. */
START_TEST(norm_from_shards_is_the_same_bits)
{
    rz_isa_set((enum rz_isa)_i);
    enum { N = 5 * OPTIM_NORM_BLOCK + 123 };
    float *g = malloc(N * sizeof *g);
    for (size_t i = 0; i < N; i++)
        g[i] = (float)sin((double)i * 0.37) * (float)(1 + i % 13);
    size_t nb = optim_norm_blocks(N);
    ck_assert_uint_eq(nb, 6);
    double whole = optim_grad_norm(g, N), *blocks = calloc(nb, sizeof *blocks);
    for (int parts = 1; parts <= 7; parts++) {
        memset(blocks, 0, nb * sizeof *blocks);
        for (int r = 0; r < parts; r++) {
            size_t lo, hi;
            rz_shard(N, parts, r, OPTIM_NORM_BLOCK, &lo, &hi);
            double mine[6] = {0};
            optim_block_sumsq(mine, g + lo, lo, hi);
            for (size_t k = 0; k < nb; k++)
                blocks[k] += mine[k]; /* one owner per block: what the allreduce does */
        }
        double n = optim_norm_of_blocks(blocks, nb);
        ck_assert_msg(n == whole, "%d parts: %.17g vs %.17g", parts, n, whole);
    }
    double exact = 0;
    for (size_t i = 0; i < N; i++)
        exact += (double)g[i] * (double)g[i];
    ck_assert_double_eq_tol(whole, sqrt(exact), 1e-12 * sqrt(exact));
    free(blocks);
    free(g);
}
END_TEST

/* The sum of squares at each level (_i): eight double lanes, the tail into lane 0; on values
 * whose squares add exactly, the exact sum. */
START_TEST(sumsq_lanes_and_tail)
{
    rz_isa_set((enum rz_isa)_i);
    float x[19];
    double want = 0;
    for (int i = 0; i < 19; i++) {
        x[i] = 0.5f * (float)(i - 9); /* exact in binary: the sum is exact */
        want += (double)x[i] * (double)x[i];
    }
    ck_assert(optim_sumsq(x, 19) == want);
    ck_assert(optim_sumsq(x, 0) == 0.0);
    ck_assert(optim_sumsq(x + 16, 3) == 3.5 * 3.5 + 4.0 * 4.0 + 4.5 * 4.5);
    /* lane order: a sum that rounds differs by order; every level gives the baseline's bits */
    enum { N = 1000 + 5 };
    static float y[N];
    for (int i = 0; i < N; i++)
        y[i] = (float)sin(i * 0.7) * (float)(1 + i % 29);
    ck_assert(optim_sumsq(y, N) == optim_rows_baseline.sumsq(y, N));
}
END_TEST

START_TEST(parse_errors_list_choices)
{
    struct rz_err e;
    enum optim_kind k;
    enum optim_schedule s;
    ck_assert_int_eq(optim_kind_parse("sgd", &k, &e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "'sgd'"));
    ck_assert_ptr_nonnull(strstr(e.msg, "adamw"));
    ck_assert_int_eq(optim_schedule_parse("step", &s, &e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "cosine"));
    ck_assert_int_eq(optim_kind_parse("adamw", &k, &e), RZ_OK);
    ck_assert_int_eq(k, OPTIM_ADAMW);
}
END_TEST

static Suite *optim_suite(void)
{
    Suite *s = suite_create("optim");
    TCase *core = rz_test_tcase("core");
    tcase_add_test(core, adam_two_steps_by_hand);
    tcase_add_test(core, adamw_decoupled_decay);
    tcase_add_test(core, cosine_schedule_values);
    /* the levels this CPU runs (core/isa.h) */
    int levels = (int)rz_isa_detect() + 1;
    tcase_add_loop_test(core, vector_step_matches_scalar_bits, 0, levels);
    tcase_add_loop_test(core, norm_and_clip, 0, levels);
    tcase_add_loop_test(core, norm_from_shards_is_the_same_bits, 0, levels);
    tcase_add_loop_test(core, sumsq_lanes_and_tail, 0, levels);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, parse_errors_list_choices);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(optim_suite());
}
