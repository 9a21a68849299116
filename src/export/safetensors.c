/* safetensors.c: the safetensors writer and reader (safetensors.h): the 8-byte length, the JSON
 * header through core/json.h and core/json_read.h, the raw float32 data.  The reader checks the
 * header against the file before anything is used, so every later access is in bounds.
 * Deliberately not here: model names and layouts (gpt2_map.c); dtypes other than F32. */
#include "config.h"

#include "export/safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/durable.h"
#include "core/json.h"
#include "core/json_read.h"
#include "core/util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c writes the host's float bytes as little-endian"
#endif

/* The dtypes of the format (safetensors' Dtype enum); only F32 is read. */
static const char *const known_dtypes[] = {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16",
                                           "U16", "F16", "BF16", "I32", "U32", "F32", "F64",
                                           "I64", "U64"};

/* ---- writer ---------------------------------------------------------------------------------- */

static size_t entry_numel(const struct st_entry *e)
{
    size_t n = 1;
    for (int d = 0; d < e->ndim; d++)
        n *= (size_t)e->shape[d];
    return n;
}

static enum rz_status check_entries(const char *path, const struct st_entry *e, size_t n,
                                    struct rz_err *err)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].name, "__metadata__") == 0 || e[i].ndim < 0 || e[i].ndim > ST_MAX_DIMS)
            return rz_fail(err, RZ_ECONFIG, "safetensors %s: tensor '%s': a reserved name or "
                           "%d dimensions", path, e[i].name, e[i].ndim);
        for (size_t j = 0; j < i; j++)
            if (strcmp(e[i].name, e[j].name) == 0)
                return rz_fail(err, RZ_ECONFIG, "safetensors %s: tensor '%s' named twice",
                               path, e[i].name);
    }
    return RZ_OK;
}

static void header_json(FILE *f, const struct st_entry *e, size_t n, const struct st_meta *meta,
                        size_t n_meta)
{
    struct rz_json j;
    size_t off = 0;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    if (n_meta > 0) {
        rz_json_key(&j, "__metadata__");
        rz_json_object_begin(&j);
        for (size_t i = 0; i < n_meta; i++)
            rz_json_kv_string(&j, meta[i].key, meta[i].value);
        rz_json_object_end(&j);
    }
    for (size_t i = 0; i < n; i++) {
        size_t bytes = entry_numel(&e[i]) * sizeof(float);
        rz_json_key(&j, e[i].name);
        rz_json_object_begin(&j);
        rz_json_kv_string(&j, "dtype", "F32");
        rz_json_key(&j, "shape");
        rz_json_array_begin(&j);
        for (int d = 0; d < e[i].ndim; d++)
            rz_json_int(&j, e[i].shape[d]);
        rz_json_array_end(&j);
        rz_json_key(&j, "data_offsets");
        rz_json_array_begin(&j);
        rz_json_uint(&j, off);
        rz_json_uint(&j, off + bytes);
        rz_json_array_end(&j);
        rz_json_object_end(&j);
        off += bytes;
    }
    rz_json_object_end(&j);
}

/* The header text, padded with spaces to a multiple of 8 bytes; *text allocated. */
static enum rz_status build_header(const char *path, const struct st_entry *e, size_t n,
                                   const struct st_meta *meta, size_t n_meta, char **text,
                                   size_t *len, struct rz_err *err)
{
    *text = NULL;
    FILE *f = open_memstream(text, len);
    if (f == NULL)
        return rz_fail(err, RZ_ENOMEM, "safetensors %s: out of memory for the header", path);
    header_json(f, e, n, meta, n_meta);
    while ((ftell(f) % 8) != 0)
        fputc(' ', f);
    if (fclose(f) != 0 || *text == NULL) {
        free(*text);
        *text = NULL;
        return rz_fail(err, RZ_ENOMEM, "safetensors %s: out of memory for the header", path);
    }
    return RZ_OK;
}

enum rz_status st_write(const char *path, const struct st_entry *entries, size_t n,
                        const struct st_meta *meta, size_t n_meta, struct rz_err *err)
{
    char *header = NULL;
    size_t hlen = 0;
    struct rz_durable d;
    enum rz_status st = check_entries(path, entries, n, err);
    if (st == RZ_OK)
        st = build_header(path, entries, n, meta, n_meta, &header, &hlen, err);
    if (st == RZ_OK)
        st = rz_durable_open(&d, path, "safetensors", err);
    if (st != RZ_OK) {
        free(header);
        return st;
    }
    uint8_t le[8];
    for (int b = 0; b < 8; b++)
        le[b] = (uint8_t)((uint64_t)hlen >> (8 * b));
    fwrite(le, 1, sizeof le, d.f);
    fwrite(header, 1, hlen, d.f);
    for (size_t i = 0; i < n; i++)
        fwrite(entries[i].data, sizeof(float), entry_numel(&entries[i]), d.f);
    free(header);
    return rz_durable_commit(&d, err); /* a short write shows as a failed flush there */
}

/* ---- reader ---------------------------------------------------------------------------------- */

static enum rz_status bad(const struct st_file *f, struct rz_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum rz_status bad(const struct st_file *f, struct rz_err *err, const char *fmt, ...)
{
    char cause[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cause, sizeof cause, fmt, ap);
    va_end(ap);
    return rz_fail(err, RZ_EDATA, "safetensors %s: %s", f->path, cause);
}

/* A JSON number that is a non-negative integer a double holds exactly. */
static bool as_size(const struct gj_value *v, size_t *out)
{
    if (v == NULL || v->type != GJ_NUM || !(v->num >= 0.0) || v->num > 9007199254740992.0 ||
        floor(v->num) != v->num)
        return false;
    *out = (size_t)v->num;
    return true;
}

static enum rz_status parse_dtype(const struct st_file *f, const char *name,
                                  const struct gj_value *v, struct rz_err *err)
{
    if (v == NULL || v->type != GJ_STR)
        return bad(f, err, "tensor '%s' has no dtype string", name);
    if (strcmp(v->str, "F32") == 0)
        return RZ_OK;
    for (size_t i = 0; i < sizeof known_dtypes / sizeof known_dtypes[0]; i++)
        if (strcmp(v->str, known_dtypes[i]) == 0)
            return bad(f, err, "tensor '%s' has dtype %s; only F32 is read", name, v->str);
    return bad(f, err, "tensor '%s' has unknown dtype '%s'", name, v->str);
}

static enum rz_status parse_shape(const struct st_file *f, struct st_tensor *t,
                                  const struct gj_value *v, struct rz_err *err)
{
    if (v == NULL || v->type != GJ_ARR || v->n > ST_MAX_DIMS)
        return bad(f, err, "tensor '%s': shape is not an array of at most %d sizes", t->name,
                   ST_MAX_DIMS);
    t->ndim = (int)v->n;
    for (size_t d = 0; d < v->n; d++) {
        size_t s;
        if (!as_size(&v->items[d], &s) || s > (size_t)INT64_MAX / 2)
            return bad(f, err, "tensor '%s': shape[%zu] is not a size", t->name, d);
        t->shape[d] = (int64_t)s;
    }
    return RZ_OK;
}

/* The element count of t, false when it overflows the data buffer's possible size. */
static bool numel_fits(const struct st_tensor *t, size_t limit, size_t *out)
{
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] != 0 && n > limit / (size_t)t->shape[d])
            return false;
        n *= (size_t)t->shape[d];
    }
    *out = n;
    return true;
}

static enum rz_status parse_offsets(const struct st_file *f, struct st_tensor *t,
                                    const struct gj_value *v, struct rz_err *err)
{
    size_t numel = 0;
    if (v == NULL || v->type != GJ_ARR || v->n != 2 || !as_size(&v->items[0], &t->begin) ||
        !as_size(&v->items[1], &t->end))
        return bad(f, err, "tensor '%s': data_offsets is not [begin, end]", t->name);
    if (t->end < t->begin || t->end > f->data_len)
        return bad(f, err, "tensor '%s': data_offsets [%zu, %zu] lie outside the %zu-byte data "
                   "buffer", t->name, t->begin, t->end, f->data_len);
    if (!numel_fits(t, SIZE_MAX / sizeof(float), &numel) ||
        numel * sizeof(float) != t->end - t->begin)
        return bad(f, err, "tensor '%s': data_offsets [%zu, %zu] hold %zu bytes, not the shape's "
                   "%zu float32 values", t->name, t->begin, t->end, t->end - t->begin, numel);
    return RZ_OK;
}

static enum rz_status parse_tensor(const struct st_file *f, struct st_tensor *t,
                                   const char *name, const struct gj_value *v, struct rz_err *err)
{
    t->name = name;
    if (v->type != GJ_OBJ)
        return bad(f, err, "tensor '%s' is not an object", name);
    enum rz_status st = parse_dtype(f, name, gj_get(v, "dtype"), err);
    if (st == RZ_OK)
        st = parse_shape(f, t, gj_get(v, "shape"), err);
    if (st == RZ_OK)
        st = parse_offsets(f, t, gj_get(v, "data_offsets"), err);
    return st;
}

static int by_begin(const void *a, const void *b)
{
    const struct st_tensor *x = *(const struct st_tensor *const *)a;
    const struct st_tensor *y = *(const struct st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Sorted by offset, the tensors must tile the data buffer exactly (the reference reader's
 * rule): no overlap, no gap, nothing left over. */
static enum rz_status check_tiling(const struct st_file *f, struct rz_err *err)
{
    const struct st_tensor **v = malloc((f->n ? f->n : 1) * sizeof *v);
    if (v == NULL)
        return rz_fail(err, RZ_ENOMEM, "safetensors %s: out of memory", f->path);
    for (size_t i = 0; i < f->n; i++)
        v[i] = &f->tensors[i];
    qsort(v, f->n, sizeof *v, by_begin);
    enum rz_status st = RZ_OK;
    size_t at = 0;
    for (size_t i = 0; i < f->n && st == RZ_OK; i++) {
        if (v[i]->begin < at)
            st = bad(f, err, "tensors '%s' and '%s' overlap (bytes %zu..%zu of the data buffer)",
                     v[i - 1]->name, v[i]->name, v[i]->begin, at);
        else if (v[i]->begin > at)
            st = bad(f, err, "bytes %zu..%zu of the data buffer belong to no tensor (before "
                     "'%s')", at, v[i]->begin, v[i]->name);
        at = v[i]->end;
    }
    if (st == RZ_OK && at != f->data_len)
        st = bad(f, err, "the data buffer is %zu bytes but the tensors end at byte %zu",
                 f->data_len, at);
    free(v);
    return st;
}

static enum rz_status check_meta(const struct st_file *f, const struct gj_value *m,
                                 struct rz_err *err)
{
    if (m->type != GJ_OBJ)
        return bad(f, err, "__metadata__ is not an object");
    for (size_t i = 0; i < m->n; i++)
        if (m->items[i].type != GJ_STR)
            return bad(f, err, "__metadata__ member '%s' is not a string", m->keys[i]);
    return RZ_OK;
}

static enum rz_status parse_header(struct st_file *f, struct rz_err *err)
{
    const struct gj_value *h = f->header;
    if (h->type != GJ_OBJ)
        return bad(f, err, "the header is not a JSON object");
    f->tensors = calloc(h->n ? h->n : 1, sizeof *f->tensors);
    if (f->tensors == NULL)
        return rz_fail(err, RZ_ENOMEM, "safetensors %s: out of memory", f->path);
    enum rz_status st = RZ_OK;
    for (size_t i = 0; i < h->n && st == RZ_OK; i++) {
        if (strcmp(h->keys[i], "__metadata__") == 0) {
            st = check_meta(f, &h->items[i], err);
            continue;
        }
        for (size_t j = 0; j < f->n && st == RZ_OK; j++)
            if (strcmp(f->tensors[j].name, h->keys[i]) == 0)
                st = bad(f, err, "tensor '%s' is named twice", h->keys[i]);
        if (st == RZ_OK)
            st = parse_tensor(f, &f->tensors[f->n++], h->keys[i], &h->items[i], err);
    }
    if (st == RZ_OK)
        st = check_tiling(f, err);
    return st;
}

/* The 8-byte length and the header's place in the file. */
static enum rz_status parse_frame(struct st_file *f, struct rz_err *err)
{
    if (f->size < 8)
        return bad(f, err, "truncated: %zu bytes, fewer than the 8-byte header length",
                   f->size);
    uint64_t n = 0;
    for (int b = 7; b >= 0; b--)
        n = (n << 8) | f->bytes[b];
    if (n > f->size - 8)
        return bad(f, err, "the header length %llu runs past the end of the file (%zu bytes "
                   "after the length): truncated or not a safetensors file",
                   (unsigned long long)n, f->size - 8);
    if (n < 2 || f->bytes[8] != '{')
        return bad(f, err, "the header does not start with '{': not a safetensors file");
    f->data = f->bytes + 8 + n;
    f->data_len = f->size - 8 - (size_t)n;
    char name[4200];
    snprintf(name, sizeof name, "safetensors %s: header", f->path);
    return gj_parse(&f->header, (const char *)f->bytes + 8, (size_t)n, name, 1, err);
}

enum rz_status st_read(struct st_file **out, const char *path, struct rz_err *err)
{
    *out = NULL;
    struct st_file *f = calloc(1, sizeof *f);
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        return rz_fail(err, RZ_ENOMEM, "safetensors %s: out of memory", path);
    }
    char *bytes = NULL;
    enum rz_status st = rz_read_file(path, &bytes, &f->size, err);
    f->bytes = (uint8_t *)bytes;
    if (st == RZ_OK)
        st = parse_frame(f, err);
    if (st == RZ_OK)
        st = parse_header(f, err);
    if (st != RZ_OK) {
        st_file_free(f);
        return st;
    }
    *out = f;
    return RZ_OK;
}

void st_file_free(struct st_file *f)
{
    if (f == NULL)
        return;
    gj_free(f->header);
    free(f->tensors);
    free(f->bytes);
    free(f->path);
    free(f);
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

size_t st_numel(const struct st_tensor *t)
{
    return (t->end - t->begin) / sizeof(float);
}

void st_copy(const struct st_file *f, const struct st_tensor *t, float *out)
{
    memcpy(out, f->data + t->begin, t->end - t->begin);
}

const char *st_meta_get(const struct st_file *f, const char *key)
{
    const struct gj_value *m = gj_get(f->header, "__metadata__");
    return m != NULL ? gj_get_str(m, key) : NULL;
}
