/* exits.c: exit records' writer and reader (see exits.h). */
#include "config.h"

#include "record/exits.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/durable.h"
#include "core/json.h"
#include "core/json_read.h"
#include "core/util.h"

static void write_record(FILE *f, const void *ctx)
{
    const struct exit_record *r = ctx;
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_int(&j, "rank", r->rank);
    rz_json_kv_string(&j, "host", r->host);
    rz_json_kv_int(&j, "status", r->status);
    rz_json_kv_string(&j, "end_reason", r->end_reason);
    rz_json_kv_string(&j, "message", r->message);
    rz_json_kv_int(&j, "pid", (int64_t)getpid());
    rz_json_object_end(&j);
    fputc('\n', f);
}

enum rz_status exit_record_write(const char *dir, const struct exit_record *r,
                                 struct rz_err *err)
{
    char path[4200];
    rz_fmt(path, sizeof path, "%s/rank-%05d.json", dir, r->rank);
    enum rz_status st = rz_mkdirs(dir, err);
    return st == RZ_OK ? rz_durable_write(path, "exit", write_record, r, err) : st;
}

static void read_record(const char *path, struct exit_record *r)
{
    char *text = NULL;
    size_t len = 0;
    struct gj_value *v = NULL;
    memset(r, 0, sizeof *r);
    r->rank = -1;
    if (rz_read_file(path, &text, &len, NULL) == RZ_OK &&
        gj_parse(&v, text, len, path, 1, NULL) == RZ_OK) {
        int64_t x;
        if (gj_get_int(v, "rank", &x))
            r->rank = (int)x;
        if (gj_get_int(v, "status", &x))
            r->status = (int)x;
        const char *s;
        if ((s = gj_get_str(v, "host")) != NULL)
            rz_fmt(r->host, sizeof r->host, "%s", s);
        if ((s = gj_get_str(v, "end_reason")) != NULL)
            rz_fmt(r->end_reason, sizeof r->end_reason, "%s", s);
        if ((s = gj_get_str(v, "message")) != NULL)
            rz_fmt(r->message, sizeof r->message, "%s", s);
    }
    gj_free(v);
    free(text);
}

void exit_records_read(const char *dir, struct exit_record *out, int max, int *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL && *n < max;) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "rank-", 5) != 0 || len < 6 ||
            strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char path[4400];
        rz_fmt(path, sizeof path, "%s/%s", dir, e->d_name);
        read_record(path, &out[*n]);
        if (out[*n].rank >= 0)
            (*n)++;
    }
    if (d != NULL)
        closedir(d);
}
