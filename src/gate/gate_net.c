/* gate_net.c: the packet_loss criterion, from each node's network counters while its run trained
 * (summary.json; net/netstat.h and net/netsock.h say what they count), and the report's network
 * section. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"

static double share(double retrans, double segs)
{
    return segs > 0.0 ? retrans / segs : 0.0;
}

/* The links (a node's connections to one other node) that lost more than `threshold` and more
 * than half the worst link's share: named in the note; with three or more nodes, a node at an
 * end of every one of them is the lossy one.  Half the worst: TCP through a bottleneck resends
 * what its queue dropped on every link a little (congestion: 0.2% on a healthy dev cluster at
 * 250 Mbit/s), and a link that loses ten times as much must not be hidden among those. */
static void name_lossy(struct gate_criterion *k, struct gate_result *res,
                       const struct gate_input *in, double threshold)
{
    int n_lossy = 0;
    double limit = threshold;
    for (int i = 0; i < in->n_net; i++)
        for (int p = 0; p < in->net[i].n_peers; p++)
            limit = fmax(limit, 0.5 * share(in->net[i].peers[p].retrans,
                                            in->net[i].peers[p].segs));
    for (int i = 0; i < in->n_net; i++)
        for (int p = 0; p < in->net[i].n_peers; p++)
            if (share(in->net[i].peers[p].retrans, in->net[i].peers[p].segs) > limit) {
                char head[64] = "";
                if (n_lossy++ == 0)
                    snprintf(head, sizeof head, "links over %.3g%%: ", 100.0 * limit);
                gate_note(k, "%s%s -> %s %.3g%% (%.0f of %.0f)", head, in->net[i].host,
                          in->net[i].peers[p].host,
                          100.0 * share(in->net[i].peers[p].retrans, in->net[i].peers[p].segs),
                          in->net[i].peers[p].retrans, in->net[i].peers[p].segs);
            }
    if (n_lossy == 0 || in->n_net < 3) {
        if (n_lossy > 0)
            gate_note(k, "two nodes: a lossy link cannot tell which end loses");
        return;
    }
    for (int h = 0; h < in->n_net; h++) {
        int mine = 0;
        for (int i = 0; i < in->n_net; i++)
            for (int p = 0; p < in->net[i].n_peers; p++)
                mine += share(in->net[i].peers[p].retrans, in->net[i].peers[p].segs) > limit &&
                        (i == h || strcmp(in->net[i].peers[p].host, in->net[h].host) == 0);
        if (mine == n_lossy) {
            snprintf(res->lossy_host, sizeof res->lossy_host, "%s", in->net[h].host);
            gate_note(k, "every lossy link is %s's", in->net[h].host);
            return;
        }
    }
    gate_note(k, "no one node is at an end of every lossy link");
}

void gate_packet_loss(struct gate_result *res, const struct gate_input *in)
{
    struct gate_criterion *k = &res->crit[GATE_PACKET_LOSS];
    res->lossy_host[0] = '\0';
    if (in->n_net == 0) {
        gate_note(k, "summary.json has no network counters (no run finished, a summary written "
                  "before they existed, or /proc/net unreadable)");
        return;
    }
    int worst = 0;
    double segs = 0.0, tx = 0.0, drops = 0.0, errors = 0.0;
    for (int i = 0; i < in->n_net; i++) {
        const struct gate_node_net *g = &in->net[i], *w = &in->net[worst];
        if (share(g->retrans, g->segs) > share(w->retrans, w->segs))
            worst = i;
        segs += g->segs;
        tx += g->tx_bytes;
        drops += g->drops;
        errors += g->errors;
    }
    const struct gate_node_net *w = &in->net[worst];
    gate_measure(k, share(w->retrans, w->segs), (int64_t)segs);
    gate_note(k, "worst node %s: %.0f of %.0f TCP segments retransmitted (%.3g%%) in %.1f s",
              w->host, w->retrans, w->segs, 100.0 * k->measured, w->seconds);
    for (int i = 0; i < in->n_net; i++)
        if (i != worst)
            gate_note(k, "%s %.0f of %.0f", in->net[i].host, in->net[i].retrans,
                      in->net[i].segs);
    if (k->status == GATE_NO_GO || k->status == GATE_HOLD)
        name_lossy(k, res, in, k->status == GATE_NO_GO ? k->no_go : k->go);
    gate_note(k, "interfaces: %.0f drop(s), %.0f error(s)", drops, errors);
    if (w->steps > 0 && isfinite(in->num_parameters) && in->num_parameters > 0)
        gate_note(k, "on the wire %.3g MB sent per step by the %d node(s), %.3gx the gradient's "
                  "%.3g MB", tx / (double)w->steps / 1e6, in->n_net,
                  tx / (double)w->steps / (4.0 * in->num_parameters),
                  4.0 * in->num_parameters / 1e6);
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
        const struct gate_node_net *g = &in->net[i];
        rz_json_object_begin(j);
        rz_json_kv_string(j, "host", g->host);
        rz_json_kv_double(j, "seconds", g->seconds);
        rz_json_kv_double(j, "tcp_segments_sent", g->segs);
        rz_json_kv_double(j, "tcp_retransmitted", g->retrans);
        rz_json_kv_double(j, "retransmit_share", share(g->retrans, g->segs));
        rz_json_kv_double(j, "tx_bytes_per_step", per_step(g->tx_bytes, g->steps));
        rz_json_kv_double(j, "drops", g->drops);
        rz_json_kv_double(j, "errors", g->errors);
        rz_json_key(j, "peers");
        rz_json_array_begin(j);
        for (int p = 0; p < g->n_peers; p++) {
            rz_json_object_begin(j);
            rz_json_kv_string(j, "host", g->peers[p].host);
            rz_json_kv_double(j, "tcp_segments_sent", g->peers[p].segs);
            rz_json_kv_double(j, "tcp_retransmitted", g->peers[p].retrans);
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
               "to its end (the whole host's traffic), and its TCP connections to each other "
               "node (this run's alone).%s%s%s\n\n| node | TCP segments sent | retransmitted | "
               "share | MB sent per step | drops | errors | to each node: retransmitted / sent |\n"
               "|---|---|---|---|---|---|---|---|\n",
            res->lossy_host[0] ? "  Every lossy link is **" : "", res->lossy_host,
            res->lossy_host[0] ? "**'s." : "");
    for (int i = 0; i < in->n_net; i++) {
        const struct gate_node_net *g = &in->net[i];
        fprintf(f, "| %s | %.0f | %.0f | %.3g%% | %.3g | %.0f | %.0f |", g->host, g->segs,
                g->retrans, 100.0 * share(g->retrans, g->segs),
                per_step(g->tx_bytes, g->steps) / 1e6, g->drops, g->errors);
        for (int p = 0; p < g->n_peers; p++)
            fprintf(f, "%s%s %.0f / %.0f", p ? ", " : " ", g->peers[p].host, g->peers[p].retrans,
                    g->peers[p].segs);
        fputs(" |\n", f);
    }
    fputc('\n', f);
}

void gate_html_network(FILE *f, const struct gate_input *in, const struct gate_result *res)
{
    if (in->n_net == 0)
        return;
    fputs("<h2>The network while training</h2>\n<p>Each node's kernel counters from its first "
          "step to its end (the whole host's traffic), and its TCP connections to each other "
          "node (this run's alone).", f);
    if (res->lossy_host[0]) {
        fputs(" Every lossy link is <strong id=\"lossy-host\">", f);
        gate_html_text(f, res->lossy_host);
        fputs("</strong>'s.", f);
    }
    fputs("</p>\n<table id=\"network\"><tr><th>node</th><th>TCP segments sent</th>"
          "<th>retransmitted</th><th>share</th><th>MB sent per step</th><th>drops</th>"
          "<th>errors</th><th>to each node: retransmitted / sent</th></tr>\n", f);
    for (int i = 0; i < in->n_net; i++) {
        const struct gate_node_net *g = &in->net[i];
        fputs("<tr><th>", f);
        gate_html_text(f, g->host);
        fprintf(f, "</th><td>%.0f</td><td>%.0f</td><td>%.3g%%</td><td>%.3g</td><td>%.0f</td>"
                   "<td>%.0f</td><td>", g->segs, g->retrans, 100.0 * share(g->retrans, g->segs),
                per_step(g->tx_bytes, g->steps) / 1e6, g->drops, g->errors);
        for (int p = 0; p < g->n_peers; p++) {
            fputs(p ? ", " : "", f);
            gate_html_text(f, g->peers[p].host);
            fprintf(f, " %.0f / %.0f", g->peers[p].retrans, g->peers[p].segs);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}
