/* model_internal.h: what model.c (the lifecycle, dropout, the forward and backward passes) and
 * model_layout.c (the descriptor table, the views into the buffers, the gradient segments' and
 * the activations' layout, the memory plan) share: the model's state and the layout functions.
 * Private to src/model/. */
#ifndef RZ_MODEL_MODEL_INTERNAL_H
#define RZ_MODEL_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "model/layers.h"
#include "model/model.h"

enum { LAYER_TENSORS = 12 };

/* Per-layer parameter views (into the parameter or the gradient buffer). */
struct layer_params {
    float *ln1_w, *ln1_b;     /* (C) */
    float *qkv_w, *qkv_b;     /* (3C, C), (3C) */
    float *proj_w, *proj_b;   /* (C, C), (C) */
    float *ln2_w, *ln2_b;     /* (C) */
    float *fc_w, *fc_b;       /* (F, C), (F) */
    float *fc2_w, *fc2_b;     /* (C, F), (C) */
};

struct param_views {
    float *wte;               /* (V, C) */
    float *wpe;               /* (T, C) */
    struct layer_params *layers; /* L of them */
    float *lnf_w, *lnf_b;     /* (C) */
    float *head_w, *head_b;   /* (V, C), (V) */
};

/* What one block keeps from its forward for its backward: views into the activation buffer.
 * Everything here but `x`, the block's input, can be computed again from x and the parameters by
 * block_forward: activation recomputation keeps x alone per block, plus one more struct like
 * this for the block being recomputed (carve_block lays one out anywhere). */
struct block_acts {
    float *x;                 /* (N, C) residual stream entering the block */
    float *ln1, *ln1_mean, *ln1_var;   /* (N, C) (fp32 mode only: see ln1_h), (N), (N) */
    float *qkv;               /* (N, 3C) q | k | v, read in place by the attention */
    float *atty;              /* (N, C) attention output before the projection */
    float *lse;               /* (B, H, T) log-sum-exp of the attention rows */
    float *x2;                /* (N, C) residual stream after attention */
    float *ln2, *ln2_mean, *ln2_var;   /* (N, C) (fp32 mode only), (N), (N) */
    float *fc;                /* (N, F) before GELU */
    float *fcg;               /* (N, F) after GELU (fp32 mode only: see fcg_h) */
    /* bf16 mode only (else NULL): the matmul inputs, rounded, which the backward reads again;
     * the LayerNorms and the GELU write theirs directly, so ln1, ln2 and fcg have no fp32 copy
     * then */
    kern_bf16 *ln1_h, *atty_h, *ln2_h; /* (N, C) */
    kern_bf16 *fcg_h;                   /* (N, F) */
};

struct acts {
    struct block_acts *blocks; /* L of them */
    float *x_out;             /* (N, C) residual stream after the last block */
    float *lnf, *lnf_mean, *lnf_var;   /* lnf: fp32 mode only (lnf_h in bf16 mode) */
    float *probs;             /* (N, V) logits, then probabilities, then d logits (fp32 mode;
                               * in bf16 mode the cross-entropy writes those to dy_h) */
    float *losses;            /* (N) */
    /* scratch shared by all blocks */
    float *dqkv;              /* (N, 3C) */
    float *tmp;               /* (N, C) */
    float *dresid, *dln, *datty;  /* (N, C) */
    float *dfcg;              /* (N, F): d gelu output, then (in place, fp32 mode; bf16 mode:
                               * into dy_h) d fc pre-activation */
    float *ddrop;             /* (N, C): a residual branch's gradient through its dropout mask
                               * (dropout only) */
    /* bf16 mode only (else NULL) */
    kern_bf16 *lnf_h;         /* (N, C) */
    kern_bf16 *dy_h;          /* the matmuls' rounding of the gradient at hand: (N, max(V, 3C, F)) */
    /* of each buffer, what forward keeps for backward (the rest is scratch): model_memory_plan */
    size_t kept_floats, kept_halves;
};

/* A gradient segment (model.h): floats [lo, hi) of the layout, table entries [first, first +
 * count), and with segment_grads the buffer its gradients live in during backward. */
struct grad_seg {
    size_t lo, hi;
    size_t first, count;
    float *buf;
};

struct model {
    struct model_dims dims;
    struct model_tensor *tensors;
    size_t n_tensors;
    size_t n_params;
    float *params, *grads, *act_buf;
    kern_bf16 *half_buf;       /* bf16 mode: params_h, then the bf16 activations */
    kern_bf16 *params_h;       /* bf16 mode: the parameters rounded, at each forward */
    struct param_views p, g;
    float ***gview;           /* (n_tensors) address of each tensor's view in g, table order */
    struct grad_seg *seg;     /* (L + 2): 0 embeddings, 1 + l block l, L + 1 head */
    float *seg_bufs;          /* segment_grads: one big and two small segment buffers */
    struct acts a;
    int32_t *inputs, *targets; /* (N) copies of the last forward's tokens */
    struct linear qkv, proj, fc, fc2, head;
    struct kern_attention *attn;
    struct kern_layernorm *ln;
    struct kern_gelu *gelu;
    struct kern_xent *xent;
    struct model_hooks hooks;
    struct dropout_site drop; /* the next forward's dropout (p = 0: off) */
};

/* ---- model_layout.c ------------------------------------------------------------------------- */

/* The number of entries of the descriptor table. */
size_t mdl_table_count(const struct model_dims *d);
/* Fill the table t (mdl_table_count entries) in buffer order; returns the number of floats. */
size_t mdl_build_table(const struct model_dims *d, struct model_tensor *t);
/* The address of each tensor's view pointer in v, in table order (mdl_table_count entries). */
void mdl_view_slots(struct param_views *v, struct layer_params *layers,
                    const struct model_dims *d, float ***out);
/* Point the views of table entries [first, first + count) at base, where base holds the floats
 * from layout offset `lo` on.  Tied embeddings: head_w follows wte. */
void mdl_bind_range(struct param_views *v, float ***slots, const struct model *m, size_t first,
                    size_t count, float *base, size_t lo);
/* Point every view at `base` (a whole buffer in table layout). */
enum rz_status mdl_bind_views(struct param_views *v, struct layer_params *layers, float *base,
                              const struct model *m);
/* Fill seg (L + 2 entries) from the table t (n entries, n_params floats). */
void mdl_build_segments(struct grad_seg *seg, const struct model_tensor *t, size_t n,
                        size_t n_params, int64_t L);
/* segment_grads: the segments' buffers, one allocation, in the order backward visits them. */
enum rz_status mdl_alloc_segments(struct model *m);
/* Lay out the activations at base and base_h; with both NULL, only count: *halves gets the
 * number of bf16 values needed; returns the number of floats. */
size_t mdl_layout_acts(struct model *m, float *base, kern_bf16 *base_h, size_t *halves);

#endif
