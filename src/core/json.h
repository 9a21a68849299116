/* json.h: a small streaming JSON writer onto a stdio FILE.
 *
 * It writes compact, valid JSON (strings escaped, non-finite numbers written as null) and keeps a
 * nesting stack so that commas are placed automatically.  It does not parse JSON.
 * Ownership: the writer borrows the FILE; the caller opens and closes it. */
#ifndef RZ_CORE_JSON_H
#define RZ_CORE_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RZ_JSON_MAX_DEPTH 16

struct rz_json {
    FILE *out;
    int depth;
    bool need_comma[RZ_JSON_MAX_DEPTH];
    bool after_key;
};

void rz_json_init(struct rz_json *j, FILE *out);
void rz_json_object_begin(struct rz_json *j);
void rz_json_object_end(struct rz_json *j);
void rz_json_array_begin(struct rz_json *j);
void rz_json_array_end(struct rz_json *j);
void rz_json_key(struct rz_json *j, const char *key);
void rz_json_string(struct rz_json *j, const char *s);
void rz_json_double(struct rz_json *j, double v);
void rz_json_int(struct rz_json *j, int64_t v);
void rz_json_uint(struct rz_json *j, uint64_t v);
void rz_json_bool(struct rz_json *j, bool v);
void rz_json_null(struct rz_json *j);
/* A value that is already JSON text (e.g. an embedded file); the caller vouches for it. */
void rz_json_raw(struct rz_json *j, const char *json);

/* Key/value shorthands inside an object. */
void rz_json_kv_string(struct rz_json *j, const char *key, const char *s);
void rz_json_kv_double(struct rz_json *j, const char *key, double v);
void rz_json_kv_int(struct rz_json *j, const char *key, int64_t v);
void rz_json_kv_uint(struct rz_json *j, const char *key, uint64_t v);
void rz_json_kv_bool(struct rz_json *j, const char *key, bool v);
/* A float as the shortest decimal that reads back as the same float (1e-05, not
 * 9.99999975e-06): configuration values that were floats (model.ln_eps in a checkpoint). */
void rz_json_kv_float(struct rz_json *j, const char *key, float v);
/* A number with a fixed count of decimals ("%.*f"), e.g. Unix times in seconds: the default
 * 9 significant digits would round them to 10 s. */
void rz_json_kv_fixed(struct rz_json *j, const char *key, double v, int decimals);

#endif
