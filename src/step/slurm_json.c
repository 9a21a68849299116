/* slurm_json.c: Slurm read as data.  `squeue --json` and `sinfo --json` in the shape Slurm 22.05
 * prints (meta.plugin.type "openapi/v0.0.38"), read with core/json_read.h and mapped onto struct
 * slurm_job and struct slurm_node with the same meaning slurm.c gives `scontrol show job -o` and
 * `scontrol show node -o`; which reader this process uses, decided once; hostlists expanded.
 *
 * Deliberately not here: scontrol (22.05's has no --json), sacct's SubmitLine (22.05's
 * `sacct --json` has no submit line), the text parsers (slurm.c: the fallback), and any other
 * JSON shape (a later Slurm's data_parser): it is refused, and the run reads text. */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/json_read.h"
#include "core/util.h"
#include "step/step_internal.h"

/* ---- which reader ------------------------------------------------------------------------------ */

static struct {
    enum slurm_reader mode;
    bool confirmed;             /* a --json answer was read */
    char version[64];           /* `squeue --version` */
    char why[512];              /* why text */
    char line[640];             /* slurm_reader_describe's */
} reader;

void slurm_reader_set(enum slurm_reader m, const char *why)
{
    reader.mode = m;
    reader.confirmed = false;
    rz_fmt(reader.why, sizeof reader.why, "%s", why != NULL ? why : "");
}

/* "slurm 22.05.8", "slurm-wlm 22.05.8": 22 and 5. */
static bool version_of(const char *text, int *major, int *minor)
{
    const char *p = strchr(text, ' ');
    return p != NULL && sscanf(p + 1, "%d.%d", major, minor) == 2;
}

enum slurm_reader slurm_reader_mode(const struct step_runner *r)
{
    if (reader.mode != SLURM_READER_UNKNOWN)
        return reader.mode;
    const char *argv[] = {"squeue", "--version", NULL};
    char out[256] = "", why[320];
    struct rz_err err;
    int major = 0, minor = 0;
    int rc = r->run(r, argv, out, sizeof out, &err);
    out[strcspn(out, "\n")] = '\0';
    rz_fmt(reader.version, sizeof reader.version, "%s", out);
    if (rc != 0 || !version_of(out, &major, &minor)) {
        rz_fmt(why, sizeof why, "`squeue --version` gave status %d, \"%s\"", rc, out);
        slurm_reader_set(SLURM_READER_TEXT, why);
    } else if (major * 100 + minor < 2205) {
        rz_fmt(why, sizeof why, "%s: --json is read from Slurm 22.05 on", out);
        slurm_reader_set(SLURM_READER_TEXT, why);
    } else {
        slurm_reader_set(SLURM_READER_JSON, NULL);
    }
    return reader.mode;
}

const char *slurm_reader_describe(void)
{
    if (reader.mode == SLURM_READER_JSON)
        rz_fmt(reader.line, sizeof reader.line, "squeue/sinfo --json (%s)%s", reader.version,
               reader.confirmed ? "" : ", no answer read yet");
    else if (reader.mode == SLURM_READER_TEXT)
        rz_fmt(reader.line, sizeof reader.line, "scontrol/squeue text (%s)", reader.why);
    else
        rz_fmt(reader.line, sizeof reader.line, "not chosen yet");
    return reader.line;
}

/* ---- values as scontrol prints them ---------------------------------------------------------------- */

/* The JSON document of `what` ("squeue --json") and its array `list`, in 22.05's shape. */
static enum rz_status document(const char *text, const char *what, const char *list,
                               struct gj_value **doc, const struct gj_value **items,
                               struct rz_err *err)
{
    enum rz_status st = gj_parse(doc, text, strlen(text), what, 1, err);
    if (st != RZ_OK)
        return st;
    const char *type = gj_get_str(gj_get(gj_get(*doc, "meta"), "plugin"), "type");
    if (type == NULL || strcmp(type, "openapi/v0.0.38") != 0)
        return rz_fail(err, RZ_EDATA, "%s: meta.plugin.type is %s%s%s, only Slurm 22.05's "
                       "\"openapi/v0.0.38\" is read", what, type != NULL ? "\"" : "",
                       type != NULL ? type : "missing", type != NULL ? "\"" : "");
    *items = gj_get(*doc, list);
    if (*items == NULL || (*items)->type != GJ_ARR)
        return rz_fail(err, RZ_EDATA, "%s: no \"%s\" array", what, list);
    return RZ_OK;
}

/* Member key of o as a string ("" for null and scontrol's empty values). */
static enum rz_status text_of(const struct gj_value *o, const char *key, char *out, size_t len,
                              const char *what, struct rz_err *err)
{
    const struct gj_value *v = gj_get(o, key);
    out[0] = '\0';
    if (v == NULL)
        return rz_fail(err, RZ_EDATA, "%s: no \"%s\"", what, key);
    if (v->type == GJ_NULL)
        return RZ_OK;
    if (v->type != GJ_STR)
        return rz_fail(err, RZ_EDATA, "%s: \"%s\" is not a string", what, key);
    rz_fmt(out, len, "%s", slurm_empty_value(v->str) ? "" : v->str);
    return RZ_OK;
}

/* Member key of o as an integer; *null when it is null (then *out is 0). */
static enum rz_status int_of(const struct gj_value *o, const char *key, int64_t *out, bool *null,
                             const char *what, struct rz_err *err)
{
    const struct gj_value *v = gj_get(o, key);
    *out = 0;
    *null = v != NULL && v->type == GJ_NULL;
    if (v == NULL)
        return rz_fail(err, RZ_EDATA, "%s: no \"%s\"", what, key);
    if (!*null && !gj_get_int(o, key, out))
        return rz_fail(err, RZ_EDATA, "%s: \"%s\" is not an integer", what, key);
    return RZ_OK;
}

/* Several integer members at once: the first problem. */
struct int_member {
    const char *key;
    int64_t *value;
    bool *null;
};
static enum rz_status ints_of(const struct gj_value *o, const struct int_member *m, size_t n,
                              const char *what, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    for (size_t i = 0; i < n && st == RZ_OK; i++)
        st = int_of(o, m[i].key, m[i].value, m[i].null, what, err);
    return st;
}

/* Unix seconds as scontrol prints a time: local "2026-11-28T11:15:58" ("" for 0: None/Unknown). */
static void local_time(char *out, size_t len, int64_t t)
{
    struct tm tm;
    time_t tt = (time_t)t;
    out[0] = '\0';
    if (t > 0 && localtime_r(&tt, &tm) != NULL)
        strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

/* Minutes as scontrol prints a time limit: "1-02:03:00", "00:30:00"; null is "UNLIMITED". */
static void limit_text(char *out, size_t len, int64_t minutes, bool null)
{
    long d = (long)(minutes / 1440), h = (long)(minutes / 60 % 24), m = (long)(minutes % 60);
    if (null)
        rz_fmt(out, len, "UNLIMITED");
    else if (d > 0)
        rz_fmt(out, len, "%ld-%02ld:%02ld:00", d, h, m);
    else
        rz_fmt(out, len, "%02ld:%02ld:00", h, m);
}

/* Megabytes as scontrol prints memory: "300M", "1G" (the largest unit that divides it). */
static void memory_text(char *out, size_t len, int64_t mb, bool null)
{
    static const char units[] = "MGTPE";
    int u = 0;
    if (null) {
        out[0] = '\0';
        return;
    }
    while (mb > 0 && mb % 1024 == 0 && units[u + 1] != '\0') {
        mb /= 1024;
        u++;
    }
    if (mb == 0)
        rz_fmt(out, len, "0");
    else
        rz_fmt(out, len, "%lld%c", (long long)mb, units[u]);
}

/* ---- jobs ------------------------------------------------------------------------------------------ */

struct job_text {
    const char *key;
    size_t offset, len;         /* into struct slurm_job */
};
#define JOB_TEXT(k, m) {k, offsetof(struct slurm_job, m), sizeof(((struct slurm_job *)0)->m)}
static const struct job_text job_texts[] = {
    JOB_TEXT("job_state", state), JOB_TEXT("state_reason", reason),
    JOB_TEXT("partition", partition), JOB_TEXT("account", account), JOB_TEXT("qos", qos),
    JOB_TEXT("resv_name", reservation), JOB_TEXT("features", features),
    JOB_TEXT("excluded_nodes", exc_nodes), JOB_TEXT("command", command),
    JOB_TEXT("nodes", node_list), JOB_TEXT("batch_host", batch_host),
    JOB_TEXT("comment", comment),
};

/* "123" or "123_4" (an array task: task >= 0); false for anything else ("123+0", "1_[2-3]"). */
static bool job_id_of(const char *id, long *job, long *task)
{
    char *end = NULL;
    *task = -1;
    *job = strtol(id, &end, 10);
    if (end == id || *job <= 0)
        return false;
    if (*end == '_') {
        const char *t = end + 1;
        *task = strtol(t, &end, 10);
        if (end == t || *task < 0)
            return false;
    }
    return *end == '\0';
}

static bool job_is(const struct gj_value *o, long job, long task)
{
    int64_t a = 0, t = 0;
    if (task < 0)
        return gj_get_int(o, "job_id", &a) && a == job;
    return gj_get_int(o, "array_job_id", &a) && a == job && gj_get_int(o, "array_task_id", &t) &&
           t == task;
}

static enum rz_status job_times(const struct gj_value *o, double now, struct slurm_job *j,
                                const char *what, struct rz_err *err)
{
    int64_t limit, start, end, preempt;
    bool no_limit, null;
    const struct int_member m[] = {{"time_limit", &limit, &no_limit},
                                   {"start_time", &start, &null},
                                   {"end_time", &end, &null},
                                   {"preempt_time", &preempt, &null}};
    enum rz_status st = ints_of(o, m, RZ_ARRAY_LEN(m), what, err);
    if (st != RZ_OK)
        return st;
    limit_text(j->time_limit, sizeof j->time_limit, limit, no_limit);
    j->time_limit_s = slurm_parse_duration(j->time_limit);
    if (no_limit && (double)end > now)
        end = 0; /* scontrol: EndTime=Unknown for a job without a limit that has not ended */
    local_time(j->start_time, sizeof j->start_time, start);
    local_time(j->end_time, sizeof j->end_time, end);
    local_time(j->preempt_time, sizeof j->preempt_time, preempt);
    j->end_epoch = end > 0 ? (double)end : 0.0;
    return RZ_OK;
}

static enum rz_status job_numbers(const struct gj_value *o, struct slurm_job *j,
                                  const char *what, struct rz_err *err)
{
    int64_t restarts, per_node, per_cpu, cpus;
    bool null, node_null, cpu_null, cpus_null;
    const struct int_member m[] = {{"restart_cnt", &restarts, &null},
                                   {"memory_per_node", &per_node, &node_null},
                                   {"memory_per_cpu", &per_cpu, &cpu_null},
                                   {"cpus_per_task", &cpus, &cpus_null}};
    enum rz_status st = ints_of(o, m, RZ_ARRAY_LEN(m), what, err);
    if (st != RZ_OK)
        return st;
    j->restarts = (long)restarts;
    memory_text(j->min_mem_node, sizeof j->min_mem_node, per_node, node_null);
    memory_text(j->min_mem_cpu, sizeof j->min_mem_cpu, per_cpu, cpu_null);
    /* 22.05 prints cpus_per_task null even where scontrol shows CPUs/Task=2, and has no mail
     * fields at all: those come from scontrol (slurm_job_query_whole) */
    j->cpus_per_task = (long)cpus;
    j->partial = cpus_null || gj_get(o, "mail_type") == NULL || gj_get(o, "mail_user") == NULL;
    return RZ_OK;
}

static enum rz_status job_map(const struct gj_value *o, double now, struct slurm_job *j,
                              const char *what, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    for (size_t i = 0; i < RZ_ARRAY_LEN(job_texts) && st == RZ_OK; i++)
        st = text_of(o, job_texts[i].key, (char *)j + job_texts[i].offset, job_texts[i].len,
                     what, err);
    if (st == RZ_OK) st = job_times(o, now, j, what, err);
    if (st == RZ_OK) st = job_numbers(o, j, what, err);
    j->found = st == RZ_OK;
    return st;
}

/* The job `id` of the "jobs" array, or NULL. */
static const struct gj_value *job_in(const struct gj_value *jobs, long job, long task)
{
    for (size_t i = 0; i < jobs->n; i++)
        if (job_is(&jobs->items[i], job, task))
            return &jobs->items[i];
    return NULL;
}

/* Job `id` of squeue --json output into *o (NULL when it is not there); the caller frees *doc. */
static enum rz_status find_job(const char *text, const char *id, struct gj_value **doc,
                               const struct gj_value **o, struct rz_err *err)
{
    const struct gj_value *jobs = NULL;
    long job, task;
    *doc = NULL;
    *o = NULL;
    if (!job_id_of(id, &job, &task))
        return rz_fail(err, RZ_EDATA, "job id \"%s\": not one squeue --json is read for", id);
    enum rz_status st = document(text, "squeue --json", "jobs", doc, &jobs, err);
    if (st == RZ_OK)
        *o = job_in(jobs, job, task);
    return st;
}

enum rz_status slurm_job_parse_json(const char *text, const char *id, double now,
                                    struct slurm_job *j, struct rz_err *err)
{
    struct gj_value *doc = NULL;
    const struct gj_value *o = NULL;
    char what[128];
    memset(j, 0, sizeof *j);
    j->time_limit_s = -1;
    enum rz_status st = find_job(text, id, &doc, &o, err);
    rz_fmt(what, sizeof what, "squeue --json: job %s", id);
    if (o != NULL)
        st = job_map(o, now, j, what, err);
    gj_free(doc);
    return st;
}

enum rz_status slurm_pending_parse_json(const char *text, const char *id, long uid,
                                        bool *pending, struct rz_err *err)
{
    struct gj_value *doc = NULL;
    const struct gj_value *o = NULL;
    int64_t owner = -1;
    enum rz_status st = find_job(text, id, &doc, &o, err);
    const char *state = o != NULL ? gj_get_str(o, "job_state") : NULL;
    if (o != NULL && (state == NULL || !gj_get_int(o, "user_id", &owner)))
        st = rz_fail(err, RZ_EDATA, "squeue --json: job %s: no job_state string or user_id "
                     "integer", id);
    *pending = st == RZ_OK && o != NULL && strcmp(state, "PENDING") == 0 && owner == uid;
    gj_free(doc);
    return st;
}

/* ---- nodes ------------------------------------------------------------------------------------------ */

#define HOSTS_MAX 16384 /* a node list expanded: about 2,000 names of 8 characters */

/* Append name[0..n) to the list out; false when it does not fit. */
static bool list_append(char *out, size_t len, const char *name, size_t n)
{
    size_t used = strlen(out), need = used + (used > 0) + n + 1;
    if (need > len)
        return false;
    if (used > 0)
        out[used++] = ',';
    memcpy(out + used, name, n);
    out[used + n] = '\0';
    return true;
}

/* One range "7", "01-12" of prefix[...]suffix. */
static bool expand_range(const char *pre, size_t pre_n, const char *r, size_t r_n,
                         const char *suf, size_t suf_n, char *out, size_t len)
{
    char lo_s[24], name[256], *end = NULL;
    size_t digits = strspn(r, "0123456789");
    if (digits == 0 || digits >= sizeof lo_s || digits > r_n)
        return false;
    rz_fmt(lo_s, sizeof lo_s, "%.*s", (int)digits, r);
    long lo = strtol(lo_s, NULL, 10), hi = lo;
    if (digits < r_n) {
        if (r[digits] != '-')
            return false;
        hi = strtol(r + digits + 1, &end, 10);
        if (end != r + r_n || end == r + digits + 1)
            return false;
    }
    if (hi < lo || hi - lo > 65536)
        return false;
    for (long v = lo; v <= hi; v++) {
        int n = snprintf(name, sizeof name, "%.*s%0*ld%.*s", (int)pre_n, pre, (int)digits, v,
                         (int)suf_n, suf);
        if (n < 0 || (size_t)n >= sizeof name || !list_append(out, len, name, (size_t)n))
            return false;
    }
    return true;
}

/* One name of a hostlist: "n3", or "n[1-2,4]" with one bracket group. */
static bool expand_name(const char *s, size_t n, char *out, size_t len)
{
    const char *open = memchr(s, '[', n);
    if (open == NULL)
        return n > 0 && list_append(out, len, s, n);
    const char *close = memchr(open, ']', n - (size_t)(open - s));
    if (close == NULL || memchr(close, '[', n - (size_t)(close - s)) != NULL)
        return false;
    const char *suf = close + 1;
    size_t suf_n = n - (size_t)(suf - s);
    for (const char *r = open + 1; r < close;) {
        const char *comma = memchr(r, ',', (size_t)(close - r));
        const char *stop = comma != NULL ? comma : close;
        if (!expand_range(s, (size_t)(open - s), r, (size_t)(stop - r), suf, suf_n, out, len))
            return false;
        r = stop + 1;
    }
    return true;
}

bool slurm_hostlist_expand(const char *list, char *out, size_t len)
{
    if (len == 0)
        return false;
    out[0] = '\0';
    for (const char *p = list; *p != '\0';) {
        size_t n = 0;
        int depth = 0;
        while (p[n] != '\0' && (depth > 0 || p[n] != ',')) {
            depth += p[n] == '[' ? 1 : p[n] == ']' ? -1 : 0;
            n++;
        }
        if (depth != 0 || !expand_name(p, n, out, len))
            return false;
        p += n + (p[n] == ',');
    }
    return out[0] != '\0';
}

/* "idle" and ["DRAIN"] as scontrol prints them: "IDLE+DRAIN". */
static enum rz_status node_state(const struct gj_value *o, struct slurm_node *n, const char *what,
                                 struct rz_err *err)
{
    enum rz_status st = text_of(o, "state", n->state, sizeof n->state, what, err);
    const struct gj_value *flags = gj_get(o, "state_flags");
    if (st == RZ_OK && (flags == NULL || flags->type != GJ_ARR))
        return rz_fail(err, RZ_EDATA, "%s: \"state_flags\" is not an array", what);
    for (size_t i = 0; st == RZ_OK && i < flags->n; i++) {
        if (flags->items[i].type != GJ_STR)
            return rz_fail(err, RZ_EDATA, "%s: \"state_flags\" holds a non-string", what);
        size_t used = strlen(n->state);
        rz_fmt(n->state + used, sizeof n->state - used, "+%s", flags->items[i].str);
    }
    for (char *c = n->state; *c != '\0'; c++)
        *c = (char)toupper((unsigned char)*c);
    return st;
}

/* The reason with who set it and when, as scontrol prints it: "why [root@2026-11-28T11:15:59]". */
static enum rz_status node_reason(const struct gj_value *o, struct slurm_node *n,
                                  const char *what, struct rz_err *err)
{
    char by[64], at[32];
    int64_t t;
    bool null;
    enum rz_status st = text_of(o, "reason", n->reason, sizeof n->reason, what, err);
    if (st == RZ_OK) st = text_of(o, "reason_set_by_user", by, sizeof by, what, err);
    if (st == RZ_OK) st = int_of(o, "reason_changed_at", &t, &null, what, err);
    if (st != RZ_OK || n->reason[0] == '\0' || t <= 0)
        return st;
    local_time(at, sizeof at, t);
    size_t used = strlen(n->reason);
    rz_fmt(n->reason + used, sizeof n->reason - used, " [%s@%s]", by, at);
    return RZ_OK;
}

static enum rz_status node_map(const struct gj_value *o, struct slurm_node *n, struct rz_err *err)
{
    char what[128];
    int64_t port;
    bool null;
    memset(n, 0, sizeof *n);
    enum rz_status st = text_of(o, "name", n->name, sizeof n->name, "sinfo --json", err);
    rz_fmt(what, sizeof what, "sinfo --json: node %s", n->name);
    if (st == RZ_OK) st = node_state(o, n, what, err);
    if (st == RZ_OK) st = node_reason(o, n, what, err);
    if (st == RZ_OK) st = text_of(o, "address", n->addr, sizeof n->addr, what, err);
    if (st == RZ_OK) st = int_of(o, "port", &port, &null, what, err);
    if (n->addr[0] == '\0') /* Slurm's default: the node's name */
        rz_fmt(n->addr, sizeof n->addr, "%s", n->name);
    n->port = (long)port;
    return st;
}

enum rz_status slurm_node_parse_json(const char *text, const char *names, struct slurm_node *out,
                                     int max, int *n, struct rz_err *err)
{
    char wanted[HOSTS_MAX], seen[HOSTS_MAX] = "";
    struct gj_value *doc = NULL;
    const struct gj_value *nodes = NULL;
    *n = 0;
    if (!slurm_hostlist_expand(names, wanted, sizeof wanted))
        return rz_fail(err, RZ_EDATA, "node list \"%s\": not a hostlist this reads", names);
    enum rz_status st = document(text, "sinfo --json", "nodes", &doc, &nodes, err);
    for (size_t i = 0; st == RZ_OK && i < nodes->n && *n < max; i++) {
        const char *name = gj_get_str(&nodes->items[i], "name");
        if (name == NULL || !rz_list_has(wanted, name) || rz_list_has(seen, name))
            continue;
        rz_list_add(seen, sizeof seen, name);
        st = node_map(&nodes->items[i], &out[*n], err);
        *n += st == RZ_OK;
    }
    gj_free(doc);
    return st;
}

/* Down as sinfo's compact state (%t) says: "down", "drain" (a drained node that runs nothing),
 * "fail"/"failg"; a node draining its jobs ("drng") still counts. */
static bool compact_down(const struct slurm_node *n)
{
    char base[32];
    rz_fmt(base, sizeof base, "%.*s", (int)strcspn(n->state, "+"), n->state);
    bool busy = strstr(n->state, "+COMPLETING") != NULL || strcmp(base, "ALLOCATED") == 0 ||
                strcmp(base, "MIXED") == 0;
    return strcmp(base, "DOWN") == 0 || strstr(n->state, "+FAIL") != NULL ||
           (strstr(n->state, "+DRAIN") != NULL && !busy);
}

static bool lists(const struct gj_value *o, const char *key, const char *name)
{
    const struct gj_value *a = gj_get(o, key);
    for (size_t i = 0; a != NULL && a->type == GJ_ARR && i < a->n; i++)
        if (a->items[i].type == GJ_STR && strcmp(a->items[i].str, name) == 0)
            return true;
    return false;
}

enum rz_status slurm_usable_parse_json(const char *text, const char *partition,
                                       const char *excluded, long *usable, struct rz_err *err)
{
    char seen[HOSTS_MAX] = "";
    struct gj_value *doc = NULL;
    const struct gj_value *nodes = NULL;
    struct slurm_node n;
    *usable = 0;
    enum rz_status st = document(text, "sinfo --json", "nodes", &doc, &nodes, err);
    for (size_t i = 0; st == RZ_OK && i < nodes->n; i++) {
        const struct gj_value *o = &nodes->items[i];
        const char *name = gj_get_str(o, "name");
        if (name == NULL || !lists(o, "partitions", partition) || rz_list_has(seen, name))
            continue;
        rz_list_add(seen, sizeof seen, name);
        st = node_map(o, &n, err);
        *usable += st == RZ_OK && !compact_down(&n) && !rz_list_has(excluded, name);
    }
    gj_free(doc);
    return st;
}

/* ---- the queries ---------------------------------------------------------------------------------- */

#define JSON_MAX ((size_t)32 << 20) /* 22.05 prints every job: room for a site's queue */

/* Run a --json command into a fresh buffer (the caller frees it). */
static enum rz_status ask(const struct step_runner *r, const char *const *argv, char **out,
                          struct rz_err *err)
{
    *out = malloc(JSON_MAX);
    if (*out == NULL)
        return rz_fail(err, RZ_ENOMEM, "%s --json: no memory for its answer", argv[0]);
    (*out)[0] = '\0';
    int rc = r->run(r, argv, *out, JSON_MAX, err);
    if (rc != 0)
        return rc < 0 ? RZ_EHEALTH : rz_fail(err, RZ_EHEALTH, "%s --json: status %d", argv[0], rc);
    if (strlen(*out) >= JSON_MAX - 1)
        return rz_fail(err, RZ_EDATA, "%s --json: more than %zu MiB of output", argv[0],
                       JSON_MAX >> 20);
    return RZ_OK;
}

/* What a --json query's status means for the reader: an answer that did not read (RZ_EDATA),
 * or a failure before any answer was read, turns it to text (RZ_EDATA: ask the text path). */
static enum rz_status settle(enum rz_status st, struct rz_err *err)
{
    if (st == RZ_OK) {
        reader.confirmed = true;
        return RZ_OK;
    }
    if (st != RZ_EDATA && reader.confirmed)
        return st; /* Slurm said no, as it would to the text path */
    slurm_reader_set(SLURM_READER_TEXT, err->msg);
    return RZ_EDATA;
}

enum rz_status slurm_job_query_json(const struct step_runner *r, const char *job,
                                    struct slurm_job *j, struct rz_err *err)
{
    long id, task;
    if (!job_id_of(job, &id, &task))
        return rz_fail(err, RZ_EDATA, "job id \"%s\": asked with scontrol", job);
    const char *argv[] = {"squeue", "--json", "--jobs", job, NULL};
    char *text = NULL;
    enum rz_status st = ask(r, argv, &text, err);
    if (st == RZ_OK)
        st = slurm_job_parse_json(text, job, r->now(r), j, err);
    free(text);
    st = settle(st, err);
    if (st == RZ_OK && !j->found)
        return rz_fail(err, RZ_EHEALTH, "squeue --json: job %s is not known to Slurm", job);
    return st;
}

enum rz_status slurm_nodes_query_json(const struct step_runner *r, const char *names,
                                      struct slurm_node *out, int max, int *n, struct rz_err *err)
{
    const char *argv[] = {"sinfo", "--json", "--nodes", names, NULL};
    char *text = NULL, wanted[HOSTS_MAX];
    *n = 0;
    if (!slurm_hostlist_expand(names, wanted, sizeof wanted))
        return rz_fail(err, RZ_EDATA, "node list \"%s\": asked with scontrol", names);
    enum rz_status st = ask(r, argv, &text, err);
    if (st == RZ_OK)
        st = slurm_node_parse_json(text, names, out, max, n, err);
    free(text);
    return settle(st, err);
}

enum rz_status slurm_pending_query_json(const struct step_runner *r, const char *job,
                                        bool *pending, struct rz_err *err)
{
    long id, task;
    *pending = false;
    if (!job_id_of(job, &id, &task))
        return rz_fail(err, RZ_EDATA, "job id \"%s\": asked with squeue's text", job);
    const char *argv[] = {"squeue", "--json", "--me", "--jobs", job, NULL};
    char *text = NULL;
    enum rz_status st = ask(r, argv, &text, err);
    if (st == RZ_OK)
        st = slurm_pending_parse_json(text, job, (long)getuid(), pending, err);
    free(text);
    return settle(st, err);
}

enum rz_status slurm_partition_usable_json(const struct step_runner *r, const char *partition,
                                           const char *excluded, long *usable,
                                           struct rz_err *err)
{
    const char *argv[] = {"sinfo", "--json", "--partition", partition, NULL};
    char *text = NULL;
    enum rz_status st = ask(r, argv, &text, err);
    if (st == RZ_OK)
        st = slurm_usable_parse_json(text, partition, excluded, usable, err);
    free(text);
    return settle(st, err);
}
