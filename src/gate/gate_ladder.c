#include "config.h"

/* gate_ladder.c: the ladder report's data: every phase report (read through record/report.h) and
 * event under a run root (the chain's RUN_ROOT), the efficiencies against the base attempt, and
 * a scaling model fitted to the measured phases, with predictions for the rungs not run yet.
 *
 * The model, per optimizer step of P ranks with b samples each (weak scaling), s the share of a
 * core each rank really has (cores per rank from the report's topology), M the gradient's bytes:
 *   one node:      T = c*b/s + H + k_local * 2(P-1)/P * M / s
 *   several nodes: T = c*b/s + H + k_net * (2(P-1)/P * M / B + 2(P-1) * lat)
 *   H        2(P-1)*q/s where s < 1: each hop of the ring waits a turn of the ranks sharing its
 *            core, q a rank (gate_fit_hop: the fitted phases' own small collective)
 *   c        seconds of compute per sample on a whole core: the 1-rank attempts (median of step
 *            time x cores / samples), else the compute time of the smallest attempt
 *   B, lat   the slowest link's bandwidth and the median latency from the attempt's preflight
 *   k_local  the ring's cost on one node in compute-equivalents (least squares over one-node
 *            attempts); k_net the exposed share of the ring's alpha-beta time over the links
 *            (least squares over multi-node attempts; 1, all of it exposed, when none ran)
 * This is the alpha-beta (Hockney) cost of a ring all-reduce; it ignores contention beyond the
 * slowest link.  Its band is the larger of the in-sample RMS relative error and the widest
 * throughput p10 spread of the attempts fitted; docs/ladder.md shows it at work.
 * Deliberately not here: rendering (gate_ladder_write.c). */

#include "gate/gate.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/util.h"
#include "gate/gate_internal.h"
#include "record/layout.h"
#include "record/report.h"

static const int gate_rungs[GATE_LADDER_RUNGS] = {8, 12, 16, 32, 64};

static int gate_dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- one report.json -------------------------------------------------------------------------- */

/* Where an attempt ran, from its report's topology and links. */
static void gate_attempt_place(struct gate_attempt *a, const struct report_rec *r)
{
    a->nodes = r->nodes;
    a->shared_machine = r->nodes > 1 && r->machines == 1;
    a->cores_per_rank = r->cores_per_rank;
    a->machine_cpus = r->machine_cpus;
    a->node_quota = r->cpu_quota;
    a->link_Bps = a->link_lat_s = a->ring_hop_s = NAN;
    if (r->links != NULL)
        gate_link_figures(r->links, &a->link_Bps, &a->link_lat_s);
    if (r->links != NULL && r->links->ring_hop_us > 0)
        a->ring_hop_s = 1e-6 * r->links->ring_hop_us;
}

static void gate_attempt_parse(struct gate_attempt *a, const struct report_rec *r)
{
    a->world = (int)r->world_size;
    rz_fmt(a->phase, sizeof a->phase, "%s", r->phase);
    rz_fmt(a->job, sizeof a->job, "%s", r->job);
    rz_fmt(a->verdict, sizeof a->verdict, "%s", r->verdict);
    rz_fmt(a->ended, sizeof a->ended, "%s", r->ended);
    rz_fmt(a->time, sizeof a->time, "%s", r->time);
    rz_fmt(a->action, sizeof a->action, "%s", r->action);
    rz_fmt(a->action_phase, sizeof a->action_phase, "%s", r->action_phase);
    rz_fmt(a->rollback_ckpt, sizeof a->rollback_ckpt, "%s", r->rollback_ckpt);
    rz_fmt(a->report, sizeof a->report, "%s", r->path);
    a->throughput = r->throughput;
    a->throughput_p10 = r->throughput_p10;
    a->p50_ms = r->allreduce_p50_ms;
    a->steps = r->steps;
    a->skipped = r->skipped_steps;
    a->efficiency_prev = report_measured(r, "efficiency");
    a->comm = report_measured(r, "comm");
    a->p99_ms = report_measured(r, "allreduce_p99_ms");
    a->straggler = report_measured(r, "straggler_ratio");
    a->compute_s = r->median_compute_s;
    a->params = r->num_parameters;
    a->per_rank_batch = r->global_batch / a->world;
    a->efficiency = NAN;
    a->goodput = report_measured(r, "uptime");
    a->n_lost = r->n_lost;
    memcpy(a->lost, r->lost, sizeof a->lost);
    rz_fmt(a->nodes_lost, sizeof a->nodes_lost, "%s", r->nodes_lost);
    rz_fmt(a->nodes_excluded, sizeof a->nodes_excluded, "%s", r->nodes_excluded);
    gate_attempt_place(a, r);
}

static enum rz_status gate_add_attempt(struct gate_ladder *l, const char *path,
                                       const char *lineage, struct rz_err *err)
{
    struct report_rec *r = malloc(sizeof *r);
    if (r == NULL)
        return rz_fail(err, RZ_ENOMEM, "ladder: out of memory");
    enum rz_status st = report_read(r, path, err);
    struct gate_attempt *na = st == RZ_OK ? realloc(l->att, (l->n_att + 1) * sizeof *na) : NULL;
    if (st == RZ_OK && na == NULL)
        st = rz_fail(err, RZ_ENOMEM, "ladder: out of memory");
    if (st == RZ_OK) {
        l->att = na;
        struct gate_attempt *a = &na[l->n_att++];
        memset(a, 0, sizeof *a);
        gate_attempt_parse(a, r);
        rz_fmt(a->lineage, sizeof a->lineage, "%s", lineage);
    }
    report_free(r);
    free(r);
    return st;
}

/* ---- the directory tree ---------------------------------------------------------------------- */

/* Every DIR/reports/<job>/report.json and DIR/events.jsonl of one lineage. */
static enum rz_status gate_read_lineage(struct gate_ladder *l, const char *dir,
                                        const char *lineage, struct rz_err *err)
{
    char path[8400];
    rz_fmt(path, sizeof path, "%s/events.jsonl", dir);
    size_t first = l->n_events;
    enum rz_status st = gate_read_events_file(path, &l->events, &l->n_events, err);
    if (st != RZ_OK)
        return st;
    void *nl = realloc(l->ev_lineage, (l->n_events + 1) * sizeof *l->ev_lineage);
    if (nl == NULL)
        return rz_fail(err, RZ_ENOMEM, "ladder: out of memory");
    l->ev_lineage = nl;
    for (size_t i = first; i < l->n_events; i++)
        rz_fmt(l->ev_lineage[i], sizeof l->ev_lineage[i], "%s", lineage);
    rz_fmt(path, sizeof path, "%s/reports", dir);
    DIR *d = opendir(path);
    struct dirent *e;
    while (st == RZ_OK && d != NULL && (e = readdir(d)) != NULL) {
        char rep[8700];
        struct stat sb;
        if (e->d_name[0] == '.')
            continue;
        if (report_path(rep, sizeof rep, dir, e->d_name) && stat(rep, &sb) == 0 &&
            S_ISREG(sb.st_mode))
            st = gate_add_attempt(l, rep, lineage, err);
    }
    if (d != NULL)
        closedir(d);
    return st;
}

/* RUN_ROOT/<phase> and RUN_ROOT/<phase>/rollback-<job>. */
static enum rz_status gate_read_phase(struct gate_ladder *l, const char *phase,
                                      struct rz_err *err)
{
    char dir[4400];
    rz_fmt(dir, sizeof dir, "%s/%s", l->root, phase);
    enum rz_status st = gate_read_lineage(l, dir, phase, err);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (st == RZ_OK && d != NULL && (e = readdir(d)) != NULL) {
        char sub[8400], lineage[GATE_NAME_MAX * 2];
        struct stat sb;
        if (!layout_is_rollback(e->d_name))
            continue;
        rz_fmt(sub, sizeof sub, "%s/%s", dir, e->d_name);
        rz_fmt(lineage, sizeof lineage, "%s/%s", phase, e->d_name);
        if (stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
            st = gate_read_lineage(l, sub, lineage, err);
    }
    if (d != NULL)
        closedir(d);
    return st;
}

static int gate_attempt_cmp(const void *a, const void *b)
{
    const struct gate_attempt *x = a, *y = b;
    if (x->world != y->world)
        return (x->world > y->world) - (x->world < y->world);
    return strcmp(x->time, y->time);
}

/* Events by time, keeping each event's lineage beside it (a stable insertion sort: a run root
 * has hundreds of events, not millions). */
static void gate_sort_events(struct gate_ladder *l)
{
    for (size_t i = 1; i < l->n_events; i++) {
        struct gate_event e = l->events[i];
        char lin[GATE_NAME_MAX * 2];
        memcpy(lin, l->ev_lineage[i], sizeof lin);
        size_t j = i;
        for (; j > 0 && l->events[j - 1].t > e.t; j--) {
            l->events[j] = l->events[j - 1];
            memcpy(l->ev_lineage[j], l->ev_lineage[j - 1], sizeof lin);
        }
        l->events[j] = e;
        memcpy(l->ev_lineage[j], lin, sizeof lin);
    }
}

/* What the events say about each attempt: where its run started (rollback_start, else the
 * first resume with a checkpoint), where a rollback handed its checkpoint, its requeues. */
static void gate_attempt_events(struct gate_ladder *l, struct gate_attempt *a)
{
    for (size_t i = 0; i < l->n_events; i++) {
        const struct gate_event *e = &l->events[i];
        if (strcmp(e->job, a->job) != 0 || strcmp(l->ev_lineage[i], a->lineage) != 0)
            continue;
        struct gj_value *v = NULL;
        if (gj_parse(&v, e->json, strlen(e->json), "event", 1, NULL) != RZ_OK)
            continue;
        const char *ck = gj_get_str(v, "checkpoint");
        bool start = strcmp(e->event, "rollback_start") == 0 ||
                     (strcmp(e->event, "resume") == 0 && a->from_ckpt[0] == '\0');
        if (start && ck != NULL)
            rz_fmt(a->from_ckpt, sizeof a->from_ckpt, "%s", ck);
        if (strcmp(e->event, "rollback") == 0 && gj_get_str(v, "new_job") != NULL)
            rz_fmt(a->handed_to, sizeof a->handed_to, "job %s (%s)", gj_get_str(v, "new_job"),
                   gj_get_str(v, "to_phase") != NULL ? gj_get_str(v, "to_phase") : "?");
        if (strcmp(e->event, "requeue") == 0 || strcmp(e->event, "relaunch") == 0) {
            int r = 0;
            while (r < GATE_RQ_OTHER && strcmp(e->reason, gate_requeue_name(r)) != 0)
                r++;
            a->requeues[r]++;
        }
        gj_free(v);
    }
}

/* ---- the model ------------------------------------------------------------------------------- */

static double gate_ring_bytes(int world, double bytes)
{
    return world > 1 && !isnan(bytes) ? 2.0 * (world - 1) / world * bytes : 0.0;
}

static double gate_or(double v, double fallback)
{
    return isnan(v) || !(v > 0) ? fallback : v;
}

void gate_ladder_layout(const struct gate_fit *fit, int world, struct gate_layout *out)
{
    double per_node = fmin(gate_or(fit->ranks_per_node, (double)world), (double)world);
    out->world = world;
    out->nodes = (int)ceil((double)world / per_node);
    double cpus = fit->machine_cpus, sharing = fit->shared_machine ? world : per_node;
    out->cores = isnan(cpus) ? 1.0 : fmin(1.0, cpus / sharing);
    if (fit->node_quota > 0) /* the node's cgroup: its quota shared by the node's ranks */
        out->cores = fmin(out->cores, fit->node_quota / per_node);
    out->link_Bps = fit->link_Bps;
    out->link_lat_s = fit->link_lat_s;
}

void gate_attempt_layout(const struct gate_attempt *a, const struct gate_fit *fit,
                         struct gate_layout *out)
{
    gate_ladder_layout(fit, a->world, out);
    if (a->nodes > 0)
        out->nodes = a->nodes;
    out->cores = gate_or(a->cores_per_rank, out->cores);
    out->link_Bps = gate_or(a->link_Bps, out->link_Bps);
    out->link_lat_s = gate_or(a->link_lat_s, out->link_lat_s);
}

/* The ring's hops on fewer cores than ranks: each of its 2(P-1) steps waits for the peer's turn
 * on a core that 1/s ranks share, q a rank (docs/ladder.md: the small collective's rounds and
 * the gradient ring's hops both took about 25 us per rank sharing a core on the dev cluster,
 * whatever the CPU's speed).  0 where each rank has a core of its own. */
static double gate_hop_s(const struct gate_fit *fit, const struct gate_layout *lay)
{
    double s = gate_or(lay->cores, 1.0), q = fit->hop_s;
    return lay->world > 1 && s < 1.0 && q > 0 ? 2.0 * (lay->world - 1) * q / s : 0.0;
}

/* The ring's time over the links: 2(P-1)/P * M / B + 2(P-1) * latency (NaN without a link). */
static double gate_ring_net_s(const struct gate_fit *fit, const struct gate_layout *lay)
{
    return gate_ring_bytes(lay->world, fit->bytes) / lay->link_Bps +
           2.0 * (lay->world - 1) * gate_or(lay->link_lat_s, 0.0);
}

double gate_ladder_predict(const struct gate_fit *fit, const struct gate_layout *lay,
                           double per_rank_batch)
{
    if (!fit->ok || !(per_rank_batch > 0))
        return NAN;
    double s = gate_or(lay->cores, 1.0);
    double t = fit->c_s * per_rank_batch / s + gate_hop_s(fit, lay);
    if (lay->world > 1 && lay->nodes > 1 && lay->link_Bps > 0)
        t += fit->k_net * gate_ring_net_s(fit, lay);
    else if (lay->world > 1)
        t += fit->k_local * gate_ring_bytes(lay->world, fit->bytes) / s;
    return lay->world * per_rank_batch / t;
}

double gate_ladder_model(const struct gate_fit *fit, int world, double per_rank_batch)
{
    struct gate_layout lay;
    gate_ladder_layout(fit, world, &lay);
    return gate_ladder_predict(fit, &lay, per_rank_batch);
}

static bool gate_usable(const struct gate_attempt *a, int below)
{
    return (below <= 0 || a->world < below) && a->throughput > 0 && a->per_rank_batch > 0;
}

/* c: seconds per sample on a whole core, from the 1-rank attempts (median of step time x cores
 * per rank / samples), else from the compute time of the smallest attempt. */
static bool gate_fit_c(const struct gate_ladder *l, int below, struct gate_fit *fit)
{
    double v[64];
    int n = 0;
    for (size_t i = 0; i < l->n_att && n < 64; i++)
        if (gate_usable(&l->att[i], below) && l->att[i].world == 1)
            v[n++] = gate_or(l->att[i].cores_per_rank, 1.0) / l->att[i].throughput;
    if (n > 0) {
        qsort(v, (size_t)n, sizeof *v, gate_dbl_cmp);
        fit->c_s = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
        return true;
    }
    for (size_t i = 0; i < l->n_att; i++)
        if (gate_usable(&l->att[i], below) && l->att[i].compute_s > 0) {
            fit->c_s = l->att[i].compute_s * gate_or(l->att[i].cores_per_rank, 1.0) /
                       l->att[i].per_rank_batch;
            rz_fmt(fit->note, sizeof fit->note, "no 1-rank phase: c from the compute time of "
                   "the %d-rank one (an underestimate: no optimizer, no data loading); ",
                   l->att[i].world);
            return true;
        }
    return false;
}

/* q, what a hop of the ring waits per rank sharing a core: the median over the fitted attempts
 * on fewer cores than ranks of their small collective's p50 per round (an allgather of a few
 * doubles: ceil(log2 P) rounds, measured while it trained) times s.  It is the CPU's scheduler,
 * not its arithmetic, so a faster CPU shortens the compute term and leaves this one.  Not the
 * preflight's ring hop (ring_hop_s, kept in the reports as context): measured with every rank
 * idle, it was 4 to 7 times shorter than the hop a training step waits (docs/ladder.md). */
static void gate_fit_hop(const struct gate_ladder *l, int below, struct gate_fit *fit)
{
    double v[64];
    int n = 0;
    for (size_t i = 0; i < l->n_att && n < 64; i++) {
        const struct gate_attempt *a = &l->att[i];
        if (!gate_usable(a, below) || a->world < 2 || !(a->cores_per_rank > 0) ||
            !(a->cores_per_rank < 1.0))
            continue;
        if (a->p50_ms > 0)
            v[n++] = a->p50_ms * 1e-3 / ceil(log2((double)a->world)) * a->cores_per_rank;
    }
    fit->hop_s = 0.0;
    if (n > 0) {
        qsort(v, (size_t)n, sizeof *v, gate_dbl_cmp);
        fit->hop_s = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    }
}

/* The layout the measured attempts show: ranks per node and CPUs per machine of the largest,
 * whether its nodes share one machine, the slowest link and the median latency, and the CPU
 * quota of the newest attempt's nodes (the nodes the next phase gets: a site's partition, the
 * dev cluster's four). */
static void gate_fit_layout(const struct gate_ladder *l, int below, struct gate_fit *fit)
{
    fit->ranks_per_node = fit->machine_cpus = fit->link_Bps = fit->link_lat_s = NAN;
    fit->node_quota = NAN;
    int top = 0;
    const char *newest = "";
    for (size_t i = 0; i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        if (!gate_usable(a, below))
            continue;
        if (a->nodes > 0 && strcmp(a->time, newest) >= 0) {
            newest = a->time;
            fit->node_quota = a->node_quota;
        }
        if (a->world >= top && a->nodes > 0) {
            top = a->world;
            fit->ranks_per_node = (double)a->world / a->nodes;
            fit->shared_machine = a->shared_machine;
        }
        if (a->machine_cpus > 0)
            fit->machine_cpus = isnan(fit->machine_cpus) ? a->machine_cpus
                                                         : fmax(fit->machine_cpus, a->machine_cpus);
        if (a->nodes > 1 && a->link_Bps > 0) {
            fit->link_Bps = isnan(fit->link_Bps) ? a->link_Bps : fmin(fit->link_Bps, a->link_Bps);
            fit->link_lat_s = isnan(fit->link_lat_s) ? a->link_lat_s
                                                     : fmax(fit->link_lat_s, a->link_lat_s);
        }
    }
}

void gate_ladder_fit(const struct gate_ladder *l, int below, struct gate_fit *fit)
{
    memset(fit, 0, sizeof *fit);
    fit->bytes = NAN;
    if (!gate_fit_c(l, below, fit)) {
        rz_fmt(fit->note, sizeof fit->note, "no measured phase to fit");
        return;
    }
    gate_fit_layout(l, below, fit);
    gate_fit_hop(l, below, fit);
    for (size_t i = 0; i < l->n_att; i++)
        if (gate_usable(&l->att[i], below) && isnan(fit->bytes) && l->att[i].params > 0)
            fit->bytes = 4.0 * l->att[i].params;
    /* k_local from the attempts on one node, then k_net from those on several, each the least
     * squares (through 0, not below it) of what the compute term leaves of the step time */
    double rl = 0, ll = 0, rn = 0, nn = 0, spread = 0;
    for (size_t i = 0; i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        if (!gate_usable(a, below) || a->world == 1 || isnan(fit->bytes))
            continue;
        struct gate_layout lay;
        gate_attempt_layout(a, fit, &lay);
        double s = gate_or(lay.cores, 1.0);
        double r = a->per_rank_batch * a->world / a->throughput -
                   fit->c_s * a->per_rank_batch / s - gate_hop_s(fit, &lay);
        if (lay.nodes > 1 && lay.link_Bps > 0) {
            double x = gate_ring_net_s(fit, &lay);
            rn += r * x;
            nn += x * x;
        } else {
            double x = gate_ring_bytes(a->world, fit->bytes) / s;
            rl += r * x;
            ll += x * x;
        }
    }
    fit->k_local = ll > 0 && rl > 0 ? rl / ll : 0.0;
    fit->k_net = nn > 0 ? fmax(rn / nn, 0.0) : 1.0; /* none measured: all of the ring's time */
    fit->ok = true;
    double se = 0;
    for (size_t i = 0; i < l->n_att; i++) {
        const struct gate_attempt *a = &l->att[i];
        if (!gate_usable(a, below))
            continue;
        struct gate_layout lay;
        gate_attempt_layout(a, fit, &lay);
        double e = gate_ladder_predict(fit, &lay, a->per_rank_batch) / a->throughput - 1.0;
        se += e * e;
        fit->points++;
        if (a->throughput_p10 > 0)
            spread = fmax(spread, 1.0 - a->throughput_p10 / a->throughput);
    }
    /* With a point to spare, the in-sample error; with none (each parameter from its own
     * phase), the widest spread of a fitted phase's own windows (1 - p10 / median): the model
     * cannot be surer than the measurements it rests on. */
    int fitted = 1 + (ll > 0) + (nn > 0);
    bool exact = fit->points <= fitted;
    fit->err_rel = !exact ? sqrt(se / fit->points) : spread > 0 ? spread : (double)NAN;
    size_t used = strlen(fit->note);
    rz_fmt(fit->note + used, sizeof fit->note - used, "%d measured attempt(s)%s%s%s%s",
           fit->points, fit->hop_s > 0 ? "; the ring's hops wait q per rank sharing a core "
                                         "(the fitted phases' small collective)" : "",
           nn > 0                   ? ""
           : fit->link_Bps > 0      ? "; no phase on several nodes: the whole ring time over the "
                                      "links assumed exposed (k_net = 1)"
                                    : "; no link measured yet (every phase ran on one node): a "
                                      "prediction for several nodes leaves the network out, an "
                                      "upper bound",
           isnan(fit->bytes) ? "; no parameter count: communication unmodelled" : "",
           exact ? "; as many points as fitted parameters: the fit is exact, the band is the "
                   "measurements' own spread (1 - p10 / median)" : "");
}

/* Efficiency against the base attempt, and predictions for the rungs not measured. */
static void gate_ladder_derive(struct gate_ladder *l)
{
    l->base = -1;
    for (size_t i = 0; i < l->n_att; i++)
        if (l->att[i].throughput > 0 && (l->base < 0 || l->att[i].world < l->att[l->base].world))
            l->base = (int)i;
    for (size_t i = 0; l->base >= 0 && i < l->n_att; i++) {
        const struct gate_attempt *b = &l->att[l->base];
        l->att[i].efficiency = (l->att[i].throughput / l->att[i].world) /
                               (b->throughput / b->world);
    }
    gate_ladder_fit(l, 0, &l->fit);
    gate_ladder_fit(l, GATE_EARLY_RANKS + 1, &l->early);
    double b = NAN;
    for (size_t i = 0; i < l->n_att; i++)
        if (l->att[i].per_rank_batch > 0)
            b = l->att[i].per_rank_batch; /* the largest world's: weak scaling keeps it */
    l->n_pred = 0;
    for (int k = 0; k < GATE_LADDER_RUNGS && l->fit.ok; k++) {
        bool measured = false;
        for (size_t i = 0; i < l->n_att; i++)
            measured |= l->att[i].world == gate_rungs[k] && l->att[i].throughput > 0;
        if (measured)
            continue;
        struct gate_prediction *p = &l->pred[l->n_pred++];
        p->world = gate_rungs[k];
        p->throughput = gate_ladder_model(&l->fit, p->world, b);
        p->lo = p->throughput * (1.0 - l->fit.err_rel);
        p->hi = p->throughput * (1.0 + l->fit.err_rel);
        p->efficiency = l->base >= 0 ? (p->throughput / p->world) /
                                           (l->att[l->base].throughput / l->att[l->base].world)
                                     : (double)NAN;
    }
}

enum rz_status gate_ladder_read(struct gate_ladder *l, const char *root, struct rz_err *err)
{
    memset(l, 0, sizeof *l);
    rz_fmt(l->root, sizeof l->root, "%s", root);
    rz_utc_iso8601(l->time, sizeof l->time);
    DIR *d = opendir(root);
    if (d == NULL)
        return rz_fail(err, RZ_EDATA, "ladder: open '%s': %s", root, strerror(errno));
    enum rz_status st = RZ_OK;
    struct dirent *e;
    while (st == RZ_OK && (e = readdir(d)) != NULL) {
        char dir[8400];
        struct stat sb;
        rz_fmt(dir, sizeof dir, "%s/%s", root, e->d_name);
        if (e->d_name[0] != '.' && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
            st = gate_read_phase(l, e->d_name, err);
    }
    closedir(d);
    if (st != RZ_OK)
        return st;
    if (l->n_att == 0)
        return rz_fail(err, RZ_EDATA, "ladder: no phase report under '%s' (looked for "
                       "<phase>/reports/<job>/report.json and <phase>/rollback-<job>/reports/...)",
                       root);
    qsort(l->att, l->n_att, sizeof *l->att, gate_attempt_cmp);
    gate_sort_events(l);
    if ((l->timeline = calloc(l->n_events + 1, sizeof *l->timeline)) == NULL)
        return rz_fail(err, RZ_ENOMEM, "ladder: out of memory");
    for (size_t i = 0; i < l->n_events; i++)
        if (gate_is_verdict_event(&l->events[i]))
            l->timeline[l->n_timeline++] = i;
    for (size_t i = 0; i < l->n_att; i++)
        gate_attempt_events(l, &l->att[i]);
    gate_ladder_derive(l);
    return RZ_OK;
}

void gate_ladder_free(struct gate_ladder *l)
{
    if (l == NULL)
        return;
    for (size_t i = 0; i < l->n_events; i++)
        free(l->events[i].json);
    free(l->events);
    free(l->ev_lineage);
    free(l->timeline);
    free(l->att);
    memset(l, 0, sizeof *l);
}
