/* gen.h: inference from a checkpoint: ryzen-generate's library (src/gen/).
 *
 *   gen_load.c    which checkpoint (a file, or a run directory's newest valid one), loading it
 *                 after ckpt/'s full verification, the model's shape from the checkpoint and the
 *                 config it carries, and the tokenizer match (vocabulary, SHA-256)
 *   gen_prefill.c a prompt in one batched forward pass, filling the KV cache
 *   gen_decode.c  one token at a time with a KV cache: O(T) work per token (attention over the
 *                 cached keys and values), fp32, the trainer's kernels for the LayerNorms, the
 *                 GELU and the 1-row matmuls, so the numerics are the training forward's
 *   gen_sample.c  greedy, temperature, top-k, top-p; draws from core/rng.h keyed by (seed, step)
 *   gen_score.c   --perplexity: the trainer's validation windows and loss, by model_forward
 *   gen_cli.c     the program: options, prompt, output (text, --json, --logits-out)
 * Deliberately not here: training, the tokenizer itself (tok/), the checkpoint format (ckpt/).
 *
 * Ownership: gen_open allocates a struct gen, gen_close frees it (NULL ok); the logits pointer
 * of gen_logits is the struct's, valid until the next gen_feed or gen_reset. */
#ifndef RZ_GEN_GEN_H
#define RZ_GEN_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt/ckpt_meta.h"
#include "core/status.h"
#include "model/model.h"

struct gen;
struct cfg;

/* ckpt_or_dir: a checkpoint file, or a run directory (its checkpoints/ newest checkpoint that
 * verifies, or the directory itself if it holds step-*.h5 files).  Read only: unlike the
 * trainer's resume, nothing is quarantined.  RZ_ENOCKPT when there is none. */
enum rz_status gen_resolve_checkpoint(const char *ckpt_or_dir, char *path, size_t len,
                                      struct rz_err *err);

/* Load the checkpoint at path (verified: damage is RZ_ENOCKPT) with a KV cache for
 * model.seq_len positions. */
enum rz_status gen_open(struct gen **out, const char *path, struct rz_err *err);
void gen_close(struct gen *g);

/* The model's shape (batch 1, fp32), the checkpoint's metadata and the config it carries. */
const struct model_dims *gen_dims(const struct gen *g);
const struct ckpt_meta *gen_meta(const struct gen *g);
const struct cfg *gen_cfg(const struct gen *g);
/* The model's parameter buffer, laid out by the table (model_tensors). */
const float *gen_params(const struct gen *g);

/* The tokenizer of vocabulary `vocab` and SHA-256 `sha_hex` against the checkpoint: its vocabulary
 * must equal model.vocab_size and, when the checkpoint records a tokenizer, the hashes must be
 * equal.  RZ_ECONFIG naming both sides otherwise. */
enum rz_status gen_check_tokenizer(const struct gen *g, int64_t vocab, const char *sha_hex,
                                   const char *tok_path, struct rz_err *err);

/* ---- decoding (gen_decode.c) --------------------------------------------------------------- */

/* Forget the cached positions: the next token is at position 0. */
void gen_reset(struct gen *g);
/* Positions cached so far (the next token's position). */
int64_t gen_pos(const struct gen *g);
/* Run `token` at position gen_pos through the model, caching its keys and values: gen_logits
 * then holds the logits (V) of the next token.  RZ_EDATA for an id outside [0, V) or a full
 * context (gen_pos == seq_len). */
enum rz_status gen_feed(struct gen *g, int32_t token, struct rz_err *err);
const float *gen_logits(const struct gen *g);
/* A prompt: the n tokens ids at positions gen_pos.. in one batched forward pass (gen_prefill.c)
 * when gen_pos is 0, token by token through gen_feed otherwise; gen_logits then holds the last
 * one's next-token logits, as after n gen_feed calls (equal within fp32 rounding).  logits: NULL,
 * or (n, V) for every position's (row i predicts token i + 1).  RZ_EDATA, and nothing run, for an
 * id outside [0, V) or n past the context; the planning's errors (RZ_ENOMEM for the (n, d_ff)
 * activations, RZ_EBACKEND) with nothing cached. */
enum rz_status gen_prefill(struct gen *g, const int32_t *ids, int64_t n, float *logits,
                           struct rz_err *err);

/* ---- sampling (gen_sample.c) ----------------------------------------------------------------- */

struct gen_sample_opts {
    bool greedy;              /* argmax (lowest id on ties); also temperature 0 */
    double temperature;       /* > 0: logits / temperature */
    int64_t top_k;            /* keep the k most likely tokens; 0: all */
    double top_p;             /* keep the smallest set whose probability reaches p; 1: all */
    uint64_t seed;            /* draw `step` is rz_rand_open01(seed, step) */
};

/* Check the options' ranges: RZ_ECONFIG naming the option. */
enum rz_status gen_sample_check(const struct gen_sample_opts *o, struct rz_err *err);
/* The token drawn at generation step `step` from logits (V).  scratch: gen_sample_scratch_bytes(V)
 * bytes, aligned for a double. */
int32_t gen_sample(const float *logits, int64_t V, const struct gen_sample_opts *o, uint64_t step,
                   void *scratch);
size_t gen_sample_scratch_bytes(int64_t V);
/* log softmax(logits)[id] in double: the model's own log-probability (no temperature, no
 * filtering). */
double gen_logprob(const float *logits, int64_t V, int32_t id);

/* ---- scoring (gen_score.c) ------------------------------------------------------------------- */

/* The trainer's validation loss on token file `tokfile` (record/tokfile.h, or headerless with
 * the config's data.token_dtype): training.eval_samples windows of seq_len + 1 tokens drawn as
 * data_val_sample draws them with the config's data.seed, in batches of the checkpoint's
 * per-rank batch, each window's loss the mean of its token losses, and the mean over windows:
 * with data.val_path = tokfile the trainer's validation loss, bit for bit on the same backend. */
struct gen_score {
    double loss;              /* nats per token */
    int64_t windows, tokens;  /* windows scored, tokens predicted */
    int64_t batch;            /* windows per forward pass */
};
enum rz_status gen_perplexity(const struct gen *g, const char *tokfile, struct gen_score *out,
                              struct rz_err *err);

/* ---- the program (gen_cli.c) ----------------------------------------------------------------- */

/* What ryzen-generate reads from its environment (main reads it once). */
struct gen_env {
    const char *isa;          /* RYZEN_ISA ("" or NULL: native) */
    const char *tmpdir;       /* TMPDIR ("" or NULL: /tmp) */
};

/* ryzen-generate's whole run; returns the process exit code (docs/exit-codes.md). */
int gen_main(int argc, char **argv, const struct gen_env *env);

#endif
