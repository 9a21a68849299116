/* data_fixtures.h: what the files of check_data share (data_fixtures.c): the temporary directory
 * of a test case and its unchecked fixture, files of bytes, uint16 and uint32 ids written into
 * it, options and sources made from them, and what check_data.c adds to its suite from
 * check_data_files.c, check_data_errors.c and check_data_tok.c.  Test code only. */
#ifndef RZ_TESTS_DATA_FIXTURES_H
#define RZ_TESTS_DATA_FIXTURES_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "data/data.h"

/* Room for a path in tmp_dir. */
#define PATH_LEN 512

/* The test case's temporary directory, /tmp/check_data.XXXXXX (empty when it could not be
 * made). */
extern char tmp_dir[64];

/* Unchecked fixture: runs in the parent process, so the directory is removed even when a test
 * fails or crashes in its forked child (which is why teardown lists the directory rather than
 * trusting a record kept by the child). */
void setup(void);

/* Remove every file in tmp_dir, then tmp_dir. */
void teardown(void);

/* Write `len` bytes to tmp_dir/name; returns the path (valid for the next 15 calls). */
const char *write_file(const char *name, const void *bytes, size_t len);

/* A tokens file of the ids ids[0..n) as little-endian uint16. */
const char *write_tokens(const char *name, const unsigned *ids, size_t n);

/* A tokens file of the ids ids[0..n) as little-endian uint32. */
const char *write_tokens32(const char *name, const uint32_t *ids, size_t n);

/* The options of a source of this kind, vocabulary, sequence length, seed, file and markov
 * branching; a tokens source reads headerless files, uint16 for V <= 65536, else uint32 (as
 * data.token_dtype uint16 | uint32 would say). */
struct data_opts make_opts(enum data_kind kind, int64_t vocab, int64_t seq_len, uint64_t seed,
                           const char *path, int64_t branching);

/* data_create of o, which must succeed. */
struct data *create_ok(const struct data_opts *o);

/* A file "text.bin" of len deterministic bytes from seed; its path. */
const char *random_text_file(size_t len, uint64_t seed);

/* A tokens file "count.tok" of the ids 0, 1, ..., n - 1; its path. */
const char *counting_tokens_file(size_t n);

/* Add the file tests (text and tokens files read back, uint32 ids, a large file mapped, the
 * validation split of a file and a validation file) to tc (check_data_files.c). */
void data_files_tests(TCase *tc);

/* The "errors" test case: every error path (check_data_errors.c). */
TCase *data_errors_tcase(void);

/* The "tokfile" test case: token files with a header, manifests, the unigram entropy and
 * data_verify (check_data_tok.c). */
TCase *data_tok_tcase(void);

#endif
