/* json_read.h: a minimal JSON reader, beside its writer (json.h): the files the programs pass
 * each other (metrics JSONL, events.jsonl, summary.json, health.json, report.json).
 *
 * It parses one JSON text into a small tree: objects, arrays, strings (with all escapes,
 * \uXXXX and surrogate pairs to UTF-8), numbers, true/false/null.  Errors name
 * "NAME:LINE:COLUMN: cause" and return RZ_EDATA; nesting deeper than GJ_MAX_DEPTH is an error,
 * not a stack overflow.
 * Ownership: gj_parse allocates the tree; gj_free releases it (NULL ok).  Strings returned by
 * the accessors point into the tree. */
#ifndef RZ_CORE_JSON_READ_H
#define RZ_CORE_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define GJ_MAX_DEPTH 64

enum gj_type { GJ_NULL, GJ_BOOL, GJ_NUM, GJ_STR, GJ_ARR, GJ_OBJ };

struct gj_value {
    enum gj_type type;
    bool b;
    double num;
    char *str;               /* GJ_STR: NUL-terminated UTF-8 */
    size_t n;                /* GJ_ARR / GJ_OBJ: number of items */
    struct gj_value *items;  /* n items */
    char **keys;             /* GJ_OBJ: n keys */
};

/* Parse text[0..len) as exactly one JSON value (surrounding whitespace allowed).  `name` and
 * `first_line` place errors (a JSONL line passes its own line number). */
enum rz_status gj_parse(struct gj_value **out, const char *text, size_t len, const char *name,
                        long first_line, struct rz_err *err);
void gj_free(struct gj_value *v);
/* Read and parse the file at `path` (rz_read_file's errors, or gj_parse's naming the file). */
enum rz_status gj_parse_file(const char *path, struct gj_value **out, struct rz_err *err);

/* Member `key` of an object, or NULL (also when obj is not an object). */
const struct gj_value *gj_get(const struct gj_value *obj, const char *key);

/* Typed lookups: true when the member exists with that type. */
bool gj_get_num(const struct gj_value *obj, const char *key, double *out);
bool gj_get_int(const struct gj_value *obj, const char *key, int64_t *out);
bool gj_get_bool(const struct gj_value *obj, const char *key, bool *out);
const char *gj_get_str(const struct gj_value *obj, const char *key);

#endif
