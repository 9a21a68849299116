/* model.h: a decoder-only transformer language model (GPT-style, pre-LayerNorm).
 *
 *   tokens (B, T) -> wte[tokens] + wpe[0..T) -> L x block -> LayerNorm -> head (untied) -> logits
 *   block(x): x += proj(causal_attention(ln1(x)));  x += fc2(gelu(fc1(ln2(x))))
 *   loss = mean over (B, T) of cross-entropy(logits, next token)
 *
 * Memory: parameters, gradients and activations are each ONE allocation; typed views point into
 * them.  With bf16, one more allocation holds the bf16 copies the matmuls read: the parameters
 * (rounded at each forward), the saved matmul inputs, and a gradient scratch.  One descriptor table {name, shape, offset} (model_tensors) drives the views, the sizes,
 * the initialization and the checkpoint dataset names.  The math goes through kernels/ (oneDNN or
 * the reference backend); every kernel op is planned once in model_create.
 *
 * Ownership: model_create allocates everything; model_destroy frees it (accepts NULL and
 * half-built models).  The model borrows its kern_ctx, which must outlive it. */
#ifndef RZ_MODEL_MODEL_H
#define RZ_MODEL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "kernels/kernels.h"

struct model_dims {
    int64_t vocab;     /* V */
    int64_t d_model;   /* C */
    int64_t n_heads;   /* H, C % H == 0 */
    int64_t n_layers;  /* L */
    int64_t d_ff;      /* F */
    int64_t seq_len;   /* T */
    int64_t batch;     /* B: sequences per forward pass (per rank, per micro-step) */
    float ln_eps;
    float init_std;
    int tie_embeddings;/* the output head's weight is wte (no head.weight tensor; GPT-2) */
    bool no_head_bias; /* the output head has no bias: no head.bias tensor, no bias in forward,
                        * no gradient for it (GPT-2's lm_head; model.head_bias false).  Zero,
                        * as every zero-initialized dims has it, is the head with a bias */
    float dropout;     /* p of the dropout on the embeddings and each block's two residual
                        * branches (model_set_dropout turns it on per forward); 0: none */
    /* How the model is run, not its shape: */
    bool bf16;         /* matmuls on bf16-rounded operands (training.precision bf16); the
                        * parameters, gradients, activations and everything else stay fp32 */
    int recompute;     /* MODEL_RECOMPUTE_BLOCK: keep only each block's input, recompute the
                        * block in backward (gradients bit-identical to NONE) */
    int segment_grads; /* no full gradient buffer: each gradient segment (model_set_hooks) lives
                        * in a small buffer for one micro-step and is handed to the grad_ready
                        * hook, which must take it away (ZeRO-2) */
};

enum { MODEL_RECOMPUTE_NONE, MODEL_RECOMPUTE_BLOCK };

#define MODEL_TENSOR_NAME_MAX 48

/* One parameter tensor of the descriptor table.  1-D tensors have cols == 1. */
struct model_tensor {
    char name[MODEL_TENSOR_NAME_MAX]; /* checkpoint dataset name, e.g. "h0.attn.qkv.weight" */
    int64_t rows, cols;
    size_t offset;                    /* in floats, from the start of the parameter buffer */
    int kind;                         /* MODEL_INIT_NORMAL | _ZERO | _ONE */
};

enum { MODEL_INIT_NORMAL, MODEL_INIT_ZERO, MODEL_INIT_ONE };

struct model;

/* Number of parameters for these dims, without building a model. */
size_t model_count_params(const struct model_dims *dims);

/* The descriptor table for these dims, without building a model (what a checkpoint of them
 * holds, for readers that do not train: export, generation): *table is allocated (free() it) with
 * *count entries; returns the parameter count, 0 when out of memory (*table NULL then). */
size_t model_describe(const struct model_dims *dims, struct model_tensor **table, size_t *count);

/* The model's own big allocations for these dims, in floats (the planner adds the optimizer,
 * communication and runtime on top: src/plan/). */
struct model_memory {
    size_t params;        /* the parameter buffer */
    size_t grads;         /* the gradient buffer, or the segment buffers with segment_grads */
    size_t acts;          /* the activation buffer: what backward keeps plus the scratch */
    size_t acts_kept;     /* of it, what forward keeps for backward (the rest is scratch) */
    /* bf16 mode: 2-byte values of the parameters' rounded copy and of the bf16 activations */
    size_t params_halves, acts_halves, acts_halves_kept;
    size_t largest_tensor;/* floats of the largest table entry */
    size_t largest_segment;/* floats of the largest gradient segment (model_set_hooks) */
};
void model_memory_plan(const struct model_dims *dims, struct model_memory *out);

/* Matmul FLOPs of one training sample (forward + backward, 2 per multiply-add): the numerator of
 * MFU.  6*T*(matmul weights) + 12*L*T^2*C for attention, counted in full as PyTorch computes it
 * (the blocked attention skips the masked blocks, so MFU stays comparable with the peer's). */
double model_flops_per_sample(const struct model_dims *dims);

enum rz_status model_create(struct model **out, const struct model_dims *dims,
                            struct kern_ctx *ctx, struct rz_err *err);
void model_destroy(struct model *m);

const struct model_dims *model_get_dims(const struct model *m);
size_t model_num_params(const struct model *m);
float *model_params(struct model *m);       /* the one parameter buffer (num_params floats) */
float *model_grads(struct model *m);        /* the one gradient buffer, same layout (NULL with
                                              * segment_grads) */
const struct model_tensor *model_tensors(const struct model *m, size_t *count);

/* Deterministic initialization: N(0, init_std) weights from a counter-based generator keyed by
 * (seed, flat index), so it does not depend on thread count or rank; LayerNorm gains 1, biases 0. */
void model_init_params(struct model *m, uint64_t seed);

/* Zero the gradient buffer (nothing to do with segment_grads: segments start at zero). */
void model_zero_grads(struct model *m);

/* Forward pass over `inputs` and `targets` (B, T) token ids; returns the mean loss and keeps the
 * activations for model_backward. */
float model_forward(struct model *m, const int32_t *inputs, const int32_t *targets);

/* Dropout for the following forward passes and their backward: on (training) with the seed, the
 * optimizer step and the global index of the batch's first sample (row b is sample
 * first_sample + b), which key the masks (layers.h); off for validation.  Without dims.dropout
 * it changes nothing.  Off at creation. */
void model_set_dropout(struct model *m, bool on, uint64_t seed, uint64_t step,
                       uint64_t first_sample);

/* Per-position losses (B*T, row b*T + t) of the last forward; valid until the next forward. */
const float *model_token_losses(const struct model *m);

/* Backward pass of the last forward: ADDS d(loss * loss_scale)/d(params) into the gradients
 * (loss_scale = 1/grad_accum averages micro-steps). */
void model_backward(struct model *m, float loss_scale);

/* What communication needs from the passes (comm/ through train_step.c).  Any member may be NULL.
 *
 * Gradient segments are the parameter ranges whose gradients become final together: the
 * embeddings (wte, wpe), each block, and the head (ln_f, head.*); backward finishes them from the
 * end of the buffer to the start, adjacent, each once per model_backward. */
struct model_hooks {
    void *user;
    /* Floats [offset, offset+count) of this micro-step's gradients are final; they are at data
     * (the gradient buffer at offset, or the segment's buffer with segment_grads, which the
     * callee may modify until grad_reuse is called for it). */
    void (*grad_ready)(void *user, size_t offset, size_t count, float *data);
    /* segment_grads: data (count floats) is about to be overwritten by the next segment. */
    void (*grad_reuse)(void *user, const float *data, size_t count);
    /* Forward is about to read parameters [offset, offset+count) (ZeRO: wait for the gather). */
    void (*params_needed)(void *user, size_t offset, size_t count);
    /* After each large kernel of forward and backward: communication in flight may advance
     * (MPI has no progress thread by default). */
    void (*progress)(void *user);
};
/* Copy the hooks (NULL: none). */
void model_set_hooks(struct model *m, const struct model_hooks *hooks);

#endif
