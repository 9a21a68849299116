/* health_json.c: health.json's writer and reader (see health_json.h). */
#include "config.h"

#include "record/health_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/durable.h"
#include "core/json.h"
#include "core/json_read.h"
#include "core/util.h"

/* ---- writing ------------------------------------------------------------------------------- */

static void write_names(struct rz_json *j, const char *key, char (*names)[HEALTH_HOST_LEN], int n)
{
    rz_json_key(j, key);
    rz_json_array_begin(j);
    for (int i = 0; i < n; i++)
        rz_json_string(j, names[i]);
    rz_json_array_end(j);
}

static void write_rank(struct rz_json *j, const struct health_rank *r)
{
    rz_json_object_begin(j);
    rz_json_kv_int(j, "rank", r->rank);
    rz_json_kv_string(j, "host", r->host);
    rz_json_kv_string(j, "isa", r->isa);
    rz_json_kv_string(j, "cpus", r->cpus);
    rz_json_kv_int(j, "n_cpus", r->n_cpus);
    rz_json_kv_int(j, "omp_threads", r->omp_threads);
    rz_json_kv_double(j, "mem_available_bytes", r->mem_available);
    rz_json_kv_double(j, "mem_total_bytes", r->mem_total);
    rz_json_kv_double(j, "mem_limit_bytes", r->mem_limit);
    rz_json_kv_string(j, "mem_limit_source", r->mem_limit_source);
    rz_json_kv_double(j, "mem_need_bytes", r->mem_need);
    rz_json_kv_double(j, "ckpt_free_bytes", r->ckpt_free);
    rz_json_kv_bool(j, "run_root_seen", r->run_root_seen);
    rz_json_kv_string(j, "machine", r->machine);
    rz_json_kv_double(j, "cpu_quota", r->cpu_quota); /* null: none */
    rz_json_object_end(j);
}

static void write_matrix(struct rz_json *j, const char *key, int n,
                         const double (*m)[HEALTH_MAX_HOSTS])
{
    rz_json_key(j, key);
    rz_json_array_begin(j);
    for (int a = 0; a < n; a++) {
        rz_json_array_begin(j);
        for (int b = 0; b < n; b++)
            rz_json_double(j, m[a][b]);
        rz_json_array_end(j);
    }
    rz_json_array_end(j);
}

void health_links_fields(struct rz_json *j, const struct health_links *l)
{
    write_names(j, "hosts", (char (*)[HEALTH_HOST_LEN])l->hosts, l->n_hosts);
    rz_json_kv_int(j, "probe_bytes", l->probe_bytes);
    write_matrix(j, "gbps", l->n_hosts, l->gbps);
    write_matrix(j, "latency_us", l->n_hosts, l->latency_us);
    rz_json_kv_double(j, "ring_hop_us", l->ring_hop_us > 0 ? l->ring_hop_us : (double)NAN);
}

static void write_links(struct rz_json *j, const struct health_links *l)
{
    rz_json_key(j, "links");
    rz_json_object_begin(j);
    health_links_fields(j, l);
    rz_json_object_end(j);
}

enum rz_status health_write(const char *path, const struct health_doc *h, struct rz_err *err)
{
    struct rz_durable d;
    enum rz_status st = rz_durable_open(&d, path, "health", err);
    if (st != RZ_OK)
        return st;
    struct rz_json j;
    rz_json_init(&j, d.f);
    rz_json_object_begin(&j);
    rz_json_kv_bool(&j, "ok", h->ok);
    rz_json_kv_string(&j, "time", h->time);
    rz_json_kv_int(&j, "world_size", h->world_size);
    rz_json_kv_string(&j, "slurm_ntasks", h->slurm_ntasks);
    rz_json_key(&j, "checks");
    rz_json_array_begin(&j);
    for (int c = 0; c < h->n_checks; c++) {
        rz_json_object_begin(&j);
        rz_json_kv_string(&j, "name", h->checks[c].name);
        rz_json_kv_bool(&j, "ok", h->checks[c].ok);
        rz_json_kv_string(&j, "detail", h->checks[c].detail);
        rz_json_object_end(&j);
    }
    rz_json_array_end(&j);
    rz_json_kv_string(&j, "warning", h->warning);
    write_names(&j, "hosts", (char (*)[HEALTH_HOST_LEN])h->hosts, h->n_hosts);
    write_names(&j, "failed_hosts", (char (*)[HEALTH_HOST_LEN])h->failed_hosts, h->n_failed);
    rz_json_key(&j, "ranks");
    rz_json_array_begin(&j);
    for (int r = 0; r < h->n_ranks; r++)
        write_rank(&j, &h->ranks[r]);
    rz_json_array_end(&j);
    if (h->has_links)
        write_links(&j, &h->links);
    rz_json_object_end(&j);
    fputc('\n', d.f);
    return rz_durable_commit(&d, err);
}

/* ---- reading ------------------------------------------------------------------------------- */

static void copy_str(char *dst, size_t len, const struct gj_value *o, const char *key)
{
    const char *s = gj_get_str(o, key);
    rz_fmt(dst, len, "%s", s != NULL ? s : "");
}

/* An array of strings into names (at most HEALTH_MAX_HOSTS); the count. */
static int read_names(const struct gj_value *a, char (*names)[HEALTH_HOST_LEN])
{
    int n = 0;
    for (size_t i = 0; a != NULL && a->type == GJ_ARR && i < a->n && n < HEALTH_MAX_HOSTS; i++)
        if (a->items[i].type == GJ_STR)
            rz_fmt(names[n++], HEALTH_HOST_LEN, "%s", a->items[i].str);
    return n;
}

static void read_checks(const struct gj_value *a, struct health_doc *h)
{
    for (size_t i = 0; a != NULL && a->type == GJ_ARR && i < a->n; i++) {
        const struct gj_value *o = &a->items[i];
        struct health_check *k = &h->checks[h->n_checks];
        if (h->n_checks == HEALTH_MAX_CHECKS || gj_get_str(o, "name") == NULL ||
            !gj_get_bool(o, "ok", &k->ok))
            continue;
        copy_str(k->name, sizeof k->name, o, "name");
        copy_str(k->detail, sizeof k->detail, o, "detail");
        h->n_checks++;
    }
}

static enum rz_status read_rank(const struct gj_value *o, struct health_rank *r, const char *path,
                                size_t i, struct rz_err *err)
{
    int64_t rank = 0, n_cpus = 0, threads = 0;
    if (!gj_get_int(o, "rank", &rank) || gj_get_str(o, "host") == NULL ||
        !gj_get_num(o, "mem_total_bytes", &r->mem_total))
        return rz_fail(err, RZ_EDATA, "%s: ranks[%zu] needs 'rank', 'host' and "
                       "'mem_total_bytes'", path, i);
    r->rank = (int)rank;
    copy_str(r->host, sizeof r->host, o, "host");
    copy_str(r->isa, sizeof r->isa, o, "isa");
    copy_str(r->cpus, sizeof r->cpus, o, "cpus");
    copy_str(r->mem_limit_source, sizeof r->mem_limit_source, o, "mem_limit_source");
    (void)gj_get_int(o, "n_cpus", &n_cpus);
    (void)gj_get_int(o, "omp_threads", &threads);
    r->n_cpus = (int)n_cpus;
    r->omp_threads = (int)threads;
    (void)gj_get_num(o, "mem_available_bytes", &r->mem_available);
    (void)gj_get_num(o, "mem_limit_bytes", &r->mem_limit);
    (void)gj_get_num(o, "mem_need_bytes", &r->mem_need);
    (void)gj_get_num(o, "ckpt_free_bytes", &r->ckpt_free);
    (void)gj_get_bool(o, "run_root_seen", &r->run_root_seen);
    copy_str(r->machine, sizeof r->machine, o, "machine");
    r->cpu_quota = NAN;
    (void)gj_get_num(o, "cpu_quota", &r->cpu_quota);
    return RZ_OK;
}

static enum rz_status read_matrix(const struct gj_value *m, int n, double (*out)[HEALTH_MAX_HOSTS],
                                  const char *path, const char *key, struct rz_err *err)
{
    if (m == NULL || m->type != GJ_ARR || m->n != (size_t)n)
        return rz_fail(err, RZ_EDATA, "%s: links.%s must be %d rows, one per host", path, key, n);
    for (int a = 0; a < n; a++) {
        const struct gj_value *row = &m->items[a];
        if (row->type != GJ_ARR || row->n != (size_t)n)
            return rz_fail(err, RZ_EDATA, "%s: links.%s[%d] must hold %d numbers", path, key, a,
                           n);
        for (int b = 0; b < n; b++) {
            if (row->items[b].type != GJ_NUM)
                return rz_fail(err, RZ_EDATA, "%s: links.%s[%d][%d] is not a number", path, key,
                               a, b);
            out[a][b] = row->items[b].num;
        }
    }
    return RZ_OK;
}

enum rz_status health_links_read(const struct gj_value *o, struct health_links *l,
                                 const char *path, struct rz_err *err)
{
    l->n_hosts = read_names(gj_get(o, "hosts"), l->hosts);
    (void)gj_get_int(o, "probe_bytes", &l->probe_bytes);
    l->ring_hop_us = NAN; /* null, or a file written before it was measured */
    (void)gj_get_num(o, "ring_hop_us", &l->ring_hop_us);
    enum rz_status st = read_matrix(gj_get(o, "gbps"), l->n_hosts, l->gbps, path, "gbps", err);
    if (st == RZ_OK)
        st = read_matrix(gj_get(o, "latency_us"), l->n_hosts, l->latency_us, path, "latency_us",
                         err);
    return st;
}

enum rz_status health_read(const char *path, struct health_doc *h, struct rz_err *err)
{
    struct gj_value *v = NULL;
    memset(h, 0, sizeof *h);
    enum rz_status st = gj_parse_file(path, &v, err);
    if (st != RZ_OK)
        return st;
    const struct gj_value *ranks = gj_get(v, "ranks"), *links = gj_get(v, "links");
    if (ranks == NULL || ranks->type != GJ_ARR) {
        gj_free(v);
        return rz_fail(err, RZ_EDATA, "%s: 'ranks' array missing", path);
    }
    h->ok = true;
    (void)gj_get_bool(v, "ok", &h->ok);
    int64_t world = 0;
    (void)gj_get_int(v, "world_size", &world);
    h->world_size = (int)world;
    copy_str(h->time, sizeof h->time, v, "time");
    copy_str(h->slurm_ntasks, sizeof h->slurm_ntasks, v, "slurm_ntasks");
    copy_str(h->warning, sizeof h->warning, v, "warning");
    read_checks(gj_get(v, "checks"), h);
    h->n_hosts = read_names(gj_get(v, "hosts"), h->hosts);
    h->n_failed = read_names(gj_get(v, "failed_hosts"), h->failed_hosts);
    h->ranks = calloc(ranks->n + 1, sizeof *h->ranks);
    if (h->ranks == NULL)
        st = rz_fail(err, RZ_ENOMEM, "%s: out of memory for %zu ranks", path, ranks->n);
    for (size_t i = 0; st == RZ_OK && i < ranks->n; i++) {
        st = read_rank(&ranks->items[i], &h->ranks[i], path, i, err);
        h->n_ranks += st == RZ_OK;
    }
    if (st == RZ_OK && links != NULL && links->type == GJ_OBJ) {
        st = health_links_read(links, &h->links, path, err);
        h->has_links = st == RZ_OK;
    }
    gj_free(v);
    if (st != RZ_OK)
        health_free(h);
    return st;
}

void health_free(struct health_doc *h)
{
    free(h->ranks);
    h->ranks = NULL;
    h->n_ranks = 0;
}
