/* tokfile.h: the token file, written by ryzen-data and read by the trainer (src/data/file.c).
 * The one home of its format.
 *
 * Layout, all integers little-endian (docs/data.md):
 *   offset size
 *        0    8  magic "RZTOKENS"
 *        8    4  version (1)
 *       12    4  header bytes (128): the ids start here
 *       16    4  id width in bytes: 2 (uint16) or 4 (uint32)
 *       20    4  reserved, 0
 *       24    8  vocabulary size V: every id is < V
 *       32    8  token count N
 *       40   32  SHA-256 of the tokenizer's .model file (all zero: not recorded)
 *       72   56  reserved, 0
 *      128  N*w  the ids
 * A file without the magic is a headerless token file (data.token_dtype says its width).
 *
 * Writing goes through core/durable.h: a temporary file renamed over the final name, so an
 * interrupted or full-disk encode leaves no partial file (RZ_EIO, exit 74); the header's count
 * is written at commit.
 * Ownership: struct tokfile_writer is caller-owned; commit and abort release what it holds. */
#ifndef RZ_RECORD_TOKFILE_H
#define RZ_RECORD_TOKFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/durable.h"
#include "core/sha256.h"
#include "core/status.h"

#define TOKFILE_MAGIC "RZTOKENS"
#define TOKFILE_VERSION 1u
#define TOKFILE_HEADER_BYTES 128u

struct tokfile_header {
    uint32_t version;
    uint32_t width;                /* 2 or 4 */
    uint64_t vocab_size;
    uint64_t n_tokens;
    uint8_t tokenizer_sha256[32];  /* all zero: none */
};

/* Whether buf[0..len) starts with the magic. */
bool tokfile_has_magic(const void *buf, size_t len);
/* Decode and check a header read from `path` (named in errors: RZ_EDATA for a bad version,
 * width, size or a count that disagrees with `file_bytes`). */
enum rz_status tokfile_header_decode(const void *buf, size_t len, uint64_t file_bytes,
                                     const char *path, struct tokfile_header *h,
                                     struct rz_err *err);
void tokfile_header_encode(const struct tokfile_header *h, uint8_t out[TOKFILE_HEADER_BYTES]);
/* Read the header of the file at `path`; *has_header is false for a headerless file. */
enum rz_status tokfile_read_header(const char *path, struct tokfile_header *h, bool *has_header,
                                   struct rz_err *err);
/* The tokenizer hash as hex ("" when all zero). */
void tokfile_sha_hex(const struct tokfile_header *h, char out[65]);
/* The SHA-256 of the whole file at `path` as hex, and its size in bytes (may be NULL): one
 * read through a 64 KiB buffer (the manifest's check of a shard, ryzen-data's sidecars).
 * RZ_EDATA naming the file when it does not exist, RZ_EIO when it cannot be read. */
enum rz_status tokfile_sha256_file(const char *path, char hex[65], uint64_t *bytes,
                                   struct rz_err *err);

struct tokfile_writer {
    struct rz_durable d;
    struct tokfile_header h;
    struct rz_sha256 sha;          /* of the whole file, for the manifest */
    bool open;
};

/* Start `path` (its temporary file).  width 0: 2 if vocab <= 65536, else 4. */
enum rz_status tokfile_writer_open(struct tokfile_writer *w, const char *path, unsigned width,
                                   uint64_t vocab_size, const uint8_t tokenizer_sha256[32],
                                   struct rz_err *err);
/* Append ids (each checked < vocab: RZ_EDATA naming the id and its position). */
enum rz_status tokfile_writer_append(struct tokfile_writer *w, const int32_t *ids, size_t n,
                                     struct rz_err *err);
/* Write the final header and commit; file_sha256_hex (may be NULL) gets the SHA-256 of the
 * file as committed. */
enum rz_status tokfile_writer_commit(struct tokfile_writer *w, char file_sha256_hex[65],
                                     struct rz_err *err);
void tokfile_writer_abort(struct tokfile_writer *w);

#endif
