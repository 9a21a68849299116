/* gen_internal.h: the state gen_load.c builds and gen_decode.c and gen_score.c read.  Private to
 * src/gen/. */
#ifndef RZ_GEN_GEN_INTERNAL_H
#define RZ_GEN_GEN_INTERNAL_H

#include <stdint.h>

#include "ckpt/ckpt_meta.h"
#include "config/cfg.h"
#include "gen/gen.h"
#include "kernels/kernels.h"
#include "model/model.h"

/* One block's parameters: views into the model's parameter buffer. */
struct gen_layer {
    const float *ln1_w, *ln1_b;     /* (C) */
    const float *qkv_w, *qkv_b;     /* (3C, C), (3C) */
    const float *proj_w, *proj_b;   /* (C, C), (C) */
    const float *ln2_w, *ln2_b;     /* (C) */
    const float *fc_w, *fc_b;       /* (F, C), (F) */
    const float *fc2_w, *fc2_b;     /* (C, F), (C) */
};

struct gen {
    char path[4096];
    struct ckpt_meta meta;
    struct cfg *cfg;
    struct model_dims dims;         /* batch 1, fp32 */
    struct kern_ctx *kern;
    struct model *model;            /* holds the table and the parameters */
    const float *wte, *wpe;         /* (V, C), (T, C) */
    const float *lnf_w, *lnf_b;     /* (C) */
    const float *head_w, *head_b;   /* (V, C) (wte when tied), (V) (NULL: model.head_bias false) */
    struct gen_layer *layers;       /* L of them */
    /* 1-row ops, planned once (gen_decode.c) */
    struct kern_matmul *mm_qkv, *mm_proj, *mm_fc, *mm_fc2, *mm_head;
    struct kern_layernorm *ln;
    struct kern_gelu *gelu;
    /* the KV cache and one token's activations */
    float *kc, *vc;                 /* (L, H, T, D): keys and values of every cached position */
    float *x, *h, *qkv, *att, *tmp; /* (C), (C), (3C), (C), (C) */
    float *fc, *fcg;                /* (F) */
    float *logits;                  /* (V) */
    float *p;                       /* (T): one attention row */
    int64_t pos;
};

/* gen_decode.c: plan the 1-row ops and allocate the cache (g->dims set, views bound). */
enum rz_status gen_decode_init(struct gen *g, struct rz_err *err);
void gen_decode_free(struct gen *g);
/* A linear layer y (rows, out) = x (rows, in) W^T + b, W (out, in) as the model stores it. */
enum rz_status gen_plan_linear(struct kern_matmul **op, struct kern_ctx *ctx, int64_t rows,
                               int64_t in, int64_t out, bool bias, struct rz_err *err);
/* Store position t's k and v, the second and third C of qkv (3C), in layer l's cache at row t. */
void gen_cache_store(struct gen *g, int64_t l, int64_t t, const float *qkv);

#endif
