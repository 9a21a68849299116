/* util.h: small shared helpers: monotonic and wall-clock time, sleeping, UTC time stamps,
 * quantiles, aligned allocation, checked allocation, peak RSS, and directory creation.
 * Allocation functions return NULL on failure and never abort; memory from rz_alloc_aligned is
 * released with free(). */
#ifndef RZ_CORE_UTIL_H
#define RZ_CORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* Seconds from an arbitrary fixed point (CLOCK_MONOTONIC): for durations. */
double rz_now(void);

/* Wall-clock time in Unix seconds (CLOCK_REALTIME), to the nanosecond: for time stamps. */
double rz_unix_now(void);

/* Sleep `seconds`, the rest of them again after a signal: callers that stop on a signal find
 * the flag its handler set after the sleep. */
void rz_sleep(double seconds);

/* The project's shapes of a UTC time stamp. */
enum rz_utc_form {
    RZ_UTC_ISO8601, /* "2026-11-21T02:48:39Z": files, reports, listings */
    RZ_UTC_COMPACT, /* "20261121T024839Z": inside a name (a run id) */
    RZ_UTC_SPACED,  /* "2026-11-21 02:48:39Z": a time in a table for people (events) */
};

/* Unix time `t` (whole seconds; a fraction is dropped) in UTC as `form` into buf (>= 32
 * bytes). */
void rz_utc_format(char *buf, size_t len, double t, enum rz_utc_form form);

/* Wall-clock time now as RZ_UTC_ISO8601 into buf (>= 32 bytes). */
void rz_utc_iso8601(char *buf, size_t len);

/* 64-byte-aligned, zero-filled allocation of `bytes`; NULL on failure. */
void *rz_alloc_aligned(size_t bytes);

/* Peak resident set size of this process in bytes (getrusage), 0 if unknown. */
uint64_t rz_peak_rss_bytes(void);

/* Current resident set size in bytes (/proc/self/statm), 0 if unknown. */
uint64_t rz_rss_bytes(void);

/* From main, once: sets glibc's two heap thresholds from what a training step allocates and
 * frees again.  `reused` is the largest such block: the per-bucket temporary of MPI's
 * non-blocking collectives (comm.bucket_mb) when there are ranks to talk to, else 0.
 *  - M_MMAP_THRESHOLD, 2 x reused (up to glibc's 32 MiB; left alone for 0): a block at or above
 *    it is a fresh mmap whose every page faults in again at each step.  With the default
 *    (128 KiB once a threshold is set) each of 2 ranks of the seed model took 2,000 more page
 *    faults and 26 ms more per step than one rank (14 ms of it system time) on a KVM guest (AMD
 *    EPYC 26/2, 2026-11-24); with this, as many faults as one rank.
 *  - M_TRIM_THRESHOLD, 2 x that (1 MiB for 0): freed memory kept at the top of an arena, so a
 *    freed bucket temporary is reused rather than returned and faulted in again.  The 1 MiB
 *    floor is for oneDNN's AVX2 sgemm, which packs its operands per call in each OpenMP thread:
 *    glibc's growing default left each arena at its largest, 201 MB peak RSS on 2 threads
 *    against 176 MB.
 * Returns false when the allocator refused a setting (ASan's always does); the process runs on
 * with its defaults. */
bool rz_malloc_tune(size_t reused);

/* mkdir -p: create `path` and its parents (mode 0755). */
enum rz_status rz_mkdirs(const char *path, struct rz_err *err);

/* Read a whole file into a NUL-terminated heap buffer (*out, caller frees). */
enum rz_status rz_read_file(const char *path, char **out, size_t *len, struct rz_err *err);


/* Part `index` of `parts` of a buffer of n elements: [*lo, *hi).  Boundaries are multiples of
 * `align` (except the end, n), as even as that allows; later parts may be empty when n is small.
 * A pure function: every rank computes every rank's part (ZeRO shards, the planner). */
void rz_shard(size_t n, int parts, int index, size_t align, size_t *lo, size_t *hi);

/* Quantile q in [0, 1] of v[0..n), linear between the order statistics around q (n - 1)
 * (Hyndman and Fan's "type 7"); sorts v in place.  NaN for n == 0. */
double rz_quantile(double *v, size_t n, double q);

/* snprintf for messages and labels that may be cut at len - 1 bytes without harm. */
void rz_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Sets of names as comma-separated lists ("n1,n3"): whether name is one of list; the names of
 * `names` (itself a list) added to out, each once, as far as len allows. */
bool rz_list_has(const char *list, const char *name);
void rz_list_add(char *out, size_t len, const char *names);

#define RZ_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The directory part of `path` into out: "." when it has none, "/" for a file in the root. */
void rz_dir_of(const char *path, char *out, size_t len);

#endif
