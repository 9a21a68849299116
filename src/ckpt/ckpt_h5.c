#include "config.h"

/* ckpt_h5.c: what the checkpoint files share: the metadata attribute table of the layout,
 * hashing helpers, and the HDF5 plumbing (error capture, the file-access properties every
 * checkpoint is opened with, the pre-open sanity check of a file).
 * Deliberately not here: writing (ckpt.c), reading (ckpt_read.c), directories (ckpt_dir.c). */

#include "ckpt/ckpt_h5.h"
#include "core/durable.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

const char *const ckpt_tensor_groups[3] = {"/params", "/adam_m", "/adam_v"};

/* ---- metadata table: one entry per numeric attribute of /train and /model ------------------- */

#define FIELD(g, n, t, m) {g, n, t, offsetof(struct ckpt_meta, m), 1, false}
#define FIELD_OPT(g, n, t, m, c) {g, n, t, offsetof(struct ckpt_meta, m), c, true}
const struct ckpt_field ckpt_fields[] = {
    FIELD("/train", "step", CKPT_I64, step),
    FIELD("/train", "samples_seen", CKPT_I64, samples_seen),
    FIELD("/train", "global_batch", CKPT_I64, global_batch),
    FIELD("/train", "world_size", CKPT_I64, world_size),
    FIELD("/train", "adam_t", CKPT_I64, adam_t),
    FIELD("/train", "lr", CKPT_F64, lr),
    FIELD("/train", "init_seed", CKPT_U64, init_seed),
    FIELD("/train", "data_seed", CKPT_U64, data_seed),
    FIELD("/train", "loss_sum", CKPT_F64, loss_sum),
    FIELD("/train", "train_time_s", CKPT_F64, train_time_s),
    FIELD("/train", "restarts", CKPT_I64, restarts),
    FIELD_OPT("/train", "guard_loss_mean", CKPT_F64, guard.loss_mean, 1),
    FIELD_OPT("/train", "guard_loss_var", CKPT_F64, guard.loss_var, 1),
    FIELD_OPT("/train", "guard_gnorm_mean", CKPT_F64, guard.gnorm_mean, 1),
    FIELD_OPT("/train", "guard_gnorm_var", CKPT_F64, guard.gnorm_var, 1),
    FIELD_OPT("/train", "guard_seen", CKPT_I64, guard.seen, 1),
    FIELD_OPT("/train", "skipped_steps", CKPT_I64, guard.skipped, 1),
    FIELD_OPT("/train", "guard_recent_skips", CKPT_I64, guard.recent, CKPT_GUARD_RECENT),
    FIELD("/model", "vocab", CKPT_I64, dims.vocab),
    FIELD("/model", "d_model", CKPT_I64, dims.d_model),
    FIELD("/model", "n_heads", CKPT_I64, dims.n_heads),
    FIELD("/model", "n_layers", CKPT_I64, dims.n_layers),
    FIELD("/model", "d_ff", CKPT_I64, dims.d_ff),
    FIELD("/model", "seq_len", CKPT_I64, dims.seq_len),
    FIELD("/model", "batch", CKPT_I64, dims.batch),
    FIELD("/model", "ln_eps", CKPT_F32, dims.ln_eps),
    FIELD("/model", "init_std", CKPT_F32, dims.init_std),
};
#undef FIELD
#undef FIELD_OPT
const size_t ckpt_n_fields = RZ_ARRAY_LEN(ckpt_fields);

hid_t ckpt_field_file_type(enum ckpt_field_type t)
{
    switch (t) {
    case CKPT_I64: return H5T_STD_I64LE;
    case CKPT_U64: return H5T_STD_U64LE;
    case CKPT_F64: return H5T_IEEE_F64LE;
    case CKPT_F32: return H5T_IEEE_F32LE;
    }
    return -1;
}

hid_t ckpt_field_mem_type(enum ckpt_field_type t)
{
    switch (t) {
    case CKPT_I64: return H5T_NATIVE_INT64;
    case CKPT_U64: return H5T_NATIVE_UINT64;
    case CKPT_F64: return H5T_NATIVE_DOUBLE;
    case CKPT_F32: return H5T_NATIVE_FLOAT;
    }
    return -1;
}

size_t ckpt_tensor_floats(const struct model_tensor *e)
{
    return (size_t)e->rows * (size_t)e->cols;
}

void ckpt_hash_bytes(struct rz_sha256 *s, struct rz_sha256 *also, const void *data, size_t n)
{
    const unsigned char *p = data;
    const size_t piece = 64 * 1024;
    for (size_t done = 0; done < n; done += piece) {
        size_t len = n - done < piece ? n - done : piece;
        rz_sha256_update(s, p + done, len);
        if (also != NULL)
            rz_sha256_update(also, p + done, len);
    }
}

void ckpt_hash_hex(struct rz_sha256 *s, char out[65])
{
    uint8_t digest[32];
    rz_sha256_final(s, digest);
    rz_sha256_to_hex(digest, out);
}

/* ---- HDF5 plumbing --------------------------------------------------------------------------- */

/* The innermost (first reported) entry of HDF5's error stack: the actual cause, e.g. "truncated
 * file: eof = 1024, ..." or "unable to open file: ... errno = 13, ... 'Permission denied'". */
static herr_t innermost_cb(unsigned n, const H5E_error2_t *e, void *user)
{
    char *buf = user;
    if (n == 0 && e->desc != NULL)
        snprintf(buf, 512, "%s (in %s)", e->desc, e->func_name != NULL ? e->func_name : "?");
    return 0;
}

enum rz_status ckpt_h5_fail(const struct ckpt_io *io, const char *call, const char *file, int line)
{
    char cause[512] = "no HDF5 error message";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_cb, cause);
    H5Eclear2(H5E_DEFAULT);
    /* HDF5 buries the system's errno in its text ("... errno = 28, error message = ..."): say a
     * full disk in words first, since that is what an operator must act on. */
    const char *e = strstr(cause, "errno = ");
    int code = e != NULL ? atoi(e + 8) : 0;
    bool plain = code == ENOSPC || code == EROFS
#ifdef EDQUOT
                 || code == EDQUOT
#endif
        ;
    return rz_fail(io->err, io->fail_as, "%s '%s': %s%sHDF5 call %s failed at %s:%d: %s", io->op,
                   io->path, plain ? rz_io_cause(code) : "", plain ? "; " : "", call, file, line,
                   cause);
}

enum rz_status ckpt_io_fail(const struct ckpt_io *io, const char *fmt, ...)
{
    char cause[RZ_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cause, sizeof cause, fmt, ap);
    va_end(ap);
    return rz_fail(io->err, io->fail_as, "%s '%s': %s", io->op, io->path, cause);
}

const char *ckpt_msg_cause(const char *msg, const char *path)
{
    char prefix[4200];
    snprintf(prefix, sizeof prefix, "'%s': ", path);
    const char *p = strstr(msg, prefix);
    return p != NULL ? p + strlen(prefix) : msg;
}

void ckpt_h5_quiet(void)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

hid_t ckpt_h5_fapl(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0)
        return fapl;
    /* V110 objects carry metadata checksums; pinning both bounds keeps files readable by any
     * HDF5 >= 1.10 however new the writer. */
    if (H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110) < 0 ||
        H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0)
        goto fail;
#if H5_VERSION_GE(1, 10, 7)
    /* One writer per run directory is guaranteed by the trainer, and flock() is missing on some
     * parallel file systems.  Setting HDF5_USE_FILE_LOCKING=FALSE in the environment is the
     * equivalent for older HDF5 (and for h5dump & co.). */
    if (H5Pset_file_locking(fapl, false, true) < 0)
        goto fail;
#endif
    return fapl;
fail:
    H5Pclose(fapl);
    return -1;
}

enum rz_status ckpt_precheck(const struct ckpt_io *io)
{
    static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    int fd = open(io->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rz_fail(io->err, RZ_EIO, "%s '%s': %s", io->op, io->path, strerror(errno));
    struct stat sb;
    unsigned char head[8];
    enum rz_status st = RZ_OK;
    ssize_t got = 0;
    if (fstat(fd, &sb) != 0)
        st = rz_fail(io->err, RZ_EIO, "%s '%s': %s", io->op, io->path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = rz_fail(io->err, RZ_EIO, "%s '%s': not a regular file", io->op, io->path);
    else if (sb.st_size == 0)
        st = ckpt_io_fail(io, "empty file (0 bytes)");
    else if ((got = pread(fd, head, sizeof head, 0)) < 0)
        st = rz_fail(io->err, RZ_EIO, "%s '%s': read: %s", io->op, io->path, strerror(errno));
    else if ((size_t)got < sizeof head || memcmp(head, signature, sizeof head) != 0)
        st = ckpt_io_fail(io, "not an HDF5 file (no HDF5 signature at offset 0; %lld bytes)",
                          (long long)sb.st_size);
    close(fd);
    return st;
}

enum rz_status ckpt_h5_open_ro(const struct ckpt_io *io, hid_t *file)
{
    enum rz_status st = RZ_OK;
    hid_t fapl = -1;
    *file = -1;
    CKPT_H5(fapl = ckpt_h5_fapl());
    CKPT_H5(*file = H5Fopen(io->path, H5F_ACC_RDONLY, fapl));
cleanup:
    if (fapl >= 0)
        H5Pclose(fapl);
    return st;
}
