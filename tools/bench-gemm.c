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
 * result.  Built and run by tools/bench-gemm; not part of the product or its tests. */
#include <blis.h>
#include <dnnl.h>
#include <libxsmm.h>
#include <math.h>
#include <stdbool.h>
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

static void md_matrix(dnnl_memory_desc_t *md, int rows, int cols, bool trans)
{
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {trans ? 1 : cols, trans ? rows : 1};
    dnnl_memory_desc_init_by_strides(md, 2, dims, dnnl_f32, strides);
}

static double onednn_plan(struct dnnl_state *d, const struct shape *s)
{
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd;
    md_matrix(&d->md[0], s->m, s->k, s->ta);
    md_matrix(&d->md[1], s->k, s->n, s->tb);
    md_matrix(&d->md[2], s->m, s->n, false);
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
        size_t na = (size_t)s->m * s->k, nb = (size_t)s->k * s->n, nc = (size_t)s->m * s->n;
        float *a = aligned_alloc(64, na * 4), *b = aligned_alloc(64, nb * 4);
        float *c0 = aligned_alloc(64, nc * 4), *c1 = aligned_alloc(64, nc * 4);
        if (a == NULL || b == NULL || c0 == NULL || c1 == NULL) {
            fprintf(stderr, "bench-gemm: out of memory\n");
            return 1;
        }
        fill(a, na, 7);
        fill(b, nb, 5);
        double flops = 2.0 * s->m * s->n * s->k, t[3];
        if (onednn_plan(&d, s) < 0.0)
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
        free(a);
        free(b);
        free(c0);
        free(c1);
    }
    printf("\nall shapes, one call each: oneDNN %.1f GFLOP/s, BLIS %.1f", flops_all / t_all[0] / 1e9,
           flops_all / t_all[1] / 1e9);
    if (xsmm_all)
        printf(", libxsmm %.1f", flops_all / t_all[2] / 1e9);
    printf(" (results agree within 1e-3 x k)\n");
    dnnl_stream_destroy(d.stream);
    dnnl_engine_destroy(d.engine);
    return 0;
}
