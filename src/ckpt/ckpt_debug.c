#include "config.h"

/* ckpt_debug.c: in-place damage of checkpoint files for tests and forensics (see ckpt_debug.h).
 * Deliberately not here: anything the trainer uses; checksums are never updated. */

#include "ckpt/ckpt_debug.h"

#include "ckpt/ckpt_h5.h"

static enum rz_status open_rw(const struct ckpt_io *io, hid_t *file)
{
    enum rz_status st = RZ_OK;
    hid_t fapl = -1;
    *file = -1;
    ckpt_h5_quiet();
    CKPT_H5(fapl = ckpt_h5_fapl());
    CKPT_H5(*file = H5Fopen(io->path, H5F_ACC_RDWR, fapl));
cleanup:
    if (fapl >= 0)
        H5Pclose(fapl);
    return st;
}

enum rz_status ckpt_debug_data_extent(const char *path, const char *dataset, int64_t *offset,
                                      int64_t *size, struct rz_err *err)
{
    struct ckpt_io io_v = {"locate dataset data in", path, RZ_EIO, err}, *io = &io_v;
    enum rz_status st = RZ_OK;
    hid_t file = -1, dset = -1;
    haddr_t addr = HADDR_UNDEF;
    ckpt_h5_quiet();
    st = ckpt_h5_open_ro(io, &file);
    if (st != RZ_OK)
        return st;
    CKPT_H5(dset = H5Dopen2(file, dataset, H5P_DEFAULT));
    addr = H5Dget_offset(dset);
    if (addr == HADDR_UNDEF) {
        st = ckpt_io_fail(io, "dataset %s has no contiguous storage", dataset);
        goto cleanup;
    }
    *offset = (int64_t)addr;
    *size = (int64_t)H5Dget_storage_size(dset);
cleanup:
    if (dset >= 0)
        H5Dclose(dset);
    if (file >= 0)
        H5Fclose(file);
    return st;
}

enum rz_status ckpt_debug_unlink(const char *path, const char *object, struct rz_err *err)
{
    struct ckpt_io io_v = {"unlink object in", path, RZ_EIO, err}, *io = &io_v;
    hid_t file = -1;
    enum rz_status st = open_rw(io, &file);
    if (st != RZ_OK)
        return st;
    CKPT_H5(H5Ldelete(file, object, H5P_DEFAULT));
cleanup:
    if (file >= 0)
        H5Fclose(file);
    return st;
}

enum rz_status ckpt_debug_set_attr_i64(const char *path, const char *object, const char *attr,
                                       int64_t value, struct rz_err *err)
{
    struct ckpt_io io_v = {"set attribute in", path, RZ_EIO, err}, *io = &io_v;
    hid_t file = -1, a = -1;
    enum rz_status st = open_rw(io, &file);
    if (st != RZ_OK)
        return st;
    CKPT_H5(a = H5Aopen_by_name(file, object, attr, H5P_DEFAULT, H5P_DEFAULT));
    CKPT_H5(H5Awrite(a, H5T_NATIVE_INT64, &value));
cleanup:
    if (a >= 0)
        H5Aclose(a);
    if (file >= 0)
        H5Fclose(file);
    return st;
}

enum rz_status ckpt_debug_delete_attr(const char *path, const char *object, const char *attr,
                                      struct rz_err *err)
{
    struct ckpt_io io_v = {"delete attribute in", path, RZ_EIO, err}, *io = &io_v;
    hid_t file = -1;
    enum rz_status st = open_rw(io, &file);
    if (st != RZ_OK)
        return st;
    CKPT_H5(H5Adelete_by_name(file, object, attr, H5P_DEFAULT));
cleanup:
    if (file >= 0)
        H5Fclose(file);
    return st;
}
