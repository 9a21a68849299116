/* manifest.h: the data manifest, written by `ryzen-data manifest` (the last step of
 * sbatch/prepare_data.sh) and read by the trainer when data.path names it.  The one home of its
 * format.
 *
 *   {"format": "ryzen-data manifest", "version": 1,
 *    "tokenizer_sha256": "<64 hex>", "vocab_size": V, "id_width": 2, "tokens": N,
 *    "shards": [{"path": "shard-00000.tok", "tokens": n, "bytes": b, "sha256": "<64 hex>"}, ...]}
 *
 * Shard paths are relative to the manifest's directory.  Shards are token files
 * (record/tokfile.h) of one tokenizer; their order is the data's order.
 * Ownership: manifest_read allocates, manifest_free releases (NULL ok). */
#ifndef RZ_RECORD_MANIFEST_H
#define RZ_RECORD_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define MANIFEST_FORMAT "ryzen-data manifest"
#define MANIFEST_VERSION 1

struct manifest_shard {
    char *path;          /* as written (relative) */
    char *full_path;     /* resolved against the manifest's directory */
    uint64_t tokens;
    uint64_t bytes;
    char sha256[65];
};

struct manifest {
    char tokenizer_sha256[65];
    uint64_t vocab_size;
    unsigned id_width;
    uint64_t tokens;
    size_t n_shards;
    struct manifest_shard *shards;
};

/* Whether the file at `path` looks like a manifest: its first non-blank byte is '{', the next
 * non-blank one '"' or '}', and its first 256 bytes are text (no control byte but blanks), so a
 * headerless token file whose first id happens to be '{' is not taken for one. */
bool manifest_sniff(const char *path);
/* Read and check (format, version, the shards' token sum); errors name the file and the key. */
enum rz_status manifest_read(const char *path, struct manifest **out, struct rz_err *err);
void manifest_free(struct manifest *m);
/* Write `m` to `path` durably (core/durable.h). */
enum rz_status manifest_write(const char *path, const struct manifest *m, struct rz_err *err);
/* Check every shard against the manifest: present, same size, its header agreeing (tokenizer,
 * vocabulary, width, token count), same SHA-256 (full read).  The first problem is RZ_EDATA
 * naming the shard and what differs. */
enum rz_status manifest_verify(const struct manifest *m, struct rz_err *err);
/* (Added by helper F for src/data/.)  The cheap part of manifest_verify for shard i: present,
 * same size, a header that agrees with the manifest, returned in *h; no re-hash. */
struct tokfile_header;
enum rz_status manifest_check_shard(const struct manifest *m, size_t i, struct tokfile_header *h,
                                    struct rz_err *err);

#endif
