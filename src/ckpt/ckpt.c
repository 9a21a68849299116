#include "config.h"

/* ckpt.c: writing a checkpoint: its HDF5 layout and the atomic commit.  Reading it back with every
 * checksum verified is ckpt_read.c; discovery, quarantine, retention and listing are ckpt_dir.c;
 * shared tables and HDF5 plumbing are ckpt_h5.c.
 *
 * Layout (format version 1; every name below is what h5dump shows):
 *   /                 attrs format, format_version, build, created_utc, config_sha256,
 *                     params_sha256, tokenizer_sha256 ("" when the data names no tokenizer;
 *                     absent in files written before it), description
 *   /train            attrs step, samples_seen, global_batch, world_size, adam_t, lr, init_seed,
 *                     data_seed, loss_sum, train_time_s, restarts, description
 *   /model            attrs vocab, d_model, n_heads, n_layers, d_ff, seq_len, batch, ln_eps,
 *                     init_std, n_params, description
 *   /model/tensor_names   (N) fixed 48-byte strings: the model table in order
 *   /config/yaml      scalar string: the resolved config
 *   /params/<name>, /adam_m/<name>, /adam_v/<name>
 *                     float32 little-endian, contiguous, (rows, cols) or (rows) when cols == 1
 * Every dataset has a string attribute sha256: SHA-256 of its raw bytes, checked on every read.
 * params_sha256 hashes all /params bytes in tensor_names order (= ckpt_params_sha256).
 *
 * Commit: write NAME.tmp, H5Fflush + H5Fclose, then the project's one durable commit
 * (core/durable.h: fsync the file, rename it to NAME, fsync the directory).  In a test-hook build
 * RYZEN_TEST_CRASH_AT=ckpt:STAGE stops the process at that stage (core/hooks.h), so tests can
 * prove a crash never exposes a partial checkpoint.
 *
 * Deliberately not here: compression, chunking and partial reads (a checkpoint is small and read
 * whole), parallel HDF5 (one rank writes), and reading any format version newer than ours. */

#include "ckpt/ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ckpt/ckpt_h5.h"
#include "core/durable.h"
#include "core/hooks.h"
#include "core/sha256.h"
#include "core/util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint checksums hash the in-memory floats as float32 little-endian bytes"
#endif

/* ---- public helpers ------------------------------------------------------------------------ */

void ckpt_meta_free(struct ckpt_meta *meta)
{
    if (meta == NULL)
        return;
    free(meta->config_yaml);
    meta->config_yaml = NULL;
}

void ckpt_params_sha256(const struct ckpt_tensors *t, char out[65])
{
    struct rz_sha256 s;
    rz_sha256_init(&s);
    for (size_t i = 0; i < t->count; i++)
        rz_sha256_update(&s, t->params + t->table[i].offset,
                         ckpt_tensor_floats(&t->table[i]) * sizeof(float));
    ckpt_hash_hex(&s, out);
}

static const struct {
    const char *path, *text;
} descriptions[] = {
    {"/", "ryzen-llm training checkpoint. Every dataset has attribute sha256 = SHA-256 of its raw "
          "bytes; params_sha256 = SHA-256 of all /params bytes (float32 LE) in "
          "/model/tensor_names order; config_sha256 = SHA-256 of the resolved config text; "
          "tokenizer_sha256 = SHA-256 of the tokenizer the training tokens were encoded with "
          "(empty: none named). Layout: docs/checkpoint-format.md"},
    {"/train", "step: optimizer steps completed; samples_seen: global samples consumed (the data "
               "cursor); global_batch: samples per optimizer step; world_size: ranks at save; "
               "adam_t: Adam steps taken; lr: learning rate of the last step; init_seed, "
               "data_seed: counter-based RNG seeds (state = seed + counter); loss_sum: sum of "
               "per-step mean losses (nats); train_time_s: training time in seconds, restarts "
               "excluded; restarts: resumes so far"},
    {"/model", "model dims (vocab V, d_model C, n_heads H, n_layers L, d_ff F, seq_len T, batch B "
               "per rank per micro-step, ln_eps, init_std), n_params; tensor_names: the parameter "
               "table in buffer order"},
    {"/config", "yaml: the resolved run configuration (after --set overrides)"},
    {"/params", "model parameters, float32, one dataset per table entry, (rows, cols) or (rows)"},
    {"/adam_m", "Adam first moment m (Kingma & Ba 2015), same layout as /params"},
    {"/adam_v", "Adam second moment v (Kingma & Ba 2015), same layout as /params"},
};

/* ---- writing --------------------------------------------------------------------------------- */

/* A numeric attribute: a scalar, or a 1-D array of `count` values. */
static enum rz_status write_attr_n(const struct ckpt_io *io, hid_t obj, const char *name,
                                   hid_t file_type, hid_t mem_type, const void *value, int count)
{
    enum rz_status st = RZ_OK;
    hid_t space = -1, attr = -1;
    hsize_t n = (hsize_t)count;
    CKPT_H5(space = count == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, NULL));
    CKPT_H5(attr = H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT));
    CKPT_H5(H5Awrite(attr, mem_type, value));
cleanup:
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
    return st;
}

static enum rz_status write_attr(const struct ckpt_io *io, hid_t obj, const char *name,
                                 hid_t file_type, hid_t mem_type, const void *value)
{
    return write_attr_n(io, obj, name, file_type, mem_type, value, 1);
}

static enum rz_status write_str_attr(const struct ckpt_io *io, hid_t obj, const char *name,
                                     const char *value)
{
    enum rz_status st = RZ_OK;
    hid_t type = -1;
    CKPT_H5(type = H5Tcopy(H5T_C_S1));
    CKPT_H5(H5Tset_size(type, strlen(value) + 1));
    CKPT_H5(H5Tset_strpad(type, H5T_STR_NULLTERM));
    st = write_attr(io, obj, name, type, type, value);
cleanup:
    if (type >= 0)
        H5Tclose(type);
    return st;
}

/* Create dataset `name` under `loc` and write all of `data` in one call; *dset is left open. */
static enum rz_status create_dataset(const struct ckpt_io *io, hid_t loc, const char *name,
                                     hid_t file_type, hid_t mem_type, hid_t space, hid_t dcpl,
                                     const void *data, hid_t *dset)
{
    enum rz_status st = RZ_OK;
    CKPT_H5(*dset = H5Dcreate2(loc, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    CKPT_H5(H5Dwrite(*dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
cleanup:
    return st;
}

/* A dataset of `nbytes` with its sha256 attribute, closed again. */
static enum rz_status write_dataset(const struct ckpt_io *io, hid_t loc, const char *name,
                                    hid_t file_type, hid_t mem_type, hid_t space, hid_t dcpl,
                                    const void *data, size_t nbytes)
{
    hid_t dset = -1;
    char hex[65];
    enum rz_status st =
        create_dataset(io, loc, name, file_type, mem_type, space, dcpl, data, &dset);
    if (st == RZ_OK) {
        rz_sha256_hex(data, nbytes, hex);
        st = write_str_attr(io, dset, "sha256", hex);
    }
    if (dset >= 0)
        H5Dclose(dset);
    return st;
}

static enum rz_status create_tensor(const struct ckpt_io *io, hid_t group, hid_t dcpl,
                                    const struct model_tensor *e, const float *data, hid_t *dset)
{
    enum rz_status st = RZ_OK;
    hid_t space = -1;
    hsize_t dims[2] = {(hsize_t)e->rows, (hsize_t)e->cols};
    CKPT_H5(space = H5Screate_simple(e->cols == 1 ? 1 : 2, dims, NULL));
    st = create_dataset(io, group, e->name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, space, dcpl, data,
                        dset);
cleanup:
    if (space >= 0)
        H5Sclose(space);
    return st;
}

static enum rz_status create_group(const struct ckpt_io *io, hid_t file, const char *path,
                                   hid_t *group)
{
    enum rz_status st = RZ_OK;
    CKPT_H5(*group = H5Gcreate2(file, path, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
cleanup:
    return st;
}

/* Digests of the tensor datasets, hex[g * count + i] for group g and tensor i, and of all
 * parameter bytes in table order (params_sha256). */
struct tensor_digests {
    const struct ckpt_tensors *t;
    char (*hex)[65];
    char params_hex[65];
};

static void digest_tensor(const float *buf, const struct model_tensor *e, char out[65])
{
    rz_sha256_hex(buf + e->offset, ckpt_tensor_floats(e) * sizeof(float), out);
}

/* The helper thread's share (about 3/4 of the bytes): both Adam moments and params_sha256.
 * Fetched moments (ZeRO) are hashed as they arrive instead (write_fetched). */
static void *digest_adam_and_params(void *arg)
{
    struct tensor_digests *d = arg;
    const struct ckpt_tensors *t = d->t;
    struct rz_sha256 all;
    for (size_t i = 0; i < t->count && t->fetch == NULL; i++) {
        digest_tensor(t->adam_m, &t->table[i], d->hex[t->count + i]);
        digest_tensor(t->adam_v, &t->table[i], d->hex[2 * t->count + i]);
    }
    rz_sha256_init(&all);
    for (size_t i = 0; i < t->count; i++)
        rz_sha256_update(&all, t->params + t->table[i].offset,
                         ckpt_tensor_floats(&t->table[i]) * sizeof(float));
    ckpt_hash_hex(&all, d->params_hex);
    return NULL;
}

/* ZeRO: tensor i's moment g (1: m, 2: v) from t->fetch into buf, hashed into hex. */
static enum rz_status fetch_tensor(const struct ckpt_io *io, const struct ckpt_tensors *t, int g,
                                   size_t i, float *buf, char hex[65])
{
    struct rz_err why;
    if (t->fetch(t->fetch_user, g - 1, i, buf, &why) != RZ_OK)
        return ckpt_io_fail(io, "moments of '%s': %s", t->table[i].name, why.msg);
    rz_sha256_hex(buf, ckpt_tensor_floats(&t->table[i]) * sizeof(float), hex);
    return RZ_OK;
}

/* Create and fill every tensor dataset, leaving them open in dsets[g * count + i]; fetched
 * moments get their digests into hex[g * count + i] here. */
static enum rz_status write_tensor_data(const struct ckpt_io *io, hid_t file, hid_t dcpl,
                                        const struct ckpt_tensors *t, hid_t *dsets,
                                        char (*hex)[65])
{
    const float *bufs[3] = {t->params, t->adam_m, t->adam_v};
    float *fetched = NULL;
    enum rz_status st = RZ_OK;
    if (t->fetch != NULL) {
        size_t largest = 1;
        for (size_t i = 0; i < t->count; i++)
            largest = ckpt_tensor_floats(&t->table[i]) > largest
                          ? ckpt_tensor_floats(&t->table[i]) : largest;
        if ((fetched = malloc(largest * sizeof *fetched)) == NULL)
            return ckpt_io_fail(io, "out of memory for a tensor's moments");
    }
    for (int g = 0; g < 3 && st == RZ_OK; g++) {
        hid_t group = -1;
        st = create_group(io, file, ckpt_tensor_groups[g], &group);
        for (size_t i = 0; i < t->count && st == RZ_OK; i++) {
            size_t k = (size_t)g * t->count + i;
            const float *data = bufs[g] + t->table[i].offset;
            if (g > 0 && fetched != NULL) {
                st = fetch_tensor(io, t, g, i, fetched, hex[k]);
                data = fetched;
            }
            if (st == RZ_OK)
                st = create_tensor(io, group, dcpl, &t->table[i], data, &dsets[k]);
        }
        if (group >= 0)
            H5Gclose(group);
    }
    free(fetched);
    return st;
}

/* /params, /adam_m, /adam_v with their sha256 attributes, and params_sha256.  Hashing runs on a
 * helper thread while this one writes ("hash while writing"); HDF5 is only called from this
 * thread (the library build is not thread-safe).  Without a thread it all runs here. */
static enum rz_status write_tensors(const struct ckpt_io *io, hid_t file, hid_t dcpl,
                                    const struct ckpt_tensors *t, char params_hex[65])
{
    size_t n = 3 * t->count;
    hid_t *dsets = malloc((n ? n : 1) * sizeof *dsets);
    struct tensor_digests d = {t, malloc((n ? n : 1) * sizeof *d.hex), ""};
    enum rz_status st = RZ_OK;
    if (dsets == NULL || d.hex == NULL) {
        st = rz_fail(io->err, RZ_ENOMEM, "%s '%s': out of memory", io->op, io->path);
        goto out;
    }
    for (size_t k = 0; k < n; k++)
        dsets[k] = -1;
    pthread_t worker;
    bool threaded = pthread_create(&worker, NULL, digest_adam_and_params, &d) == 0;
    st = write_tensor_data(io, file, dcpl, t, dsets, d.hex);
    for (size_t i = 0; i < t->count && st == RZ_OK; i++)
        digest_tensor(t->params, &t->table[i], d.hex[i]);
    if (threaded)
        pthread_join(worker, NULL);
    else
        digest_adam_and_params(&d);
    for (size_t k = 0; k < n && st == RZ_OK; k++)
        st = write_str_attr(io, dsets[k], "sha256", d.hex[k]);
    for (size_t k = 0; k < n; k++)
        if (dsets[k] >= 0)
            H5Dclose(dsets[k]);
    memcpy(params_hex, d.params_hex, 65);
out:
    free(d.hex);
    free(dsets);
    return st;
}

static enum rz_status write_names(const struct ckpt_io *io, hid_t model, hid_t dcpl,
                                  const struct ckpt_tensors *t)
{
    enum rz_status st = RZ_OK;
    hid_t type = -1, space = -1;
    hsize_t n = t->count;
    char *names = calloc(t->count ? t->count : 1, MODEL_TENSOR_NAME_MAX);
    if (names == NULL)
        return rz_fail(io->err, RZ_ENOMEM, "%s '%s': out of memory", io->op, io->path);
    for (size_t i = 0; i < t->count; i++) /* zero padding keeps the hash deterministic */
        memcpy(names + i * MODEL_TENSOR_NAME_MAX, t->table[i].name,
               strnlen(t->table[i].name, MODEL_TENSOR_NAME_MAX - 1));
    CKPT_H5(type = H5Tcopy(H5T_C_S1));
    CKPT_H5(H5Tset_size(type, MODEL_TENSOR_NAME_MAX));
    CKPT_H5(H5Tset_strpad(type, H5T_STR_NULLTERM));
    CKPT_H5(space = H5Screate_simple(1, &n, NULL));
    st = write_dataset(io, model, "tensor_names", type, type, space, dcpl, names,
                       t->count * MODEL_TENSOR_NAME_MAX);
cleanup:
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    free(names);
    return st;
}

/* The YAML text stored byte for byte (no terminator), so its sha256 attribute equals
 * config_sha256 when that is the hash of the text. */
static enum rz_status write_config(const struct ckpt_io *io, hid_t file, hid_t dcpl,
                                   const char *yaml)
{
    enum rz_status st = RZ_OK;
    hid_t group = -1, type = -1, space = -1;
    size_t len = yaml != NULL ? strlen(yaml) : 0;
    CKPT_H5(group = H5Gcreate2(file, "/config", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    CKPT_H5(type = H5Tcopy(H5T_C_S1));
    CKPT_H5(H5Tset_size(type, len > 0 ? len : 1));
    CKPT_H5(H5Tset_strpad(type, H5T_STR_NULLPAD));
    CKPT_H5(space = H5Screate(H5S_SCALAR));
    st = write_dataset(io, group, "yaml", type, type, space, dcpl, len > 0 ? yaml : "",
                       len > 0 ? len : 1);
cleanup:
    if (space >= 0)
        H5Sclose(space);
    if (type >= 0)
        H5Tclose(type);
    if (group >= 0)
        H5Gclose(group);
    return st;
}

static enum rz_status write_fields(const struct ckpt_io *io, hid_t file,
                                   const struct ckpt_meta *meta, const struct ckpt_tensors *t)
{
    enum rz_status st = RZ_OK;
    hid_t obj = -1;
    for (size_t i = 0; i < ckpt_n_fields && st == RZ_OK; i++) {
        const struct ckpt_field *f = &ckpt_fields[i];
        CKPT_H5(obj = H5Oopen(file, f->group, H5P_DEFAULT));
        st = write_attr_n(io, obj, f->name, ckpt_field_file_type(f->type),
                          ckpt_field_mem_type(f->type), (const char *)meta + f->offset, f->count);
        H5Oclose(obj);
        obj = -1;
    }
    int64_t n_params = 0;
    for (size_t i = 0; i < t->count; i++)
        n_params += (int64_t)ckpt_tensor_floats(&t->table[i]);
    CKPT_H5(obj = H5Oopen(file, "/model", H5P_DEFAULT));
    if (st == RZ_OK)
        st = write_attr(io, obj, "n_params", H5T_STD_I64LE, H5T_NATIVE_INT64, &n_params);
cleanup:
    if (obj >= 0)
        H5Oclose(obj);
    return st;
}

static enum rz_status write_descriptions(const struct ckpt_io *io, hid_t file)
{
    enum rz_status st = RZ_OK;
    hid_t obj = -1;
    for (size_t i = 0; i < RZ_ARRAY_LEN(descriptions) && st == RZ_OK; i++) {
        CKPT_H5(obj = H5Oopen(file, descriptions[i].path, H5P_DEFAULT));
        st = write_str_attr(io, obj, "description", descriptions[i].text);
        H5Oclose(obj);
        obj = -1;
    }
cleanup:
    return st;
}

static enum rz_status write_root(const struct ckpt_io *io, hid_t file,
                                 const struct ckpt_meta *meta, const char params_hex[65])
{
    char created[32], config_hex[65];
    int64_t version = CKPT_FORMAT_VERSION;
    rz_utc_iso8601(created, sizeof created);
    if (meta->config_sha256[0] != '\0')
        snprintf(config_hex, sizeof config_hex, "%s", meta->config_sha256);
    else
        rz_sha256_hex(meta->config_yaml != NULL ? meta->config_yaml : "",
                      meta->config_yaml != NULL ? strlen(meta->config_yaml) : 0, config_hex);
    enum rz_status st = write_str_attr(io, file, "format", "ryzen-llm checkpoint");
    if (st == RZ_OK)
        st = write_attr(io, file, "format_version", H5T_STD_I64LE, H5T_NATIVE_INT64, &version);
    if (st == RZ_OK)
        st = write_str_attr(io, file, "build", PACKAGE_STRING);
    if (st == RZ_OK)
        st = write_str_attr(io, file, "created_utc", created);
    if (st == RZ_OK)
        st = write_str_attr(io, file, "config_sha256", config_hex);
    if (st == RZ_OK)
        st = write_str_attr(io, file, "params_sha256", params_hex);
    if (st == RZ_OK)
        st = write_str_attr(io, file, "tokenizer_sha256", meta->tokenizer_sha256);
    return st;
}

/* Everything that goes into the file, then flush and close it. */
static enum rz_status write_file(const struct ckpt_io *io, const struct ckpt_meta *meta,
                                 const struct ckpt_tensors *t)
{
    enum rz_status st = RZ_OK;
    hid_t fapl = -1, dcpl = -1, file = -1, model = -1, train = -1;
    char params_hex[65];
    CKPT_H5(fapl = ckpt_h5_fapl());
    CKPT_H5(dcpl = H5Pcreate(H5P_DATASET_CREATE));
    CKPT_H5(H5Pset_layout(dcpl, H5D_CONTIGUOUS));
    CKPT_H5(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER)); /* every byte is written once */
    CKPT_H5(file = H5Fcreate(io->path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    st = write_tensors(io, file, dcpl, t, params_hex);
    if (st == RZ_OK)
        st = create_group(io, file, "/train", &train);
    if (st == RZ_OK)
        st = create_group(io, file, "/model", &model);
    if (st == RZ_OK)
        st = write_names(io, model, dcpl, t);
    if (st == RZ_OK)
        st = write_config(io, file, dcpl, meta->config_yaml);
    if (st == RZ_OK)
        st = write_fields(io, file, meta, t);
    if (st == RZ_OK)
        st = write_descriptions(io, file);
    if (st == RZ_OK)
        st = write_root(io, file, meta, params_hex);
    if (st != RZ_OK)
        goto cleanup;
    H5Gclose(train);
    train = -1;
    H5Gclose(model);
    model = -1;
    CKPT_H5(H5Fflush(file, H5F_SCOPE_GLOBAL));
    hid_t closing = file;
    file = -1;
    CKPT_H5(H5Fclose(closing));
cleanup:
    /* After a failed write (a full disk), give the space back before HDF5 closes the file: its
     * close flushes metadata, and a flush that fails too leaves HDF5 1.10 with a half-closed file
     * it crashes on at exit.  The temporary file is removed by the caller either way. */
    if (st != RZ_OK && file >= 0 && truncate(io->path, 0) != 0) {
        /* nothing more to free: the close below may fail, and is still tried once */
    }
    if (train >= 0)
        H5Gclose(train);
    if (model >= 0)
        H5Gclose(model);
    if (file >= 0)
        H5Fclose(file);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (fapl >= 0)
        H5Pclose(fapl);
    return st;
}

/* Test-hook build only (RYZEN_TEST_CKPT_FULL, core/hooks.h): this step's checkpoint finds its
 * filesystem full. */
static bool test_full(int64_t step)
{
#if RZ_HOOKS_ENABLED
    return rz_hook_step_in(&rz_hooks.ckpt_full, step);
#else
    (void)step;
    return false;
#endif
}

enum rz_status ckpt_save(const char *dir, const struct ckpt_meta *meta,
                         const struct ckpt_tensors *t, char *path_out, size_t path_len,
                         struct rz_err *err)
{
    char path[CKPT_PATH_MAX], tmp[CKPT_PATH_MAX + 8];
    int n = snprintf(path, sizeof path, "%s/step-%08lld.h5", dir, (long long)meta->step);
    if (n < 0 || (size_t)n >= sizeof path || (path_out != NULL && (size_t)n >= path_len))
        return rz_fail(err, RZ_EIO, "save checkpoint in '%s': path too long", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct ckpt_io io = {"save checkpoint", path, RZ_EIO, err};
    for (size_t i = 0; i < t->count; i++)
        if (t->table[i].offset + ckpt_tensor_floats(&t->table[i]) > t->n_floats)
            return ckpt_io_fail(&io, "tensor '%s' lies outside the %zu-float buffers",
                                t->table[i].name, t->n_floats);
    struct rz_err mk;
    enum rz_status st = rz_mkdirs(dir, &mk);
    if (st != RZ_OK)
        return rz_fail(err, st, "save checkpoint in '%s': %s", dir, mk.msg);
    /* Most full disks are found here, before HDF5 writes a byte. */
    double need = 3.0 * 4.0 * (double)t->n_floats + 1e6, avail = 0.0;
    struct statvfs vfs;
    bool known = statvfs(dir, &vfs) == 0;
    if (known)
        avail = (double)vfs.f_bavail * (double)vfs.f_frsize;
    if (test_full(meta->step)) {
        known = true;
        avail = 0.0;
    }
    if (known && avail < need)
        return ckpt_io_fail(&io, "%s: %.1f MB free in '%s', the checkpoint needs about %.1f MB; "
                            "free space there or lower checkpoint.keep (the checkpoints already "
                            "there are kept)", rz_io_cause(ENOSPC), avail / 1e6, dir, need / 1e6);
    ckpt_h5_quiet();
    struct ckpt_io tmp_io = {"save checkpoint", tmp, RZ_EIO, err};
    st = write_file(&tmp_io, meta, t);
    if (st == RZ_OK) {
        struct rz_err cerr;
        st = rz_durable_commit_file(tmp, path, "ckpt", &cerr);
        if (st != RZ_OK)
            st = ckpt_io_fail(&io, "%s", cerr.msg);
    }
    if (st != RZ_OK) {
        unlink(tmp);
        return st;
    }
    if (path_out != NULL)
        snprintf(path_out, path_len, "%s", path);
    return RZ_OK;
}

