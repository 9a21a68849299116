/* gate_net.c: the packet_loss criterion, from each node's network counters while its run trained
 * (summary.json; net/netstat.h and net/netsock.h say what they count), and the report's network
 * section. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "chart/chart.h"
#include "core/json.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"
#include "net/netsock.h"

static double share(double retrans, double segs)
{
    return segs > 0.0 ? retrans / segs : 0.0;
}

/* ---- the statistics: exact binomial bounds --------------------------------------------------- */

/* The continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes
 * 6.4, betacf). */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / (fabs(d) < tiny ? tiny : d);
    double h = d;
    for (int m = 1; m <= 1000000; m++) {
        for (int odd = 0; odd < 2; odd++) {
            double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
            d = 1.0 + num * d;
            c = 1.0 + num / c;
            d = 1.0 / (fabs(d) < tiny ? tiny : d);
            c = fabs(c) < tiny ? tiny : c;
            h *= d * c;
            if (odd && fabs(d * c - 1.0) < 1e-14)
                return h;
        }
    }
    return h;
}

/* The regularized incomplete beta function I_x(a, b). */
static double beta_inc(double a, double b, double x)
{
    if (x <= 0.0)
        return 0.0;
    if (x >= 1.0)
        return 1.0;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1.0) / (a + b + 2.0))
        return front * beta_cf(a, b, x) / a;
    return 1.0 - front * beta_cf(b, a, 1.0 - x) / b;
}

/* The x in [0, 1] with I_x(a, b) = target (increasing in x): bisection to 1e-30. */
static double beta_inv(double a, double b, double target)
{
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < 100; i++) {
        double mid = 0.5 * (lo + hi);
        if (beta_inc(a, b, mid) < target)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

void gate_loss_bounds(double k, double n, double alpha, double *lo, double *hi)
{
    /* Clopper-Pearson: lo solves P(X >= k | n, lo) = alpha, hi solves P(X <= k | n, hi) = alpha,
     * by P(X >= k | n, p) = I_p(k, n - k + 1). */
    *lo = k <= 0.0 ? 0.0 : beta_inv(k, n - k + 1.0, alpha);
    *hi = k >= n ? 1.0 : beta_inv(k + 1.0, n - k, 1.0 - alpha);
}

double gate_loss_min_segments(double no_go, double alpha)
{
    /* With none lost, hi = 1 - alpha^(1/n): at most no_go from n = ln(alpha) / ln(1 - no_go). */
    return no_go > 0.0 && no_go < 1.0 ? ceil(log(alpha) / log1p(-no_go)) : (double)INFINITY;
}

/* ---- what is judged -------------------------------------------------------------------------- */

/* A node's sample: what its connections to every other node sent and lost (tcp), or its fabric
 * ports' packets and errors.  `known` is false when the summary predates the data segments. */
struct loss_sample {
    double lost, sent, lo, hi;
    bool known;
};

static struct loss_sample node_tcp(const struct summary_net *g)
{
    struct loss_sample s = {.known = true};
    for (int p = 0; p < g->n_peers; p++) {
        s.known &= isfinite(g->peers[p].data_segs);
        s.sent += isfinite(g->peers[p].data_segs) ? g->peers[p].data_segs : 0.0;
        s.lost += g->peers[p].lost;
    }
    return s;
}

static struct loss_sample node_fabric(const struct summary_net *g)
{
    return (struct loss_sample){.lost = g->fabric_errors, .sent = g->fabric_packets,
                                .known = g->fabric_ports > 0.0};
}

/* NO-GO only when the sample shows more loss than no_go (its lower bound is over it); not
 * judged (n/a) when it is too small to show no_go either way; GO when it shows no more than go
 * (at go = 0: none lost); HOLD between. */
static enum gate_status loss_status(struct loss_sample *s, double go, double no_go)
{
    gate_loss_bounds(s->lost, s->sent, GATE_LOSS_ALPHA, &s->lo, &s->hi);
    if (s->sent > 0.0 && s->lo > no_go)
        return GATE_NO_GO;
    if (s->sent < gate_loss_min_segments(no_go, GATE_LOSS_ALPHA))
        return GATE_NA;
    return s->lo <= go ? GATE_GO : GATE_HOLD;
}

/* The worse of two statuses: NO-GO, HOLD, GO, n/a. */
static enum gate_status worse(enum gate_status a, enum gate_status b)
{
    static const int rank[] = {[GATE_NA] = 0, [GATE_GO] = 1, [GATE_NOT_JUDGED] = 1,
                               [GATE_HOLD] = 2, [GATE_NO_GO] = 3};
    return rank[b] > rank[a] ? b : a;
}

/* The distinct names among n strings at `stride` bytes apart ("" and "unknown" left out). */
static int distinct(const char *first, size_t stride, int n)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        const char *h = first + (size_t)i * stride;
        bool seen = h[0] == '\0' || strcmp(h, "unknown") == 0;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(first + (size_t)j * stride, h) == 0;
        count += !seen;
    }
    return count;
}

/* The nodes the job ran on: from the ranks' hosts, else the nodes with counters. */
static int count_nodes(const struct gate_input *in)
{
    int by_net = in->n_net > 0 ? distinct(in->net[0].host, sizeof in->net[0], in->n_net) : 0;
    int by_rank = in->ranks != NULL && in->world_size > 0
                      ? distinct(in->ranks[0].host, sizeof in->ranks[0], in->world_size)
                      : 0;
    return by_rank > by_net ? by_rank : by_net;
}

/* A link's (a node's connections to one other node) share lost. */
static double peer_share(const struct summary_net *g, int p)
{
    return share(g->peers[p].lost, g->peers[p].data_segs);
}

static bool link_lossy(const struct summary_net *g, int p, double limit, double threshold)
{
    double lost = g->peers[p].lost, lo, hi;
    if (!(g->peers[p].data_segs > 0.0) || peer_share(g, p) <= limit)
        return false;
    gate_loss_bounds(lost, g->peers[p].data_segs, GATE_LOSS_ALPHA, &lo, &hi);
    return lo > threshold;
}

/* The links at node h (h < 0: every link) that are lossy, or (`any`) that lost anything. */
static int links_at(const struct gate_input *in, int h, bool any, double limit, double threshold)
{
    int n = 0;
    for (int i = 0; i < in->n_net; i++)
        for (int p = 0; p < in->net[i].n_peers; p++) {
            const struct summary_net *g = &in->net[i];
            bool hit = any ? g->peers[p].lost > 0.0
                           : link_lossy(g, p, limit, threshold);
            n += hit && (h < 0 || i == h || strcmp(g->peers[p].host, in->net[h].host) == 0);
        }
    return n;
}

/* The node at an end of every lossy link.  Where more than one is (one lossy link: both its
 * ends), the one of them also at an end of every link that lost anything at all: of a ring's
 * links into and out of a lossy node, one may lose too little to show it, and it is the other
 * end's clean links that clear it (seen at 0.5% on 10 steps of phase2b).  -1 with fewer than
 * three nodes or no such node, -2 when that still leaves more than one. */
static int lossy_node(const struct gate_input *in, double limit, double threshold)
{
    if (in->n_net < 3)
        return -1;
    int n_lossy = links_at(in, -1, false, limit, threshold);
    int n_any = links_at(in, -1, true, limit, threshold);
    int cand = -1, n_cand = 0, tie = -1, n_tie = 0;
    for (int h = 0; h < in->n_net; h++) {
        if (links_at(in, h, false, limit, threshold) != n_lossy)
            continue;
        n_cand++;
        cand = h;
        if (links_at(in, h, true, limit, threshold) == n_any) {
            n_tie++;
            tie = h;
        }
    }
    if (n_cand <= 1)
        return cand;
    return n_tie == 1 ? tie : -2;
}

/* The links (a node's connections to one other node) whose loss the sample shows over
 * `threshold` (lower bound) and that lost more than half the worst link's share: named in the
 * note; with three or more nodes, a node at an end of every one of them is the lossy one.  Half
 * the worst: a link that loses ten times as much must not be hidden among those that lose a
 * little. */
static void name_lossy(struct gate_criterion *k, struct gate_result *res,
                       const struct gate_input *in, double threshold)
{
    int n_lossy = 0;
    double limit = threshold;
    for (int i = 0; i < in->n_net; i++)
        for (int p = 0; p < in->net[i].n_peers; p++)
            limit = fmax(limit, 0.5 * peer_share(&in->net[i], p));
    for (int i = 0; i < in->n_net; i++)
        for (int p = 0; p < in->net[i].n_peers; p++)
            n_lossy += link_lossy(&in->net[i], p, limit, threshold);
    if (n_lossy == 0)
        return;
    int h = lossy_node(in, limit, threshold);
    if (h >= 0) { /* first: a long list of links must not crowd the node out of the note */
        snprintf(res->lossy_host, sizeof res->lossy_host, "%s", in->net[h].host);
        gate_note(k, "every lossy link is %s's", in->net[h].host);
        if (n_lossy == 1)
            gate_note(k, "and so is every link that lost anything");
    } else {
        gate_note(k, "%s", in->n_net < 3 ? "two nodes: a lossy link cannot tell which end loses"
                           : h == -2 ? "a lossy link's two ends: the links that lost anything "
                                       "cannot tell which loses"
                                     : "no one node is at an end of every lossy link");
    }
    int named = 0;
    for (int i = 0; i < in->n_net; i++)
        for (int p = 0; p < in->net[i].n_peers; p++)
            if (link_lossy(&in->net[i], p, limit, threshold))
                gate_note(k, "%s%s -> %s %.3g%% (%.0f of %.0f)", named++ ? "" : "lossy links: ",
                          in->net[i].host, in->net[i].peers[p].host,
                          100.0 * peer_share(&in->net[i], p),
                          in->net[i].peers[p].lost,
                          in->net[i].peers[p].data_segs);
}

/* Judge every node's sample (tcp or fabric) and their pool; the worst node in *worst (the
 * highest lower bound), -1 when none sent anything. */
static enum gate_status judge_samples(const struct gate_criterion *k, const struct gate_input *in,
                                      struct loss_sample (*of)(const struct summary_net *),
                                      struct loss_sample *pool, struct loss_sample *w_out,
                                      int *worst)
{
    enum gate_status st = GATE_NA;
    *pool = (struct loss_sample){.known = true};
    *worst = -1;
    for (int i = 0; i < in->n_net; i++) {
        struct loss_sample s = of(&in->net[i]);
        if (!s.known || s.sent <= 0.0)
            continue;
        enum gate_status si = loss_status(&s, k->go, k->no_go);
        st = si == GATE_NO_GO ? GATE_NO_GO : st; /* a node's NO-GO stands; its HOLD, the pool's */
        if (*worst < 0 || s.lo > w_out->lo || (s.lo == w_out->lo && share(s.lost, s.sent) >
                                                   share(w_out->lost, w_out->sent))) {
            *worst = i;
            *w_out = s;
        }
        pool->lost += s.lost;
        pool->sent += s.sent;
    }
    enum gate_status sp = loss_status(pool, k->go, k->no_go);
    return worse(st, sp);
}

/* The note's context: the whole hosts' counters, which are not judged. */
static void note_context(struct gate_criterion *k, const struct gate_input *in)
{
    double segs = 0.0, retrans = 0.0, probes = 0.0, dsacks = 0.0, drops = 0.0, errors = 0.0;
    double late = 0.0, recoveries = 0.0;
    bool ext = true;
    for (int i = 0; i < in->n_net; i++) {
        if (isfinite(in->net[i].late_dsacks))
            late += in->net[i].late_dsacks;
        segs += in->net[i].segs;
        retrans += in->net[i].retrans;
        probes += in->net[i].loss_probes;
        recoveries += in->net[i].loss_probe_recoveries;
        dsacks += in->net[i].dsacks;
        drops += in->net[i].drops;
        errors += in->net[i].errors;
        ext &= in->net[i].has_ext;
    }
    gate_note(k, "whole hosts (context): %.0f of %.0f TCP segments resent", retrans, segs);
    if (ext)
        gate_note(k, "%.0f tail-loss probes (%.0f taken by TCP for a repaired loss), %.0f D-SACKs",
                  probes, recoveries, dsacks);
    gate_note(k, "interfaces: %.0f drop(s), %.0f error(s)", drops, errors);
    if (late > 0.0)
        gate_note(k, "%.0f resend(s) proven spurious by a D-SACK after the last step", late);
}

static void note_wire(struct gate_criterion *k, const struct gate_input *in)
{
    double tx = 0.0;
    int64_t steps = 0;
    for (int i = 0; i < in->n_net; i++) {
        tx += in->net[i].tx_bytes;
        steps = in->net[i].steps > steps ? in->net[i].steps : steps;
    }
    if (steps > 0 && isfinite(in->num_parameters) && in->num_parameters > 0)
        gate_note(k, "on the wire %.3g MB sent per step by the %d node(s), %.3gx the gradient's "
                  "%.3g MB", tx / (double)steps / 1e6, in->n_net,
                  tx / (double)steps / (4.0 * in->num_parameters),
                  4.0 * in->num_parameters / 1e6);
}

/* How the note's losses were counted: from both ends of each link, or TCP's own account. */
static void note_basis(struct gate_criterion *k, const struct gate_input *in)
{
    int both = 0, links = 0;
    for (int i = 0; i < in->n_net; i++)
        for (int p = 0; p < in->net[i].n_peers; p++) {
            links++;
            both += in->net[i].peers[p].by_delivery;
        }
    if (links == 0)
        return;
    if (both == links)
        gate_note(k, "lost = the fewer of the segments one end sent and the other never "
                  "received, and of TCP's resends less those D-SACKed");
    else if (both == 0)
        gate_note(k, "lost = TCP's resends less those D-SACKed (the receiving ends' counts are "
                  "not in the summary)");
    else
        gate_note(k, "lost = the fewer of sent less received and TCP's resends less those "
                  "D-SACKed on %d of %d links, TCP's count alone on the others", both, links);
}

/* Judge one transport; false when it had nothing to judge (no node's sample known). */
static bool judge_transport(struct gate_criterion *k, struct gate_result *res,
                            const struct gate_input *in, bool tcp)
{
    struct loss_sample pool, w = {0};
    int worst;
    enum gate_status st = judge_samples(k, in, tcp ? node_tcp : node_fabric, &pool, &w, &worst);
    if (worst < 0)
        return false;
    const char *what = tcp ? "data segments lost" : "fabric packets in error";
    double need = gate_loss_min_segments(k->no_go, GATE_LOSS_ALPHA);
    if (st == GATE_NA && !isfinite(need)) { /* a test's opened gate (no_go 1): nothing above it */
        gate_set(k, GATE_NA);
        gate_note(k, "no share can be above gates.packet_loss_no_go = %g: not judged; %.0f %s "
                  "of %.0f between nodes", k->no_go, pool.lost, what, pool.sent);
        return true;
    }
    if (st == GATE_NA) {
        gate_set(k, GATE_NA);
        gate_note(k, "too little traffic: %.0f %s of %.0f between nodes cannot show a share of "
                  "%.3g%% (%.0f needed with none lost)", pool.lost, what, pool.sent,
                  100.0 * k->no_go, need);
        return true;
    }
    gate_measure(k, share(w.lost, w.sent), (int64_t)pool.sent);
    k->status = st;
    gate_note(k, "%s: worst node %s: %.0f of %.0f %s (%.3g%%, %g%% bounds %.3g%%-%.3g%%)",
              tcp ? "MPI's TCP connections between nodes" : "fabric ports", in->net[worst].host,
              w.lost, w.sent, what, 100.0 * k->measured, 100.0 * (1.0 - GATE_LOSS_ALPHA),
              100.0 * w.lo, 100.0 * w.hi);
    for (int i = 0; i < in->n_net; i++) {
        struct loss_sample s = tcp ? node_tcp(&in->net[i]) : node_fabric(&in->net[i]);
        if (i != worst && s.known && s.sent > 0.0)
            gate_note(k, "%s %.0f of %.0f", in->net[i].host, s.lost, s.sent);
    }
    if (tcp)
        note_basis(k, in);
    if (tcp && (st == GATE_NO_GO || st == GATE_HOLD))
        name_lossy(k, res, in, st == GATE_NO_GO ? k->no_go : k->go);
    return true;
}

static bool any_fabric(const struct gate_input *in)
{
    for (int i = 0; i < in->n_net; i++)
        if (in->net[i].fabric_ports > 0.0)
            return true;
    return false;
}

/* Why no TCP sample: no connection between the nodes, or a summary older than the count. */
static const char *why_no_tcp(const struct gate_input *in)
{
    for (int i = 0; i < in->n_net; i++)
        if (in->net[i].n_peers > 0)
            return "summary.json's connection counters predate the count of data segments (a "
                   "trainer before the loss count)";
    return "no TCP connection of the job between its nodes: its ranks talked over another "
           "transport (InfiniBand or RoCE through UCX or verbs)";
}

void gate_packet_loss(struct gate_result *res, const struct gate_input *in)
{
    struct gate_criterion *k = &res->crit[GATE_PACKET_LOSS];
    res->lossy_host[0] = '\0';
    if (in->n_net == 0) {
        gate_set(k, GATE_NA);
        gate_note(k, "summary.json has no network counters (no run finished, a summary written "
                  "before they existed, or /proc/net unreadable)");
        return;
    }
    if (count_nodes(in) < 2) {
        gate_set(k, GATE_NA);
        gate_note(k, "one node (%s): its ranks talk through shared memory, no network to judge",
                  in->net[0].host);
    } else if (!judge_transport(k, res, in, true)) {
        bool fabric = any_fabric(in) && judge_transport(k, res, in, false);
        if (!fabric) {
            gate_set(k, GATE_NA);
            gate_note(k, "%s; %s", why_no_tcp(in),
                      any_fabric(in) ? "the fabric's ports counted no packets"
                                     : "no fabric counters (/sys/class/infiniband) to judge");
        }
    }
    note_context(k, in);
    note_wire(k, in);
}

/* ---- the report's section ---------------------------------------------------------------------- */

static double per_step(double v, int64_t steps)
{
    return steps > 0 ? v / (double)steps : (double)NAN;
}

void gate_json_network(struct rz_json *j, const struct gate_input *in,
                       const struct gate_result *res)
{
    rz_json_key(j, "network");
    if (in->n_net == 0) {
        rz_json_null(j);
        return;
    }
    rz_json_object_begin(j);
    rz_json_kv_string(j, "lossy_host", res->lossy_host);
    rz_json_kv_double(j, "gradient_bytes", 4.0 * in->num_parameters);
    rz_json_key(j, "nodes");
    rz_json_array_begin(j);
    for (int i = 0; i < in->n_net; i++) {
        const struct summary_net *g = &in->net[i];
        rz_json_object_begin(j);
        rz_json_kv_string(j, "host", g->host);
        rz_json_kv_double(j, "seconds", g->seconds);
        rz_json_kv_double(j, "tcp_segments_sent", g->segs);
        rz_json_kv_double(j, "tcp_retransmitted", g->retrans);
        rz_json_kv_double(j, "retransmit_share", share(g->retrans, g->segs));
        rz_json_kv_double(j, "tx_bytes_per_step", per_step(g->tx_bytes, g->steps));
        rz_json_kv_double(j, "drops", g->drops);
        rz_json_kv_double(j, "errors", g->errors);
        struct loss_sample s = node_tcp(g);
        rz_json_kv_double(j, "mpi_data_segments_sent", s.known ? s.sent : (double)NAN);
        rz_json_kv_double(j, "mpi_lost", s.known ? s.lost : (double)NAN);
        if (g->fabric_ports > 0.0) {
            rz_json_kv_double(j, "fabric_packets", g->fabric_packets);
            rz_json_kv_double(j, "fabric_errors", g->fabric_errors);
        }
        rz_json_key(j, "peers");
        rz_json_array_begin(j);
        for (int p = 0; p < g->n_peers; p++) {
            rz_json_object_begin(j);
            rz_json_kv_string(j, "host", g->peers[p].host);
            rz_json_kv_double(j, "tcp_segments_sent", g->peers[p].segs);
            rz_json_kv_double(j, "tcp_retransmitted", g->peers[p].retrans);
            rz_json_kv_double(j, "tcp_data_segments_sent", g->peers[p].data_segs);
            rz_json_kv_double(j, "tcp_spurious_retransmits", g->peers[p].spurious);
            rz_json_kv_double(j, "tcp_data_segments_received_there", g->peers[p].data_segs_in);
            rz_json_kv_double(j, "lost", g->peers[p].lost);
            rz_json_kv_string(j, "lost_counted_as",
                              g->peers[p].by_delivery
                                  ? "the fewer of sent - received by the other end and "
                                    "retransmitted - D-SACKed"
                                  : "retransmitted - D-SACKed");
            rz_json_object_end(j);
        }
        rz_json_array_end(j);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
    rz_json_object_end(j);
}

void gate_md_network(FILE *f, const struct gate_input *in, const struct gate_result *res)
{
    if (in->n_net == 0)
        return;
    fprintf(f, "## The network while training\n\nEach node's kernel counters from its first step "
               "to its end (the whole host's traffic, context), and its MPI connections to each "
               "other node (this run's alone: the packet-loss gate's sample; lost = retransmitted "
               "less the resends D-SACK proved spurious).%s%s%s\n\n| node | TCP segments sent | "
               "retransmitted | share | MB sent per step | drops | errors | MPI to each node: "
               "lost / data segments |\n"
               "|---|---|---|---|---|---|---|---|\n",
            res->lossy_host[0] ? "  Every lossy link is **" : "", res->lossy_host,
            res->lossy_host[0] ? "**'s." : "");
    for (int i = 0; i < in->n_net; i++) {
        const struct summary_net *g = &in->net[i];
        fprintf(f, "| %s | %.0f | %.0f | %.3g%% | %.3g | %.0f | %.0f |", g->host, g->segs,
                g->retrans, 100.0 * share(g->retrans, g->segs),
                per_step(g->tx_bytes, g->steps) / 1e6, g->drops, g->errors);
        for (int p = 0; p < g->n_peers; p++)
            fprintf(f, "%s%s %.0f / %.0f", p ? ", " : " ", g->peers[p].host,
                    g->peers[p].lost, g->peers[p].data_segs);
        fputs(" |\n", f);
    }
    fputc('\n', f);
}

void gate_html_network(FILE *f, const struct gate_input *in, const struct gate_result *res)
{
    if (in->n_net == 0)
        return;
    fputs("<h2>The network while training</h2>\n<p>Each node's kernel counters from its first "
          "step to its end (the whole host's traffic, context), and its MPI connections to each "
          "other node (this run's alone: the packet-loss gate's sample; lost = retransmitted "
          "less the resends D-SACK proved spurious).", f);
    if (res->lossy_host[0]) {
        fputs(" Every lossy link is <strong id=\"lossy-host\">", f);
        chart_html_text(f, res->lossy_host);
        fputs("</strong>'s.", f);
    }
    fputs("</p>\n<table id=\"network\"><tr><th>node</th><th>TCP segments sent</th>"
          "<th>retransmitted</th><th>share</th><th>MB sent per step</th><th>drops</th>"
          "<th>errors</th><th>MPI to each node: lost / data segments</th></tr>\n", f);
    for (int i = 0; i < in->n_net; i++) {
        const struct summary_net *g = &in->net[i];
        fputs("<tr><th>", f);
        chart_html_text(f, g->host);
        fprintf(f, "</th><td>%.0f</td><td>%.0f</td><td>%.3g%%</td><td>%.3g</td><td>%.0f</td>"
                   "<td>%.0f</td><td>", g->segs, g->retrans, 100.0 * share(g->retrans, g->segs),
                per_step(g->tx_bytes, g->steps) / 1e6, g->drops, g->errors);
        for (int p = 0; p < g->n_peers; p++) {
            fputs(p ? ", " : "", f);
            chart_html_text(f, g->peers[p].host);
            fprintf(f, " %.0f / %.0f", g->peers[p].lost,
                    g->peers[p].data_segs);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}
