#include "config.h"

/* sha256.c: SHA-256 as specified in FIPS 180-4 (section 6.2), streaming, no allocation.
 *
 * The portable compression function follows the spec's equations (4.4)-(4.7) and the message
 * schedule of section 6.2.2.  On x86-64 CPUs with the SHA extensions the same compression is done
 * with the SHA-NI instructions (Intel, "New Instructions Supporting the Secure Hash Algorithm on
 * Intel Architecture Processors", 2013), chosen once at run time: checkpoint checksums hash tens of
 * megabytes per save, and the portable code alone would dominate the save time.  Both paths give
 * identical digests; rz_sha256_set_accel lets the tests run each against the FIPS vectors.
 *
 * Deliberately not here: SHA-224/384/512, HMAC, and any other hash. */

#include "core/sha256.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define RZ_SHA256_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define RZ_SHA256_X86 0
#endif

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube roots of the first 64
 * primes. */
static const uint32_t k256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* FIPS 180-4 5.3.3: initial hash value H(0). */
static const uint32_t h256_init[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

static uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* FIPS 180-4 6.2.2 for `nblocks` 64-byte blocks. */
static void compress_generic(uint32_t h[8], const uint8_t *data, size_t nblocks)
{
    uint32_t w[64];
    for (; nblocks > 0; nblocks--, data += 64) {
        for (int t = 0; t < 16; t++)
            w[t] = load_be32(data + 4 * t);
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);  /* σ0 */
            uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);   /* σ1 */
            w[t] = s1 + w[t - 7] + s0 + w[t - 16];
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
        for (int t = 0; t < 64; t++) {
            uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);                     /* Σ1 */
            uint32_t ch = (e & f) ^ (~e & g);
            uint32_t t1 = hh + S1 + ch + k256[t] + w[t];
            uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);                     /* Σ0 */
            uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
            uint32_t t2 = S0 + maj;
            hh = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        h[0] += a;
        h[1] += b;
        h[2] += c;
        h[3] += d;
        h[4] += e;
        h[5] += f;
        h[6] += g;
        h[7] += hh;
    }
}

#if RZ_SHA256_X86
/* The same compression with SHA-NI.  The state is kept as (A,B,E,F) and (C,D,G,H) as the
 * sha256rnds2 instruction wants; each step does four rounds, and the message schedule
 * W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16] is computed four words at a time with
 * sha256msg1 (the σ0 term), an alignr (the W[t-7] term) and sha256msg2 (the σ1 term). */
__attribute__((target("sha,sse4.1,ssse3")))
static void compress_shani(uint32_t h[8], const uint8_t *data, size_t nblocks)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i tmp = _mm_loadu_si128((const __m128i *)(const void *)&h[0]);     /* DCBA */
    __m128i st1 = _mm_loadu_si128((const __m128i *)(const void *)&h[4]);     /* HGFE */
    tmp = _mm_shuffle_epi32(tmp, 0xB1);                                      /* CDAB */
    st1 = _mm_shuffle_epi32(st1, 0x1B);                                      /* EFGH */
    __m128i st0 = _mm_alignr_epi8(tmp, st1, 8);                              /* ABEF */
    st1 = _mm_blend_epi16(st1, tmp, 0xF0);                                   /* CDGH */

    for (; nblocks > 0; nblocks--, data += 64) {
        __m128i abef = st0, cdgh = st1, m[4];
        for (int i = 0; i < 4; i++)
            m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(data + 16 * i)),
                                    bswap);
        for (int i = 0; i < 16; i++) {
            __m128i k = _mm_loadu_si128((const __m128i *)(const void *)&k256[4 * i]);
            __m128i msg = _mm_add_epi32(m[i & 3], k);
            st1 = _mm_sha256rnds2_epu32(st1, st0, msg);
            st0 = _mm_sha256rnds2_epu32(st0, st1, _mm_shuffle_epi32(msg, 0x0E));
            if (i < 12) { /* next four schedule words, replacing m[i & 3] */
                __m128i x = _mm_sha256msg1_epu32(m[i & 3], m[(i + 1) & 3]);
                x = _mm_add_epi32(x, _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4));
                m[i & 3] = _mm_sha256msg2_epu32(x, m[(i + 3) & 3]);
            }
        }
        st0 = _mm_add_epi32(st0, abef);
        st1 = _mm_add_epi32(st1, cdgh);
    }

    tmp = _mm_shuffle_epi32(st0, 0x1B);                                      /* FEBA */
    st1 = _mm_shuffle_epi32(st1, 0xB1);                                      /* DCHG */
    st0 = _mm_blend_epi16(tmp, st1, 0xF0);                                   /* DCBA */
    st1 = _mm_alignr_epi8(st1, tmp, 8);                                      /* HGFE */
    _mm_storeu_si128((__m128i *)(void *)&h[0], st0);
    _mm_storeu_si128((__m128i *)(void *)&h[4], st1);
}

static int cpu_has_shani(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    int ssse3 = (c >> 9) & 1, sse41 = (c >> 19) & 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return ssse3 && sse41 && ((b >> 29) & 1);
}
#endif

/* -1: not yet probed, 0: portable code, 1: SHA-NI.  Probing twice from two threads is harmless. */
static int use_accel = -1;

static int accel_enabled(void)
{
#if RZ_SHA256_X86
    if (use_accel < 0)
        use_accel = cpu_has_shani();
    return use_accel;
#else
    return 0;
#endif
}

bool rz_sha256_set_accel(bool on)
{
    bool was = accel_enabled() != 0;
#if RZ_SHA256_X86
    use_accel = on ? cpu_has_shani() : 0;
#endif
    return was;
}

static void compress(uint32_t h[8], const uint8_t *data, size_t nblocks)
{
#if RZ_SHA256_X86
    if (accel_enabled()) {
        compress_shani(h, data, nblocks);
        return;
    }
#endif
    compress_generic(h, data, nblocks);
}

void rz_sha256_init(struct rz_sha256 *s)
{
    memcpy(s->h, h256_init, sizeof s->h);
    s->bytes = 0;
    s->fill = 0;
}

void rz_sha256_update(struct rz_sha256 *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    s->bytes += len;
    if (s->fill > 0) {
        size_t take = 64 - s->fill < len ? 64 - s->fill : len;
        memcpy(s->block + s->fill, p, take);
        s->fill += take;
        p += take;
        len -= take;
        if (s->fill < 64)
            return;
        compress(s->h, s->block, 1);
        s->fill = 0;
    }
    if (len >= 64) {
        compress(s->h, p, len / 64);
        p += len & ~(size_t)63;
        len &= 63;
    }
    memcpy(s->block, p, len);
    s->fill = len;
}

/* FIPS 180-4 5.1.1: append a 1 bit, zeros up to 56 mod 64 bytes, then the 64-bit bit length. */
void rz_sha256_final(struct rz_sha256 *s, uint8_t out[32])
{
    uint64_t bits = s->bytes * 8;
    s->block[s->fill++] = 0x80;
    if (s->fill > 56) {
        memset(s->block + s->fill, 0, 64 - s->fill);
        compress(s->h, s->block, 1);
        s->fill = 0;
    }
    memset(s->block + s->fill, 0, 56 - s->fill);
    store_be32(s->block + 56, (uint32_t)(bits >> 32));
    store_be32(s->block + 60, (uint32_t)bits);
    compress(s->h, s->block, 1);
    for (int i = 0; i < 8; i++)
        store_be32(out + 4 * i, s->h[i]);
    memset(s->block, 0, sizeof s->block);
    s->fill = 0;
}

void rz_sha256_to_hex(const uint8_t digest[32], char out[65])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[64] = '\0';
}

void rz_sha256_hex(const void *data, size_t len, char out[65])
{
    struct rz_sha256 s;
    uint8_t digest[32];
    rz_sha256_init(&s);
    rz_sha256_update(&s, data, len);
    rz_sha256_final(&s, digest);
    rz_sha256_to_hex(digest, out);
}
