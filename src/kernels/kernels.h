/* kernels.h: the one math interface of the trainer, with two backends behind it, each one const
 * table of functions (struct kern_ops, kern_impl.h) that this interface dispatches through:
 *
 *   KERN_REF   plain C11 reference: obviously-correct loops, used by the tests as ground truth
 *   KERN_DNNL  Intel oneDNN primitives (the only file that includes dnnl.h is kern_dnnl.c), plus
 *              our own vectorized row kernels where oneDNN has no fitting primitive (kern_simd.c)
 *
 * Every op is *planned* once for fixed shapes at start-up (x_create: for oneDNN this creates the
 * primitive descriptor and primitive) and only *executed* in the training step (x_forward /
 * x_backward / kern_matmul_run).  All tensors are dense row-major fp32 in caller-owned memory;
 * outputs are overwritten unless a flag says "accumulate".  Shapes are in comments as (rows, cols).
 *
 * Ownership: x_create allocates the op; x_destroy frees it and accepts NULL.  An op borrows its
 * kern_ctx, which must outlive it.  Ops are not thread-safe; each rank owns its own. */
#ifndef RZ_KERNELS_KERNELS_H
#define RZ_KERNELS_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/isa.h"
#include "core/status.h"

enum kern_backend { KERN_REF, KERN_DNNL };

struct kern_ctx;

/* Parse "ref" | "dnnl". */
enum rz_status kern_backend_parse(const char *name, enum kern_backend *out, struct rz_err *err);

enum rz_status kern_ctx_create(struct kern_ctx **out, enum kern_backend backend, struct rz_err *err);
void kern_ctx_destroy(struct kern_ctx *ctx);
enum kern_backend kern_ctx_backend(const struct kern_ctx *ctx);
/* Human-readable instruction set in use ("avx512_core", "reference C", ...). */
const char *kern_ctx_isa(const struct kern_ctx *ctx);

/* ---- profiling: wall time per op class (ryzen-train --profile) ----------------------------
 * With a profile attached, every op executed on the context adds its wall time and one call to
 * its class (kernels run synchronously, so the times are the ops' own), and every matmul its
 * flops (2 batch m n k).  Matmuls are also kept per shape and form (batch, m, n, k, trans_a,
 * trans_b, bf16): the first KERN_PROFILE_SHAPES distinct ones get a row each, and the calls of
 * any further ones are counted in `unlisted_calls` (the seed model has 15 shapes at any depth:
 * three per linear layer kind).  The caller owns the profile, zeroed before it attaches it;
 * NULL detaches it.  Off by default: then no clock is read. */
enum kern_class { KERN_MATMUL, KERN_ATTENTION, KERN_NORM, KERN_LOSS, KERN_OTHER, KERN_CLASSES };
enum { KERN_PROFILE_SHAPES = 24 };
struct kern_profile_shape {
    int64_t batch, m, n, k;
    bool trans_a, trans_b, bf16;
    int64_t calls;
    double seconds, flops;
};
struct kern_profile {
    double seconds[KERN_CLASSES];
    int64_t calls[KERN_CLASSES];
    double matmul_flops;
    struct kern_profile_shape shapes[KERN_PROFILE_SHAPES];
    int nshapes;
    int64_t unlisted_calls;
};
void kern_ctx_profile(struct kern_ctx *ctx, struct kern_profile *profile);

/* ---- vector level ---------------------------------------------------------------------------
 * Our row kernels and optimizer run one vector level per process (core/isa.h): the CPU's best
 * unless main caps it.  kern_isa_cap caps every kernel together, once, before the first
 * context: our own loops (rz_isa_set), oneDNN (dnnl_set_max_cpu_isa: avx2, or sse41 for the
 * baseline), libxsmm (its JIT target: hsw, or wsm) and BLIS (BLIS_ARCH_TYPE=haswell below an
 * AVX-512 CPU; none at all at the baseline, where oneDNN takes the weight gradients).  A cap at
 * the CPU's own level leaves the libraries alone (and their own environment variables with
 * them).  So `RYZEN_ISA=avx2` on an AVX-512 CPU runs the instruction set of an AVX2 CPU in
 * every kernel: an exact proxy in instructions, though not in clocks, caches or memory. */
enum rz_status kern_isa_cap(enum rz_isa cap, struct rz_err *err);
/* The level our row kernels run ("avx512", "avx2", "baseline"). */
const char *kern_rows_isa(void);

/* y (n) = a + b and y += x: the residual and embedding adds, on our row kernels' level. */
void kern_add(float *y, const float *a, const float *b, int64_t n);
void kern_acc(float *y, const float *x, int64_t n);

/* ---- bfloat16 ------------------------------------------------------------------------------
 * bf16 is the upper half of an fp32: sign, 8 exponent bits, 7 mantissa bits.  Matmuls with
 * desc.bf16 read bf16 operands that the caller rounded with kern_round_bf16; everything else
 * (outputs, sums, the other ops) stays fp32. */
typedef uint16_t kern_bf16;

/* dst (n) = src rounded to the nearest bf16, ties to even; NaN stays NaN, overflow gives inf.
 * Bit-identical on every backend, ISA and thread count. */
void kern_round_bf16(kern_bf16 *dst, const float *src, int64_t n);

/* The bias gradient of a layer whose output gradient is src (rows, cols), and in bf16 mode that
 * gradient's rounding for the matmuls, in one pass over src: sums (cols) += the column sums of
 * src, each summed in row order (bit-identical at any thread count, and to a plain loop over the
 * rows); dst (rows, cols) = src rounded as by kern_round_bf16.  Either of sums and dst may be
 * NULL (not wanted). */
void kern_colsum_round(float *sums, kern_bf16 *dst, const float *src, int64_t rows, int64_t cols);

/* RZ_OK if this context runs bf16 matmuls natively: the reference backend emulates them
 * anywhere; the oneDNN backend needs its avx512_core_bf16 or avx512_core_amx ISA (CPU flags
 * avx512_bf16 or amx_bf16).  Otherwise RZ_ECONFIG naming the missing ISA: there is no silent
 * fallback to oneDNN's slow bf16 emulation. */
enum rz_status kern_check_bf16(const struct kern_ctx *ctx, struct rz_err *err);

/* ---- matmul -------------------------------------------------------------------------------
 * For each b in [0, batch):
 *     C_b (m, n) = alpha * op(A_b) @ op(B_b)  [+ bias (n), broadcast over rows]  [+ C_b]
 * op(A_b) is (m, k): A_b is stored (m, k), or (k, m) when trans_a.
 * op(B_b) is (k, n): B_b is stored (k, n), or (n, k) when trans_b.
 * Batches are dense and contiguous: A_b = A + b*m*k, B_b = B + b*k*n, C_b = C + b*m*n.
 * `accumulate` adds into C (used for gradient accumulation); otherwise C is overwritten.
 * A and B are float, or kern_bf16 with `bf16` (products summed in fp32 by oneDNN, in double by
 * the reference); C and the bias are always float. */
struct kern_matmul_desc {
    int64_t batch, m, n, k;
    bool trans_a, trans_b;
    float alpha;
    bool bias;
    bool accumulate;
    bool bf16;
};

struct kern_matmul;
enum rz_status kern_matmul_create(struct kern_matmul **out, struct kern_ctx *ctx,
                                  const struct kern_matmul_desc *desc, struct rz_err *err);
void kern_matmul_run(struct kern_matmul *op, float *c, const void *a, const void *b,
                     const float *bias);
void kern_matmul_destroy(struct kern_matmul *op);

/* ---- layer normalization over the last dimension -------------------------------------------
 * forward:  y (rows, cols) = (x - mean) / sqrt(var + eps) * gamma + beta;  mean, var (rows);
 *           y is float, or with bf16_out kern_bf16 (rounded as by kern_round_bf16: the operand
 *           of a bf16 matmul, written in the same pass)
 * backward: from dy, x and the saved mean and var: dgamma (cols) and dbeta (cols) ADD the
 *           parameter gradients; dx (rows, cols) is overwritten with the input gradient, or,
 *           with accumulate_dx, has it added (a residual stream's gradient in one pass). */
struct kern_layernorm;
enum rz_status kern_layernorm_create(struct kern_layernorm **out, struct kern_ctx *ctx,
                                     int64_t rows, int64_t cols, float eps, bool bf16_out,
                                     struct rz_err *err);
void kern_layernorm_forward(struct kern_layernorm *op, void *y, float *mean, float *var,
                            const float *x, const float *gamma, const float *beta);
void kern_layernorm_backward(struct kern_layernorm *op, float *dx, float *dgamma, float *dbeta,
                             const float *dy, const float *x, const float *mean, const float *var,
                             const float *gamma, bool accumulate_dx);
void kern_layernorm_destroy(struct kern_layernorm *op);

/* ---- GELU, exact (erf) form: y = 0.5 x (1 + erf(x / sqrt 2)), as PyTorch's default --------
 * x is the pre-activation (rows, cols) of a linear layer whose output goes through the GELU.
 * forward:  y (rows, cols) from x; y is float, or with bf16_out kern_bf16 (rounded as by
 *           kern_round_bf16: the next matmul's operand, written in the same pass)
 * backward: dx (rows, cols) = dy * gelu'(x): float (may alias dy), or with bf16_out kern_bf16
 *           (rounded, for a bf16 matmul); unless dbias is NULL, dbias (cols) += the column sums
 *           of dx before rounding, each summed in row order (the gradient of the bias of the
 *           layer that made x, in the same pass: what kern_colsum_round would add)
 * The oneDNN backend's GELU is its own (kern_simd.c): erf by Abramowitz & Stegun 7.1.26 on the
 * vectorized exp: against libm in double over [-12, 12], its gelu(x) is within 1.1e-7 (1 + |x|)
 * and its gelu'(x) within 2.9e-7 (check_kernels measures both, and asserts 2e-7 and 4e-7). */
struct kern_gelu;
enum rz_status kern_gelu_create(struct kern_gelu **out, struct kern_ctx *ctx, int64_t rows,
                                int64_t cols, bool bf16_out, struct rz_err *err);
void kern_gelu_forward(struct kern_gelu *op, void *y, const float *x);
void kern_gelu_backward(struct kern_gelu *op, void *dx, float *dbias, const float *dy,
                        const float *x);
void kern_gelu_destroy(struct kern_gelu *op);

/* ---- causal multi-head self-attention (the core, without the projections) -------------------
 * qkv (B, T, 3C) holds q | k | v for each token, head h in columns [h D, (h + 1) D) of each third
 * (D = C / H); it is read in place, never copied.  Per (b, h), with S = q k^T / sqrt(D) (T, T)
 * and the causal mask (query t sees keys t' <= t):
 * forward:  y (B, T, C) = softmax(S) v, heads side by side as in qkv's thirds; lse (B, H, T) =
 *           the log-sum-exp of each masked row of S: the O(B H T) statistics that the backward
 *           needs instead of the (T, T) probabilities (Dao et al. 2022, FlashAttention).
 * backward: dqkv (B, T, 3C), overwritten, from dy (B, T, C), qkv, and the forward's y and lse.
 * The oneDNN backend works in (tile, tile) blocks with an online softmax (Milakov & Gimelshein
 * 2018), skips the blocks above the diagonal and keeps O(B H tile^2) scratch; `tile` = 0 lets
 * it choose.  The reference backend computes whole rows in double and ignores `tile`. */
struct kern_attention;
enum rz_status kern_attention_create(struct kern_attention **out, struct kern_ctx *ctx,
                                     int64_t batch, int64_t seq, int64_t heads, int64_t head_dim,
                                     int64_t tile, struct rz_err *err);
void kern_attention_forward(struct kern_attention *op, float *y, float *lse, const float *qkv);
void kern_attention_backward(struct kern_attention *op, float *dqkv, const float *dy,
                             const float *qkv, const float *y, const float *lse);
void kern_attention_destroy(struct kern_attention *op);

/* ---- softmax cross-entropy over a vocabulary ------------------------------------------------
 * logits (rows, vocab), targets (rows) in [0, vocab).
 * forward:  losses[r] = -log softmax(logits_r)[targets[r]]  (rows); probs (rows, vocab) =
 *           softmax(logits) (probs may alias logits: computed in place)
 * backward: dlogits (rows, vocab) = scale * (probs - onehot(targets)), overwritten; float (may
 *           alias probs), or with bf16_out kern_bf16 (rounded as by kern_round_bf16, for a bf16
 *           matmul); unless dbias is NULL, dbias (vocab) += the column sums of dlogits before
 *           rounding (the gradient of the bias of the layer that made the logits, same pass) */
struct kern_xent;
enum rz_status kern_xent_create(struct kern_xent **out, struct kern_ctx *ctx, int64_t rows,
                                int64_t vocab, bool bf16_out, struct rz_err *err);
void kern_xent_forward(struct kern_xent *op, float *losses, float *probs, const float *logits,
                       const int32_t *targets);
void kern_xent_backward(struct kern_xent *op, void *dlogits, float *dbias, const float *probs,
                        const int32_t *targets, float scale);
void kern_xent_destroy(struct kern_xent *op);

/* ---- measured peak ---------------------------------------------------------------------------
 * Time a (m, k) x (k, n) matmul (with bf16 operands when bf16) on this backend for about
 * `seconds`, half in the plain form and half with A transposed (the weight gradients' form,
 * which may run on another library), and report the better best sustained GFLOP/s: the
 * denominator of MFU (measured on this machine, not a vendor table). */
enum rz_status kern_measure_peak(struct kern_ctx *ctx, int64_t m, int64_t n, int64_t k, bool bf16,
                                 double seconds, double *gflops, struct rz_err *err);

#endif
