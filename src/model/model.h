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
    bool bf16;         /* matmuls on bf16-rounded operands (training.precision bf16); the
                        * parameters, gradients, activations and everything else stay fp32 */
};

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

/* Bytes of the big allocations of a training rank (parameters, gradients, Adam moments,
 * activations) for these dims; the preflight memory check adds the runtime on top. */
size_t model_memory_bytes(const struct model_dims *dims);

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
float *model_grads(struct model *m);        /* the one gradient buffer, same layout */
const struct model_tensor *model_tensors(const struct model *m, size_t *count);

/* Deterministic initialization: N(0, init_std) weights from a counter-based generator keyed by
 * (seed, flat index), so it does not depend on thread count or rank; LayerNorm gains 1, biases 0. */
void model_init_params(struct model *m, uint64_t seed);

void model_zero_grads(struct model *m);

/* Forward pass over `inputs` and `targets` (B, T) token ids; returns the mean loss and keeps the
 * activations for model_backward. */
float model_forward(struct model *m, const int32_t *inputs, const int32_t *targets);

/* Backward pass of the last forward: ADDS d(loss * loss_scale)/d(params) into the gradients
 * (loss_scale = 1/grad_accum averages micro-steps). */
void model_backward(struct model *m, float loss_scale);

/* Optional hook called during backward as soon as the gradients of a contiguous parameter range
 * are final for this micro-step (used by comm/ to overlap allreduce with backward).  Ranges are
 * reported from the end of the buffer towards the start.  Between ranges it is also called with
 * count == 0 after each large kernel: a progress point, so that communication already started
 * can advance while backward continues (MPI has no progress thread by default). */
typedef void (*model_grad_ready_fn)(void *user, size_t offset, size_t count);
void model_set_grad_ready_hook(struct model *m, model_grad_ready_fn fn, void *user);

#endif
