/* tok.h: the tokenizer, behind a C interface.  The one C++ file of the project (tok_spm.cc)
 * wraps SentencePiece (Debian's libsentencepiece-dev): training a BPE or unigram model with
 * byte fallback, loading it, encoding and decoding.  Nothing else in the project sees C++.
 *
 * Text model: the unit of encoding is a line.  tok_encode splits its input at '\n', encodes each
 * line on its own and writes the newline as its byte-fallback piece <0x0A>, so a text encodes to
 * the same ids whether it is given whole or cut at line ends (what lets ryzen-data encode on
 * several threads and prepare_data.sh encode shard by shard).  The round trip is exact for any
 * bytes: valid UTF-8 goes through SentencePiece with the identity normalizer and no dummy
 * prefix, and every byte that is not valid UTF-8 is written as its own <0xNN> piece.
 * tok_decode is ours (not SentencePiece's DecodeIds, which turns invalid bytes into U+FFFD).
 *
 * Identity: a tokenizer is named by the SHA-256 of its .model file's bytes (tok_sha256); token
 * files, manifests, checkpoints, summary.json and reports carry it.
 *
 * Threads: tok_encode and tok_decode may be called on one struct tok from several threads.
 * Ownership: tok_load allocates, tok_free releases (NULL ok); struct tok_ids is caller-owned
 * and released with tok_ids_free; tok_decode's text is malloc'd, the caller frees it. */
#ifndef RZ_TOK_TOK_H
#define RZ_TOK_TOK_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct tok;

struct tok_train_opts {
    const char *const *inputs; /* text files, read line by line */
    size_t n_inputs;
    const char *model_prefix;  /* writes PREFIX.model and PREFIX.vocab (durably) */
    int64_t vocab_size;        /* including the 256 byte pieces and <unk>, <s>, </s> */
    const char *model_type;    /* "bpe" or "unigram" */
    int threads;               /* SentencePiece trainer threads; 0: 1 */
    int64_t max_sentences;     /* lines sampled for training; 0: SentencePiece's default */
    int verbose;               /* nonzero: SentencePiece's training log (INFO) on stderr */
};

/* Train a tokenizer; errors name the input or output file and the cause (RZ_ECONFIG for bad
 * options, RZ_EDATA for an unusable corpus, RZ_EIO for files). */
enum rz_status tok_train(const struct tok_train_opts *o, struct rz_err *err);

enum rz_status tok_load(struct tok **out, const char *model_path, struct rz_err *err);
void tok_free(struct tok *t);

int64_t tok_vocab_size(const struct tok *t);
/* SHA-256 of the .model file's bytes, raw and as 64 hex characters. */
void tok_sha256(const struct tok *t, uint8_t out[32]);
const char *tok_sha256_hex(const struct tok *t);
const char *tok_model_path(const struct tok *t);

struct tok_ids {
    int32_t *ids;
    size_t n, cap;
};
void tok_ids_free(struct tok_ids *v);

/* Append the ids of text[0..len) to *out (see the text model above). */
enum rz_status tok_encode(const struct tok *t, const char *text, size_t len, struct tok_ids *out,
                          struct rz_err *err);
/* The bytes of ids[0..n) as a NUL-terminated string of *len bytes (it may contain NULs); an id
 * outside the vocabulary is RZ_EDATA naming it and its position. */
enum rz_status tok_decode(const struct tok *t, const int32_t *ids, size_t n, char **text,
                          size_t *len, struct rz_err *err);

#ifdef __cplusplus
}
#endif

#endif
