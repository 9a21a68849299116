/* optim_rows.c: the optimizer's loops (optim_rows.h) on sixteen-lane vectors (core/v16.h),
 * compiled once per vector level: RZ_ROWS_LEVEL and its -march come from Makefile.am, as for
 * kernels/kern_rows.c.  Each element gets the same operations in the same order at every level
 * (no FMA contraction: -ffp-contract=off), so the update's bits never depend on the level. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "core/v16.h"
#include "optim/optim_rows.h"

#if RZ_ROWS_LEVEL == 2 && defined(__AVX512F__)
#define ROWS_TABLE optim_rows_avx512
#elif RZ_ROWS_LEVEL == 1 && defined(__AVX2__) && !defined(__AVX512F__)
#define ROWS_TABLE optim_rows_avx2
#elif RZ_ROWS_LEVEL == 0 && !defined(__AVX__)
#define ROWS_TABLE optim_rows_baseline
#else
#error "RZ_ROWS_LEVEL and -march disagree (Makefile.am)"
#endif

/* Eight double lanes (element i goes to lane i mod 8) as 8 / (VW / 2) native vectors; the tail
 * into lane 0 in order; the lanes folded in one fixed order. */
static double sumsq(const float *x, size_t n)
{
    enum { DW = VW / 2, DP = 8 / DW };
    vd acc[DP] = {{0}};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _Pragma("GCC unroll 4")
        for (int h = 0; h < DP; h++) {
            vd d = vd_load_floats(x + i + (size_t)h * DW);
            acc[h] += d * d;
        }
    }
    double lane[8];
    memcpy(lane, acc, sizeof lane);
    for (; i < n; i++)
        lane[0] += (double)x[i] * (double)x[i];
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

static void scale(float *g, size_t n, float a)
{
    V16_PIECES((int64_t)n, vf_storen(g + j, a * vf_loadn(g + j, k), k));
}

static void adam(const struct optim_rows_step *c, float *params, float *m, float *v,
                 const float *g, size_t n)
{
    V16_PIECES((int64_t)n, {
        vf p = vf_loadn(params + j, k);
        vf gi = vf_loadn(g + j, k) + c->l2 * p;
        vf mi = c->b1 * vf_loadn(m + j, k) + (1.0f - c->b1) * gi;
        vf vn = c->b2 * vf_loadn(v + j, k) + (1.0f - c->b2) * gi * gi;
        vf_storen(m + j, mi, k);
        vf_storen(v + j, vn, k);
        vf_storen(params + j, c->decay * p - c->step * mi / (vf_sqrt(vn) * c->rc2 + c->eps), k);
    });
}

const struct optim_rows ROWS_TABLE = {
    .isa = (enum rz_isa)RZ_ROWS_LEVEL,
    .sumsq = sumsq,
    .scale = scale,
    .adam = adam,
};
