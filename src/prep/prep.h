/* prep.h: ryzen-data's logic (the program's main is src/prep/ryzen-data.c): training a tokenizer,
 * encoding text into a token file on several threads, decoding, inspecting token files and
 * manifests, writing and verifying manifests.  The command line is docs/data.md's contract.
 *
 *   prep.c           the command line: subcommands, options, usage; prints results
 *   prep_encode.c    the encode pipeline: chunks cut at line ends, encoded on N threads, written
 *                    in input order through a bounded window; progress and the summary line
 *   prep_inspect.c   reading ids back: decode, unigram entropy, info
 *   prep_manifest.c  the .sha256 sidecar, manifest and verify
 *
 * Formats live elsewhere: the token file in record/tokfile.h, the manifest in record/manifest.h,
 * the tokenizer behind tok/tok.h.  The library never reads the environment: main fills struct
 * prep_env once.
 * Ownership: every struct here is caller-owned; functions that allocate say so. */
#ifndef RZ_PREP_PREP_H
#define RZ_PREP_PREP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "record/tokfile.h"

struct tok;

/* What main reads from the process's environment, once. */
struct prep_env {
    const char *cpus_per_task; /* SLURM_CPUS_PER_TASK, or NULL */
    bool log_tty;              /* `log` is a terminal: show progress */
    FILE *out;                 /* results (stdout) */
    FILE *log;                 /* progress, summaries (stderr) */
};

/* Run `ryzen-data ARGS...` (argv[0] is the program's name).  RZ_OK after --help and --version
 * too; usage errors are RZ_ECONFIG with a message that ends "(see --help)". */
enum rz_status prep_run(const struct prep_env *env, int argc, char **argv, struct rz_err *err);

/* The default thread count: SLURM_CPUS_PER_TASK when it is a positive number, else the CPUs
 * this process may run on (sched_getaffinity), else 1. */
int prep_default_threads(const char *cpus_per_task);

/* ---- encode (prep_encode.c) ---- */

#define PREP_CHUNK_BYTES (1u << 20)
#define PREP_MAX_THREADS 1024

struct prep_encode_opts {
    const char *const *inputs; /* read in order, as one concatenated text */
    size_t n_inputs;
    const char *out;           /* the token file; OUT.sha256 beside it */
    unsigned width;            /* 2, 4, or 0: the narrowest that holds the vocabulary */
    int threads;               /* encoding threads, >= 1 */
    size_t chunk_bytes;        /* a chunk ends at the last line end within this many bytes
                                * (or the first after it); 0: about 4 a thread, 64 KiB..1 MiB */
    FILE *log;                 /* progress and the summary line; NULL: none */
    bool tty;                  /* show progress on `log` (a terminal) */
};

struct prep_encode_stats {
    uint64_t tokens, bytes, chunks;
    double seconds;
    int threads;
    char file_sha256[65];      /* of the token file as committed */
};

/* Encode the inputs with `t` into o->out, durably, then write o->out.sha256 durably ("<hex>
 * <basename>", sha256sum's format).  The ids are the same for any thread count and chunk size.
 * Errors: a missing or unreadable input names it (RZ_EDATA); an output directory that does not
 * exist names it (RZ_ECONFIG); a write error or full disk is RZ_EIO and leaves neither file (an
 * older OUT is kept, its old sidecar removed). */
enum rz_status prep_encode(const struct tok *t, const struct prep_encode_opts *o,
                           struct prep_encode_stats *st, struct rz_err *err);

/* ---- reading ids back (prep_inspect.c) ---- */

/* Ids of a token file, read in blocks.  Ownership: prep_ids_close releases (safe after a failed
 * open). */
struct prep_ids {
    FILE *f;
    const char *path;
    struct tokfile_header h;
    uint64_t pos;              /* index of the next id */
    uint8_t *raw;
    size_t cap;
};
/* Open `path` (it must have a header: RZ_EDATA naming it otherwise) and seek to id `first`
 * (<= the file's count). */
enum rz_status prep_ids_open(struct prep_ids *r, const char *path, uint64_t first,
                             struct rz_err *err);
/* Up to `max` ids into ids[]; *n is 0 at the end. */
enum rz_status prep_ids_read(struct prep_ids *r, int32_t *ids, size_t max, size_t *n,
                             struct rz_err *err);
void prep_ids_close(struct prep_ids *r);

struct prep_decode_opts {
    const char *path;
    uint64_t first;
    uint64_t count;            /* UINT64_MAX: to the end; a count past the end stops there */
    size_t block_ids;          /* ids decoded per call; 0: default */
    FILE *out;
};
/* Write the text of ids [first, first + count) to o->out.  A token file whose tokenizer SHA-256
 * is not t's is refused (RZ_EDATA naming both). */
enum rz_status prep_decode(const struct tok *t, const struct prep_decode_opts *o,
                           struct rz_err *err);

/* The unigram entropy, in nats/token, of the ids of paths[0..n) together (ids < vocab):
 * H = ln N - (1/N) sum_i c_i ln c_i over the counts c_i of the N ids; 0 for no ids. */
enum rz_status prep_unigram_entropy(const char *const *paths, size_t n, uint64_t vocab,
                                    double *nats, struct rz_err *err);
/* The same from counts[0..vocab). */
double prep_entropy_of_counts(const uint64_t *counts, uint64_t vocab);

struct prep_info {
    bool is_manifest;
    struct tokfile_header h;   /* a manifest's: its tokenizer, vocabulary, width and total */
    uint64_t bytes;            /* the file's size, or a manifest's shards' */
    size_t n_shards;           /* 0 for a token file */
    double entropy;            /* nats/token */
};
/* Read a token file's header or a manifest (record/manifest.h), and the entropy of its ids. */
enum rz_status prep_info_read(const char *path, struct prep_info *i, struct rz_err *err);
void prep_info_print(FILE *f, const char *path, const struct prep_info *i, bool json);

/* ---- sidecars and manifests (prep_manifest.c) ---- */

/* PATH.sha256: "<hex>  <basename of PATH>\n", written durably. */
enum rz_status prep_sidecar_write(const char *path, const char hex[65], struct rz_err *err);
/* The hash in PATH.sha256 (RZ_EDATA naming the sidecar when missing or malformed). */
enum rz_status prep_sidecar_read(const char *path, char hex[65], struct rz_err *err);

/* `path` exists and is not a directory (RZ_EDATA naming it otherwise): a missing input is bad
 * input (exit 64), not an I/O error. */
enum rz_status prep_check_input(const char *path, struct rz_err *err);
/* The directory that will hold `path` exists and `path` is not a directory (RZ_ECONFIG naming
 * it otherwise). */
enum rz_status prep_check_out_dir(const char *path, struct rz_err *err);
/* `path` relative to directory `dir` (both existing; resolved with realpath), into out. */
enum rz_status prep_relative_path(const char *dir, const char *path, char *out, size_t len,
                                  struct rz_err *err);

/* Write the manifest `out` over shards[0..n): each shard's header, its sidecar against a fresh
 * hash of the file, one tokenizer, vocabulary and width among them; RZ_EDATA naming the first
 * shard that differs.  *total gets the token count (may be NULL). */
enum rz_status prep_manifest(const char *out, const char *const *shards, size_t n,
                             uint64_t *total, struct rz_err *err);

#endif
