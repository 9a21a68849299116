/* check_kernels_levels: the "levels" test case of check_kernels (check_kernels.c builds the
 * suite): every vector level of the row kernels above the baseline, up to the CPU's own, gives
 * the baseline's bits on inputs that leave partial vectors, and each level's table names its
 * level.  Fixtures from kernels_fixtures.c. */

#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/isa.h"
#include "kernels/kern_impl.h"
#include "kernels/kern_rows.h"
#include "kernels/kernels.h"
#include "testutil.h"

#include "kernels_fixtures.h"

/* Runs every entry of one level's table on fixed inputs whose sizes leave partial vectors
 * (37 columns, a 53-word vocabulary, 23-key tiles, 53-column GEMV rows), and appends every output to out (floats)
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
    /* GEMV: 5 rows of 53 (a block of four rows and one row, a partial piece), bias or none */
    k->gemv(o, x, y, y + LV_V, LV_V, 0, LV_R), o += LV_R;
    k->gemv(o, x, y, NULL, LV_V, 0, LV_R), o += LV_R;
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

TCase *kernels_levels_tcase(void)
{
    TCase *levels = rz_test_tcase("levels");
    tcase_add_loop_test(levels, test_levels_agree_bitwise, RZ_ISA_AVX2, (int)rz_isa_detect() + 1);
    tcase_add_test(levels, test_levels_named);
    return levels;
}
