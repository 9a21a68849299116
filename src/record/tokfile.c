/* tokfile.c: the token file's header (encode, decode, read from a path) and its durable writer;
 * the format is tokfile.h's layout comment and docs/data.md, "Token file".
 *
 * The writer streams ids into a core/durable.h temporary file behind a placeholder header, and at
 * commit seeks back to write the final header (the count is known only then), reads the
 * temporary file back once to hash exactly the bytes it commits, and renames it over the final
 * name.  The read-back costs one sequential read of the file (page cache, far faster than the
 * encoding that produced it); hashing while writing cannot work, because the header that comes
 * first changes last.
 *
 * Deliberately not here: mapping and sampling ids (src/data/file.c), the manifest of many token
 * files (manifest.c), the .sha256 sidecar (ryzen-data). */
#include "config.h"

#include "record/tokfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

bool tokfile_has_magic(const void *buf, size_t len)
{
    return len >= 8 && memcmp(buf, TOKFILE_MAGIC, 8) == 0;
}

void tokfile_header_encode(const struct tokfile_header *h, uint8_t out[TOKFILE_HEADER_BYTES])
{
    memset(out, 0, TOKFILE_HEADER_BYTES);
    memcpy(out, TOKFILE_MAGIC, 8);
    put_u32(out + 8, h->version);
    put_u32(out + 12, TOKFILE_HEADER_BYTES);
    put_u32(out + 16, h->width);
    put_u64(out + 24, h->vocab_size);
    put_u64(out + 32, h->n_tokens);
    memcpy(out + 40, h->tokenizer_sha256, 32);
}

/* Width and vocabulary agree: 2 or 4 bytes, V >= 1, and a uint16 file's V fits 16 bits. */
static bool width_ok(uint32_t width, uint64_t vocab)
{
    return (width == 2 && vocab <= 65536u) || (width == 4 && vocab <= 4294967296ull);
}

enum rz_status tokfile_header_decode(const void *buf, size_t len, uint64_t file_bytes,
                                     const char *path, struct tokfile_header *h,
                                     struct rz_err *err)
{
    const uint8_t *p = buf;
    memset(h, 0, sizeof *h);
    if (!tokfile_has_magic(buf, len))
        return rz_fail(err, RZ_EDATA, "token file '%s': no \"%s\" magic: a headerless file",
                       path, TOKFILE_MAGIC);
    if (len < TOKFILE_HEADER_BYTES || file_bytes < TOKFILE_HEADER_BYTES)
        return rz_fail(err, RZ_EDATA,
                       "token file '%s': truncated header: %llu bytes, a header is %u",
                       path, (unsigned long long)(file_bytes < len ? file_bytes : len),
                       TOKFILE_HEADER_BYTES);
    uint32_t version = get_u32(p + 8), hbytes = get_u32(p + 12);
    if (version != TOKFILE_VERSION)
        return rz_fail(err, RZ_EDATA,
                       "token file '%s': format version %u, this build reads version %u: "
                       "re-encode it with this ryzen-data", path, version, TOKFILE_VERSION);
    if (hbytes != TOKFILE_HEADER_BYTES)
        return rz_fail(err, RZ_EDATA, "token file '%s': header size %u, version %u has %u",
                       path, hbytes, version, TOKFILE_HEADER_BYTES);
    h->version = version;
    h->width = get_u32(p + 16);
    h->vocab_size = get_u64(p + 24);
    h->n_tokens = get_u64(p + 32);
    memcpy(h->tokenizer_sha256, p + 40, 32);
    if (h->vocab_size == 0 || !width_ok(h->width, h->vocab_size))
        return rz_fail(err, RZ_EDATA,
                       "token file '%s': id width %u bytes with a vocabulary of %llu tokens: "
                       "the width must be 2 (vocabulary <= 65536) or 4", path, h->width,
                       (unsigned long long)h->vocab_size);
    uint64_t ids = file_bytes - TOKFILE_HEADER_BYTES;
    if (ids % h->width != 0 || ids / h->width != h->n_tokens)
        return rz_fail(err, RZ_EDATA,
                       "token file '%s': the header says %llu tokens of %u bytes (%llu bytes "
                       "with the header), the file has %llu bytes: truncated or appended to",
                       path, (unsigned long long)h->n_tokens, h->width,
                       (unsigned long long)(h->n_tokens <= (UINT64_MAX - 128) / h->width
                                                ? TOKFILE_HEADER_BYTES + h->n_tokens * h->width
                                                : UINT64_MAX),
                       (unsigned long long)file_bytes);
    return RZ_OK;
}

enum rz_status tokfile_read_header(const char *path, struct tokfile_header *h, bool *has_header,
                                   struct rz_err *err)
{
    uint8_t buf[TOKFILE_HEADER_BYTES];
    struct stat st;
    memset(h, 0, sizeof *h);
    *has_header = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rz_fail(err, RZ_EIO, "open token file '%s': %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        int saved = errno;
        close(fd);
        return rz_fail(err, RZ_EIO, "stat token file '%s': %s", path, strerror(saved));
    }
    size_t got = 0;
    while (got < sizeof buf) {
        ssize_t r = read(fd, buf + got, sizeof buf - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int saved = errno;
            close(fd);
            return rz_fail(err, RZ_EIO, "read token file '%s': %s", path, strerror(saved));
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!tokfile_has_magic(buf, got))
        return RZ_OK;
    *has_header = true;
    return tokfile_header_decode(buf, got, (uint64_t)st.st_size, path, h, err);
}

void tokfile_sha_hex(const struct tokfile_header *h, char out[65])
{
    static const uint8_t zero[32];
    if (memcmp(h->tokenizer_sha256, zero, 32) == 0)
        out[0] = '\0';
    else
        rz_sha256_to_hex(h->tokenizer_sha256, out);
}

/* ---- writer ---- */

enum rz_status tokfile_writer_open(struct tokfile_writer *w, const char *path, unsigned width,
                                   uint64_t vocab_size, const uint8_t tokenizer_sha256[32],
                                   struct rz_err *err)
{
    uint8_t head[TOKFILE_HEADER_BYTES];
    memset(w, 0, sizeof *w);
    if (width == 0)
        width = vocab_size <= 65536u ? 2 : 4;
    if (vocab_size == 0 || !width_ok(width, vocab_size))
        return rz_fail(err, RZ_ECONFIG,
                       "token file '%s': id width %u bytes cannot hold a vocabulary of %llu "
                       "tokens (2 bytes: up to 65536; 4 bytes: up to 2^32)", path, width,
                       (unsigned long long)vocab_size);
    w->h.version = TOKFILE_VERSION;
    w->h.width = width;
    w->h.vocab_size = vocab_size;
    if (tokenizer_sha256 != NULL)
        memcpy(w->h.tokenizer_sha256, tokenizer_sha256, 32);
    enum rz_status st = rz_durable_open(&w->d, path, "tokfile", err);
    if (st != RZ_OK)
        return st;
    w->open = true;
    tokfile_header_encode(&w->h, head);   /* count 0 until commit */
    if (fwrite(head, 1, sizeof head, w->d.f) != sizeof head) {
        int saved = errno;
        tokfile_writer_abort(w);
        return rz_fail(err, RZ_EIO, "write token file '%s': %s", path, rz_io_cause(saved));
    }
    return RZ_OK;
}

/* On failure the writer stays open: the caller aborts it (nothing is committed). */
enum rz_status tokfile_writer_append(struct tokfile_writer *w, const int32_t *ids, size_t n,
                                     struct rz_err *err)
{
    uint8_t buf[8192];
    size_t fill = 0;
    uint64_t base = w->h.n_tokens;
    if (!w->open)
        return rz_fail(err, RZ_EIO, "write token file: writer not open");
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (uint64_t)ids[i] >= w->h.vocab_size)
            return rz_fail(err, RZ_EDATA,
                           "token file '%s': id %ld at token %llu is outside the vocabulary of "
                           "%llu tokens", w->d.path, (long)ids[i],
                           (unsigned long long)(base + i),
                           (unsigned long long)w->h.vocab_size);
        uint32_t v = (uint32_t)ids[i];
        for (unsigned b = 0; b < w->h.width; b++)
            buf[fill++] = (uint8_t)(v >> (8 * b));
        if (fill == sizeof buf || i + 1 == n) {
            if (fwrite(buf, 1, fill, w->d.f) != fill)
                return rz_fail(err, RZ_EIO, "write token file '%s': %s", w->d.path,
                               rz_io_cause(errno));
            w->h.n_tokens += fill / w->h.width;
            fill = 0;
        }
    }
    return RZ_OK;
}

enum rz_status tokfile_sha256_file(const char *path, char hex[65], uint64_t *bytes,
                                   struct rz_err *err)
{
    static _Thread_local uint8_t buf[1 << 16];
    uint8_t digest[32];
    struct rz_sha256 sha;
    uint64_t total = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) /* a missing file is missing data (as a missing shard is); the rest is I/O */
        return rz_fail(err, errno == ENOENT ? RZ_EDATA : RZ_EIO, "hash '%s': %s", path,
                       strerror(errno));
    rz_sha256_init(&sha);
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int saved = errno;
            close(fd);
            return rz_fail(err, RZ_EIO, "hash '%s': read: %s", path, rz_io_cause(saved));
        }
        if (r == 0)
            break;
        rz_sha256_update(&sha, buf, (size_t)r);
        total += (uint64_t)r;
    }
    close(fd);
    rz_sha256_final(&sha, digest);
    rz_sha256_to_hex(digest, hex);
    if (bytes != NULL)
        *bytes = total;
    return RZ_OK;
}

enum rz_status tokfile_writer_commit(struct tokfile_writer *w, char file_sha256_hex[65],
                                     struct rz_err *err)
{
    uint8_t head[TOKFILE_HEADER_BYTES];
    char hex[65];
    uint64_t bytes = 0;
    if (!w->open)
        return rz_fail(err, RZ_EIO, "write token file: writer not open");
    tokfile_header_encode(&w->h, head);
    errno = 0;
    bool ok = fflush(w->d.f) == 0 && fseek(w->d.f, 0, SEEK_SET) == 0 &&
              fwrite(head, 1, sizeof head, w->d.f) == sizeof head && fflush(w->d.f) == 0;
    if (!ok) {
        int saved = errno;
        char path[RZ_DURABLE_PATH_MAX];
        rz_fmt(path, sizeof path, "%s", w->d.path);
        tokfile_writer_abort(w);
        return rz_fail(err, RZ_EIO, "write token file '%s': %s", path,
                       saved != 0 ? rz_io_cause(saved) : "write error");
    }
    enum rz_status st = tokfile_sha256_file(w->d.tmp, hex, &bytes, err);
    uint64_t want = TOKFILE_HEADER_BYTES + w->h.n_tokens * w->h.width;
    if (st == RZ_OK && bytes != want)
        st = rz_fail(err, RZ_EIO, "write token file '%s': %llu bytes written, %llu expected",
                     w->d.path, (unsigned long long)bytes, (unsigned long long)want);
    if (st != RZ_OK) {
        tokfile_writer_abort(w);
        return st;
    }
    w->open = false;
    st = rz_durable_commit(&w->d, err);
    if (st == RZ_OK && file_sha256_hex != NULL)
        memcpy(file_sha256_hex, hex, 65);
    return st;
}

void tokfile_writer_abort(struct tokfile_writer *w)
{
    if (!w->open)
        return;
    rz_durable_abort(&w->d);
    w->open = false;
}
