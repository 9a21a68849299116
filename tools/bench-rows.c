/* bench-rows.c: ns per element of each of our row kernels and optimizer loops, at each vector
 * level this CPU runs (kern_rows.h, optim_rows.h), on one thread, at the seed model's shapes
 * (configs/seed_benchmark.yaml: 2048 rows of C = 256, F = 512, V = 2048; 64 x 64 attention
 * tiles of D = 64; 2.1 M parameters).  tools/bench-rows builds it (make) and runs it pinned to
 * one core.  Each figure is the median of 7 timed rounds of at least 20 ms each, after one
 * warm-up round; the spread (min..max) is printed beside it.  Not a test: it asserts nothing
 * about speed.
 *   rz-bench-rows [ROUNDS MIN_MS]   other rounds and round length (tests/tools.sh: 1 1) */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/isa.h"
#include "core/util.h"
#include "kernels/kern_rows.h"
#include "optim/optim_rows.h"

enum { R = 2048, C = 256, F = 512, V = 2048, TILE = 64, HD = 64, PARAMS = 2138112 };
enum { ROUNDS_MAX = 99 };
static int rounds = 7;
static double round_s = 0.02;

struct bufs {
    float *x, *y, *z, *g, *b, *m, *v, *s;
    kern_bf16 *h;
    int32_t *t;
};

struct kernel {
    const char *name, *shape;
    double elems; /* elements a call touches: the denominator of ns per element */
    void (*run)(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b);
};

static void k_exp(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    k->exp(b->y, b->x, R * C);
}

static void k_xent_fwd(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    k->xent_forward(b->z, b->y, b->x, b->t, 0, R, V);
}

static void k_xent_bwd(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    k->xent_backward(b->z, false, b->g, b->y, b->t, 1.0f / R, 0, R, V);
}

static void k_ln_fwd(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    struct kern_layernorm op = {.rows = R, .cols = C, .eps = 1e-5f};
    k->ln_forward(&op, b->y, b->m, b->v, b->x, b->g, b->b, 0, R);
}

static void k_ln_bwd(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    struct kern_layernorm op = {.rows = R, .cols = C, .eps = 1e-5f};
    k->ln_backward(&op, b->z, b->s, b->s + C, b->y, b->x, b->m, b->v, b->g, false, 0, R);
}

static void k_gelu_fwd(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    struct kern_gelu op = {.rows = R, .cols = F};
    k->gelu_forward(&op, b->y, b->x, 0, R);
}

static void k_gelu_bwd(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    struct kern_gelu op = {.rows = R, .cols = F};
    k->gelu_backward(&op, b->z, b->g, b->y, b->x, 0, F);
}

/* One query tile against 4 key tiles (the last on the diagonal): online softmax, then finish. */
static void k_attn_fwd(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    for (int kt = 0; kt < 4; kt++) {
        struct kern_attn_tile t = {.s = b->s + kt * TILE * TILE, .ld = TILE, .q0 = 3 * TILE,
                                   .bq = TILE, .k0 = kt * TILE, .bk = TILE};
        k->attn_online(&t, 0.125f, b->m, b->v, b->y, HD, HD);
    }
    k->attn_finish(b->y, HD, HD, b->z, b->m, b->v, 3 * TILE, TILE);
}

/* The backward's row steps of the same tiles: probabilities, then score gradients. */
static void k_attn_bwd(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    for (int kt = 0; kt < 4; kt++) {
        struct kern_attn_tile t = {.s = b->s + kt * TILE * TILE, .ld = TILE, .q0 = 3 * TILE,
                                   .bq = TILE, .k0 = kt * TILE, .bk = TILE};
        k->attn_probs(&t, 0.125f, b->z);
        struct kern_attn_tile d = t;
        d.s = b->x + kt * TILE * TILE;
        k->attn_dscores(&d, t.s, b->g, 0.125f);
    }
}

static void k_round(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    k->round_bf16(b->h, b->x, R * C);
}

static void k_colsum(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    k->colsum(b->g, NULL, b->x, R, F, 0, F);
}

static void k_add(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)o;
    k->add(b->z, b->x, b->y, R * C);
}

static void k_adam(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)k;
    const struct optim_rows_step c = {.b1 = 0.9f, .b2 = 0.999f, .eps = 1e-8f, .step = 1e-4f,
                                      .rc2 = 1.0f, .decay = 0.99999f, .l2 = 0.0f};
    o->adam(&c, b->z, b->m, b->v, b->g, PARAMS);
}

static volatile double sink;

static void k_sumsq(const struct kern_rows *k, const struct optim_rows *o, struct bufs *b)
{
    (void)k;
    sink += o->sumsq(b->g, PARAMS);
}

static const struct kernel kernels[] = {
    {"exp", "2048x256", (double)R * C, k_exp},
    {"xent forward", "2048x2048", (double)R * V, k_xent_fwd},
    {"xent backward", "2048x2048", (double)R * V, k_xent_bwd},
    {"layernorm forward", "2048x256", (double)R * C, k_ln_fwd},
    {"layernorm backward", "2048x256", (double)R * C, k_ln_bwd},
    {"gelu forward", "2048x512", (double)R * F, k_gelu_fwd},
    {"gelu backward", "2048x512", (double)R * F, k_gelu_bwd},
    {"attention online+finish", "64x(4x64)", 4.0 * TILE * TILE, k_attn_fwd},
    {"attention probs+dscores", "64x(4x64)", 4.0 * TILE * TILE, k_attn_bwd},
    {"round bf16", "2048x256", (double)R * C, k_round},
    {"column sums", "2048x512", (double)R * F, k_colsum},
    {"residual add", "2048x256", (double)R * C, k_add},
    {"adam(w) update", "2.1M", (double)PARAMS, k_adam},
    {"sum of squares", "2.1M", (double)PARAMS, k_sumsq},
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, min and max ns per element over `rounds` rounds of >= round_s each. */
static void measure(const struct kernel *kn, enum rz_isa isa, struct bufs *b, double out[3])
{
    const struct kern_rows *k = kern_rows_for(isa);
    const struct optim_rows *o = optim_rows_for(isa);
    kn->run(k, o, b); /* warm-up: caches, pages */
    double ns[ROUNDS_MAX];
    for (int r = 0; r < rounds; r++) {
        long calls = 0;
        double t0 = rz_now(), t;
        do {
            kn->run(k, o, b);
            calls++;
            t = rz_now();
        } while (t - t0 < round_s);
        ns[r] = (t - t0) * 1e9 / ((double)calls * kn->elems);
    }
    qsort(ns, (size_t)rounds, sizeof ns[0], cmp_double);
    out[0] = ns[rounds / 2], out[1] = ns[0], out[2] = ns[rounds - 1];
}

static float *buf(size_t n, float lo, float hi, unsigned seed)
{
    float *p = rz_alloc_aligned(n * sizeof *p);
    if (p == NULL)
        return NULL;
    srand(seed);
    for (size_t i = 0; i < n; i++)
        p[i] = lo + (hi - lo) * (float)rand() / (float)RAND_MAX;
    return p;
}

int main(int argc, char **argv)
{
    if (argc == 3) {
        char *end1, *end2;
        long r = strtol(argv[1], &end1, 10);
        double ms = strtod(argv[2], &end2);
        if (*end1 || *end2 || r < 1 || r > ROUNDS_MAX || !(ms > 0.0 && ms <= 10000.0)) {
            fprintf(stderr, "usage: rz-bench-rows [ROUNDS (1..%d) MIN_MS (0..10000]]\n",
                    ROUNDS_MAX);
            return 64;
        }
        rounds = (int)r, round_s = ms / 1e3;
    } else if (argc != 1) {
        fprintf(stderr, "usage: rz-bench-rows [ROUNDS (1..%d) MIN_MS (0..10000]]\n", ROUNDS_MAX);
        return 64;
    }
    const size_t big = (size_t)R * V > (size_t)PARAMS ? (size_t)R * V : (size_t)PARAMS;
    struct bufs b = {
        .x = buf(big, -4.0f, 4.0f, 1), .y = buf(big, -1.0f, 1.0f, 2), .z = buf(big, -1, 1, 3),
        .g = buf(big, -1e-3f, 1e-3f, 4), .b = buf(C, -0.1f, 0.1f, 5), .m = buf(big, 0, 1e-3f, 6),
        .v = buf(big, 1e-8f, 1e-6f, 7), .s = buf(4 * TILE * TILE + 2 * F, -3, 3, 8),
        .h = malloc(big * sizeof(kern_bf16)), .t = malloc(R * sizeof(int32_t)),
    };
    if (!b.x || !b.y || !b.z || !b.g || !b.b || !b.m || !b.v || !b.s || !b.h || !b.t) {
        fprintf(stderr, "bench-rows: out of memory\n");
        return 70;
    }
    for (int r = 0; r < R; r++)
        b.t[r] = (r * 7919) % V;
    enum rz_isa top = rz_isa_detect();
    printf("ns per element, one thread, median of %d rounds (min..max); this CPU runs up to %s\n",
           rounds, rz_isa_name(top));
    printf("%-24s %-10s", "kernel", "shape");
    for (int l = top; l >= 0; l--)
        printf(" %20s", rz_isa_name((enum rz_isa)l));
    printf(" %9s\n", top > RZ_ISA_BASELINE ? "vs base" : "");
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        const struct kernel *kn = &kernels[i];
        double best = 0, base = 0;
        printf("%-24s %-10s", kn->name, kn->shape);
        for (int l = top; l >= 0; l--) {
            double f[3];
            measure(kn, (enum rz_isa)l, &b, f);
            char cell[64];
            snprintf(cell, sizeof cell, "%.3f (%.3f..%.3f)", f[0], f[1], f[2]);
            printf(" %20s", cell);
            if (l == (int)top)
                best = f[0];
            if (l == RZ_ISA_BASELINE)
                base = f[0];
        }
        if (top > RZ_ISA_BASELINE)
            printf(" %8.1fx", base / best);
        printf("\n");
        fflush(stdout);
    }
    free(b.x), free(b.y), free(b.z), free(b.g), free(b.b), free(b.m), free(b.v), free(b.s);
    free(b.h), free(b.t);
    return 0;
}
