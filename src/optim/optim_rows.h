/* optim_rows.h: the optimizer's loops, one ops table per vector level (core/isa.h).
 * optim_rows.c is compiled once per level (Makefile.am) and each build defines its table;
 * optim.c runs the process's level.  All levels give the same bits.  Not a public header:
 * optim.c, its test and tools/bench-rows include it. */
#ifndef RZ_OPTIM_OPTIM_ROWS_H
#define RZ_OPTIM_OPTIM_ROWS_H

#include <stddef.h>

#include "core/isa.h"

/* One Adam(W) update's constants (optim_step folds the bias corrections into them). */
struct optim_rows_step {
    float b1, b2, eps, step, rc2, decay, l2;
};

struct optim_rows {
    enum rz_isa isa;
    /* sum of x^2 in double: eight lanes, folded in one fixed order */
    double (*sumsq)(const float *x, size_t n);
    /* g (n) *= a */
    void (*scale)(float *g, size_t n, float a);
    /* params, m, v (n) one update with gradients g:
     *   gi = g + l2 p;  m = b1 m + (1 - b1) gi;  v = b2 v + (1 - b2) gi gi;
     *   p = decay p - step m / (sqrt(v) rc2 + eps) */
    void (*adam)(const struct optim_rows_step *c, float *params, float *m, float *v,
                 const float *g, size_t n);
};

extern const struct optim_rows optim_rows_avx512, optim_rows_avx2, optim_rows_baseline;

/* The table of a level, and of the process's level. */
const struct optim_rows *optim_rows_for(enum rz_isa isa);
const struct optim_rows *optim_rows_active(void);

#endif
