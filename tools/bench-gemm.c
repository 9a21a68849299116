/* tools/bench-gemm.c: oneDNN, BLIS and libxsmm at the seed model's matmul shapes, one thread.
 *
 * The trainer's matmuls come in three forms (src/model/model.c, row-major, N = batch x seq):
 *   forward         Y (N, out)  = X (N, in) . W^T      W stored (out, in)      "NT"
 *   input gradient  dX (N, in) = dY (N, out) . W                              "NN"
 *   weight gradient dW (out, in) = dY^T . X            dY stored (N, out)      "TN"
 * Each library gets the same operands in those layouts, with no copies outside its own call:
 * oneDNN through its matmul primitive with strided memory descriptors, created once, the data
 * handles set per call (what kern_dnnl.c does),
 * BLIS through bli_sgemm's general strides, libxsmm through its JIT kernels over 64 x 64 tiles
 * of C (libxsmm 1.17 plans small matrices only: a large product is a loop over tiles).  Prints
 * GFLOP/s per shape (best of 5 timings of 3 calls) and the maximum difference from oneDNN's
 * result.  Where oneDNN runs bf16 (avx512_bf16 or AMX), a second table times oneDNN's bf16
 * matmuls (training.precision bf16) at the same shapes and layouts, and each weight gradient
 * again with dY^T stored transposed in memory (NN): what handing oneDNN a transposed copy
 * would buy; a last line, libxsmm's attention tile products in fp32 and bf16.  Built and run
 * by tools/bench-gemm; not part of the product or its tests. */
#include <blis.h>
#include <dnnl.h>
#include <libxsmm.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call, what)                                                                         \
    do {                                                                                          \
        if ((call) != dnnl_success) {                                                             \
            fprintf(stderr, "bench-gemm: %s failed\n", what);                                     \
            return -1.0;                                                                          \
        }                                                                                         \
    } while (0)

struct shape {
    const char *name;
    int m, n, k;
    bool ta, tb;    /* op(A) = A^T (A stored k x m); op(B) = B^T (B stored n x k) */
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef void (*gemm_fn)(const struct shape *s, const float *a, const float *b, float *c,
                        void *state);

/* Best of 5 timings of 3 calls, in seconds per call. */
static double best_time(gemm_fn f, const struct shape *s, const float *a, const float *b,
                        float *c, void *state)
{
    double best = INFINITY;
    f(s, a, b, c, state);
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        for (int i = 0; i < 3; i++)
            f(s, a, b, c, state);
        double dt = (now() - t0) / 3.0;
        best = dt < best ? dt : best;
    }
    return best;
}

/* ---- oneDNN ---------------------------------------------------------------------------- */

struct dnnl_state {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t prim;
    dnnl_memory_desc_t md[3];
    dnnl_memory_t mem[3];     /* created without a buffer; each call sets the handles */
};

static void md_matrix(dnnl_memory_desc_t *md, int rows, int cols, bool trans,
                      dnnl_data_type_t dt)
{
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {trans ? 1 : cols, trans ? rows : 1};
    dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides);
}

/* A and B in `in` (f32 or bf16), C in f32, as the trainer's matmuls. */
static double onednn_plan(struct dnnl_state *d, const struct shape *s, dnnl_data_type_t in)
{
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd;
    md_matrix(&d->md[0], s->m, s->k, s->ta, in);
    md_matrix(&d->md[1], s->k, s->n, s->tb, in);
    md_matrix(&d->md[2], s->m, s->n, false, dnnl_f32);
    CHECK(dnnl_matmul_desc_init(&desc, &d->md[0], &d->md[1], NULL, &d->md[2]), "matmul desc");
    CHECK(dnnl_primitive_desc_create(&pd, &desc, NULL, d->engine, NULL), "matmul pd");
    CHECK(dnnl_primitive_create(&d->prim, pd), "matmul primitive");
    dnnl_primitive_desc_destroy(pd);
    for (int i = 0; i < 3; i++)
        CHECK(dnnl_memory_create(&d->mem[i], &d->md[i], d->engine, DNNL_MEMORY_NONE), "memory");
    return 0.0;
}

static void onednn_unplan(struct dnnl_state *d)
{
    for (int i = 0; i < 3; i++)
        dnnl_memory_destroy(d->mem[i]);
    dnnl_primitive_destroy(d->prim);
}

static void onednn_gemm(const struct shape *s, const float *a, const float *b, float *c,
                      void *state)
{
    struct dnnl_state *d = state;
    const void *ptr[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        dnnl_memory_set_data_handle(d->mem[i], (void *)ptr[i]);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, d->mem[0]}, {DNNL_ARG_WEIGHTS, d->mem[1]},
                               {DNNL_ARG_DST, d->mem[2]}};
    dnnl_primitive_execute(d->prim, d->stream, 3, args);
    dnnl_stream_wait(d->stream);
    (void)s;
}

/* ---- BLIS: general strides express every layout ---------------------------------------- */

static void blis_gemm(const struct shape *s, const float *a, const float *b, float *c,
                      void *state)
{
    float one = 1.0f, zero = 0.0f;
    inc_t rsa = s->ta ? 1 : s->k, csa = s->ta ? s->m : 1;
    inc_t rsb = s->tb ? 1 : s->n, csb = s->tb ? s->k : 1;
    bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, s->m, s->n, s->k, &one, (float *)a, rsa, csa,
              (float *)b, rsb, csb, &zero, c, s->n, 1);
    (void)state;
}

/* ---- libxsmm: column-major kernels over 64 x 64 tiles of C --------------------------------
 * Row-major C = op(A) op(B) is column-major C' = op(B)' op(A)': the kernel's first operand is
 * ours B, its second ours A, and a transposed operand of ours is a plain one of its. */
enum { TILE = 64 };

struct xsmm_state {
    libxsmm_smmfunction kernel;
};

static bool xsmm_plan(struct xsmm_state *x, const struct shape *s)
{
    libxsmm_blasint m = TILE, n = TILE, k = s->k;
    libxsmm_blasint lda = s->tb ? s->k : s->n, ldb = s->ta ? s->m : s->k, ldc = s->n;
    int flags = (s->tb ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (s->ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
    float one = 1.0f, zero = 0.0f;
    if (s->m % TILE != 0 || s->n % TILE != 0)
        return false;
    x->kernel = libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &one, &zero, &flags, NULL);
    return x->kernel != NULL;
}

static void xsmm_gemm(const struct shape *s, const float *a, const float *b, float *c,
                      void *state)
{
    struct xsmm_state *x = state;
    for (int j = 0; j < s->n; j += TILE)
        for (int i = 0; i < s->m; i += TILE) {
            const float *bt = s->tb ? b + (size_t)j * s->k : b + j;
            const float *at = s->ta ? a + i : a + (size_t)i * s->k;
            x->kernel(bt, at, c + (size_t)i * s->n + j);
        }
}

/* ---- the table ----------------------------------------------------------------------------- */

static double max_diff(const float *x, const float *y, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)x[i] - (double)y[i]));
    return m;
}

static void fill(float *x, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * seed) % 17) / 17.0f - 0.5f;
}

/* The operands of one shape: A and B filled, two results (C of oneDNN, C of another). */
struct operands {
    float *a, *b, *c0, *c1;
};

static void operands_free(struct operands *o)
{
    free(o->a);
    free(o->b);
    free(o->c0);
    free(o->c1);
}

static bool operands_new(struct operands *o, const struct shape *s)
{
    size_t na = (size_t)s->m * s->k, nb = (size_t)s->k * s->n, nc = (size_t)s->m * s->n;
    o->a = aligned_alloc(64, na * 4), o->b = aligned_alloc(64, nb * 4);
    o->c0 = aligned_alloc(64, nc * 4), o->c1 = aligned_alloc(64, nc * 4);
    if (o->a == NULL || o->b == NULL || o->c0 == NULL || o->c1 == NULL) {
        fprintf(stderr, "bench-gemm: out of memory\n");
        operands_free(o);
        return false;
    }
    fill(o->a, na, 7);
    fill(o->b, nb, 5);
    return true;
}

/* ---- oneDNN in bf16 ---------------------------------------------------------------------- */

static uint16_t bf16_of(float f) /* round to nearest even (the values here are finite) */
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static bool onednn_has_bf16(void)
{
    unsigned have = (unsigned)dnnl_get_effective_cpu_isa(), need = dnnl_cpu_isa_avx512_core_bf16;
    return (have & need) == need;
}

/* GFLOP/s of oneDNN's bf16 matmul of shape s (negative on failure); c gets the result. */
static double onednn_bf16(struct dnnl_state *d, const struct shape *s, const float *a,
                          const float *b, float *c)
{
    size_t na = (size_t)s->m * s->k, nb = (size_t)s->k * s->n;
    uint16_t *ah = malloc(na * 2), *bh = malloc(nb * 2);
    double gf = -1.0;
    if (ah != NULL && bh != NULL && onednn_plan(d, s, dnnl_bf16) == 0.0) {
        for (size_t i = 0; i < na; i++)
            ah[i] = bf16_of(a[i]);
        for (size_t i = 0; i < nb; i++)
            bh[i] = bf16_of(b[i]);
        double t = best_time(onednn_gemm, s, (const float *)ah, (const float *)bh, c, d);
        gf = 2.0 * s->m * s->n * s->k / t / 1e9;
        onednn_unplan(d);
    }
    free(ah);
    free(bh);
    return gf;
}

/* The bf16 table: each shape in its layout, and a weight gradient (TN) also as NN: the same
 * product with A's transpose stored (a transposed copy of dY).  Checked against fp32 oneDNN on
 * the same values within bf16's rounding: k products of two values in [-0.5, 0.5], each
 * operand off by at most 2^-9 of itself. */
static int bf16_table(struct dnnl_state *d, const struct shape *shapes, size_t nshapes)
{
    printf("\noneDNN bf16 (A, B bf16; C fp32, accumulated in fp32), GFLOP/s (best of 5):\n\n");
    printf("| matmul | m x n x k | form | oneDNN bf16 | as NN (A^T stored) | NN / TN |\n");
    printf("|---|---|---|---|---|---|\n");
    double flops_all = 0.0, t_all = 0.0, t_nn = 0.0;
    for (size_t i = 0; i < nshapes; i++) {
        const struct shape *s = &shapes[i];
        size_t na = (size_t)s->m * s->k, nc = (size_t)s->m * s->n;
        struct operands o;
        if (!operands_new(&o, s))
            return 1;
        float *a = o.a, *b = o.b, *c0 = o.c0, *c1 = o.c1;
        double flops = 2.0 * s->m * s->n * s->k;
        if (onednn_plan(d, s, dnnl_f32) < 0.0)
            return 1;
        onednn_gemm(s, a, b, c0, d);
        onednn_unplan(d);
        double gf = onednn_bf16(d, s, a, b, c1), gf_nn = gf;
        if (gf < 0.0)
            return 1;
        double diff = max_diff(c0, c1, nc);
        char nn[32] = "", ratio[32] = "";
        if (s->ta) { /* A stored (k, m) for TN; the same values stored (m, k) for NN */
            float *at = aligned_alloc(64, na * 4);
            if (at == NULL)
                return 1;
            for (int r = 0; r < s->m; r++)
                for (int q = 0; q < s->k; q++)
                    at[(size_t)r * s->k + q] = a[(size_t)q * s->m + r];
            struct shape t = *s;
            t.ta = false;
            if ((gf_nn = onednn_bf16(d, &t, at, b, c1)) < 0.0)
                return 1;
            diff = fmax(diff, max_diff(c0, c1, nc));
            snprintf(nn, sizeof nn, "%.1f", gf_nn);
            snprintf(ratio, sizeof ratio, "%.2f", gf_nn / gf);
            free(at);
        }
        printf("| %s | %d x %d x %d | %s%s | %.1f | %s | %s |\n", s->name, s->m, s->n, s->k,
               s->ta ? "T" : "N", s->tb ? "T" : "N", gf, nn, ratio);
        if (diff > 0x1p-9 * s->k) {
            fprintf(stderr, "bench-gemm: %s: bf16 result off fp32's by %g\n", s->name, diff);
            return 1;
        }
        flops_all += flops;
        t_all += flops / gf;
        t_nn += flops / gf_nn;
        operands_free(&o);
    }
    printf("\nall shapes, one call each: oneDNN bf16 %.1f GFLOP/s; with the weight gradients as NN "
           "%.1f (results within bf16's rounding of fp32's)\n", flops_all / t_all,
           flops_all / t_nn);
    return 0;
}

/* ---- the attention's tile products: libxsmm fp32 against libxsmm bf16 -----------------------
 * kern_xsmm.c runs the causal attention as (64, 64) x (64, 64) products (the seed model's tile
 * and head size), 7 per tile pair.  libxsmm 1.17's bf16 kernels want their first operand
 * (column-major A) in VNNI form: pairs along k interleaved, A'[k/2][m][k%2]; the time here is
 * the kernels' alone, without that packing.  Checked against a double-precision product of the
 * rounded values. */
static double tile_time(void (*f)(const void *, const void *, const void *, void *),
                        const void *kernel, const void *a, const void *b, void *c)
{
    double best = INFINITY;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        for (int i = 0; i < 2000; i++)
            f(kernel, a, b, c);
        best = fmin(best, (now() - t0) / 2000.0);
    }
    return best;
}

static void call_s(const void *k, const void *a, const void *b, void *c)
{
    (*(const libxsmm_smmfunction *)k)(a, b, c);
}

static void call_b(const void *k, const void *a, const void *b, void *c)
{
    (*(const libxsmm_bsmmfunction *)k)(a, b, c);
}

static float bf16_value(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int tile_table(void)
{
    enum { T = 64 };
    libxsmm_blasint n = T;
    float one = 1.0f, zero = 0.0f;
    int flags = LIBXSMM_GEMM_FLAGS('N', 'N'), vnni = flags | LIBXSMM_GEMM_FLAG_VNNI_A;
    libxsmm_smmfunction ks = libxsmm_smmdispatch(n, n, n, &n, &n, &n, &one, &zero, &flags, NULL);
    libxsmm_bsmmfunction kb = libxsmm_bsmmdispatch(n, n, n, &n, &n, &n, &one, &zero, &vnni, NULL);
    if (ks == NULL || kb == NULL) {
        printf("\nlibxsmm has no %s kernel for the attention's tiles here\n", ks ? "bf16" : "fp32");
        return 0;
    }
    static float a[T * T], b[T * T], c[T * T];
    static uint16_t av[T * T], bh[T * T];
    fill(a, T * T, 7);
    fill(b, T * T, 5);
    for (int k = 0; k < T; k++)
        for (int m = 0; m < T; m++) { /* column-major A (m, k); VNNI: [k/2][m][k%2] */
            uint16_t h = bf16_of(a[m + k * T]);
            av[(k / 2) * 2 * T + 2 * m + k % 2] = h;
            a[m + k * T] = bf16_value(h);
        }
    for (int i = 0; i < T * T; i++)
        b[i] = bf16_value(bh[i] = bf16_of(b[i]));
    double flops = 2.0 * T * T * T, ts = tile_time(call_s, &ks, a, b, c);
    double tb = tile_time(call_b, &kb, av, bh, c), diff = 0.0;
    for (int j = 0; j < T; j++)
        for (int i = 0; i < T; i++) {
            double want = 0.0;
            for (int k = 0; k < T; k++)
                want += (double)a[i + k * T] * (double)b[k + j * T];
            diff = fmax(diff, fabs(want - (double)c[i + j * T]));
        }
    printf("\nthe attention's tile products (%d x %d x %d, libxsmm target %s): fp32 %.1f GFLOP/s, "
           "bf16 (VNNI A, packing not counted) %.1f: %.2fx\n", T, T, T, libxsmm_get_target_arch(),
           flops / ts / 1e9, flops / tb / 1e9, ts / tb);
    if (diff > 1e-4) {
        fprintf(stderr, "bench-gemm: libxsmm bf16 tile product off by %g\n", diff);
        return 1;
    }
    return 0;
}

int main(void)
{
    const struct shape shapes[] = {
        {"qkv forward", 2048, 768, 256, false, true},
        {"qkv input grad", 2048, 256, 768, false, false},
        {"qkv weight grad", 768, 256, 2048, true, false},
        {"proj forward", 2048, 256, 256, false, true},
        {"fc1 forward", 2048, 512, 256, false, true},
        {"fc2 forward", 2048, 256, 512, false, true},
        {"fc1 weight grad", 512, 256, 2048, true, false},
        {"head forward", 2048, 2048, 256, false, true},
        {"head input grad", 2048, 256, 2048, false, false},
        {"head weight grad", 2048, 256, 2048, true, false},
    };
    const size_t nshapes = sizeof shapes / sizeof shapes[0];
    struct dnnl_state d = {0};
    double flops_all = 0.0, t_all[3] = {0.0, 0.0, 0.0};
    bool xsmm_all = true;

    bli_init();
    libxsmm_init();
    if (dnnl_engine_create(&d.engine, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&d.stream, d.engine, dnnl_stream_default_flags) != dnnl_success) {
        fprintf(stderr, "bench-gemm: oneDNN engine or stream failed\n");
        return 1;
    }
    printf("oneDNN ISA %d, BLIS arch %s, libxsmm target %s; 1 thread, fp32, GFLOP/s (best of 5)\n\n",
           (int)dnnl_get_effective_cpu_isa(), bli_arch_string(bli_arch_query_id()),
           libxsmm_get_target_arch());
    printf("| matmul | m x n x k | form | oneDNN | BLIS | libxsmm | BLIS / oneDNN | libxsmm / oneDNN |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < nshapes; i++) {
        const struct shape *s = &shapes[i];
        size_t nc = (size_t)s->m * s->n;
        struct operands o;
        if (!operands_new(&o, s))
            return 1;
        float *a = o.a, *b = o.b, *c0 = o.c0, *c1 = o.c1;
        double flops = 2.0 * s->m * s->n * s->k, t[3];
        if (onednn_plan(&d, s, dnnl_f32) < 0.0)
            return 1;
        t[0] = best_time(onednn_gemm, s, a, b, c0, &d);
        t[1] = best_time(blis_gemm, s, a, b, c1, NULL);
        double diff = max_diff(c0, c1, nc);
        struct xsmm_state x;
        bool have_x = xsmm_plan(&x, s);
        t[2] = have_x ? best_time(xsmm_gemm, s, a, b, c1, &x) : NAN;
        if (have_x)
            diff = fmax(diff, max_diff(c0, c1, nc));
        xsmm_all = xsmm_all && have_x;
        char xs[32] = "n/a", xr[32] = "n/a";
        if (have_x) {
            snprintf(xs, sizeof xs, "%.1f", flops / t[2] / 1e9);
            snprintf(xr, sizeof xr, "%.2f", t[0] / t[2]);
        }
        printf("| %s | %d x %d x %d | %s%s | %.1f | %.1f | %s | %.2f | %s |\n", s->name, s->m, s->n,
               s->k, s->ta ? "T" : "N", s->tb ? "T" : "N", flops / t[0] / 1e9, flops / t[1] / 1e9,
               xs, t[0] / t[1], xr);
        if (diff > 1e-3 * s->k) {
            fprintf(stderr, "bench-gemm: %s: results differ by %g\n", s->name, diff);
            return 1;
        }
        flops_all += flops;
        for (int j = 0; j < 3; j++)
            t_all[j] += t[j];
        onednn_unplan(&d);
        operands_free(&o);
    }
    printf("\nall shapes, one call each: oneDNN %.1f GFLOP/s, BLIS %.1f", flops_all / t_all[0] / 1e9,
           flops_all / t_all[1] / 1e9);
    if (xsmm_all)
        printf(", libxsmm %.1f", flops_all / t_all[2] / 1e9);
    printf(" (results agree within 1e-3 x k)\n");
    if (onednn_has_bf16() && (bf16_table(&d, shapes, nshapes) != 0 || tile_table() != 0))
        return 1;
    dnnl_stream_destroy(d.stream);
    dnnl_engine_destroy(d.engine);
    return 0;
}
