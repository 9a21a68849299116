#include "config.h"

/* json_read.c: the minimal recursive-descent JSON reader of json_read.h (RFC 8259 grammar).
 * Deliberately not here: writing JSON (core/json.c, beside it), streaming, duplicate-key detection (the
 * last duplicate is simply never found by gj_get, which returns the first), or numbers beyond
 * double precision. */

#include "core/json_read.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"

struct gj_parser {
    const char *s;
    size_t len, pos;
    const char *name;
    long first_line;
    int depth;
    struct rz_err *err;
};

static enum rz_status gj_value_parse(struct gj_parser *p, struct gj_value *v);

static enum rz_status gj_error(struct gj_parser *p, const char *cause)
{
    long line = p->first_line, col = 1;
    for (size_t i = 0; i < p->pos && i < p->len; i++) {
        if (p->s[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return rz_fail(p->err, RZ_EDATA, "%s:%ld:%ld: %s", p->name, line, col, cause);
}

static void gj_skip_ws(struct gj_parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static int gj_peek(const struct gj_parser *p)
{
    return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static enum rz_status gj_literal(struct gj_parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return gj_error(p, p->pos >= p->len ? "unexpected end of input" : "invalid literal");
    p->pos += n;
    return RZ_OK;
}

static size_t gj_digits(const struct gj_parser *p, size_t i)
{
    while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
        i++;
    return i;
}

static enum rz_status gj_number(struct gj_parser *p, struct gj_value *v)
{
    size_t i = p->pos, start = p->pos;
    if (i < p->len && p->s[i] == '-')
        i++;
    size_t d = gj_digits(p, i);
    if (d == i || (p->s[i] == '0' && d > i + 1))
        return gj_error(p, "invalid number");
    i = d;
    if (i < p->len && p->s[i] == '.') {
        d = gj_digits(p, i + 1);
        if (d == i + 1)
            return gj_error(p, "invalid number: digits expected after '.'");
        i = d;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        d = gj_digits(p, i);
        if (d == i)
            return gj_error(p, "invalid number: digits expected in exponent");
        i = d;
    }
    char buf[64];
    if (i - start >= sizeof buf)
        return gj_error(p, "number too long");
    memcpy(buf, p->s + start, i - start);
    buf[i - start] = '\0';
    v->type = GJ_NUM;
    v->num = strtod(buf, NULL);
    p->pos = i;
    return RZ_OK;
}

static int gj_hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = (unsigned char)s[i], h;
        if (c >= '0' && c <= '9')
            h = c - '0';
        else if (c >= 'a' && c <= 'f')
            h = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            h = c - 'A' + 10;
        else
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static size_t gj_put_utf8(char *o, unsigned long cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* \uXXXX (and a following low surrogate) at p->pos (just after the backslash-u). */
static enum rz_status gj_unicode(struct gj_parser *p, char *o, size_t *olen)
{
    if (p->len - p->pos < 4 || gj_hex4(p->s + p->pos) < 0)
        return gj_error(p, "invalid \\u escape");
    unsigned long cp = (unsigned long)gj_hex4(p->s + p->pos);
    p->pos += 4;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (p->len - p->pos < 6 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u' ||
            gj_hex4(p->s + p->pos + 2) < 0xDC00 || gj_hex4(p->s + p->pos + 2) > 0xDFFF)
            return gj_error(p, "unpaired surrogate in \\u escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + ((unsigned long)gj_hex4(p->s + p->pos + 2) - 0xDC00);
        p->pos += 6;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return gj_error(p, "unpaired surrogate in \\u escape");
    }
    *olen += gj_put_utf8(o + *olen, cp);
    return RZ_OK;
}

static enum rz_status gj_escape(struct gj_parser *p, char *o, size_t *olen)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    int c = gj_peek(p);
    const char *hit = c > 0 ? strchr(from, c) : NULL;
    p->pos++;
    if (c == 'u')
        return gj_unicode(p, o, olen);
    if (hit == NULL) {
        p->pos--;
        return gj_error(p, "invalid escape in string");
    }
    o[(*olen)++] = to[hit - from];
    return RZ_OK;
}

/* A string at p->pos (the opening quote) into a heap copy. */
static enum rz_status gj_string(struct gj_parser *p, char **out)
{
    size_t end = p->pos + 1;
    while (end < p->len && p->s[end] != '"')
        end += (p->s[end] == '\\') ? 2 : 1;
    if (end >= p->len)
        return gj_error(p, "unterminated string");
    char *o = malloc(end - p->pos + 1); /* escapes never expand */
    if (o == NULL)
        return rz_fail(p->err, RZ_ENOMEM, "%s: out of memory", p->name);
    size_t olen = 0;
    enum rz_status st = RZ_OK;
    p->pos++;
    while (st == RZ_OK && p->s[p->pos] != '"') {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c < 0x20) {
            st = gj_error(p, "control character in string");
        } else if (c == '\\') {
            p->pos++;
            st = gj_escape(p, o, &olen);
        } else {
            o[olen++] = (char)c;
            p->pos++;
        }
    }
    if (st != RZ_OK) {
        free(o);
        return st;
    }
    p->pos++;
    o[olen] = '\0';
    *out = o;
    return RZ_OK;
}

static enum rz_status gj_grow(struct gj_parser *p, struct gj_value *v, size_t *cap, bool keys)
{
    if (v->n < *cap)
        return RZ_OK;
    size_t ncap = *cap ? *cap * 2 : 4;
    struct gj_value *it = realloc(v->items, ncap * sizeof *it);
    if (it != NULL)
        v->items = it;
    char **k = keys ? realloc(v->keys, ncap * sizeof *k) : NULL;
    if (keys && k != NULL)
        v->keys = k;
    if (it == NULL || (keys && k == NULL))
        return rz_fail(p->err, RZ_ENOMEM, "%s: out of memory", p->name);
    *cap = ncap;
    return RZ_OK;
}

/* Members of an array or object; p->pos is just after the opening bracket. */
static enum rz_status gj_members(struct gj_parser *p, struct gj_value *v, bool obj)
{
    const int close = obj ? '}' : ']';
    size_t cap = 0;
    gj_skip_ws(p);
    if (gj_peek(p) == close) {
        p->pos++;
        return RZ_OK;
    }
    for (;;) {
        enum rz_status st = gj_grow(p, v, &cap, obj);
        if (st != RZ_OK)
            return st;
        memset(&v->items[v->n], 0, sizeof v->items[v->n]);
        gj_skip_ws(p);
        if (obj) {
            if (gj_peek(p) != '"')
                return gj_error(p, "object key (a string) expected");
            if ((st = gj_string(p, &v->keys[v->n])) != RZ_OK)
                return st;
            v->n++; /* count it now so gj_free releases the key on error */
            gj_skip_ws(p);
            if (gj_peek(p) != ':')
                return gj_error(p, "':' expected after object key");
            p->pos++;
            st = gj_value_parse(p, &v->items[v->n - 1]);
        } else {
            v->n++;
            st = gj_value_parse(p, &v->items[v->n - 1]);
        }
        if (st != RZ_OK)
            return st;
        gj_skip_ws(p);
        int c = gj_peek(p);
        p->pos++;
        if (c == close)
            return RZ_OK;
        if (c != ',') {
            p->pos--;
            return gj_error(p, c < 0 ? "unexpected end of input" : obj ? "',' or '}' expected"
                                                                      : "',' or ']' expected");
        }
    }
}

static enum rz_status gj_value_parse(struct gj_parser *p, struct gj_value *v)
{
    gj_skip_ws(p);
    int c = gj_peek(p);
    if (c == '{' || c == '[') {
        if (++p->depth > GJ_MAX_DEPTH)
            return gj_error(p, "nesting too deep");
        p->pos++;
        v->type = c == '{' ? GJ_OBJ : GJ_ARR;
        enum rz_status st = gj_members(p, v, c == '{');
        p->depth--;
        return st;
    }
    if (c == '"') {
        v->type = GJ_STR;
        return gj_string(p, &v->str);
    }
    if (c == 't' || c == 'f') {
        v->type = GJ_BOOL;
        v->b = c == 't';
        return gj_literal(p, c == 't' ? "true" : "false");
    }
    if (c == 'n') {
        v->type = GJ_NULL;
        return gj_literal(p, "null");
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return gj_number(p, v);
    return gj_error(p, c < 0 ? "unexpected end of input" : "value expected");
}

static void gj_release(struct gj_value *v)
{
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        gj_release(&v->items[i]);
        if (v->keys != NULL)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

void gj_free(struct gj_value *v)
{
    if (v == NULL)
        return;
    gj_release(v);
    free(v);
}

enum rz_status gj_parse(struct gj_value **out, const char *text, size_t len, const char *name,
                        long first_line, struct rz_err *err)
{
    struct gj_parser p = {.s = text, .len = len, .name = name, .first_line = first_line,
                          .err = err};
    *out = NULL;
    struct gj_value *v = calloc(1, sizeof *v);
    if (v == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: out of memory", name);
    enum rz_status st = gj_value_parse(&p, v);
    if (st == RZ_OK) {
        gj_skip_ws(&p);
        if (p.pos < p.len)
            st = gj_error(&p, "unexpected text after the JSON value");
    }
    if (st != RZ_OK) {
        gj_free(v);
        return st;
    }
    *out = v;
    return RZ_OK;
}

const struct gj_value *gj_get(const struct gj_value *obj, const char *key)
{
    if (obj == NULL || obj->type != GJ_OBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

bool gj_get_num(const struct gj_value *obj, const char *key, double *out)
{
    const struct gj_value *v = gj_get(obj, key);
    if (v == NULL || v->type != GJ_NUM)
        return false;
    *out = v->num;
    return true;
}

bool gj_get_int(const struct gj_value *obj, const char *key, int64_t *out)
{
    double d;
    if (!gj_get_num(obj, key, &d) || d != d || d < -9.2e18 || d > 9.2e18)
        return false;
    *out = (int64_t)d;
    return (double)*out == d;
}

bool gj_get_bool(const struct gj_value *obj, const char *key, bool *out)
{
    const struct gj_value *v = gj_get(obj, key);
    if (v == NULL || v->type != GJ_BOOL)
        return false;
    *out = v->b;
    return true;
}

const char *gj_get_str(const struct gj_value *obj, const char *key)
{
    const struct gj_value *v = gj_get(obj, key);
    return v != NULL && v->type == GJ_STR ? v->str : NULL;
}

enum rz_status gj_parse_file(const char *path, struct gj_value **out, struct rz_err *err)
{
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    enum rz_status st = rz_read_file(path, &text, &len, err);
    if (st != RZ_OK)
        return st;
    st = gj_parse(out, text, len, path, 1, err);
    free(text);
    return st;
}
