/* file.h: the text and tokens files behind data.kind = text | tokens, as file.c opens, checks,
 * maps and reads them; private to src/data/.
 * Deliberately not here: where a sample's window starts (data.c) and the validation split.
 *
 * Ownership: struct data_file is embedded by its user; data_file_close releases the map and
 * accepts a zeroed or half-opened file. */
#ifndef RZ_DATA_FILE_H
#define RZ_DATA_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* A text (1 byte per token) or tokens (little-endian uint16 or uint32) file, mapped read-only. */
struct data_file {
    const unsigned char *map;   /* the whole file (NULL when closed) */
    size_t bytes;               /* file size */
    unsigned width;             /* bytes per token: 1, 2 or 4 */
    uint64_t n_tokens;          /* bytes / width */
};

/* Open, check and map `path`: a whole number of ids, at least T+1 of them, and (width 2 or 4)
 * every id < vocab, checked in one streaming pass.  Messages start with `label` ("tokens file")
 * and name the file; a bad id names its value, token index and byte offset, a partial id at the
 * end its bytes and offset.  *f is zeroed first; data_file_close accepts it in any state. */
enum rz_status data_file_open(struct data_file *f, const char *label, const char *path,
                              unsigned width, int64_t vocab, int64_t seq_len, struct rz_err *err);
void data_file_close(struct data_file *f);

/* tokens[0..count) = the ids at token positions first .. first + count - 1 (in range). */
void data_file_read(const struct data_file *f, uint64_t first, int64_t count, int32_t *tokens);

/* "byte", "uint16" or "uint32". */
const char *data_file_dtype(const struct data_file *f);

#endif
