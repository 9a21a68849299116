/* ladder_model.c: the ladder's scaling model, fitted to the measured phases of a run root, and
 * the document's derived figures (efficiencies, each attempt's model throughput, the hindcast,
 * the predictions for the rungs not run yet).
 *
 * The model, per optimizer step of P ranks with b samples each (weak scaling), s the share of a
 * core each rank really has (cores per rank from the report's topology), M the gradient's bytes:
 *   one node:      T = c*b/s + H + k_local * 2(P-1)/P * M / s
 *   several nodes: T = c*b/s + H + k_net * (2(P-1)/P * M / B + 2(P-1) * lat)
 *   H        2(P-1)*q/s where s < 1: each hop of the ring waits a turn of the ranks sharing its
 *            core, q a rank (ladder_fit_hop: the fitted phases' own small collective)
 *   c        seconds of compute per sample on a whole core: the 1-rank attempts (median of step
 *            time x cores / samples), else the compute time of the smallest attempt
 *   B, lat   the slowest link's bandwidth and the median latency from the attempt's preflight
 *   k_local  the ring's cost on one node in compute-equivalents (least squares over one-node
 *            attempts); k_net the exposed share of the ring's alpha-beta time over the links
 *            (least squares over multi-node attempts; 1, all of it exposed, when none ran)
 * This is the alpha-beta (Hockney) cost of a ring all-reduce; it ignores contention beyond the
 * slowest link.  Its band is the larger of the in-sample RMS relative error and the widest
 * throughput p10 spread of the attempts fitted; docs/ladder.md shows it at work.
 * Deliberately not here: reading the run root (ladder_read.c), rendering (ladder_write.c,
 * record/ladder_json.c). */
#include "config.h"

#include "ladder/ladder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "record/health_json.h"

static const int ladder_rungs[LADDER_RUNGS] = {8, 12, 16, 32, 64};

static int ladder_dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void ladder_link_figures(const struct health_links *l, double *slowest_Bps, double *median_lat_s)
{
    static double lat[HEALTH_MAX_HOSTS * HEALTH_MAX_HOSTS];
    size_t n = 0;
    *slowest_Bps = *median_lat_s = NAN;
    for (int i = 0; l != NULL && i < l->n_hosts; i++)
        for (int k = 0; k < l->n_hosts; k++)
            if (i != k && l->gbps[i][k] > 0) {
                double bps = l->gbps[i][k] * 1e9 / 8;
                *slowest_Bps = n == 0 ? bps : fmin(*slowest_Bps, bps);
                lat[n++] = l->latency_us[i][k] * 1e-6;
            }
    if (n > 0)
        *median_lat_s = rz_quantile(lat, n, 0.5); /* type 7: sorts lat */
}

/* ---- the model ------------------------------------------------------------------------------- */

static double ladder_ring_bytes(int world, double bytes)
{
    return world > 1 && !isnan(bytes) ? 2.0 * (world - 1) / world * bytes : 0.0;
}

static double ladder_or(double v, double fallback)
{
    return isnan(v) || !(v > 0) ? fallback : v;
}

void ladder_rung_layout(const struct ladder_fit *fit, int world, struct ladder_layout *out)
{
    double per_node = fmin(ladder_or(fit->ranks_per_node, (double)world), (double)world);
    out->world = world;
    out->nodes = (int)ceil((double)world / per_node);
    double cpus = fit->machine_cpus, sharing = fit->shared_machine ? world : per_node;
    out->cores = isnan(cpus) ? 1.0 : fmin(1.0, cpus / sharing);
    if (fit->node_quota > 0) /* the node's cgroup: its quota shared by the node's ranks */
        out->cores = fmin(out->cores, fit->node_quota / per_node);
    out->link_Bps = fit->link_Bps;
    out->link_lat_s = fit->link_lat_s;
}

void ladder_attempt_layout(const struct ladder_attempt *a, const struct ladder_fit *fit,
                         struct ladder_layout *out)
{
    ladder_rung_layout(fit, a->world, out);
    if (a->nodes > 0)
        out->nodes = a->nodes;
    out->cores = ladder_or(a->cores_per_rank, out->cores);
    out->link_Bps = ladder_or(a->link_Bps, out->link_Bps);
    out->link_lat_s = ladder_or(a->link_lat_s, out->link_lat_s);
}

/* The ring's hops on fewer cores than ranks: each of its 2(P-1) steps waits for the peer's turn
 * on a core that 1/s ranks share, q a rank (docs/ladder.md: the small collective's rounds and
 * the gradient ring's hops both took about 25 us per rank sharing a core on the dev cluster,
 * whatever the CPU's speed).  0 where each rank has a core of its own. */
static double ladder_hop_s(const struct ladder_fit *fit, const struct ladder_layout *lay)
{
    double s = ladder_or(lay->cores, 1.0), q = fit->hop_s;
    return lay->world > 1 && s < 1.0 && q > 0 ? 2.0 * (lay->world - 1) * q / s : 0.0;
}

/* The ring's time over the links: 2(P-1)/P * M / B + 2(P-1) * latency (NaN without a link). */
static double ladder_ring_net_s(const struct ladder_fit *fit, const struct ladder_layout *lay)
{
    return ladder_ring_bytes(lay->world, fit->bytes) / lay->link_Bps +
           2.0 * (lay->world - 1) * ladder_or(lay->link_lat_s, 0.0);
}

double ladder_predict(const struct ladder_fit *fit, const struct ladder_layout *lay,
                           double per_rank_batch)
{
    if (!fit->ok || !(per_rank_batch > 0))
        return NAN;
    double s = ladder_or(lay->cores, 1.0);
    double t = fit->c_s * per_rank_batch / s + ladder_hop_s(fit, lay);
    if (lay->world > 1 && lay->nodes > 1 && lay->link_Bps > 0)
        t += fit->k_net * ladder_ring_net_s(fit, lay);
    else if (lay->world > 1)
        t += fit->k_local * ladder_ring_bytes(lay->world, fit->bytes) / s;
    return lay->world * per_rank_batch / t;
}

double ladder_model(const struct ladder_fit *fit, int world, double per_rank_batch)
{
    struct ladder_layout lay;
    ladder_rung_layout(fit, world, &lay);
    return ladder_predict(fit, &lay, per_rank_batch);
}

static bool ladder_usable(const struct ladder_attempt *a, int below)
{
    return (below <= 0 || a->world < below) && a->throughput > 0 && a->per_rank_batch > 0;
}

/* c: seconds per sample on a whole core, from the 1-rank attempts (median of step time x cores
 * per rank / samples), else from the compute time of the smallest attempt. */
static bool ladder_fit_c(const struct ladder *l, int below, struct ladder_fit *fit)
{
    double v[64];
    int n = 0;
    for (size_t i = 0; i < l->n_att && n < 64; i++)
        if (ladder_usable(&l->att[i], below) && l->att[i].world == 1)
            v[n++] = ladder_or(l->att[i].cores_per_rank, 1.0) / l->att[i].throughput;
    if (n > 0) {
        qsort(v, (size_t)n, sizeof *v, ladder_dbl_cmp);
        fit->c_s = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
        return true;
    }
    for (size_t i = 0; i < l->n_att; i++)
        if (ladder_usable(&l->att[i], below) && l->att[i].compute_s > 0) {
            fit->c_s = l->att[i].compute_s * ladder_or(l->att[i].cores_per_rank, 1.0) /
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
static void ladder_fit_hop(const struct ladder *l, int below, struct ladder_fit *fit)
{
    double v[64];
    int n = 0;
    for (size_t i = 0; i < l->n_att && n < 64; i++) {
        const struct ladder_attempt *a = &l->att[i];
        if (!ladder_usable(a, below) || a->world < 2 || !(a->cores_per_rank > 0) ||
            !(a->cores_per_rank < 1.0))
            continue;
        if (a->p50_ms > 0)
            v[n++] = a->p50_ms * 1e-3 / ceil(log2((double)a->world)) * a->cores_per_rank;
    }
    fit->hop_s = 0.0;
    if (n > 0) {
        qsort(v, (size_t)n, sizeof *v, ladder_dbl_cmp);
        fit->hop_s = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    }
}

/* The layout the measured attempts show: ranks per node and CPUs per machine of the largest,
 * whether its nodes share one machine, the slowest link and the median latency, and the CPU
 * quota of the newest attempt's nodes (the nodes the next phase gets: a site's partition, the
 * dev cluster's four). */
static void ladder_fit_layout(const struct ladder *l, int below, struct ladder_fit *fit)
{
    fit->ranks_per_node = fit->machine_cpus = fit->link_Bps = fit->link_lat_s = NAN;
    fit->node_quota = NAN;
    int top = 0;
    const char *newest = "";
    for (size_t i = 0; i < l->n_att; i++) {
        const struct ladder_attempt *a = &l->att[i];
        if (!ladder_usable(a, below))
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

void ladder_fit(const struct ladder *l, int below, struct ladder_fit *fit)
{
    memset(fit, 0, sizeof *fit);
    fit->bytes = NAN;
    if (!ladder_fit_c(l, below, fit)) {
        rz_fmt(fit->note, sizeof fit->note, "no measured phase to fit");
        return;
    }
    ladder_fit_layout(l, below, fit);
    ladder_fit_hop(l, below, fit);
    for (size_t i = 0; i < l->n_att; i++)
        if (ladder_usable(&l->att[i], below) && isnan(fit->bytes) && l->att[i].params > 0)
            fit->bytes = 4.0 * l->att[i].params;
    /* k_local from the attempts on one node, then k_net from those on several, each the least
     * squares (through 0, not below it) of what the compute term leaves of the step time */
    double rl = 0, ll = 0, rn = 0, nn = 0, spread = 0;
    for (size_t i = 0; i < l->n_att; i++) {
        const struct ladder_attempt *a = &l->att[i];
        if (!ladder_usable(a, below) || a->world == 1 || isnan(fit->bytes))
            continue;
        struct ladder_layout lay;
        ladder_attempt_layout(a, fit, &lay);
        double s = ladder_or(lay.cores, 1.0);
        double r = a->per_rank_batch * a->world / a->throughput -
                   fit->c_s * a->per_rank_batch / s - ladder_hop_s(fit, &lay);
        if (lay.nodes > 1 && lay.link_Bps > 0) {
            double x = ladder_ring_net_s(fit, &lay);
            rn += r * x;
            nn += x * x;
        } else {
            double x = ladder_ring_bytes(a->world, fit->bytes) / s;
            rl += r * x;
            ll += x * x;
        }
    }
    fit->k_local = ll > 0 && rl > 0 ? rl / ll : 0.0;
    fit->k_net = nn > 0 ? fmax(rn / nn, 0.0) : 1.0; /* none measured: all of the ring's time */
    fit->ok = true;
    double se = 0;
    for (size_t i = 0; i < l->n_att; i++) {
        const struct ladder_attempt *a = &l->att[i];
        if (!ladder_usable(a, below))
            continue;
        struct ladder_layout lay;
        ladder_attempt_layout(a, fit, &lay);
        double e = ladder_predict(fit, &lay, a->per_rank_batch) / a->throughput - 1.0;
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

/* The fit's throughput for a measured attempt, on its own layout. */
static double ladder_attempt_model(const struct ladder_fit *fit, const struct ladder_attempt *a)
{
    struct ladder_layout lay;
    ladder_attempt_layout(a, fit, &lay);
    return ladder_predict(fit, &lay, a->per_rank_batch);
}

/* Efficiency against the base attempt (the 1-rank one, else the smallest). */
static void ladder_efficiencies(struct ladder *l)
{
    l->base = -1;
    for (size_t i = 0; i < l->n_att; i++)
        if (l->att[i].throughput > 0 && (l->base < 0 || l->att[i].world < l->att[l->base].world))
            l->base = (int)i;
    for (size_t i = 0; l->base >= 0 && i < l->n_att; i++) {
        const struct ladder_attempt *b = &l->att[l->base];
        l->att[i].efficiency = (l->att[i].throughput / l->att[i].world) /
                               (b->throughput / b->world);
    }
}

/* The hindcast, built once for every writer: the early fit's prediction for each measured
 * attempt of more than LADDER_EARLY_RANKS ranks, on its own layout, against what it measured. */
static enum rz_status ladder_hindcast(struct ladder *l, struct rz_err *err)
{
    l->n_hindcast = 0;
    if (!l->early.ok)
        return RZ_OK;
    if ((l->hindcast = calloc(l->n_att + 1, sizeof *l->hindcast)) == NULL)
        return rz_fail(err, RZ_ENOMEM, "ladder: out of memory");
    for (size_t i = 0; i < l->n_att; i++) {
        const struct ladder_attempt *a = &l->att[i];
        if (!(a->world > LADDER_EARLY_RANKS && a->throughput > 0))
            continue;
        struct ladder_hindcast_row *h = &l->hindcast[l->n_hindcast++];
        rz_fmt(h->phase, sizeof h->phase, "%s", a->phase);
        rz_fmt(h->job, sizeof h->job, "%s", a->job);
        h->world = a->world;
        h->predicted = ladder_attempt_model(&l->early, a);
        h->lo = h->predicted * (1.0 - l->early.err_rel);
        h->hi = h->predicted * (1.0 + l->early.err_rel);
        h->measured = a->throughput;
        h->ratio = a->throughput / h->predicted;
    }
    return RZ_OK;
}

/* Predictions for the rungs not measured. */
static void ladder_predictions(struct ladder *l)
{
    double b = NAN;
    for (size_t i = 0; i < l->n_att; i++)
        if (l->att[i].per_rank_batch > 0)
            b = l->att[i].per_rank_batch; /* the largest world's: weak scaling keeps it */
    l->n_pred = 0;
    for (int k = 0; k < LADDER_RUNGS && l->fit.ok; k++) {
        bool measured = false;
        for (size_t i = 0; i < l->n_att; i++)
            measured |= l->att[i].world == ladder_rungs[k] && l->att[i].throughput > 0;
        if (measured)
            continue;
        struct ladder_prediction *p = &l->pred[l->n_pred++];
        p->world = ladder_rungs[k];
        p->throughput = ladder_model(&l->fit, p->world, b);
        p->lo = p->throughput * (1.0 - l->fit.err_rel);
        p->hi = p->throughput * (1.0 + l->fit.err_rel);
        p->efficiency = l->base >= 0 ? (p->throughput / p->world) /
                                           (l->att[l->base].throughput / l->att[l->base].world)
                                     : (double)NAN;
    }
}

enum rz_status ladder_derive(struct ladder *l, struct rz_err *err)
{
    ladder_efficiencies(l);
    ladder_fit(l, 0, &l->fit);
    ladder_fit(l, LADDER_EARLY_RANKS + 1, &l->early);
    for (size_t i = 0; i < l->n_att; i++)
        l->att[i].model = ladder_attempt_model(&l->fit, &l->att[i]);
    ladder_predictions(l);
    return ladder_hindcast(l, err);
}
