/* file.h: one text or tokens file behind data.kind = text | tokens, as file.c opens, checks,
 * maps and reads it; private to src/data/.
 * Deliberately not here: where a sample's window starts (data.c), the validation split, and
 * manifests of many files (seq.c).
 *
 * Ownership: struct data_file is embedded by its user; data_file_close releases the map and
 * accepts a zeroed or half-opened file. */
#ifndef RZ_DATA_FILE_H
#define RZ_DATA_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "record/tokfile.h"

/* A text (1 byte per token) or tokens (little-endian uint16 or uint32) file, mapped read-only.
 * A tokens file may start with a header (record/tokfile.h): its ids then start at `offset`. */
struct data_file {
    const unsigned char *map;   /* the whole file (NULL when closed) */
    size_t bytes;               /* file size */
    size_t offset;              /* where the ids start: TOKFILE_HEADER_BYTES with a header, else 0 */
    unsigned width;             /* bytes per token: 1, 2 or 4 */
    uint64_t n_tokens;          /* (bytes - offset) / width */
    bool has_header;
    struct tokfile_header header; /* when has_header */
};

/* Open, check and map `path`.  width 1: a text file (a token file's header there is refused:
 * RZ_ECONFIG, "set data.kind: tokens").  Otherwise a tokens file: a header gives the width
 * (`width` 0, or the same width, else RZ_ECONFIG naming both); a headerless file needs
 * width 2 or 4 (0: RZ_ECONFIG, "set data.token_dtype or re-encode with ryzen-data"), a whole
 * number of ids (a partial id at the end is named with its bytes and offset).  At least T+1
 * tokens unless seq_len < 0 (a shard: windows run over the concatenation).  Messages start with
 * `label` ("tokens file") and name the file.  No id is read (data_file_scan).  *f is zeroed
 * first; data_file_close accepts it in any state. */
enum rz_status data_file_open(struct data_file *f, const char *label, const char *path,
                              unsigned width, int64_t seq_len, struct rz_err *err);

/* The one streaming pass over an open file's ids, through a 1 MiB buffer (constant memory,
 * nothing left mapped): every id < vocab (width 2 or 4; a bad id names its value, token index
 * and byte offset), and counts[id] += 1 for the first count_n tokens when counts is not NULL
 * (the unigram counts of the training split). */
enum rz_status data_file_scan(const struct data_file *f, const char *label, const char *path,
                              int64_t vocab, uint64_t *counts, uint64_t count_n,
                              struct rz_err *err);
void data_file_close(struct data_file *f);

/* tokens[0..count) = the ids at token positions first .. first + count - 1 (in range). */
void data_file_read(const struct data_file *f, uint64_t first, int64_t count, int32_t *tokens);

/* "byte", "uint16" or "uint32". */
const char *data_file_dtype(const struct data_file *f);

#endif
