/* json.c: streaming JSON writer (see json.h). */
#include "config.h"

#include "core/json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void rz_json_init(struct rz_json *j, FILE *out)
{
    j->out = out;
    j->depth = 0;
    j->need_comma[0] = false;
    j->after_key = false;
}

/* Emit the separator that must precede a value at the current position. */
static void before_value(struct rz_json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->need_comma[j->depth])
        fputc(',', j->out);
    j->need_comma[j->depth] = true;
}

static void open_container(struct rz_json *j, char c)
{
    before_value(j);
    fputc(c, j->out);
    assert(j->depth + 1 < RZ_JSON_MAX_DEPTH);
    j->depth++;
    j->need_comma[j->depth] = false;
}

static void close_container(struct rz_json *j, char c)
{
    assert(j->depth > 0);
    j->depth--;
    fputc(c, j->out);
}

void rz_json_object_begin(struct rz_json *j) { open_container(j, '{'); }
void rz_json_object_end(struct rz_json *j) { close_container(j, '}'); }
void rz_json_array_begin(struct rz_json *j) { open_container(j, '['); }
void rz_json_array_end(struct rz_json *j) { close_container(j, ']'); }

static void write_escaped(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

void rz_json_key(struct rz_json *j, const char *key)
{
    before_value(j);
    write_escaped(j->out, key);
    fputc(':', j->out);
    j->after_key = true;
}

void rz_json_string(struct rz_json *j, const char *s)
{
    before_value(j);
    write_escaped(j->out, s);
}

void rz_json_double(struct rz_json *j, double v)
{
    before_value(j);
    if (!isfinite(v))
        fputs("null", j->out);
    else
        fprintf(j->out, "%.9g", v);
}

void rz_json_int(struct rz_json *j, int64_t v)
{
    before_value(j);
    fprintf(j->out, "%" PRId64, v);
}

void rz_json_uint(struct rz_json *j, uint64_t v)
{
    before_value(j);
    fprintf(j->out, "%" PRIu64, v);
}

void rz_json_bool(struct rz_json *j, bool v)
{
    before_value(j);
    fputs(v ? "true" : "false", j->out);
}

void rz_json_null(struct rz_json *j)
{
    before_value(j);
    fputs("null", j->out);
}

void rz_json_raw(struct rz_json *j, const char *json)
{
    before_value(j);
    size_t n = strlen(json);
    while (n > 0 && (json[n - 1] == '\n' || json[n - 1] == ' '))
        n--;
    fwrite(json, 1, n, j->out);
}

void rz_json_kv_string(struct rz_json *j, const char *key, const char *s) { rz_json_key(j, key); rz_json_string(j, s); }
void rz_json_kv_double(struct rz_json *j, const char *key, double v) { rz_json_key(j, key); rz_json_double(j, v); }
void rz_json_kv_int(struct rz_json *j, const char *key, int64_t v) { rz_json_key(j, key); rz_json_int(j, v); }
void rz_json_kv_uint(struct rz_json *j, const char *key, uint64_t v) { rz_json_key(j, key); rz_json_uint(j, v); }
void rz_json_kv_bool(struct rz_json *j, const char *key, bool v) { rz_json_key(j, key); rz_json_bool(j, v); }

void rz_json_kv_fixed(struct rz_json *j, const char *key, double v, int decimals)
{
    rz_json_key(j, key);
    before_value(j);
    if (!isfinite(v))
        fputs("null", j->out);
    else
        fprintf(j->out, "%.*f", decimals, v);
}

void rz_json_kv_float(struct rz_json *j, const char *key, float v)
{
    char buf[32];
    double shortest = (double)v;
    for (int prec = 6; prec < 9 && isfinite(v); prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v) {
            shortest = strtod(buf, NULL);
            break;
        }
    }
    rz_json_kv_double(j, key, shortest);
}
