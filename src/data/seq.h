/* seq.h: the token sequence a file data source samples from: one text or tokens file, or the
 * shards of a data manifest (record/manifest.h) concatenated in the manifest's order; private to
 * src/data/.
 *
 * Sharding rule: the shards are one sequence.  A window of T+1 tokens is placed over the
 * concatenation exactly as over one file, and a window that straddles a shard boundary reads the
 * end of one shard and the start of the next (data_seq_read).  So a manifest of shards samples
 * exactly as one file of their concatenation, sample for sample, and a sample stays a pure
 * function of (seed, index) and the total token count: exact and elastic resume work unchanged.
 * A shard boundary is no more a document boundary than the boundary between two input files
 * that `ryzen-data encode` concatenated into one shard.
 *
 * Deliberately not here: where a window starts and the validation split (data.c); the full
 * SHA-256 check of the shards (manifest_verify, run by data_verify in the preflight): opening
 * checks each shard's presence, size and header against the manifest, not its bytes.
 * Ownership: struct data_seq is embedded by its user; data_seq_close releases everything and
 * accepts a zeroed or half-opened sequence. */
#ifndef RZ_DATA_SEQ_H
#define RZ_DATA_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "data/file.h"
#include "record/manifest.h"

struct data_seq {
    struct data_file *files;    /* n of them, in order (one for a plain file) */
    char **paths;               /* their paths */
    uint64_t *first;            /* n + 1: first[i] = files[i]'s first token in the sequence */
    size_t n;
    uint64_t n_tokens;          /* first[n] */
    unsigned width;             /* 1, 2 or 4 */
    struct manifest *manifest;  /* when opened from a manifest */
    char tokenizer_sha256[65];  /* "" without a header or manifest, or when none is recorded */
};

/* Open `path` as the data source's sequence: width 1 a text file; otherwise a tokens file
 * (width 0 = data.token_dtype auto) or a manifest (manifest_sniff).  `key` ("data.path",
 * "data.val_path") and `label` ("tokens file") start messages.  A header's or manifest's
 * vocabulary that differs from `vocab` is RZ_ECONFIG naming the file and both numbers.  At
 * least T+1 tokens in all.  No id is read (data_seq_scan). */
enum rz_status data_seq_open(struct data_seq *s, const char *key, const char *label,
                             const char *path, unsigned width, int64_t vocab, int64_t seq_len,
                             struct rz_err *err);
/* The one streaming pass over every file (data_file_scan): ids < vocab, and the unigram counts
 * of the sequence's first count_n tokens into counts (may be NULL). */
enum rz_status data_seq_scan(const struct data_seq *s, const char *label, int64_t vocab,
                             uint64_t *counts, uint64_t count_n, struct rz_err *err);
/* tokens[0..count) = the ids at positions first .. first + count - 1 of the sequence (in range;
 * across shard boundaries). */
void data_seq_read(const struct data_seq *s, uint64_t first, int64_t count, int32_t *tokens);
void data_seq_close(struct data_seq *s);

#endif
