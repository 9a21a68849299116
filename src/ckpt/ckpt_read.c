#include "config.h"

/* ckpt_read.c: reading a checkpoint back: ckpt_load, ckpt_verify and ckpt_read_meta.  Every
 * dataset's SHA-256 is checked against its sha256 attribute, the parameter hash is recomputed in
 * table order, and a format version newer than CKPT_FORMAT_VERSION is refused before anything
 * else is interpreted.  Damage maps to RZ_ENOCKPT, an unreadable path to RZ_EIO.
 * Deliberately not here: repairing files, or reading only part of a tensor. */

#include "ckpt/ckpt.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt_h5.h"

static void shape_str(char *buf, size_t len, int64_t rows, int64_t cols)
{
    if (cols == 1)
        snprintf(buf, len, "(%lld)", (long long)rows);
    else
        snprintf(buf, len, "(%lld, %lld)", (long long)rows, (long long)cols);
}

static enum rz_status require_attr(const struct ckpt_io *io, hid_t obj, const char *objname,
                                   const char *name)
{
    enum rz_status st = RZ_OK;
    htri_t exists = 0;
    CKPT_H5(exists = H5Aexists(obj, name));
    if (!exists)
        st = ckpt_io_fail(io, "missing attribute '%s' on %s", name, objname);
cleanup:
    return st;
}

static enum rz_status read_attr(const struct ckpt_io *io, hid_t obj, const char *objname,
                                const char *name, hid_t mem_type, void *value)
{
    enum rz_status st = require_attr(io, obj, objname, name);
    hid_t attr = -1;
    if (st != RZ_OK)
        return st;
    CKPT_H5(attr = H5Aopen(obj, name, H5P_DEFAULT));
    CKPT_H5(H5Aread(attr, mem_type, value));
cleanup:
    if (attr >= 0)
        H5Aclose(attr);
    return st;
}

static enum rz_status read_str_attr(const struct ckpt_io *io, hid_t obj, const char *objname,
                                    const char *name, char *buf, size_t cap)
{
    enum rz_status st = require_attr(io, obj, objname, name);
    hid_t attr = -1, type = -1;
    char *text = NULL;
    if (st != RZ_OK)
        return st;
    CKPT_H5(attr = H5Aopen(obj, name, H5P_DEFAULT));
    CKPT_H5(type = H5Aget_type(attr));
    size_t size = H5Tget_size(type);
    if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) != 0 || size > cap) {
        st = ckpt_io_fail(io, "attribute '%s' on %s is not a string of at most %zu bytes", name,
                          objname, cap - 1);
        goto cleanup;
    }
    text = calloc(size + 1, 1);
    if (text == NULL) {
        st = rz_fail(io->err, RZ_ENOMEM, "%s '%s': out of memory", io->op, io->path);
        goto cleanup;
    }
    CKPT_H5(H5Aread(attr, type, text));
    snprintf(buf, cap, "%s", text);
cleanup:
    free(text);
    if (type >= 0)
        H5Tclose(type);
    if (attr >= 0)
        H5Aclose(attr);
    return st;
}

/* Every component of the absolute `path` ("/params/wte") must exist. */
static enum rz_status require_link(const struct ckpt_io *io, hid_t file, const char *path,
                                   const char *what)
{
    enum rz_status st = RZ_OK;
    char prefix[CKPT_PATH_MAX];
    htri_t exists = 1;
    snprintf(prefix, sizeof prefix, "%s", path);
    for (char *p = prefix + 1; exists > 0; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        CKPT_H5(exists = H5Lexists(file, prefix, H5P_DEFAULT));
        *p = saved;
        if (saved == '\0')
            break;
    }
    if (!exists)
        st = ckpt_io_fail(io, "missing %s %s", what, path);
cleanup:
    return st;
}

/* Compare the SHA-256 of `n` bytes read from dataset `path` with its sha256 attribute. */
static enum rz_status check_sha(const struct ckpt_io *io, hid_t dset, const char *path,
                                const void *data, size_t n, struct rz_sha256 *also)
{
    char stored[80], computed[65];
    struct rz_sha256 s;
    enum rz_status st = read_str_attr(io, dset, path, "sha256", stored, sizeof stored);
    if (st != RZ_OK)
        return st;
    rz_sha256_init(&s);
    ckpt_hash_bytes(&s, also, data, n);
    ckpt_hash_hex(&s, computed);
    if (strcmp(stored, computed) != 0)
        return ckpt_io_fail(io, "dataset %s: SHA-256 mismatch (stored %s, computed %s)", path,
                            stored, computed);
    return RZ_OK;
}

/* The shape of a float32 tensor dataset, (d0) read as (d0, 1). */
static enum rz_status dataset_shape(const struct ckpt_io *io, hid_t dset, const char *path,
                                    int64_t *rows, int64_t *cols)
{
    enum rz_status st = RZ_OK;
    hid_t space = -1, type = -1;
    hsize_t dims[2] = {0, 1};
    int rank = 0;
    CKPT_H5(type = H5Dget_type(dset));
    if (H5Tget_class(type) != H5T_FLOAT || H5Tget_size(type) != sizeof(float)) {
        st = ckpt_io_fail(io, "dataset %s is not float32", path);
        goto cleanup;
    }
    CKPT_H5(space = H5Dget_space(dset));
    CKPT_H5(rank = H5Sget_simple_extent_ndims(space));
    if (rank < 1 || rank > 2) {
        st = ckpt_io_fail(io, "dataset %s has rank %d, expected 1 or 2", path, rank);
        goto cleanup;
    }
    CKPT_H5(H5Sget_simple_extent_dims(space, dims, NULL));
    *rows = (int64_t)dims[0];
    *cols = (int64_t)dims[1];
cleanup:
    if (type >= 0)
        H5Tclose(type);
    if (space >= 0)
        H5Sclose(space);
    return st;
}

static enum rz_status open_tensor(const struct ckpt_io *io, hid_t file, const char *group,
                                  const char *name, hid_t *dset)
{
    char path[CKPT_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", group, name);
    enum rz_status st = require_link(io, file, path, "dataset");
    *dset = -1;
    if (st != RZ_OK)
        return st;
    CKPT_H5(*dset = H5Dopen2(file, path, H5P_DEFAULT));
cleanup:
    return st;
}

/* Read GROUP/NAME, expected (rows, cols) as `expected_by` says, into dst and check its hash. */
static enum rz_status read_tensor(const struct ckpt_io *io, hid_t file, const char *group,
                                  const char *name, int64_t rows, int64_t cols,
                                  const char *expected_by, float *dst, struct rz_sha256 *also)
{
    char path[CKPT_PATH_MAX], want[64], have[64];
    hid_t dset = -1;
    int64_t frows = 0, fcols = 0;
    snprintf(path, sizeof path, "%s/%s", group, name);
    enum rz_status st = open_tensor(io, file, group, name, &dset);
    if (st == RZ_OK)
        st = dataset_shape(io, dset, path, &frows, &fcols);
    if (st == RZ_OK && (frows != rows || fcols != cols)) {
        shape_str(have, sizeof have, frows, fcols);
        shape_str(want, sizeof want, rows, cols);
        st = ckpt_io_fail(io, "tensor '%s': shape in file (%s) is %s but %s %s", name, path,
                          have, expected_by, want);
    }
    if (st != RZ_OK)
        goto cleanup;
    CKPT_H5(H5Dread(dset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, dst));
    st = check_sha(io, dset, path, dst, (size_t)rows * (size_t)cols * sizeof(float), also);
cleanup:
    if (dset >= 0)
        H5Dclose(dset);
    return st;
}

/* /model/tensor_names: *names gets count * MODEL_TENSOR_NAME_MAX bytes (caller frees). */
static enum rz_status read_names(const struct ckpt_io *io, hid_t file, char **names,
                                 size_t *count)
{
    const char *path = "/model/tensor_names";
    enum rz_status st = require_link(io, file, path, "dataset");
    hid_t dset = -1, type = -1, space = -1;
    hssize_t n = 0;
    *names = NULL;
    if (st != RZ_OK)
        return st;
    CKPT_H5(dset = H5Dopen2(file, path, H5P_DEFAULT));
    CKPT_H5(type = H5Dget_type(dset));
    CKPT_H5(space = H5Dget_space(dset));
    CKPT_H5(n = H5Sget_simple_extent_npoints(space));
    if (H5Tget_class(type) != H5T_STRING || H5Tget_size(type) != MODEL_TENSOR_NAME_MAX ||
        H5Sget_simple_extent_ndims(space) != 1) {
        st = ckpt_io_fail(io, "dataset %s is not a list of %d-byte strings", path,
                          MODEL_TENSOR_NAME_MAX);
        goto cleanup;
    }
    *names = calloc((size_t)n + 1, MODEL_TENSOR_NAME_MAX);
    if (*names == NULL) {
        st = rz_fail(io->err, RZ_ENOMEM, "%s '%s': out of memory", io->op, io->path);
        goto cleanup;
    }
    CKPT_H5(H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *names));
    st = check_sha(io, dset, path, *names, (size_t)n * MODEL_TENSOR_NAME_MAX, NULL);
    for (hssize_t i = 0; i < n && st == RZ_OK; i++) {
        const char *nm = *names + (size_t)i * MODEL_TENSOR_NAME_MAX;
        size_t len = strnlen(nm, MODEL_TENSOR_NAME_MAX);
        if (len == 0 || len == MODEL_TENSOR_NAME_MAX || strchr(nm, '/') != NULL)
            st = ckpt_io_fail(io, "%s[%lld] is not a valid tensor name", path, (long long)i);
    }
    *count = (size_t)n;
cleanup:
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (dset >= 0)
        H5Dclose(dset);
    if (st != RZ_OK) {
        free(*names);
        *names = NULL;
    }
    return st;
}

static enum rz_status read_config(const struct ckpt_io *io, hid_t file, char **yaml)
{
    const char *path = "/config/yaml";
    enum rz_status st = require_link(io, file, path, "dataset");
    hid_t dset = -1, type = -1;
    *yaml = NULL;
    if (st != RZ_OK)
        return st;
    CKPT_H5(dset = H5Dopen2(file, path, H5P_DEFAULT));
    CKPT_H5(type = H5Dget_type(dset));
    size_t size = H5Tget_size(type);
    if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) != 0 || size == 0) {
        st = ckpt_io_fail(io, "dataset %s is not a fixed-length string", path);
        goto cleanup;
    }
    *yaml = calloc(size + 1, 1);
    if (*yaml == NULL) {
        st = rz_fail(io->err, RZ_ENOMEM, "%s '%s': out of memory", io->op, io->path);
        goto cleanup;
    }
    CKPT_H5(H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *yaml));
    st = check_sha(io, dset, path, *yaml, size, NULL);
cleanup:
    if (type >= 0)
        H5Tclose(type);
    if (dset >= 0)
        H5Dclose(dset);
    if (st != RZ_OK) {
        free(*yaml);
        *yaml = NULL;
    }
    return st;
}

static enum rz_status read_version(const struct ckpt_io *io, hid_t file, int64_t *version)
{
    enum rz_status st = RZ_OK;
    htri_t exists = 0;
    CKPT_H5(exists = H5Aexists(file, "format_version"));
    if (!exists)
        return ckpt_io_fail(io, "no format_version attribute on / (not a ryzen-llm checkpoint)");
    st = read_attr(io, file, "/", "format_version", H5T_NATIVE_INT64, version);
    if (st != RZ_OK)
        return st;
    if (*version > CKPT_FORMAT_VERSION)
        return ckpt_io_fail(io, "format version %lld is newer than this build supports (%d)",
                            (long long)*version, CKPT_FORMAT_VERSION);
    if (*version < 1)
        return ckpt_io_fail(io, "invalid format version %lld", (long long)*version);
cleanup:
    return st;
}

/* An attribute must hold as many values as its field (an array attribute of the wrong length
 * would be read past its end). */
static enum rz_status check_attr_count(const struct ckpt_io *io, hid_t obj,
                                       const struct ckpt_field *f)
{
    enum rz_status st = RZ_OK;
    hid_t attr = -1, space = -1;
    hssize_t n = 0;
    CKPT_H5(attr = H5Aopen(obj, f->name, H5P_DEFAULT));
    CKPT_H5(space = H5Aget_space(attr));
    CKPT_H5(n = H5Sget_simple_extent_npoints(space));
    if (n != f->count)
        st = ckpt_io_fail(io, "attribute '%s' on %s has %lld value(s), expected %d", f->name,
                          f->group, (long long)n, f->count);
cleanup:
    if (space >= 0)
        H5Sclose(space);
    if (attr >= 0)
        H5Aclose(attr);
    return st;
}

static enum rz_status read_field(const struct ckpt_io *io, hid_t obj,
                                 const struct ckpt_field *f, struct ckpt_meta *meta)
{
    enum rz_status st = RZ_OK;
    htri_t exists = 1;
    if (f->optional)
        CKPT_H5(exists = H5Aexists(obj, f->name));
    if (!exists)
        return RZ_OK; /* written before the field existed: zeros (meta is cleared) */
    st = require_attr(io, obj, f->group, f->name);
    if (st == RZ_OK)
        st = check_attr_count(io, obj, f);
    if (st == RZ_OK)
        st = read_attr(io, obj, f->group, f->name, ckpt_field_mem_type(f->type),
                       (char *)meta + f->offset);
cleanup:
    return st;
}

static enum rz_status read_fields(const struct ckpt_io *io, hid_t file, struct ckpt_meta *meta)
{
    enum rz_status st = RZ_OK;
    hid_t obj = -1;
    for (size_t i = 0; i < ckpt_n_fields && st == RZ_OK; i++) {
        const struct ckpt_field *f = &ckpt_fields[i];
        st = require_link(io, file, f->group, "group");
        if (st != RZ_OK)
            break;
        CKPT_H5(obj = H5Oopen(file, f->group, H5P_DEFAULT));
        st = read_field(io, obj, f, meta);
        H5Oclose(obj);
        obj = -1;
    }
cleanup:
    return st;
}

/* tokenizer_sha256 on /: optional, files written before it have none ("not recorded"). */
static enum rz_status read_tokenizer(const struct ckpt_io *io, hid_t file, struct ckpt_meta *meta)
{
    enum rz_status st = RZ_OK;
    htri_t exists = 0;
    CKPT_H5(exists = H5Aexists(file, "tokenizer_sha256"));
    meta->tokenizer_recorded = exists > 0;
    if (exists > 0)
        st = read_str_attr(io, file, "/", "tokenizer_sha256", meta->tokenizer_sha256,
                           sizeof meta->tokenizer_sha256);
cleanup:
    return st;
}

/* All of struct ckpt_meta, format version first (a newer layout is refused before anything else
 * is interpreted). */
static enum rz_status read_meta(const struct ckpt_io *io, hid_t file, struct ckpt_meta *meta)
{
    memset(meta, 0, sizeof *meta);
    enum rz_status st = read_version(io, file, &meta->format_version);
    if (st == RZ_OK)
        st = read_fields(io, file, meta);
    if (st == RZ_OK)
        st = read_str_attr(io, file, "/", "build", meta->build, sizeof meta->build);
    if (st == RZ_OK)
        st = read_str_attr(io, file, "/", "config_sha256", meta->config_sha256,
                           sizeof meta->config_sha256);
    if (st == RZ_OK)
        st = read_str_attr(io, file, "/", "params_sha256", meta->params_sha256,
                           sizeof meta->params_sha256);
    if (st == RZ_OK)
        st = read_tokenizer(io, file, meta);
    if (st == RZ_OK)
        st = read_config(io, file, &meta->config_yaml);
    return st;
}

/* Each tensor group must hold exactly the tensors named in /model/tensor_names. */
static enum rz_status check_group_sizes(const struct ckpt_io *io, hid_t file, size_t count)
{
    enum rz_status st = RZ_OK;
    hid_t group = -1;
    for (int g = 0; g < 3 && st == RZ_OK; g++) {
        H5G_info_t info;
        st = require_link(io, file, ckpt_tensor_groups[g], "group");
        if (st != RZ_OK)
            break;
        CKPT_H5(group = H5Gopen2(file, ckpt_tensor_groups[g], H5P_DEFAULT));
        CKPT_H5(H5Gget_info(group, &info));
        if (info.nlinks != count)
            st = ckpt_io_fail(io, "group %s has %llu datasets but /model/tensor_names lists %zu",
                              ckpt_tensor_groups[g], (unsigned long long)info.nlinks, count);
        H5Gclose(group);
        group = -1;
    }
cleanup:
    if (group >= 0)
        H5Gclose(group);
    return st;
}

/* The model table must be the file's, name for name, in order. */
static enum rz_status check_table(const struct ckpt_io *io, const char *names, size_t count,
                                  const struct ckpt_tensors *t)
{
    if (count != t->count)
        return ckpt_io_fail(io, "file has %zu tensors but the model has %zu", count, t->count);
    for (size_t i = 0; i < count; i++) {
        const char *nm = names + i * MODEL_TENSOR_NAME_MAX;
        if (strncmp(nm, t->table[i].name, MODEL_TENSOR_NAME_MAX) != 0)
            return ckpt_io_fail(io, "tensor %zu is '%s' in the file but '%s' in the model", i, nm,
                                t->table[i].name);
    }
    return RZ_OK;
}

/* Shapes of /params/<name> (from the file itself, for verify). */
static enum rz_status file_shapes(const struct ckpt_io *io, hid_t file, const char *names,
                                  size_t count, struct model_tensor *table, size_t *max_floats)
{
    enum rz_status st = RZ_OK;
    *max_floats = 1;
    for (size_t i = 0; i < count && st == RZ_OK; i++) {
        struct model_tensor *e = &table[i];
        char path[CKPT_PATH_MAX];
        hid_t dset = -1;
        memcpy(e->name, names + i * MODEL_TENSOR_NAME_MAX, MODEL_TENSOR_NAME_MAX);
        snprintf(path, sizeof path, "/params/%s", e->name);
        st = open_tensor(io, file, "/params", e->name, &dset);
        if (st == RZ_OK)
            st = dataset_shape(io, dset, path, &e->rows, &e->cols);
        if (dset >= 0)
            H5Dclose(dset);
        e->offset = 0;
        if (st == RZ_OK && ckpt_tensor_floats(e) > *max_floats)
            *max_floats = ckpt_tensor_floats(e);
    }
    return st;
}

/* ZeRO: the part of tensor e's moments (read whole into `whole`) that [lo, hi) holds, into dst
 * (a buffer of floats lo .. hi - 1). */
static void keep_part(float *dst, size_t lo, size_t hi, const float *whole,
                      const struct model_tensor *e)
{
    size_t a = e->offset, b = e->offset + ckpt_tensor_floats(e);
    size_t x = a > lo ? a : lo, y = b < hi ? b : hi;
    if (y > x)
        memcpy(dst + (x - lo), whole + (x - a), (y - x) * sizeof *dst);
}

/* Read and check every tensor: into t's buffers (load) or a scratch buffer (verify, t->params
 * NULL, every table offset 0; and the moments of a sharded load, which keeps only its part).
 * The params hash is recomputed on the way and compared. */
static enum rz_status read_all_tensors(const struct ckpt_io *io, hid_t file,
                                       const struct ckpt_tensors *t, const char *expected_by,
                                       float *scratch, const char *stored_params_hex,
                                       char adam_hex[65])
{
    float *bufs[3] = {t->params, t->adam_m, t->adam_v};
    struct rz_sha256 all, adam;
    char params_hex[65];
    enum rz_status st = RZ_OK;
    rz_sha256_init(&all);
    rz_sha256_init(&adam);
    for (int g = 0; g < 3 && st == RZ_OK; g++)
        for (size_t i = 0; i < t->count && st == RZ_OK; i++) {
            const struct model_tensor *e = &t->table[i];
            bool part = g > 0 && t->moments_sharded;
            float *dst = scratch != NULL && (part || t->params == NULL) ? scratch
                                                                         : bufs[g] + e->offset;
            st = read_tensor(io, file, ckpt_tensor_groups[g], e->name, e->rows, e->cols,
                             expected_by, dst, g == 0 ? &all : &adam);
            if (st == RZ_OK && part)
                keep_part(bufs[g], t->moment_lo, t->moment_hi, scratch, e);
        }
    ckpt_hash_hex(&all, params_hex);
    ckpt_hash_hex(&adam, adam_hex);
    if (st == RZ_OK && strcmp(params_hex, stored_params_hex) != 0)
        st = ckpt_io_fail(io, "params_sha256 mismatch (stored %s, recomputed %s)",
                          stored_params_hex, params_hex);
    return st;
}

/* Open PATH and check all of it; t == NULL verifies against the file's own table. */
static enum rz_status check_file(const struct ckpt_io *io, const struct ckpt_tensors *t,
                                 struct ckpt_meta *meta)
{
    hid_t file = -1;
    char *names = NULL;
    size_t count = 0, max_floats = 0;
    struct model_tensor *own = NULL;
    float *scratch = NULL;
    memset(meta, 0, sizeof *meta);
    ckpt_h5_quiet();
    enum rz_status st = ckpt_precheck(io);
    if (st == RZ_OK)
        st = ckpt_h5_open_ro(io, &file);
    if (st == RZ_OK)
        st = read_meta(io, file, meta);
    if (st == RZ_OK)
        st = read_names(io, file, &names, &count);
    if (st == RZ_OK && t != NULL)
        st = check_table(io, names, count, t);
    if (st == RZ_OK && t != NULL && t->moments_sharded) { /* one tensor's moments at a time */
        for (size_t i = 0; i < t->count; i++)
            max_floats = ckpt_tensor_floats(&t->table[i]) > max_floats
                             ? ckpt_tensor_floats(&t->table[i]) : max_floats;
        if ((scratch = malloc((max_floats ? max_floats : 1) * sizeof(float))) == NULL)
            st = rz_fail(io->err, RZ_ENOMEM, "%s '%s': out of memory", io->op, io->path);
    }
    if (st == RZ_OK && t == NULL) {
        own = calloc(count + 1, sizeof *own);
        if (own == NULL)
            st = rz_fail(io->err, RZ_ENOMEM, "%s '%s': out of memory", io->op, io->path);
        else
            st = file_shapes(io, file, names, count, own, &max_floats);
        if (st == RZ_OK && (scratch = malloc(max_floats * sizeof(float))) == NULL)
            st = rz_fail(io->err, RZ_ENOMEM, "%s '%s': out of memory", io->op, io->path);
    }
    if (st == RZ_OK) {
        struct ckpt_tensors file_t = {.table = own, .count = count, .n_floats = max_floats};
        st = read_all_tensors(io, file, t != NULL ? t : &file_t,
                              t != NULL ? "the model expects" : "/params has", scratch,
                              meta->params_sha256, meta->adam_sha256);
    }
    if (st == RZ_OK) /* after the per-tensor reads, so a missing dataset is named */
        st = check_group_sizes(io, file, count);
    if (file >= 0)
        H5Fclose(file);
    free(scratch);
    free(own);
    free(names);
    return st;
}

enum rz_status ckpt_load(const char *path, struct ckpt_meta *meta, const struct ckpt_tensors *t,
                         struct rz_err *err)
{
    struct ckpt_io io = {"load checkpoint", path, RZ_ENOCKPT, err};
    struct ckpt_meta m;
    for (size_t i = 0; i < t->count; i++)
        if (t->table[i].offset + ckpt_tensor_floats(&t->table[i]) > t->n_floats)
            return ckpt_io_fail(&io, "tensor '%s' lies outside the %zu-float buffers",
                                t->table[i].name, t->n_floats);
    enum rz_status st = check_file(&io, t, &m);
    if (st != RZ_OK) {
        ckpt_meta_free(&m);
        return st;
    }
    *meta = m;
    return RZ_OK;
}

enum rz_status ckpt_verify(const char *path, struct rz_err *err)
{
    struct ckpt_meta m;
    enum rz_status st = ckpt_inspect(path, &m, err);
    if (st == RZ_OK)
        ckpt_meta_free(&m);
    return st;
}

enum rz_status ckpt_inspect(const char *path, struct ckpt_meta *meta, struct rz_err *err)
{
    struct ckpt_io io = {"verify checkpoint", path, RZ_ENOCKPT, err};
    struct ckpt_meta m;
    enum rz_status st = check_file(&io, NULL, &m);
    if (st != RZ_OK) {
        ckpt_meta_free(&m);
        return st;
    }
    *meta = m;
    return RZ_OK;
}

enum rz_status ckpt_read_meta(const char *path, struct ckpt_meta *meta, struct rz_err *err)
{
    struct ckpt_io io = {"read checkpoint metadata", path, RZ_ENOCKPT, err};
    struct ckpt_meta m;
    hid_t file = -1;
    memset(&m, 0, sizeof m);
    ckpt_h5_quiet();
    enum rz_status st = ckpt_precheck(&io);
    if (st == RZ_OK)
        st = ckpt_h5_open_ro(&io, &file);
    if (st == RZ_OK)
        st = read_meta(&io, file, &m);
    if (file >= 0)
        H5Fclose(file);
    if (st != RZ_OK) {
        ckpt_meta_free(&m);
        return st;
    }
    *meta = m;
    return RZ_OK;
}
