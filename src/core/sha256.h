/* sha256.h: SHA-256 (FIPS 180-4), used for config hashes, parameter hashes and per-dataset
 * checkpoint checksums.  Streaming interface; no allocation. */
#ifndef RZ_CORE_SHA256_H
#define RZ_CORE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rz_sha256 {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t block[64];
    size_t fill;
};

void rz_sha256_init(struct rz_sha256 *s);
void rz_sha256_update(struct rz_sha256 *s, const void *data, size_t len);
void rz_sha256_final(struct rz_sha256 *s, uint8_t out[32]);

/* One-shot digest as 64 lowercase hex characters plus NUL. */
void rz_sha256_hex(const void *data, size_t len, char out[65]);
void rz_sha256_to_hex(const uint8_t digest[32], char out[65]);

/* Use the CPU's SHA instructions when it has them (the default) or force the portable code, so
 * tests can check both against the FIPS 180-4 vectors.  Returns the previous setting.  Not
 * thread-safe: call it before hashing starts. */
bool rz_sha256_set_accel(bool on);

#endif
