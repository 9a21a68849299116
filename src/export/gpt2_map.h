/* gpt2_map.h: our model in Hugging Face GPT-2's terms: tensor names and layouts, and config.json
 * (GPT2Config's keys) both ways.
 *
 * Names: wte -> wte.weight, wpe -> wpe.weight, hL.ln1.* -> h.L.ln_1.*, hL.attn.qkv.* ->
 * h.L.attn.c_attn.*, hL.attn.proj.* -> h.L.attn.c_proj.*, hL.ln2.* -> h.L.ln_2.*, hL.mlp.fc.* ->
 * h.L.mlp.c_fc.*, hL.mlp.proj.* -> h.L.mlp.c_proj.*, ln_f.* -> ln_f.*, head.weight (untied) ->
 * lm_head.weight, head.bias -> lm_head.bias (only with GPT2_HEAD_BIAS).
 * Layouts: our linear weights are (out, in), as torch.nn.Linear's; GPT-2's Conv1D weights are
 * (in, out), so the four matmul weights of each block are transposed (exact: values move, none
 * changes).  Embeddings, LayerNorm and bias vectors, and lm_head (an nn.Linear) keep theirs.
 *
 * What GPT-2 cannot express: our head has a bias (V), trained like every bias; GPT-2's lm_head
 * has none.  A head bias that is not all +0.0 is refused unless the caller allows it, and then
 * written as lm_head.bias with config.json "ryzen_lm_head_bias": true (stock transformers does not
 * read it: its logits would lack the bias).  A head bias that is all +0.0 is left out, and
 * config.json's "ryzen_zero_head_bias": true tells import to give the model its zero head.bias
 * back (model.head_bias true), so export then import is bit-identical; a model trained with
 * model.head_bias false has no head.bias at all, and a GPT-2 file without lm_head.bias and
 * without that key imports as such a model.  Our GELU is the exact erf form, GPT2Config's
 * activation_function "gelu" (GPT-2's own "gelu_new" is the tanh approximation); the attention is
 * GPT-2's (scaled by 1/sqrt(head size), causal, no attention dropout: attn_pdrop 0).  Import
 * refuses what our model cannot run: another model_type, a GELU other than the exact one,
 * attention scaled by the layer index or not at all.
 * Deliberately not here: the file format (safetensors.h), checkpoints and files (export.h).
 *
 * Ownership: plain values; the caller owns every buffer. */
#ifndef RZ_EXPORT_GPT2_MAP_H
#define RZ_EXPORT_GPT2_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "model/model.h"

#define GPT2_NAME_MAX 64

/* How table entry e appears in GPT-2: its name and whether its (rows, cols) is transposed.
 * False for an entry GPT-2 has no place for (head.bias). */
bool gpt2_name_of(const struct model_tensor *e, char name[GPT2_NAME_MAX], bool *transpose);

/* The first of a table entry's values that GPT-2 cannot hold: RZ_ECONFIG with the reason
 * (a head bias that is not all +0.0), unless allow_head_bias.  *head_bias says whether the head
 * bias must be written (it is not all +0.0). */
enum rz_status gpt2_check(const struct model_tensor *table, size_t count, const float *params,
                          bool allow_head_bias, bool *head_bias, struct rz_err *err);

/* dst (cols, rows) = src (rows, cols) transposed. */
void gpt2_transpose(float *dst, const float *src, int64_t rows, int64_t cols);

/* What config.json says besides the dims. */
struct gpt2_extra {
    bool head_bias;           /* "ryzen_lm_head_bias": lm_head.bias is in the file */
    bool zero_head_bias;      /* "ryzen_zero_head_bias": our model has a head.bias, all +0.0,
                               * not in the file (false when head_bias) */
    float dropout;            /* resid_pdrop = embd_pdrop */
    bool has_tokenizer;       /* bos/eos ids of our SentencePiece models (else null) */
};

/* Write config.json's text for dims (tie_embeddings included) to f. */
void gpt2_config_write(FILE *f, const struct model_dims *dims, const struct gpt2_extra *x);

/* Read config.json at path into dims (vocab, d_model, n_heads, n_layers, d_ff, seq_len, ln_eps,
 * init_std, tie_embeddings; batch untouched) and x.  What our model cannot run is RZ_ECONFIG
 * naming the key and why; a missing or malformed key RZ_EDATA naming the file. */
enum rz_status gpt2_config_read(const char *path, struct model_dims *dims, struct gpt2_extra *x,
                                struct rz_err *err);

#endif
