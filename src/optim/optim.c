/* optim.c: Adam(W), learning-rate schedule and gradient clipping (see optim.h).  No fused or
 * multi-tensor tricks: the update is one pass over the flat buffer, on the process's vector
 * level (optim_rows.c).  No state beyond the moments and the step count (both checkpointed). */
#include "config.h"

#include "optim/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "optim/optim_rows.h"

const struct optim_rows *optim_rows_for(enum rz_isa isa)
{
    switch (isa) {
    case RZ_ISA_AVX512: return &optim_rows_avx512;
    case RZ_ISA_AVX2: return &optim_rows_avx2;
    default: return &optim_rows_baseline;
    }
}

const struct optim_rows *optim_rows_active(void)
{
    return optim_rows_for(rz_isa_active());
}

double optim_sumsq(const float *x, size_t n)
{
    return optim_rows_active()->sumsq(x, n);
}

const char *optim_isa(void)
{
    return rz_isa_name(optim_rows_active()->isa);
}

enum rz_status optim_kind_parse(const char *name, enum optim_kind *out, struct rz_err *err)
{
    if (strcmp(name, "adam") == 0)
        *out = OPTIM_ADAM;
    else if (strcmp(name, "adamw") == 0)
        *out = OPTIM_ADAMW;
    else
        return rz_fail(err, RZ_ECONFIG, "optimizer.name: unknown optimizer '%s' (choices: adam, "
                       "adamw)", name);
    return RZ_OK;
}

enum rz_status optim_schedule_parse(const char *name, enum optim_schedule *out, struct rz_err *err)
{
    if (strcmp(name, "cosine") == 0)
        *out = SCHED_COSINE;
    else if (strcmp(name, "linear") == 0)
        *out = SCHED_LINEAR;
    else if (strcmp(name, "constant") == 0)
        *out = SCHED_CONSTANT;
    else
        return rz_fail(err, RZ_ECONFIG, "optimizer.schedule: unknown schedule '%s' (choices: "
                       "cosine, linear, constant)", name);
    return RZ_OK;
}

enum rz_status optim_create(struct optim **out, const struct optim_opts *opts, size_t n,
                            struct rz_err *err)
{
    *out = NULL;
    struct optim *o = calloc(1, sizeof *o);
    float *moments = rz_alloc_aligned(2 * n * sizeof(float));
    if (o == NULL || moments == NULL) {
        free(o);
        free(moments);
        return rz_fail(err, RZ_ENOMEM, "optimizer: cannot allocate moments for %zu parameters", n);
    }
    o->opts = *opts;
    o->n = n;
    o->m = moments;
    o->v = moments + n;
    *out = o;
    return RZ_OK;
}

void optim_destroy(struct optim *o)
{
    if (o == NULL)
        return;
    free(o->m); /* m owns the single allocation; v points into it */
    free(o);
}

double optim_lr_at(const struct optim_opts *o, int64_t step)
{
    if (o->warmup_steps > 0 && step < o->warmup_steps)
        return o->lr * (double)(step + 1) / (double)o->warmup_steps;
    double min_lr = o->min_lr_ratio * o->lr;
    int64_t span = o->total_steps - o->warmup_steps;
    if (o->schedule == SCHED_CONSTANT || span <= 0)
        return o->lr;
    double frac = (double)(step - o->warmup_steps) / (double)span; /* 0 at the first decay step */
    if (frac > 1.0)
        frac = 1.0;
    if (o->schedule == SCHED_LINEAR)
        return o->lr - (o->lr - min_lr) * frac;
    return min_lr + 0.5 * (o->lr - min_lr) * (1.0 + cos(M_PI * frac));
}

size_t optim_norm_blocks(size_t n)
{
    return (n + OPTIM_NORM_BLOCK - 1) / OPTIM_NORM_BLOCK;
}

void optim_block_sumsq(double *blocks, const float *g, size_t lo, size_t hi)
{
    const struct optim_rows *rows = optim_rows_active();
    for (size_t a = lo; a < hi; a += OPTIM_NORM_BLOCK) {
        size_t len = hi - a < OPTIM_NORM_BLOCK ? hi - a : OPTIM_NORM_BLOCK;
        blocks[a / OPTIM_NORM_BLOCK] = rows->sumsq(g + (a - lo), len);
    }
}

double optim_norm_of_blocks(const double *blocks, size_t nblocks)
{
    double total = 0.0;
    for (size_t k = 0; k < nblocks; k++)
        total += blocks[k];
    return sqrt(total);
}

double optim_grad_norm(const float *g, size_t n)
{
    const struct optim_rows *rows = optim_rows_active();
    double total = 0.0; /* the block sums of optim_norm_of_blocks, added in the same order */
    for (size_t a = 0; a < n; a += OPTIM_NORM_BLOCK)
        total += rows->sumsq(g + a, n - a < OPTIM_NORM_BLOCK ? n - a : OPTIM_NORM_BLOCK);
    return sqrt(total);
}

float optim_clip(float *g, size_t n, double norm, double max_norm)
{
    if (max_norm <= 0.0 || !(norm > max_norm))
        return 1.0f;
    float scale = (float)(max_norm / (norm + 1e-6));
    optim_rows_active()->scale(g, n, scale);
    return scale;
}

void optim_step(struct optim *o, float *params, const float *g, double lr)
{
    const struct optim_opts *p = &o->opts;
    o->t++;
    /* Bias corrections folded into the step size (Kingma & Ba, end of section 2). */
    double c1 = 1.0 - pow(p->beta1, (double)o->t);
    double c2 = 1.0 - pow(p->beta2, (double)o->t);
    struct optim_rows_step c = {
        .b1 = (float)p->beta1,
        .b2 = (float)p->beta2,
        .eps = (float)p->eps,
        .step = (float)(lr / c1),
        .rc2 = (float)(1.0 / sqrt(c2)),
        .decay = p->kind == OPTIM_ADAMW ? (float)(1.0 - lr * p->weight_decay) : 1.0f,
        .l2 = p->kind == OPTIM_ADAM ? (float)p->weight_decay : 0.0f,
    };
    optim_rows_active()->adam(&c, params, o->m, o->v, g, o->n);
}
