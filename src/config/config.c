/* config.c: loading the YAML run configuration (libyaml's event parser), `--set` overrides and
 * cross-key validation.  Writing the resolved config and the key reference: config_write.c.
 *
 * The accepted YAML is deliberately small: one document whose root is a mapping of sections, each
 * a mapping of scalar keys from the key table (keys.c).  Anchors, aliases, tags, complex keys,
 * nested values and several documents are rejected.  Every problem is collected, one line each,
 * as "FILE:LINE:COLUMN: KEY: cause" before failing with RZ_ECONFIG.  This is the only file that
 * includes yaml.h.  It does not know what the keys mean beyond the cross-key checks below. */
#include "config.h"

#include "config/cfg.h"
#include "config/keys.h"
#include "core/util.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define LINE_MAX_CHARS 2048 /* one problem line */
#define SHOW_MAX 96         /* an excerpt of user text in a message */
#define MAX_NESTING 64      /* of the mappings and sequences that are skipped */

/* ---- collecting problems ---------------------------------------------------------------- */

/* All problems of one operation; lines that no longer fit in rz_err are counted, not lost. */
struct report {
    struct rz_err *err;
    int shown, hidden;
};

static void report_add(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report_add(struct report *r, const char *fmt, ...)
{
    char line[LINE_MAX_CHARS];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (r->err == NULL) {
        r->shown++;
        return;
    }
    size_t used = r->shown > 0 ? strlen(r->err->msg) : 0;
    if (used + strlen(line) + 64 >= sizeof r->err->msg) {
        r->hidden++;
        return;
    }
    if (r->shown++ == 0)
        rz_fail(r->err, RZ_ECONFIG, "%s", line);
    else
        rz_err_append(r->err, "\n%s", line);
}

static enum rz_status report_finish(struct report *r)
{
    if (r->hidden > 0)
        rz_err_append(r->err, "\n(%d more problems not shown)", r->hidden);
    return r->shown + r->hidden > 0 ? RZ_ECONFIG : RZ_OK;
}

/* ---- the YAML loader -------------------------------------------------------------------- */

struct loader {
    yaml_parser_t parser;
    const char *file;                  /* name used in messages */
    const unsigned char *text;         /* the input, for positions of reader errors */
    size_t len;
    struct cfg *c;
    struct report rep;
    char context[CFG_KEY_NAME_MAX];    /* section being read: names syntax errors */
    int key_line[CFG_MAX_KEYS];        /* where each key was first seen (0: not yet) */
    int key_col[CFG_MAX_KEYS];
    char sec_name[CFG_MAX_KEYS][CFG_KEY_NAME_MAX]; /* sections seen so far, and where */
    yaml_mark_t sec_mark[CFG_MAX_KEYS];
    int n_sec;
    bool syntax_error, nomem; /* syntax_error: stop reading (also set past MAX_NESTING) */
};

static void problem(struct loader *ld, yaml_mark_t mark, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void problem(struct loader *ld, yaml_mark_t mark, const char *key, const char *fmt, ...)
{
    char cause[LINE_MAX_CHARS];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cause, sizeof cause, fmt, ap);
    va_end(ap);
    report_add(&ld->rep, "%s:%zu:%zu: %s: %s", ld->file, mark.line + 1, mark.column + 1, key, cause);
}

/* libyaml reports reader errors (bad UTF-8, control characters) as a byte offset only. */
static yaml_mark_t mark_of_offset(const struct loader *ld, size_t offset)
{
    yaml_mark_t m = {offset, 0, 0};
    for (size_t i = 0; i < offset && i < ld->len; i++) {
        if (ld->text[i] == '\n') {
            m.line++;
            m.column = 0;
        } else {
            m.column++;
        }
    }
    return m;
}

static void syntax_problem(struct loader *ld)
{
    const yaml_parser_t *p = &ld->parser;
    const char *what = p->problem != NULL ? p->problem : "unknown problem";
    const char *key = ld->context[0] != '\0' ? ld->context : "(document)";
    ld->syntax_error = true;
    if (p->error == YAML_MEMORY_ERROR) {
        ld->nomem = true;
        problem(ld, p->mark, key, "out of memory while parsing");
    } else if (p->error == YAML_READER_ERROR) {
        problem(ld, mark_of_offset(ld, p->problem_offset), key,
                "invalid input: %s (byte 0x%02x)", what, (unsigned)p->problem_value & 0xffu);
    } else if (p->context != NULL) {
        problem(ld, p->problem_mark, key, "YAML syntax error: %s %s (at %zu:%zu)", what,
                p->context, p->context_mark.line + 1, p->context_mark.column + 1);
    } else {
        problem(ld, p->problem_mark, key, "YAML syntax error: %s", what);
    }
}

/* Next event; false (with the problem recorded) on a syntax error, after which nothing more can
 * be read. */
static bool next_event(struct loader *ld, yaml_event_t *ev)
{
    if (ld->syntax_error)
        return false;
    if (!yaml_parser_parse(&ld->parser, ev)) {
        syntax_problem(ld);
        return false;
    }
    return true;
}

/* Consume the rest of a node whose first event is `first` (already deleted by the caller).
 * Nesting is capped: libyaml's scanner does work proportional to the flow depth for every token,
 * so a file of a million '[' would otherwise take hours to reject.  Past the cap, loading stops. */
static bool skip_node(struct loader *ld, yaml_event_type_t first)
{
    long depth = (first == YAML_MAPPING_START_EVENT || first == YAML_SEQUENCE_START_EVENT) ? 1 : 0;
    while (depth > 0) {
        yaml_event_t ev;
        if (!next_event(ld, &ev))
            return false;
        if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT)
            depth++;
        else if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT)
            depth--;
        if (depth > MAX_NESTING) {
            problem(ld, ev.start_mark, ld->context[0] != '\0' ? ld->context : "(document)",
                    "nesting deeper than %d levels; giving up", MAX_NESTING);
            ld->syntax_error = true;
        }
        yaml_event_delete(&ev);
        if (ld->syntax_error)
            return false;
    }
    return true;
}

static const char *node_kind(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_MAPPING_START_EVENT: return "a mapping";
    case YAML_SEQUENCE_START_EVENT: return "a sequence";
    case YAML_ALIAS_EVENT: return "an alias";
    case YAML_SCALAR_EVENT: return "a scalar";
    default: return "something else";
    }
}

/* Anchors, tags and aliases would let a value mean something other than its text: reject them.
 * Returns true if the event is clean. */
static bool plain_node(struct loader *ld, const yaml_event_t *ev, const char *key)
{
    const yaml_char_t *anchor = NULL, *tag = NULL;
    char shown[SHOW_MAX];
    if (ev->type == YAML_ALIAS_EVENT) {
        problem(ld, ev->start_mark, key, "aliases (*name) are not allowed");
        return false;
    }
    if (ev->type == YAML_SCALAR_EVENT) {
        anchor = ev->data.scalar.anchor;
        tag = ev->data.scalar.tag;
    } else if (ev->type == YAML_MAPPING_START_EVENT) {
        anchor = ev->data.mapping_start.anchor;
        tag = ev->data.mapping_start.tag;
    } else if (ev->type == YAML_SEQUENCE_START_EVENT) {
        anchor = ev->data.sequence_start.anchor;
        tag = ev->data.sequence_start.tag;
    }
    if (anchor != NULL) {
        cfg_show((const char *)anchor, strlen((const char *)anchor), shown, sizeof shown);
        problem(ld, ev->start_mark, key, "anchors (&%s) are not allowed", shown);
    }
    if (tag != NULL) {
        cfg_show((const char *)tag, strlen((const char *)tag), shown, sizeof shown);
        problem(ld, ev->start_mark, key, "tags ('%s') are not allowed", shown);
    }
    return anchor == NULL && tag == NULL;
}

static const char *scalar_text(const yaml_event_t *ev)
{
    return (const char *)ev->data.scalar.value;
}

static bool scalar_is_null(const yaml_event_t *ev)
{
    return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length == 0 &&
           ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* Read a mapping key into `ev`.  Returns false at the end of the mapping or on a syntax error
 * (ld->syntax_error tells which).  *is_key is true if the key is usable: a clean scalar. */
static bool read_key(struct loader *ld, yaml_event_t *ev, bool *is_key, const char *where)
{
    if (!next_event(ld, ev))
        return false;
    if (ev->type == YAML_MAPPING_END_EVENT) {
        yaml_event_delete(ev);
        return false;
    }
    *is_key = ev->type == YAML_SCALAR_EVENT && plain_node(ld, ev, where);
    if (ev->type != YAML_SCALAR_EVENT && ev->type != YAML_ALIAS_EVENT)
        problem(ld, ev->start_mark, where, "keys must be plain scalars, got %s", node_kind(ev));
    else if (ev->type == YAML_ALIAS_EVENT)
        plain_node(ld, ev, where);
    return true;
}

/* Read and discard one whole node (the value of a rejected key). */
static bool skip_value(struct loader *ld)
{
    yaml_event_t ev;
    if (!next_event(ld, &ev))
        return false;
    yaml_event_type_t type = ev.type;
    yaml_event_delete(&ev);
    return skip_node(ld, type);
}

static void set_value(struct loader *ld, int idx, const yaml_event_t *ev)
{
    const struct cfg_key *k = &cfg_keys[idx];
    struct rz_err cause;
    rz_err_clear(&cause);
    bool quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    if (cfg_key_assign(k, ld->c, scalar_text(ev), ev->data.scalar.length, quoted, &cause) != RZ_OK) {
        problem(ld, ev->start_mark, k->name, "%s", cause.msg);
        return;
    }
    ld->c->origin[idx] = (struct cfg_origin){CFG_ORIGIN_FILE, (int)ev->start_mark.line + 1,
                                             (int)ev->start_mark.column + 1};
}

/* The value of known key `idx`: must be one clean scalar. */
static bool load_value(struct loader *ld, int idx)
{
    const char *name = cfg_keys[idx].name;
    yaml_event_t ev;
    if (!next_event(ld, &ev))
        return false;
    if (ev.type != YAML_SCALAR_EVENT && ev.type != YAML_ALIAS_EVENT)
        problem(ld, ev.start_mark, name, "expected a scalar value, got %s", node_kind(&ev));
    else if (plain_node(ld, &ev, name) && ev.type == YAML_SCALAR_EVENT)
        set_value(ld, idx, &ev);
    yaml_event_type_t type = ev.type;
    yaml_event_delete(&ev);
    return skip_node(ld, type);
}

/* An unknown key or section: the problem names it as written (`shown`); `raw` (may be NULL) is
 * what the suggestion is computed from. */
static void unknown_name(struct loader *ld, yaml_mark_t mark, const char *shown, const char *raw,
                         const char *what)
{
    const char *near = raw != NULL ? cfg_key_suggest(raw, strlen(raw)) : NULL;
    if (shown[0] == '\0')
        shown = "(empty key)";
    if (near != NULL)
        problem(ld, mark, shown, "unknown %s; did you mean '%s'?", what, near);
    else
        problem(ld, mark, shown, "unknown %s (docs/config.md lists the keys)", what);
}

/* One key of section `sec` whose key event is `ev` (a clean scalar). */
static bool load_key(struct loader *ld, const char *sec, const yaml_event_t *ev)
{
    const char *leaf = scalar_text(ev);
    size_t len = ev->data.scalar.length;
    char full[CFG_KEY_NAME_MAX] = "", shown[SHOW_MAX], display[CFG_KEY_NAME_MAX + SHOW_MAX];
    int idx = -1;
    if (strlen(sec) + 1 + len < sizeof full && memchr(leaf, '\0', len) == NULL) {
        snprintf(full, sizeof full, "%s.%s", sec, leaf);
        idx = cfg_key_index(full);
    }
    if (idx < 0) {
        cfg_show(leaf, len, shown, sizeof shown);
        snprintf(display, sizeof display, "%s.%s", sec, len > 0 ? shown : "(empty key)");
        unknown_name(ld, ev->start_mark, display, full[0] != '\0' ? full : NULL, "key");
        return skip_value(ld);
    }
    if (ld->key_line[idx] > 0) {
        problem(ld, ev->start_mark, full, "duplicate key (first set at %d:%d)", ld->key_line[idx],
                ld->key_col[idx]);
        return skip_value(ld);
    }
    ld->key_line[idx] = (int)ev->start_mark.line + 1;
    ld->key_col[idx] = (int)ev->start_mark.column + 1;
    return load_value(ld, idx);
}

/* The keys of section `sec`, after its MAPPING_START. */
static bool load_section_keys(struct loader *ld, const char *sec)
{
    for (;;) {
        yaml_event_t ev;
        bool is_key = false;
        if (!read_key(ld, &ev, &is_key, sec))
            return !ld->syntax_error;
        yaml_event_type_t type = ev.type;
        bool ok = is_key ? load_key(ld, sec, &ev) : skip_node(ld, type) && skip_value(ld);
        yaml_event_delete(&ev);
        if (!ok)
            return false;
    }
}

/* The value of section `sec`: a mapping of keys. */
static bool load_section(struct loader *ld, const char *sec)
{
    yaml_event_t ev;
    char shown[SHOW_MAX];
    if (!next_event(ld, &ev))
        return false;
    yaml_event_type_t type = ev.type;
    if (type == YAML_MAPPING_START_EVENT) {
        bool clean = plain_node(ld, &ev, sec);
        yaml_event_delete(&ev);
        return clean ? load_section_keys(ld, sec) : skip_node(ld, type);
    }
    if (scalar_is_null(&ev)) {
        problem(ld, ev.start_mark, sec, "empty section (expected a mapping of keys)");
    } else if (type == YAML_SCALAR_EVENT) {
        cfg_show(scalar_text(&ev), ev.data.scalar.length, shown, sizeof shown);
        problem(ld, ev.start_mark, sec, "expected a mapping of keys, got the scalar '%s'", shown);
    } else {
        problem(ld, ev.start_mark, sec, "expected a mapping of keys, got %s", node_kind(&ev));
    }
    yaml_event_delete(&ev);
    return skip_node(ld, type);
}

/* One top-level entry whose key event is `ev` (a clean scalar): a section name. */
static bool load_top_entry(struct loader *ld, const yaml_event_t *ev)
{
    const char *name = scalar_text(ev);
    size_t len = ev->data.scalar.length;
    char shown[SHOW_MAX];
    bool usable = len < CFG_KEY_NAME_MAX && memchr(name, '\0', len) == NULL;
    if (!usable || !cfg_section_exists(name, len)) {
        cfg_show(name, len, shown, sizeof shown);
        unknown_name(ld, ev->start_mark, shown, usable ? name : NULL, "section");
        return skip_value(ld);
    }
    for (int i = 0; i < ld->n_sec; i++) {
        if (strcmp(ld->sec_name[i], name) == 0) {
            problem(ld, ev->start_mark, name, "duplicate section (first at %zu:%zu)",
                    ld->sec_mark[i].line + 1, ld->sec_mark[i].column + 1);
            return skip_value(ld);
        }
    }
    snprintf(ld->context, sizeof ld->context, "%s", name);
    assert(ld->n_sec < CFG_MAX_KEYS); /* at most one section per key */
    snprintf(ld->sec_name[ld->n_sec], CFG_KEY_NAME_MAX, "%s", name);
    ld->sec_mark[ld->n_sec++] = ev->start_mark;
    bool ok = load_section(ld, name);
    if (ok)
        ld->context[0] = '\0';
    return ok;
}

/* The entries of the root mapping, after its MAPPING_START. */
static bool load_sections(struct loader *ld)
{
    for (;;) {
        yaml_event_t ev;
        bool is_key = false;
        if (!read_key(ld, &ev, &is_key, "(document)"))
            return !ld->syntax_error;
        yaml_event_type_t type = ev.type;
        bool ok = is_key ? load_top_entry(ld, &ev) : skip_node(ld, type) && skip_value(ld);
        yaml_event_delete(&ev);
        if (!ok)
            return false;
    }
}

/* The root node of the (first) document: a mapping of sections, or nothing at all. */
static bool load_root(struct loader *ld)
{
    yaml_event_t ev;
    if (!next_event(ld, &ev))
        return false;
    yaml_event_type_t type = ev.type;
    bool clean = plain_node(ld, &ev, "(document)");
    if (type == YAML_MAPPING_START_EVENT) {
        yaml_event_delete(&ev);
        return clean ? load_sections(ld) : skip_node(ld, type);
    }
    if (clean && !scalar_is_null(&ev))
        problem(ld, ev.start_mark, "(document)", "the top level must be a mapping of sections, got %s",
                node_kind(&ev));
    yaml_event_delete(&ev);
    return skip_node(ld, type);
}

static void load_stream(struct loader *ld)
{
    int docs = 0;
    for (;;) {
        yaml_event_t ev;
        if (!next_event(ld, &ev))
            return;
        yaml_event_type_t type = ev.type;
        yaml_mark_t mark = ev.start_mark;
        yaml_event_delete(&ev);
        if (type == YAML_STREAM_END_EVENT)
            return;
        if (type != YAML_DOCUMENT_START_EVENT)
            continue; /* stream start, document end */
        if (++docs == 2)
            problem(ld, mark, "(document)", "more than one YAML document; expected exactly one");
        if (!(docs == 1 ? load_root(ld) : skip_value(ld)))
            return;
    }
}

static enum rz_status load_buffer(struct cfg *c, const char *file, const char *text, size_t len,
                                  struct rz_err *err)
{
    struct loader *ld = calloc(1, sizeof *ld);
    if (ld == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s: cannot load config: out of memory", file);
    if (!yaml_parser_initialize(&ld->parser)) {
        free(ld);
        return rz_fail(err, RZ_ENOMEM, "%s: cannot initialise the YAML parser", file);
    }
    ld->file = file;
    ld->text = (const unsigned char *)text;
    ld->len = len;
    ld->c = c;
    ld->rep.err = err;
    yaml_parser_set_input_string(&ld->parser, ld->text, len);
    load_stream(ld);
    yaml_parser_delete(&ld->parser);
    enum rz_status st = report_finish(&ld->rep);
    if (ld->nomem) {
        st = RZ_ENOMEM;
        if (err != NULL)
            err->status = RZ_ENOMEM;
    }
    free(ld);
    return st;
}

/* ---- public: defaults, load, set -------------------------------------------------------- */

void cfg_defaults(struct cfg *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < cfg_n_keys; i++) {
        const struct cfg_key *k = &cfg_keys[i];
        bool quoted = k->type == CFG_STRING || k->type == CFG_ENUM;
        enum rz_status st = cfg_key_assign(k, c, k->def, strlen(k->def), quoted, NULL);
        assert(st == RZ_OK && "every default in keys.c parses and is within its bounds");
        (void)st;
    }
}

enum rz_status cfg_load(struct cfg *c, const char *path, struct rz_err *err)
{
    char *text = NULL;
    size_t len = 0;
    struct rz_err io;
    assert(path != NULL && "cfg_load needs a path; use cfg_defaults for none");
    cfg_defaults(c);
    snprintf(c->source, sizeof c->source, "%s", path);
    enum rz_status st = rz_read_file(path, &text, &len, &io);
    int saved = errno;
    if (st == RZ_ENOMEM)
        return rz_fail(err, RZ_ENOMEM, "%s: cannot read: out of memory", path);
    if (st != RZ_OK)
        return rz_fail(err, RZ_ECONFIG, "%s: cannot open: %s", path, strerror(saved));
    st = load_buffer(c, path, text, len, err);
    free(text);
    return st;
}

enum rz_status cfg_load_string(struct cfg *c, const char *name, const char *yaml, struct rz_err *err)
{
    if (name == NULL)
        name = "<string>";
    cfg_defaults(c);
    snprintf(c->source, sizeof c->source, "%s", name);
    return load_buffer(c, name, yaml, strlen(yaml), err);
}

static enum rz_status set_unknown(const char *key, size_t len, struct rz_err *err)
{
    char shown[SHOW_MAX];
    const char *near = cfg_key_suggest(key, len);
    cfg_show(key, len, shown, sizeof shown);
    if (near != NULL)
        return rz_fail(err, RZ_ECONFIG, "--set %s: unknown key; did you mean '%s'?", shown, near);
    return rz_fail(err, RZ_ECONFIG, "--set %s: unknown key (docs/config.md lists the keys)", shown);
}

enum rz_status cfg_set(struct cfg *c, const char *assignment, struct rz_err *err)
{
    char key[CFG_KEY_NAME_MAX], shown[SHOW_MAX];
    const char *eq = strchr(assignment, '=');
    size_t klen = eq != NULL ? (size_t)(eq - assignment) : 0;
    if (klen == 0) {
        cfg_show(assignment, strlen(assignment), shown, sizeof shown);
        return rz_fail(err, RZ_ECONFIG, "--set %s: expected KEY=VALUE", shown);
    }
    int idx = -1;
    if (klen < sizeof key) {
        memcpy(key, assignment, klen);
        key[klen] = '\0';
        idx = cfg_key_index(key);
    }
    if (idx < 0)
        return set_unknown(assignment, klen, err);
    /* The shell has already removed one level of quotes; a second level marks a quoted scalar. */
    const char *v = eq + 1;
    size_t vlen = strlen(v);
    bool quoted = vlen >= 2 && (v[0] == '"' || v[0] == '\'') && v[vlen - 1] == v[0];
    if (quoted) {
        v++;
        vlen -= 2;
    }
    struct rz_err cause;
    rz_err_clear(&cause);
    if (cfg_key_assign(&cfg_keys[idx], c, v, vlen, quoted, &cause) != RZ_OK)
        return rz_fail(err, RZ_ECONFIG, "--set %s: %s", key, cause.msg);
    c->origin[idx] = (struct cfg_origin){CFG_ORIGIN_SET, 0, 0};
    return RZ_OK;
}

/* ---- cross-key validation --------------------------------------------------------------- */

static int key_idx(const char *name)
{
    int i = cfg_key_index(name);
    assert(i >= 0 && "validation refers to a key in the table");
    return i;
}

/* "FILE:LINE:COLUMN: KEY", "--set KEY" or "(default) KEY": the start of a problem line. */
static void origin_prefix(const struct cfg *c, int idx, char *buf, size_t len)
{
    const struct cfg_origin *o = &c->origin[idx];
    const char *name = cfg_keys[idx].name;
    switch (o->kind) {
    case CFG_ORIGIN_FILE:
        snprintf(buf, len, "%s:%d:%d: %s", c->source, o->line, o->column, name);
        return;
    case CFG_ORIGIN_SET: snprintf(buf, len, "--set %s", name); return;
    case CFG_ORIGIN_DEFAULT: snprintf(buf, len, "(default) %s", name); return;
    }
    snprintf(buf, len, "%s", name);
}

#define DESCRIBE_MAX (CFG_PATH_MAX + SHOW_MAX + CFG_KEY_NAME_MAX + 48)

/* "model.d_model = 250 (f.yaml:2:12)": a key, its value and where it came from, for causes. */
static void describe(const struct cfg *c, int idx, char *buf, size_t len)
{
    const struct cfg_key *k = &cfg_keys[idx];
    const struct cfg_origin *o = &c->origin[idx];
    char value[CFG_PATH_MAX], shown[SHOW_MAX], from[CFG_PATH_MAX + 32];
    cfg_key_format(k, c, value, sizeof value);
    cfg_show(value, strlen(value), shown, sizeof shown);
    if (o->kind == CFG_ORIGIN_FILE)
        snprintf(from, sizeof from, "%.*s:%d:%d", CFG_PATH_MAX - 1, c->source, o->line, o->column);
    else
        snprintf(from, sizeof from, "%s", o->kind == CFG_ORIGIN_SET ? "--set" : "default");
    const char *q = k->type == CFG_STRING ? "\"" : "";
    snprintf(buf, len, "%s = %s%s%s (%s)", k->name, q, shown, q, from);
}

/* "A <relation> B<tail>" between keys a and b, reported at a unless a is a default and b is not:
 * the line should point at what the user wrote. */
static void cross_problem(struct report *r, const struct cfg *c, int a, const char *relation,
                          int b, const char *tail)
{
    char prefix[CFG_PATH_MAX + 96], da[DESCRIBE_MAX], db[DESCRIBE_MAX];
    int at = (c->origin[a].kind == CFG_ORIGIN_DEFAULT && c->origin[b].kind != CFG_ORIGIN_DEFAULT)
                 ? b : a;
    origin_prefix(c, at, prefix, sizeof prefix);
    describe(c, a, da, sizeof da);
    describe(c, b, db, sizeof db);
    report_add(r, "%s: %s %s %s%s", prefix, da, relation, db, tail);
}

static void validate_keys(struct report *r, const struct cfg *c)
{
    char prefix[CFG_PATH_MAX + 96];
    for (size_t i = 0; i < cfg_n_keys; i++) {
        struct rz_err cause;
        rz_err_clear(&cause);
        if (cfg_key_check(&cfg_keys[i], c, &cause) == RZ_OK)
            continue;
        origin_prefix(c, (int)i, prefix, sizeof prefix);
        report_add(r, "%s: %s", prefix, cause.msg);
    }
}

static void validate_cross(struct report *r, const struct cfg *c)
{
    const struct cfg_model *m = &c->model;
    const char *kind = c->data.kind;
    if (m->n_heads > 0 && m->d_model % m->n_heads != 0)
        cross_problem(r, c, key_idx("model.n_heads"), "does not divide", key_idx("model.d_model"),
                      "; the head size d_model/n_heads must be whole");
    if ((strcmp(kind, "text") == 0 || strcmp(kind, "tokens") == 0) && c->data.path[0] == '\0')
        cross_problem(r, c, key_idx("data.path"), "must name the input file when",
                      key_idx("data.kind"), "");
    if (c->optimizer.warmup_steps > c->training.steps)
        cross_problem(r, c, key_idx("optimizer.warmup_steps"), "must not exceed",
                      key_idx("training.steps"), "");
    bool file_kind = strcmp(kind, "text") == 0 || strcmp(kind, "tokens") == 0;
    if (c->data.val_path[0] != '\0' && !file_kind)
        cross_problem(r, c, key_idx("data.val_path"), "needs a file kind, not",
                      key_idx("data.kind"), "; synthetic data holds out a stream with "
                      "data.val_fraction");
    if (c->data.val_path[0] != '\0' && c->data.val_fraction > 0.0)
        cross_problem(r, c, key_idx("data.val_fraction"), "and", key_idx("data.val_path"),
                      " are both set; hold out one or the other");
    if (strcmp(kind, "tokens") == 0 && strcmp(c->data.token_dtype, "uint16") == 0 &&
        m->vocab_size > 65536)
        cross_problem(r, c, key_idx("data.token_dtype"), "cannot hold the ids of",
                      key_idx("model.vocab_size"), "; uint16 ids stop at 65535: use uint32");
    if (strcmp(kind, "markov") == 0 && c->data.markov_branching > m->vocab_size)
        cross_problem(r, c, key_idx("data.markov_branching"), "must not exceed",
                      key_idx("model.vocab_size"), "; successors are distinct tokens");
}

enum rz_status cfg_validate(const struct cfg *c, struct rz_err *err)
{
    struct report r = {err, 0, 0};
    validate_keys(&r, c);
    validate_cross(&r, c);
    return report_finish(&r);
}

bool cfg_phase_name(const char *path, char *out, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && strcmp(base + n - 5, ".yaml") == 0)
        n -= 5;
    else if (n > 4 && strcmp(base + n - 4, ".yml") == 0)
        n -= 4;
    if (n >= len)
        return false;
    memcpy(out, base, n);
    out[n] = '\0';
    return true;
}

enum rz_status cfg_load_with_overrides(struct cfg *c, const char *path, const char *const *sets,
                                       int n, struct rz_err *err)
{
    enum rz_status st = cfg_load(c, path, err);
    for (int i = 0; st == RZ_OK && i < n; i++)
        st = cfg_set(c, sets[i], err);
    return st == RZ_OK ? cfg_validate(c, err) : st;
}
