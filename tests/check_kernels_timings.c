/* check_kernels_timings: with RZ_KERNEL_TIMINGS=1, check_kernels prints ms per call of every
 * seed-shape op on both backends after the suite, in the parent process (check_kernels.c's
 * main); never asserted on.  The model's matmul shapes from kernels_fixtures.c. */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/util.h"
#include "kernels/kern_impl.h"
#include "kernels/kernels.h"

#include "kernels_fixtures.h"

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

void print_timings(void)
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
