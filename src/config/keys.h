/* keys.h: the configuration key table and the per-key operations built on it.
 *
 * Internal to src/config (and its tests): callers outside the module use config.h.  Each row names
 * one key as "section.leaf", its type, where it lives in struct cfg, its bounds or choices, its
 * default (as YAML scalar text, parsed by the same code as the file) and a one-line doc.  Adding a
 * key, or a whole section, is adding rows to cfg_keys[] in keys.c; nothing else lists keys.
 * Ownership: the table is static and read-only; functions write only into buffers they are given. */
#ifndef RZ_CONFIG_KEYS_H
#define RZ_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"
#include "core/status.h"

enum cfg_type {
    CFG_INT,    /* int64_t; decimal digits with an optional sign, nothing else */
    CFG_FLOAT,  /* double; strtod must consume all of it and the result must be finite */
    CFG_STRING, /* char[size]; any text shorter than size */
    CFG_ENUM,   /* char[size]; one of `choices` */
};

/* Bits of cfg_key.open: which float bound is exclusive. */
#define CFG_OPEN_MIN 1u
#define CFG_OPEN_MAX 2u

/* Longest dotted key name, including the NUL. */
#define CFG_KEY_NAME_MAX 64

struct cfg_key {
    const char *name;    /* "section.leaf" */
    enum cfg_type type;
    size_t offset;       /* of the field in struct cfg */
    size_t size;         /* of the field in bytes (string capacity for CFG_STRING/CFG_ENUM) */
    int64_t imin, imax;  /* CFG_INT: inclusive bounds */
    double fmin, fmax;   /* CFG_FLOAT: bounds, exclusive where `open` says so */
    unsigned open;
    const char *choices; /* CFG_ENUM: "a|b|c" */
    const char *def;     /* default as scalar text ("" for the empty string) */
    const char *doc;     /* one line, no '|' (it goes into a Markdown table) */
};

struct cfg_section {
    const char *name;
    const char *doc;
};

extern const struct cfg_key cfg_keys[];
extern const size_t cfg_n_keys;

/* Optional one-line descriptions of sections, for the reference (sections come from the keys). */
extern const struct cfg_section cfg_sections[];
extern const size_t cfg_n_sections;

/* Index of the key named `name` in cfg_keys, or -1. */
int cfg_key_index(const char *name);

/* Whether some key lives in section `name` (of `len` bytes). */
bool cfg_section_exists(const char *name, size_t len);

/* The part after the dot, and the length of the part before it. */
const char *cfg_key_leaf(const struct cfg_key *k);
size_t cfg_key_section_len(const struct cfg_key *k);

const char *cfg_type_name(enum cfg_type type);

/* Printable excerpt of `len` bytes of `s` for messages: non-ASCII and control bytes as \xNN, at
 * most 60 bytes then "...".  `cap` >= 8. */
void cfg_show(const char *s, size_t len, char *buf, size_t cap);

/* Parse `len` bytes of `text` (a quoted scalar if `quoted`) into the key's field of `c` and check
 * its bounds.  On failure `c` is unchanged and `cause` holds only the cause ("expected an integer,
 * got 'abc'"); the caller adds the position and key. */
enum rz_status cfg_key_assign(const struct cfg_key *k, struct cfg *c, const char *text, size_t len,
                              bool quoted, struct rz_err *cause);

/* Check the key's current value in `c` against its bounds or choices (cause as above). */
enum rz_status cfg_key_check(const struct cfg_key *k, const struct cfg *c, struct rz_err *cause);

/* The value as text that cfg_key_assign reads back to the same value (floats: shortest %.Ng that
 * round-trips, at most %.17g).  Strings are written raw, without quotes. */
void cfg_key_format(const struct cfg_key *k, const struct cfg *c, char *buf, size_t len);

/* Bounds or choices for messages and the reference: "[1, 65536]", "(0, 10]", "adam|adamw". */
void cfg_key_format_bounds(const struct cfg_key *k, char *buf, size_t len);

/* Whether the key has the same value in `a` and `b` (floats compared bit for bit). */
bool cfg_key_equal(const struct cfg_key *k, const struct cfg *a, const struct cfg *b);

/* Restricted Damerau-Levenshtein distance; strings longer than 64 bytes are "far" (SIZE_MAX/2). */
size_t cfg_edit_distance(const char *a, size_t alen, const char *b, size_t blen);

/* The dotted key (or section name) closest to `name` by edit distance over dotted names, leaf
 * names and section names; NULL if nothing is close enough to suggest. */
const char *cfg_key_suggest(const char *name, size_t len);

/* The choice of `k` (a CFG_ENUM) closest to `text`, copied into buf; false if none is close. */
bool cfg_enum_suggest(const struct cfg_key *k, const char *text, size_t len, char *buf,
                      size_t buflen);

#endif
