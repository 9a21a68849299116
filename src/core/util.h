/* util.h: small shared helpers: monotonic time, aligned allocation, checked allocation,
 * peak RSS, and directory creation.  Allocation functions return NULL on failure and never abort;
 * memory from rz_alloc_aligned is released with free(). */
#ifndef RZ_CORE_UTIL_H
#define RZ_CORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* For the hot elementwise loops outside the oneDNN kernels (optimizer, bias and residual
 * gradients, embeddings, norms): GCC builds one clone per ISA and the loader picks one per
 * machine.  Every element gets the same operations in the same order in every clone (ISO C mode
 * does not contract a*b+c into an FMA), so the results do not depend on which clone runs.  The
 * loops themselves carry `#pragma omp simd`, since -O2's cost model would not vectorize them. */
#define RZ_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

/* Seconds from an arbitrary fixed point (CLOCK_MONOTONIC). */
double rz_now(void);

/* Wall-clock time as ISO-8601 UTC ("2026-11-21T02:48:39Z") into buf (>= 32 bytes). */
void rz_utc_iso8601(char *buf, size_t len);

/* 64-byte-aligned, zero-filled allocation of `bytes`; NULL on failure. */
void *rz_alloc_aligned(size_t bytes);

/* Peak resident set size of this process in bytes (getrusage), 0 if unknown. */
uint64_t rz_peak_rss_bytes(void);

/* Current resident set size in bytes (/proc/self/statm), 0 if unknown. */
uint64_t rz_rss_bytes(void);

/* Process start-up, from main: gives freed heap memory back to the system once more than 1 MiB
 * is free at the top of a malloc arena (glibc's default threshold grows with the largest block
 * freed, up to 64 MiB).  Libraries that allocate in the step (oneDNN's AVX2 sgemm packs its
 * operands per call in each OpenMP thread) otherwise leave each thread's arena at its largest:
 * 2 threads on AVX2 measured 201 MB peak RSS against 176 MB with this.  Returns false when the
 * allocator refused the setting (ASan's always does); the process runs on with its default. */
bool rz_malloc_return_freed(void);

/* mkdir -p: create `path` and its parents (mode 0755). */
enum rz_status rz_mkdirs(const char *path, struct rz_err *err);

/* Read a whole file into a NUL-terminated heap buffer (*out, caller frees). */
enum rz_status rz_read_file(const char *path, char **out, size_t *len, struct rz_err *err);

/* Sum of squares of x (n) in double, in a fixed order (deterministic) that vectorizes. */
double rz_sumsq(const float *x, size_t n);

/* Part `index` of `parts` of a buffer of n elements: [*lo, *hi).  Boundaries are multiples of
 * `align` (except the end, n), as even as that allows; later parts may be empty when n is small.
 * A pure function: every rank computes every rank's part (ZeRO shards, the planner). */
void rz_shard(size_t n, int parts, int index, size_t align, size_t *lo, size_t *hi);

/* snprintf for messages and labels that may be cut at len - 1 bytes without harm. */
void rz_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define RZ_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
