/* metrics.c: per-step JSONL, summary.json and small formatting helpers (see metrics.h).
 * It does not aggregate across ranks: the trainer passes in already-reduced figures. */
#include "config.h"

#include "metrics/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/durable.h"
#include "core/json.h"
#include "core/util.h"

struct metrics_log {
    FILE *f;
    char path[4200];
};

enum rz_status metrics_open(struct metrics_log **out, const char *run_dir, const char *run_id,
                            int rank, struct rz_err *err)
{
    *out = NULL;
    struct metrics_log *log = calloc(1, sizeof *log);
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
    snprintf(log->path, sizeof log->path, "%s/rank-%05d.jsonl", dir, rank);
    log->f = fopen(log->path, "a");
    if (log->f == NULL) {
        st = rz_fail(err, RZ_EIO, "metrics: open '%s': %s", log->path, strerror(errno));
        free(log);
        return st;
    }
    *out = log;
    return RZ_OK;
}

const char *metrics_path(const struct metrics_log *log) { return log->path; }

enum rz_status metrics_write(struct metrics_log *log, const struct metrics_step *s,
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

void metrics_close(struct metrics_log *log)
{
    if (log == NULL)
        return;
    if (log->f != NULL)
        fclose(log->f);
    free(log);
}

/* A node's network object past the whole host's counters: its connections to each other node
 * (the packet-loss gate's sample), TCP's own account of its retransmissions (TcpExt) and the
 * fabric's ports, when the kernel shows them. */
static void metrics_json_net_extra(struct rz_json *j, const struct metrics_rank_result *rr)
{
    rz_json_key(j, "peers");
    rz_json_array_begin(j);
    for (int p = 0; p < rr->n_peers; p++) {
        const struct metrics_peer *q = &rr->peers[p];
        rz_json_object_begin(j);
        rz_json_kv_string(j, "host", q->host);
        rz_json_kv_int(j, "connections", q->conns);
        rz_json_kv_double(j, "tcp_segments_sent", q->segs_out);
        rz_json_kv_double(j, "tcp_data_segments_sent", q->data_segs_out);
        rz_json_kv_double(j, "tcp_retransmitted", q->retrans);
        if (isfinite(q->dsack_dups))
            rz_json_kv_double(j, "tcp_spurious_retransmits", q->dsack_dups);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
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

static void write_summary_json(FILE *f, const struct metrics_summary *s)
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
        const struct metrics_rank_result *rr = &s->ranks[r];
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
            metrics_json_net_extra(&j, rr);
            rz_json_object_end(&j);
        }
        rz_json_object_end(&j);
    }
    rz_json_array_end(&j);
    rz_json_object_end(&j);
    fputc('\n', f);
}

static void summary_writer(FILE *f, const void *s) { write_summary_json(f, s); }

enum rz_status metrics_write_summary(const char *run_dir, const struct metrics_summary *s,
                                     struct rz_err *err)
{
    char path[4200];
    rz_fmt(path, sizeof path, "%s/summary.json", run_dir);
    return rz_durable_write(path, "summary", summary_writer, s, err);
}

void metrics_format_eta(char *buf, size_t len, double seconds)
{
    if (!(seconds >= 0.0) || seconds > 1e8) {
        snprintf(buf, len, "?");
        return;
    }
    long s = (long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
    else
        snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
}
