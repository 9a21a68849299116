/* file.c: the text and token files behind data.kind = text | tokens (file.h): open, the
 * header of a token file (record/tokfile.h) or the width data.token_dtype gives a headerless one,
 * the size checks, one streaming pass that checks every id and counts the training split's
 * unigrams, and a read-only memory map that samples read from.
 *
 * A file of any size costs this process only the pages one sample touches: the map is read-only
 * and private, the kernel pages it in on demand, and each read unmaps them again (they stay in the
 * page cache, shared and reclaimable, but leave this process's RSS).  The id check reads the file
 * once through a 1 MiB buffer instead of the map, so it leaves nothing mapped either.
 *
 * Ids are little-endian uint16 or uint32 (2 or 4 bytes), decoded byte by byte, so the format does
 * not depend on the host.  Deliberately not here: compression, several files (seq.c), and any
 * per-sample state (an offset is a pure function of the sample's key, data.c). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/file.h"

#define FILE_CHECK_CHUNK ((size_t)1 << 20) /* bytes per read of the id check; a multiple of 4 */

static const char *file_dtype(unsigned width)
{
    return width == 4 ? "uint32" : width == 2 ? "uint16" : "byte";
}

/* The last `rest` bytes of a file whose size is not a whole number of ids, shown as hex. */
static void file_tail_hex(int fd, size_t bytes, size_t rest, char *out, size_t len)
{
    unsigned char tail[4] = {0};
    size_t used = 0;
    out[0] = '\0';
    if (pread(fd, tail, rest, (off_t)(bytes - rest)) != (ssize_t)rest)
        return;
    for (size_t i = 0; i < rest && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s0x%02x", i ? " " : "", tail[i]);
}

static enum rz_status file_check_size(const struct data_file *f, int fd, const char *label,
                                      const char *path, int64_t seq_len, struct rz_err *err)
{
    size_t rest = (f->bytes - f->offset) % f->width;
    if (rest != 0) {
        char hex[32];
        file_tail_hex(fd, f->bytes, rest, hex, sizeof hex);
        return rz_fail(err, RZ_EDATA, "%s '%s': size %zu bytes is %s; expected little-endian %s "
                       "token ids (%u bytes each): the last %zu byte(s) (%s) at byte offset %zu "
                       "are part of no id", label, path, f->bytes,
                       f->width == 2 ? "odd" : "not a multiple of 4", file_dtype(f->width),
                       f->width, rest, hex, f->bytes - rest);
    }
    if (seq_len < 0 || f->n_tokens >= (uint64_t)seq_len + 1)
        return RZ_OK;
    if (f->width == 1)
        return rz_fail(err, RZ_EDATA, "%s '%s' has %zu bytes; model.seq_len %" PRId64 " needs at "
                       "least %" PRId64 " (T+1)", label, path, f->bytes, seq_len, seq_len + 1);
    return rz_fail(err, RZ_EDATA, "%s '%s' has %" PRIu64 " tokens (%zu bytes); model.seq_len %"
                   PRId64 " needs at least %" PRId64 " (T+1)", label, path, f->n_tokens, f->bytes,
                   seq_len, seq_len + 1);
}

static uint32_t file_decode(const unsigned char *p, unsigned width)
{
    uint32_t id = (uint32_t)p[0] | (uint32_t)p[1] << 8;
    if (width == 4)
        id |= (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return id;
}

/* Read all of [off, off + want) into buf (short reads and EINTR retried). */
static enum rz_status file_pread(int fd, unsigned char *buf, size_t want, size_t off,
                                 const char *label, const char *path, struct rz_err *err)
{
    size_t got = 0;
    while (got < want) {
        ssize_t n = pread(fd, buf + got, want - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return rz_fail(err, RZ_EIO, "%s '%s': read at byte offset %zu: %s", label, path,
                           off + got, n < 0 ? strerror(errno) : "unexpected end of file");
        got += (size_t)n;
    }
    return RZ_OK;
}

/* Every id must be < V: report the first that is not, with its value, token index and byte
 * offset; count the first count_n ids into counts.  Streams the file through one buffer
 * (constant memory, whatever the file's size). */
static enum rz_status file_scan_fd(const struct data_file *f, int fd, const char *label,
                                   const char *path, int64_t vocab, uint64_t *counts,
                                   uint64_t count_n, struct rz_err *err)
{
    unsigned char *buf = malloc(FILE_CHECK_CHUNK);
    if (buf == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s '%s': out of memory for the id check", label, path);
    enum rz_status st = RZ_OK;
    size_t end = f->offset + (size_t)f->n_tokens * f->width;
    for (size_t off = f->offset; st == RZ_OK && off < end; off += FILE_CHECK_CHUNK) {
        size_t want = end - off < FILE_CHECK_CHUNK ? end - off : FILE_CHECK_CHUNK;
        st = file_pread(fd, buf, want, off, label, path, err);
        for (size_t i = 0; st == RZ_OK && i < want; i += f->width) {
            uint32_t id = f->width == 1 ? buf[i] : file_decode(buf + i, f->width);
            uint64_t tok = (off + i - f->offset) / f->width;
            if ((int64_t)id >= vocab)
                st = rz_fail(err, RZ_EDATA, "%s '%s': token id %" PRIu32 " at token #%" PRIu64
                             " (byte offset %zu) is >= model.vocab_size %" PRId64, label, path,
                             id, tok, off + i, vocab);
            else if (counts != NULL && tok < count_n)
                counts[id]++;
        }
    }
    free(buf);
    return st;
}

static enum rz_status file_map(struct data_file *f, int fd, const char *label, const char *path,
                               struct rz_err *err)
{
    void *p = mmap(NULL, f->bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return rz_fail(err, errno == ENOMEM ? RZ_ENOMEM : RZ_EIO, "%s '%s': mmap of %zu bytes: "
                       "%s", label, path, f->bytes, strerror(errno));
    /* samples are windows at random offsets: no read-ahead beyond what they touch */
    (void)madvise(p, f->bytes, MADV_RANDOM);
    f->map = p;
    return RZ_OK;
}

/* Why open(2) failed: a path that names no readable file is bad input (RZ_EDATA, exit 64, as
 * ryzen-step refuses it before srun); a failing device or exhausted descriptors is I/O (74). */
static enum rz_status file_open_status(int errnum)
{
    switch (errnum) {
    case ENOENT: case ENOTDIR: case EACCES: case EPERM: case ELOOP: case ENAMETOOLONG:
    case EISDIR:
        return RZ_EDATA;
    default:
        return RZ_EIO;
    }
}

static const char *file_type_name(mode_t mode)
{
    return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket"
         : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device" : "not a file";
}

static enum rz_status file_open_fd(int *fd, struct data_file *f, const char *label,
                                   const char *path, struct rz_err *err)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return rz_fail(err, file_open_status(errno), "%s: open '%s': %s", label, path,
                       strerror(errno));
    struct stat sb;
    if (fstat(*fd, &sb) != 0)
        return rz_fail(err, RZ_EIO, "%s: stat '%s': %s", label, path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return rz_fail(err, RZ_EDATA, "%s: open '%s': it is %s, not a regular file", label, path,
                       file_type_name(sb.st_mode));
    f->bytes = (size_t)sb.st_size;
    return RZ_OK;
}

/* The header, if any, and the width: from the header, else data.token_dtype (file.h). */
static enum rz_status file_read_header(struct data_file *f, int fd, const char *label,
                                       const char *path, unsigned width, struct rz_err *err)
{
    unsigned char head[TOKFILE_HEADER_BYTES];
    size_t got = f->bytes < sizeof head ? f->bytes : sizeof head;
    enum rz_status st = file_pread(fd, head, got, 0, label, path, err);
    if (st != RZ_OK)
        return st;
    f->has_header = tokfile_has_magic(head, got);
    if (f->has_header && width == 1)
        return rz_fail(err, RZ_ECONFIG, "%s '%s' is a token file (it starts with a %s header), "
                       "not text: set data.kind: tokens", label, path, TOKFILE_MAGIC);
    if (f->has_header) {
        st = tokfile_header_decode(head, got, f->bytes, path, &f->header, err);
        if (st != RZ_OK)
            return st;
        if (width != 0 && width != f->header.width)
            return rz_fail(err, RZ_ECONFIG, "%s '%s' holds %s ids (its header says so), "
                           "data.token_dtype is %s: set data.token_dtype: auto", label, path,
                           file_dtype(f->header.width), file_dtype(width));
        f->offset = TOKFILE_HEADER_BYTES;
        f->width = f->header.width;
        return RZ_OK;
    }
    if (width == 0)
        return rz_fail(err, RZ_ECONFIG, "%s '%s' has no header (no %s magic), so the width of "
                       "its ids is unknown: set data.token_dtype: uint16 or uint32, or re-encode "
                       "it with `ryzen-data encode`", label, path, TOKFILE_MAGIC);
    f->width = width;
    return RZ_OK;
}

enum rz_status data_file_open(struct data_file *f, const char *label, const char *path,
                              unsigned width, int64_t seq_len, struct rz_err *err)
{
    memset(f, 0, sizeof *f);
    f->width = width;
    int fd = -1;
    enum rz_status st = file_open_fd(&fd, f, label, path, err);
    if (st == RZ_OK)
        st = file_read_header(f, fd, label, path, width, err);
    if (st == RZ_OK) {
        f->n_tokens = (f->bytes - f->offset) / f->width;
        st = file_check_size(f, fd, label, path, seq_len, err);
    }
    if (st == RZ_OK)
        st = file_map(f, fd, label, path, err);
    if (fd >= 0)
        close(fd); /* the map keeps its own reference to the file */
    return st;
}

enum rz_status data_file_scan(const struct data_file *f, const char *label, const char *path,
                              int64_t vocab, uint64_t *counts, uint64_t count_n,
                              struct rz_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rz_fail(err, file_open_status(errno), "%s: open '%s': %s", label, path,
                       strerror(errno));
    struct stat sb;
    enum rz_status st = RZ_OK;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size != f->bytes)
        st = rz_fail(err, RZ_EDATA, "%s '%s' changed while it was being opened", label, path);
    if (st == RZ_OK)
        st = file_scan_fd(f, fd, label, path, vocab, counts, count_n, err);
    close(fd);
    return st;
}

void data_file_close(struct data_file *f)
{
    if (f->map != NULL)
        munmap((void *)f->map, f->bytes);
    memset(f, 0, sizeof *f);
}

void data_file_read(const struct data_file *f, uint64_t first, int64_t count, int32_t *tokens)
{
    const unsigned char *p = f->map + f->offset + first * f->width;
    if (f->width == 1) {
        for (int64_t t = 0; t < count; t++)
            tokens[t] = (int32_t)p[t];
    } else {
        for (int64_t t = 0; t < count; t++)
            tokens[t] = (int32_t)file_decode(p + (size_t)t * f->width, f->width);
    }
    /* Unmap what the read faulted in (the page cache keeps it).  A fault maps a whole large folio
     * of a cached file, far more than the window, and those pages would count in this process's
     * RSS, which the memory gate and the planner judge; the whole map is released, since the
     * kernel decides which neighbours it mapped.  Cheap when little is mapped. */
    (void)madvise((void *)f->map, f->bytes, MADV_DONTNEED);
}

const char *data_file_dtype(const struct data_file *f)
{
    return file_dtype(f->width);
}
