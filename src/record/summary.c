/* summary.c: summary.json's writer and reader (see summary.h).
 * Not here: the figures themselves (the trainer reduces them across ranks) or what the gate
 * makes of them (gate/gate_read.c, gate_net.c). */
#include "config.h"

#include "record/summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/durable.h"
#include "core/json.h"
#include "core/json_read.h"
#include "core/util.h"
#include "net/netsock.h"

void summary_path(char *out, size_t len, const char *run_dir)
{
    rz_fmt(out, len, "%s/summary.json", run_dir);
}

/* ---- the writer ------------------------------------------------------------------------------ */

/* A node's network object past the whole host's counters: its connections to each other node
 * (the packet-loss gate's sample), TCP's own account of its retransmissions (TcpExt) and the
 * fabric's ports, when the kernel shows them. */
static void json_net_extra(struct rz_json *j, const struct summary_rank *rr)
{
    rz_json_key(j, "peers");
    rz_json_array_begin(j);
    for (int p = 0; p < rr->n_peers; p++) {
        const struct summary_peer *q = &rr->peers[p];
        rz_json_object_begin(j);
        rz_json_kv_string(j, "host", q->host);
        rz_json_kv_int(j, "connections", q->conns);
        rz_json_kv_double(j, "tcp_segments_sent", q->segs_out);
        rz_json_kv_double(j, "tcp_data_segments_sent", q->data_segs_out);
        rz_json_kv_double(j, "tcp_retransmitted", q->retrans);
        if (isfinite(q->dsack_dups))
            rz_json_kv_double(j, "tcp_spurious_retransmits", q->dsack_dups);
        if (isfinite(q->data_segs_in))
            rz_json_kv_double(j, "tcp_data_segments_received", q->data_segs_in);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
    rz_json_kv_double(j, "end_settle_seconds", rr->net_settle_s);
    rz_json_kv_double(j, "resends_proven_at_end", rr->net_late_dsacks);
    if (rr->net.has_ext) {
        rz_json_key(j, "tcp_ext");
        rz_json_object_begin(j);
        rz_json_kv_double(j, "loss_probes", rr->net.loss_probes);
        rz_json_kv_double(j, "loss_probe_recoveries", rr->net.loss_probe_recovery);
        rz_json_kv_double(j, "dsacks_received", rr->net.dsack_recv);
        rz_json_kv_double(j, "spurious_rtos", rr->net.spurious_rtos);
        rz_json_kv_double(j, "lost_retransmits", rr->net.lost_retransmit);
        rz_json_kv_double(j, "timeouts", rr->net.timeouts);
        rz_json_object_end(j);
    }
    if (rr->net.fabric_ports > 0.0) {
        rz_json_key(j, "fabric");
        rz_json_object_begin(j);
        rz_json_kv_double(j, "ports", rr->net.fabric_ports);
        rz_json_kv_double(j, "packets", rr->net.fabric_packets);
        rz_json_kv_double(j, "errors", rr->net.fabric_errors);
        rz_json_object_end(j);
    }
}

static void write_summary_json(FILE *f, const struct summary_doc *s)
{
    char stamp[32];
    rz_utc_iso8601(stamp, sizeof stamp);
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "timestamp", stamp);
    rz_json_kv_int(&j, "num_processes", s->num_processes);
    rz_json_key(&j, "aggregated_metrics");
    rz_json_object_begin(&j);
    rz_json_kv_double(&j, "avg_loss", s->avg_loss);
    rz_json_kv_double(&j, "total_duration_sec", s->total_duration_sec);
    rz_json_kv_double(&j, "samples_per_sec", s->samples_per_sec);
    rz_json_kv_double(&j, "final_loss", s->final_loss);
    rz_json_kv_double(&j, "tokens_per_sec", s->tokens_per_sec);
    rz_json_kv_double(&j, "mfu", s->mfu);
    rz_json_kv_double(&j, "peak_matmul_gflops", s->peak_gflops);
    rz_json_kv_double(&j, "comm_share", s->comm_share);
    rz_json_kv_double(&j, "allreduce_latency_s", s->allreduce_latency_s);
    rz_json_kv_int(&j, "restarts", s->restarts);
    rz_json_kv_int(&j, "steps", s->steps);
    rz_json_kv_int(&j, "num_parameters", s->num_parameters);
    if (s->entropy_floor >= 0.0)
        rz_json_kv_double(&j, "entropy_floor", s->entropy_floor);
    if (s->unigram_entropy > 0.0) /* 0: unset (a one-token corpus has nothing to learn) */
        rz_json_kv_double(&j, "unigram_entropy", s->unigram_entropy);
    if (s->tokenizer_sha256 != NULL && s->tokenizer_sha256[0] != '\0')
        rz_json_kv_string(&j, "tokenizer_sha256", s->tokenizer_sha256);
    if (s->predicted_peak_rss_bytes > 0) {
        rz_json_kv_uint(&j, "peak_rss_bytes", s->peak_rss_bytes);
        rz_json_kv_uint(&j, "predicted_peak_rss_bytes", s->predicted_peak_rss_bytes);
    }
    if (s->has_val) {
        char hex[64];
        snprintf(hex, sizeof hex, "%a", s->val_loss);
        rz_json_kv_double(&j, "val_loss", s->val_loss);
        rz_json_kv_string(&j, "val_loss_hex", hex);
        rz_json_kv_int(&j, "val_step", s->val_step);
        rz_json_kv_int(&j, "val_samples", s->val_samples);
    }
    rz_json_object_end(&j);
    rz_json_key(&j, "checkpoints"); /* the periodic ones; the stall is what training waited */
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "mode", s->ckpt_mode != NULL ? s->ckpt_mode : "sync");
    rz_json_kv_int(&j, "periodic", s->ckpt_count);
    rz_json_kv_int(&j, "failed", s->ckpt_failed);
    rz_json_kv_double(&j, "stall_ms_mean",
                      s->ckpt_count > 0 ? s->ckpt_stall_s * 1e3 / (double)s->ckpt_count : 0.0);
    rz_json_kv_double(&j, "stall_ms_max", s->ckpt_stall_max_s * 1e3);
    rz_json_kv_double(&j, "commit_ms_mean",
                      s->ckpt_count > 0 ? s->ckpt_commit_s * 1e3 / (double)s->ckpt_count : 0.0);
    rz_json_kv_string(&j, "policy", s->ckpt_policy != NULL ? s->ckpt_policy : "fixed");
    rz_json_kv_int(&j, "interval_steps", s->ckpt_interval);
    rz_json_kv_string(&j, "interval_why", s->ckpt_interval_why != NULL ? s->ckpt_interval_why
                                                                      : "");
    rz_json_object_end(&j);
    rz_json_kv_string(&j, "config", s->config_path != NULL ? s->config_path : "");
    rz_json_kv_string(&j, "resumed_from", s->resumed_from != NULL ? s->resumed_from : "");
    rz_json_key(&j, "rank_results");
    rz_json_array_begin(&j);
    for (int r = 0; r < s->num_processes; r++) {
        const struct summary_rank *rr = &s->ranks[r];
        rz_json_object_begin(&j);
        rz_json_kv_int(&j, "rank", rr->rank);
        rz_json_kv_string(&j, "host", rr->host);
        rz_json_kv_int(&j, "steps", rr->steps);
        rz_json_kv_double(&j, "avg_loss", rr->avg_loss);
        rz_json_kv_double(&j, "final_loss", rr->final_loss);
        rz_json_kv_double(&j, "samples_per_sec", rr->samples_per_sec);
        rz_json_kv_double(&j, "comm_share", rr->comm_share);
        rz_json_kv_double(&j, "duration_sec", rr->duration_sec);
        rz_json_kv_uint(&j, "peak_rss_bytes", rr->peak_rss_bytes);
        rz_json_kv_uint(&j, "optimizer_rss_bytes", rr->optimizer_rss_bytes);
        rz_json_kv_uint(&j, "predicted_peak_rss_bytes", rr->predicted_peak_rss_bytes);
        if (rr->has_net) {
            rz_json_key(&j, "network");
            rz_json_object_begin(&j);
            rz_json_kv_double(&j, "seconds", rr->net_seconds);
            rz_json_kv_double(&j, "tcp_segments_sent", rr->net.tcp_out_segs);
            rz_json_kv_double(&j, "tcp_retransmitted", rr->net.tcp_retrans_segs);
            rz_json_kv_double(&j, "tx_bytes", rr->net.tx_bytes);
            rz_json_kv_double(&j, "rx_bytes", rr->net.rx_bytes);
            rz_json_kv_double(&j, "drops", rr->net.drops);
            rz_json_kv_double(&j, "errors", rr->net.errors);
            json_net_extra(&j, rr);
            rz_json_object_end(&j);
        }
        rz_json_object_end(&j);
    }
    rz_json_array_end(&j);
    rz_json_object_end(&j);
    fputc('\n', f);
}

static void summary_writer(FILE *f, const void *s) { write_summary_json(f, s); }

enum rz_status summary_write(const char *run_dir, const struct summary_doc *s,
                             struct rz_err *err)
{
    char path[4200];
    summary_path(path, sizeof path, run_dir);
    return rz_durable_write(path, "summary", summary_writer, s, err);
}

/* ---- the reader ------------------------------------------------------------------------------ */

/* One of a node's peers: its connections to one other node.  A summary written before the data
 * segments and the spurious resends were counted leaves them NaN (the gate says so). */
static void read_node_peer(struct summary_net *g, const struct gj_value *q)
{
    const char *peer = gj_get_str(q, "host");
    if (peer == NULL || g->n_peers == SUMMARY_MAX_NET_PEERS)
        return;
    rz_fmt(g->peers[g->n_peers].host, sizeof g->peers[0].host, "%s", peer);
    g->peers[g->n_peers].data_segs = g->peers[g->n_peers].spurious = NAN;
    g->peers[g->n_peers].data_segs_in = NAN;
    (void)gj_get_num(q, "tcp_segments_sent", &g->peers[g->n_peers].segs);
    (void)gj_get_num(q, "tcp_retransmitted", &g->peers[g->n_peers].retrans);
    (void)gj_get_num(q, "tcp_data_segments_sent", &g->peers[g->n_peers].data_segs);
    (void)gj_get_num(q, "tcp_spurious_retransmits", &g->peers[g->n_peers].spurious);
    (void)gj_get_num(q, "tcp_data_segments_received", &g->peers[g->n_peers].data_segs_in);
    g->n_peers++;
}

/* A rank_results entry's "network" object (the node's lowest rank only). */
static void read_node_net(struct summary_rec *in, const struct gj_value *rr, const char *host)
{
    const struct gj_value *n = gj_get(rr, "network");
    if (n == NULL || n->type != GJ_OBJ || in->n_net == SUMMARY_MAX_NET_NODES)
        return;
    struct summary_net *g = &in->net[in->n_net++];
    memset(g, 0, sizeof *g);
    rz_fmt(g->host, sizeof g->host, "%s", host != NULL ? host : "unknown");
    (void)gj_get_int(rr, "steps", &g->steps);
    (void)gj_get_num(n, "seconds", &g->seconds);
    (void)gj_get_num(n, "tcp_segments_sent", &g->segs);
    (void)gj_get_num(n, "tcp_retransmitted", &g->retrans);
    (void)gj_get_num(n, "tx_bytes", &g->tx_bytes);
    (void)gj_get_num(n, "rx_bytes", &g->rx_bytes);
    (void)gj_get_num(n, "drops", &g->drops);
    (void)gj_get_num(n, "errors", &g->errors);
    g->late_dsacks = NAN;
    (void)gj_get_num(n, "resends_proven_at_end", &g->late_dsacks);
    const struct gj_value *x = gj_get(n, "tcp_ext"), *f = gj_get(n, "fabric");
    g->has_ext = x != NULL && x->type == GJ_OBJ;
    if (g->has_ext) {
        (void)gj_get_num(x, "loss_probes", &g->loss_probes);
        (void)gj_get_num(x, "loss_probe_recoveries", &g->loss_probe_recoveries);
        (void)gj_get_num(x, "dsacks_received", &g->dsacks);
        (void)gj_get_num(x, "spurious_rtos", &g->spurious_rtos);
        (void)gj_get_num(x, "timeouts", &g->timeouts);
    }
    if (f != NULL && f->type == GJ_OBJ) {
        (void)gj_get_num(f, "ports", &g->fabric_ports);
        (void)gj_get_num(f, "packets", &g->fabric_packets);
        (void)gj_get_num(f, "errors", &g->fabric_errors);
    }
    const struct gj_value *p = gj_get(n, "peers");
    for (size_t i = 0; p != NULL && p->type == GJ_ARR && i < p->n; i++)
        read_node_peer(g, &p->items[i]);
}

/* The checkpoints object: how they were written, and at which interval and why. */
static void read_ckpts(struct summary_ckpts *p, const struct gj_value *c)
{
    memset(p, 0, sizeof *p);
    p->stall_ms_mean = p->commit_ms_mean = NAN;
    if (c == NULL || c->type != GJ_OBJ)
        return;
    const char *mode = gj_get_str(c, "mode"), *policy = gj_get_str(c, "policy");
    const char *why = gj_get_str(c, "interval_why");
    p->known = mode != NULL;
    rz_fmt(p->mode, sizeof p->mode, "%s", mode != NULL ? mode : "");
    rz_fmt(p->policy, sizeof p->policy, "%s", policy != NULL ? policy : "fixed");
    rz_fmt(p->why, sizeof p->why, "%s", why != NULL ? why : "");
    (void)gj_get_int(c, "interval_steps", &p->interval_steps);
    (void)gj_get_int(c, "failed", &p->failed);
    (void)gj_get_num(c, "stall_ms_mean", &p->stall_ms_mean);
    (void)gj_get_num(c, "commit_ms_mean", &p->commit_ms_mean);
}

static void read_rank(struct summary_rec *s, const struct gj_value *rr)
{
    struct summary_rank_rec *r = &s->ranks[s->n_ranks++];
    const char *host = gj_get_str(rr, "host");
    read_node_net(s, rr, host); /* a node's lowest rank only */
    r->has_rank = gj_get_int(rr, "rank", &r->rank);
    r->has_host = host != NULL;
    rz_fmt(r->host, sizeof r->host, "%s", host != NULL ? host : "");
    r->predicted_peak_rss = NAN;
    (void)gj_get_num(rr, "predicted_peak_rss_bytes", &r->predicted_peak_rss);
}

/* The entry of node `host` among net[0..n), or NULL. */
static const struct summary_net *net_of(const struct summary_net *net, int n, const char *host)
{
    for (int i = 0; i < n; i++)
        if (strcmp(net[i].host, host) == 0)
            return &net[i];
    return NULL;
}

void summary_link_losses(struct summary_net *net, int n)
{
    for (int i = 0; i < n; i++)
        for (int p = 0; p < net[i].n_peers; p++) {
            struct summary_link *out = &net[i].peers[p];
            const struct summary_net *to = net_of(net, n, out->host);
            double got = NAN;
            for (int q = 0; to != NULL && q < to->n_peers; q++)
                if (strcmp(to->peers[q].host, net[i].host) == 0)
                    got = to->peers[q].data_segs_in;
            double tcp = netsock_lost(out->retrans, out->spurious);
            out->by_delivery = isfinite(got) && isfinite(out->data_segs);
            out->lost = out->by_delivery ? fmin(tcp, fmax(0.0, out->data_segs - got)) : tcp;
        }
}

enum rz_status summary_read(const char *path, struct summary_rec *s, struct rz_err *err)
{
    memset(s, 0, sizeof *s);
    s->num_parameters = s->entropy_floor = s->unigram_entropy = NAN;
    read_ckpts(&s->ckpts, NULL);
    struct gj_value *v = NULL;
    enum rz_status st = gj_parse_file(path, &v, err);
    if (st != RZ_OK)
        return st;
    const struct gj_value *agg = gj_get(v, "aggregated_metrics");
    if (agg == NULL || agg->type != GJ_OBJ) {
        gj_free(v);
        return rz_fail(err, RZ_EDATA, "%s: 'aggregated_metrics' object missing", path);
    }
    (void)gj_get_num(agg, "entropy_floor", &s->entropy_floor);
    (void)gj_get_num(agg, "unigram_entropy", &s->unigram_entropy);
    const char *tok = gj_get_str(agg, "tokenizer_sha256");
    rz_fmt(s->tokenizer_sha256, sizeof s->tokenizer_sha256, "%s", tok != NULL ? tok : "");
    (void)gj_get_num(agg, "num_parameters", &s->num_parameters);
    (void)gj_get_int(agg, "restarts", &s->restarts);
    read_ckpts(&s->ckpts, gj_get(v, "checkpoints"));
    const struct gj_value *rr = gj_get(v, "rank_results");
    if (rr != NULL && rr->type == GJ_ARR && rr->n > 0 &&
        (s->ranks = calloc(rr->n, sizeof *s->ranks)) == NULL)
        st = rz_fail(err, RZ_ENOMEM, "%s: out of memory", path);
    for (size_t i = 0; st == RZ_OK && rr != NULL && rr->type == GJ_ARR && i < rr->n; i++)
        read_rank(s, &rr->items[i]);
    summary_link_losses(s->net, s->n_net);
    gj_free(v);
    return st;
}

void summary_free(struct summary_rec *s)
{
    free(s->ranks);
    s->ranks = NULL;
    s->n_ranks = 0;
}
