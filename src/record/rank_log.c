/* rank_log.c: the per-rank step log's writer and reader (see rank_log.h).
 * Not here: de-duplication by step, merging the ranks, or any judgement (gate/gate_read.c);
 * aggregation across ranks (the trainer passes already-reduced figures). */
#include "config.h"

#include "record/rank_log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/json_read.h"
#include "core/util.h"
#include "record/jsonl.h"

/* ---- the writer ------------------------------------------------------------------------------ */

struct rank_log {
    FILE *f;
    char path[4200];
};

enum rz_status rank_log_open(struct rank_log **out, const char *run_dir, const char *run_id,
                             int rank, struct rz_err *err)
{
    *out = NULL;
    struct rank_log *log = calloc(1, sizeof *log);
    if (log == NULL)
        return rz_fail(err, RZ_ENOMEM, "metrics: out of memory");
    char dir[4096];
    int n = snprintf(dir, sizeof dir, "%s/metrics/%s", run_dir, run_id);
    if (n < 0 || (size_t)n >= sizeof dir) {
        free(log);
        return rz_fail(err, RZ_EIO, "metrics: run directory path too long: '%s'", run_dir);
    }
    enum rz_status st = rz_mkdirs(dir, err);
    if (st != RZ_OK) {
        free(log);
        return st;
    }
    rank_log_file(log->path, sizeof log->path, dir, rank);
    log->f = fopen(log->path, "a");
    if (log->f == NULL) {
        st = rz_fail(err, RZ_EIO, "metrics: open '%s': %s", log->path, strerror(errno));
        free(log);
        return st;
    }
    *out = log;
    return RZ_OK;
}

const char *rank_log_path(const struct rank_log *log) { return log->path; }

enum rz_status rank_log_write(struct rank_log *log, const struct rank_step *s,
                              struct rz_err *err)
{
    struct rz_json j;
    rz_json_init(&j, log->f);
    rz_json_object_begin(&j);
    rz_json_kv_int(&j, "step", s->step);
    rz_json_kv_int(&j, "samples_seen", s->samples_seen);
    rz_json_kv_int(&j, "run_step", s->run_step);
    rz_json_kv_double(&j, "loss", s->loss);
    char hex[64];
    snprintf(hex, sizeof hex, "%a", s->loss); /* exact, for bit-exact comparisons */
    rz_json_kv_string(&j, "loss_hex", hex);
    rz_json_kv_double(&j, "lr", s->lr);
    rz_json_kv_double(&j, "grad_norm", s->grad_norm);
    rz_json_kv_double(&j, "step_time_s", s->step_time_s);
    rz_json_kv_double(&j, "comm_time_s", s->comm_time_s);
    rz_json_kv_double(&j, "samples_per_sec", s->samples_per_sec);
    rz_json_kv_double(&j, "tokens_per_sec", s->tokens_per_sec);
    rz_json_kv_double(&j, "mfu", s->mfu);
    rz_json_kv_uint(&j, "rss_bytes", s->rss_bytes);
    rz_json_kv_double(&j, "allreduce_s", s->allreduce_s);
    rz_json_kv_double(&j, "compute_time_s", s->compute_time_s);
    rz_json_kv_double(&j, "grad_allreduce_s", s->grad_allreduce_s);
    if (s->time > 0)
        rz_json_kv_fixed(&j, "t", s->time, 3); /* as events.jsonl's t */
    if (s->skipped) {
        rz_json_kv_bool(&j, "skipped", true);
        rz_json_kv_string(&j, "skip_reason", s->skip_reason != NULL ? s->skip_reason : "");
    }
    if (s->skipped_total > 0)
        rz_json_kv_int(&j, "skipped_total", s->skipped_total);
    rz_json_kv_int(&j, "world_size", s->world_size);
    if (s->has_val) {
        rz_json_kv_double(&j, "val_loss", s->val_loss);
        snprintf(hex, sizeof hex, "%a", s->val_loss);
        rz_json_kv_string(&j, "val_loss_hex", hex);
    }
    if (s->has_sync) {
        rz_json_kv_bool(&j, "sync_ok", s->sync_ok != 0);
        rz_json_kv_double(&j, "param_spread", s->param_spread);
        rz_json_kv_double(&j, "gnorm_pre_min", s->gnorm_pre_min);
        rz_json_kv_double(&j, "gnorm_pre_max", s->gnorm_pre_max);
        rz_json_kv_double(&j, "gnorm_post_spread", s->gnorm_post_spread);
    }
    rz_json_object_end(&j);
    fputc('\n', log->f);
    if (fflush(log->f) != 0 || ferror(log->f))
        return rz_fail(err, RZ_EIO, "metrics: write '%s': %s", log->path, strerror(errno));
    return RZ_OK;
}

void rank_log_close(struct rank_log *log)
{
    if (log == NULL)
        return;
    if (log->f != NULL)
        fclose(log->f);
    free(log);
}

/* ---- the reader ------------------------------------------------------------------------------ */

void rank_log_file(char *out, size_t len, const char *metrics_dir, int rank)
{
    rz_fmt(out, len, "%s/rank-%05d.jsonl", metrics_dir, rank);
}

struct rank_rows {
    struct rank_row *v;
    size_t n, cap;
    int world_size;             /* from the lines; 0 until the first */
};

static enum rz_status field_num(const struct gj_value *o, const char *key, double *out,
                                const char *path, long line, struct rz_err *err)
{
    const struct gj_value *v = gj_get(o, key);
    if (v == NULL)
        return rz_fail(err, RZ_EDATA, "%s:%ld: field '%s' is missing", path, line, key);
    if (v->type == GJ_NULL)
        return rz_fail(err, RZ_EDATA, "%s:%ld: field '%s' is null (a non-finite value: did "
                       "training diverge?)", path, line, key);
    if (v->type != GJ_NUM || !isfinite(v->num))
        return rz_fail(err, RZ_EDATA, "%s:%ld: field '%s' is not a number", path, line, key);
    *out = v->num;
    return RZ_OK;
}

static enum rz_status field_int(const struct gj_value *o, const char *key, int64_t *out,
                                int64_t min, const char *path, long line, struct rz_err *err)
{
    if (!gj_get_int(o, key, out) || *out < min)
        return rz_fail(err, RZ_EDATA, "%s:%ld: field '%s' is not an integer >= %lld", path,
                       line, key, (long long)min);
    return RZ_OK;
}

/* An optional number: NaN when KEY is absent (metrics written before it existed) or, with
 * NULL_OK, null (a non-finite value); anything else but a finite number is RZ_EDATA. */
static enum rz_status field_opt(const struct gj_value *o, const char *key, double *out,
                                bool null_ok, const char *path, long line, struct rz_err *err)
{
    const struct gj_value *v = gj_get(o, key);
    *out = NAN;
    if (v == NULL || (null_ok && v->type == GJ_NULL))
        return RZ_OK;
    return field_num(o, key, out, path, line, err);
}

static enum rz_status row_parse(struct rank_row *r, int64_t *world, const struct gj_value *o,
                                const char *path, long line, struct rz_err *err)
{
    double rss = 0;
    enum rz_status st = field_int(o, "step", &r->step, 1, path, line, err);
    if (st == RZ_OK)
        st = field_int(o, "run_step", &r->run_step, 1, path, line, err);
    if (st == RZ_OK)
        st = field_int(o, "samples_seen", &r->samples_seen, 0, path, line, err);
    if (st == RZ_OK)
        st = field_int(o, "world_size", world, 1, path, line, err);
    r->skipped = false;
    (void)gj_get_bool(o, "skipped", &r->skipped);
    const char *keys[] = {"loss", "step_time_s", "comm_time_s", "allreduce_s", "rss_bytes"};
    double *dst[] = {&r->loss, &r->step_time_s, &r->comm_time_s, &r->allreduce_s, &rss};
    r->loss = NAN; /* a step the loss guard skipped may have a non-finite (null) loss */
    bool null_loss = r->skipped && gj_get(o, "loss") != NULL && gj_get(o, "loss")->type == GJ_NULL;
    for (size_t i = null_loss ? 1 : 0; st == RZ_OK && i < RZ_ARRAY_LEN(keys); i++)
        st = field_num(o, keys[i], dst[i], path, line, err);
    if (st == RZ_OK && (r->step_time_s <= 0 || r->comm_time_s < 0 || r->allreduce_s < 0 ||
                        rss < 0))
        st = rz_fail(err, RZ_EDATA, "%s:%ld: negative time or memory (step_time_s must be > 0)",
                     path, line);
    r->rss_bytes = (uint64_t)rss;
    /* optional (NaN when absent); the first two may be null: a non-finite lr or norm */
    const char *opt[] = {"lr", "grad_norm", "compute_time_s", "t", "grad_allreduce_s",
                         "val_loss"};
    double *opt_dst[] = {&r->lr, &r->grad_norm, &r->compute_time_s, &r->time,
                         &r->grad_allreduce_s, &r->val_loss};
    for (size_t i = 0; st == RZ_OK && i < RZ_ARRAY_LEN(opt); i++)
        st = field_opt(o, opt[i], opt_dst[i], i < 2, path, line, err);
    r->has_sync = gj_get_bool(o, "sync_ok", &r->sync_ok);
    if (st == RZ_OK && gj_get(o, "sync_ok") != NULL && !r->has_sync)
        st = rz_fail(err, RZ_EDATA, "%s:%ld: field 'sync_ok' is not true/false", path, line);
    r->gnorm_post_spread = 0;
    if (st == RZ_OK && r->has_sync)
        st = field_num(o, "gnorm_post_spread", &r->gnorm_post_spread, path, line, err);
    return st;
}

static enum rz_status row_line(void *ctx, const struct gj_value *v, const char *path,
                               long line, const char *text, struct rz_err *err)
{
    struct rank_rows *rows = ctx;
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 256;
        struct rank_row *nv = realloc(rows->v, cap * sizeof *nv);
        if (nv == NULL)
            return rz_fail(err, RZ_ENOMEM, "%s: out of memory", path);
        rows->v = nv;
        rows->cap = cap;
    }
    int64_t world = 0;
    struct rank_row *r = &rows->v[rows->n];
    enum rz_status st = row_parse(r, &world, v, path, line, err);
    if (st != RZ_OK)
        return st;
    if (rows->world_size != 0 && world != rows->world_size)
        return rz_fail(err, RZ_EDATA, "%s:%ld: world_size %lld differs from %d on earlier lines",
                       path, line, (long long)world, rows->world_size);
    rows->world_size = (int)world;
    rows->n++;
    return RZ_OK;
}

enum rz_status rank_log_read(const char *path, struct rank_row **rows, size_t *n, int *world,
                             struct rz_err *err)
{
    struct rank_rows r = {0};
    enum rz_status st = jsonl_read(path, JSONL_STRICT, row_line, &r, err);
    *rows = r.v;
    *n = r.n;
    *world = r.world_size;
    return st;
}
