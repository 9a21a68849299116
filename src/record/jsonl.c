/* jsonl.c: the JSON Lines reader (see jsonl.h).  Not here: what any line means. */
#include "config.h"

#include "record/jsonl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_read.h"

/* One line of f into v (NULL: blank, or skipped under JSONL_TOLERANT). */
static enum rz_status parse_line(char *buf, size_t n, enum jsonl_policy policy, const char *path,
                                 long line, struct gj_value **v, struct rz_err *err)
{
    *v = NULL;
    bool cut = n == 0 || buf[n - 1] != '\n';
    if (cut && policy == JSONL_STRICT)
        return rz_fail(err, RZ_EDATA, "%s:%ld: truncated line (no newline at end of file): "
                       "a writer died mid-line", path, line);
    size_t len = n;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        buf[--len] = '\0';
    if (strspn(buf, " \t") == len)
        return RZ_OK;
    struct rz_err ignored;
    struct rz_err *e = policy == JSONL_STRICT ? err : &ignored;
    enum rz_status st = gj_parse(v, buf, len, path, line, e);
    if (st == RZ_OK && (*v)->type != GJ_OBJ)
        st = rz_fail(e, RZ_EDATA, "%s:%ld: a JSON object expected", path, line);
    if (st != RZ_OK) {
        gj_free(*v);
        *v = NULL;
    }
    return policy == JSONL_STRICT ? st : RZ_OK;
}

enum rz_status jsonl_read(const char *path, enum jsonl_policy policy, jsonl_line_fn fn,
                          void *ctx, struct rz_err *err)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (policy == JSONL_TOLERANT)
            return RZ_OK;
        return rz_fail(err, errno == ENOENT ? RZ_EDATA : RZ_EIO, "open '%s': %s", path,
                       strerror(errno));
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    long line = 0;
    enum rz_status st = RZ_OK;
    while (st == RZ_OK && (n = getline(&buf, &cap, f)) >= 0) {
        struct gj_value *v = NULL;
        st = parse_line(buf, (size_t)n, policy, path, ++line, &v, err);
        if (st == RZ_OK && v != NULL)
            st = fn(ctx, v, path, line, buf, err);
        gj_free(v);
    }
    if (st == RZ_OK && ferror(f) && policy == JSONL_STRICT)
        st = rz_fail(err, RZ_EIO, "read '%s': %s", path, strerror(errno));
    free(buf);
    fclose(f);
    return st;
}
