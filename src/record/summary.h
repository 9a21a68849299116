/* summary.h: RUN_DIR/summary.json, a training run's summary in the seed benchmark's format: its
 * structs, its one writer and its one reader.  The one place that knows the format.
 *   written by  ryzen-train, rank 0 at the end of a run (durably: core/durable.h), from figures
 *               already reduced across ranks (train/train.c, train/train_net.c)
 *   read by     ryzen-gate (gate/gate_read.c: hosts, the planner's peak RSS, the nodes' network
 *               counters, the periodic checkpoints, the model's size, the data's reference
 *               lines and tokenizer)
 * Fields: timestamp, num_processes, aggregated_metrics {avg_loss, total_duration_sec,
 * samples_per_sec, final_loss, tokens_per_sec, mfu, peak_matmul_gflops, comm_share,
 * allreduce_latency_s, restarts, steps, num_parameters, entropy_floor (when known),
 * unigram_entropy (text and tokens: the training split's, nats/token), tokenizer_sha256 (when the
 * data names its tokenizer),
 * peak_rss_bytes and predicted_peak_rss_bytes (when planned), val_loss, val_loss_hex, val_step,
 * val_samples (after a validation)}, checkpoints {mode, periodic, failed, stall_ms_mean,
 * stall_ms_max, commit_ms_mean, policy, interval_steps, interval_why}, config, resumed_from,
 * rank_results [{rank, host, steps, avg_loss, final_loss, samples_per_sec, comm_share,
 * duration_sec, peak_rss_bytes, optimizer_rss_bytes, predicted_peak_rss_bytes, network (a
 * node's lowest rank only) {seconds, tcp_segments_sent, tcp_retransmitted, tx_bytes, rx_bytes,
 * drops, errors, peers [{host, connections, tcp_segments_sent, tcp_data_segments_sent,
 * tcp_retransmitted, tcp_spurious_retransmits}], tcp_ext {...}, fabric {ports, packets,
 * errors}}}].
 * Older files may lack the later fields: the reader leaves them NaN or empty as noted below.
 * Ownership: the writer's structs borrow their strings and ranks from the caller; summary_read
 * allocates rec->ranks, summary_free releases it (a zeroed rec is fine). */
#ifndef RZ_RECORD_SUMMARY_H
#define RZ_RECORD_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "net/netstat.h"

/* ---- the writer ------------------------------------------------------------------------------ */

/* The TCP connections of a node to one other node of the job (net/netsock.h): segments sent and
 * retransmitted, this run's connections alone (the job user's: MPI's, not Slurm's). */
#define SUMMARY_MAX_PEERS 16
struct summary_peer {
    char host[64];
    double segs_out, retrans;
    double data_segs_out, dsack_dups; /* dsack_dups NaN: the kernel has no tcpi_dsack_dups */
    double data_segs_in;              /* received from that node; NaN: the kernel does not say */
    double unacked;                   /* not acknowledged at the read (train_net_settle) */
    int conns;
};

struct summary_rank {
    int rank;
    char host[64];
    int64_t steps;
    double avg_loss, final_loss;
    double samples_per_sec;  /* this rank's share, steady state */
    double comm_share;       /* this rank's exposed communication share */
    double duration_sec;
    uint64_t peak_rss_bytes;
    uint64_t optimizer_rss_bytes; /* RSS grown by the Adam moments (+ ZeRO's gradient shard) */
    uint64_t predicted_peak_rss_bytes; /* the memory planner's figure (plan.h) */
    /* The node's network counters (net/netstat.h), read by its lowest rank alone (has_net) at
     * the first step and at the end: their change while this run trained, whole host. */
    int has_net;
    struct netstat net;
    double net_seconds;
    int n_peers;             /* has_net only: the other nodes its connections reached */
    struct summary_peer peers[SUMMARY_MAX_PEERS];
    double net_settle_s;     /* the wait for D-SACKs at the end (train_net_settle) */
    double net_late_dsacks;  /* the resends it proved spurious */
};

struct summary_doc {
    int num_processes;
    double avg_loss;             /* mean of the per-step losses of the run */
    double final_loss;
    double total_duration_sec;   /* wall time of the training loop */
    double samples_per_sec;      /* global, steady state (warm-up steps excluded) */
    double tokens_per_sec;
    double mfu;
    double peak_gflops;          /* measured matmul peak used for MFU */
    double comm_share;           /* exposed communication time / step time */
    double allreduce_latency_s;  /* median small-allreduce latency measured at start-up */
    int64_t restarts;            /* resumes from a checkpoint so far */
    const char *resumed_from;    /* checkpoint this run resumed from, or NULL */
    int64_t steps;
    int64_t num_parameters;
    double entropy_floor;        /* < 0 when unknown */
    double unigram_entropy;      /* nats/token; <= 0 when unknown (random, markov) */
    const char *tokenizer_sha256; /* hex; NULL or "" when the data names none */
    const char *config_path;
    uint64_t peak_rss_bytes;     /* the largest of the ranks' peak RSS */
    uint64_t predicted_peak_rss_bytes; /* the largest of the planner's figures for them */
    int has_val;                 /* a validation ran: the three below are set */
    int64_t val_step;            /* step of the last validation */
    double val_loss;
    int64_t val_samples;         /* size of the validation set */
    /* periodic checkpoints (checkpoint.interval) of this run, rank 0's view */
    const char *ckpt_mode;       /* checkpoint.mode: "sync" or "async" */
    int64_t ckpt_count;
    int64_t ckpt_failed; /* periodic checkpoints that could not be written */
    double ckpt_stall_s;         /* training's wait for them, in total */
    double ckpt_stall_max_s;     /* ... the longest */
    double ckpt_commit_s;        /* their writes, in total (behind training when async) */
    const char *ckpt_policy;     /* checkpoint.policy */
    int64_t ckpt_interval;       /* the interval in steps at the end, and why */
    const char *ckpt_interval_why;
    const struct summary_rank *ranks; /* num_processes entries */
};

/* Write RUN_DIR/summary.json durably. */
enum rz_status summary_write(const char *run_dir, const struct summary_doc *s,
                             struct rz_err *err);

/* ---- the reader ------------------------------------------------------------------------------ */

/* RUN_DIR/summary.json into out. */
void summary_path(char *out, size_t len, const char *run_dir);

#define SUMMARY_NAME_MAX 128

/* One node's network counters while its last run trained (summary.json: its lowest rank's
 * rank_results entry, net/netstat.h): the whole host's, ryzen-train's traffic and any other;
 * its connections to each other node, the node's ranks' alone (train/train_net.h: the packet-loss
 * gate's sample); TCP's account of its retransmissions and the fabric's ports (context). */
#define SUMMARY_MAX_NET_NODES 64
#define SUMMARY_MAX_NET_PEERS 16
/* One node's connections to one other node, as read back (summary_read). */
struct summary_link {
    char host[SUMMARY_NAME_MAX];
    double segs, retrans;
    double data_segs;       /* NaN: a summary written before it was counted */
    double spurious;        /* D-SACKed retransmissions; NaN: unknown */
    double data_segs_in;    /* received from that node; NaN: unknown */
    /* What this node sent that node and lost (summary_link_losses).  A lost segment is missing
     * at the other end's TCP *and* resent without a D-SACK, so where both ends counted
     * (by_delivery) it is the smaller of data_segs less what that node received from this one
     * and retrans - spurious (TCP's own account, net/netsock.h); else TCP's account alone.
     * Each count alone has a one-segment artifact that the other does not share (seen under
     * load on the dev cluster): a tail-loss probe whose D-SACK was never counted, though no
     * drop was seen (skb:kfree_skb); and one segment sent but not
     * received while TCP resent nothing unproven (the two ends read a moment apart). */
    double lost;
    bool by_delivery;
};

struct summary_net {
    char host[SUMMARY_NAME_MAX];
    int64_t steps;              /* the steps that run trained */
    double seconds, segs, retrans, tx_bytes, rx_bytes, drops, errors;
    bool has_ext;               /* TcpExt: */
    double loss_probes, loss_probe_recoveries, dsacks, spurious_rtos, timeouts;
    double fabric_ports, fabric_packets, fabric_errors; /* fabric_ports 0: none shown */
    double late_dsacks;         /* resends proven spurious after the last step; NaN: unknown */
    int n_peers;                /* its connections to each other node: this run's alone */
    struct summary_link peers[SUMMARY_MAX_NET_PEERS];
};

/* The periodic checkpoints: how they were written, and at which interval and why (known false:
 * the file has no "checkpoints"). */
struct summary_ckpts {
    bool known;
    char mode[16], policy[16];
    int64_t interval_steps;
    int64_t failed;             /* periodic ones not written (checkpoint.failures_tolerated) */
    double stall_ms_mean, commit_ms_mean; /* NaN unknown */
    char why[512];
};

/* One rank_results entry's rank, host and the planner's peak RSS. */
struct summary_rank_rec {
    bool has_rank, has_host;
    int64_t rank;
    char host[SUMMARY_NAME_MAX];
    double predicted_peak_rss;  /* bytes; NaN when absent */
};

struct summary_rec {
    double num_parameters, entropy_floor;  /* NaN when absent */
    double unigram_entropy;                /* NaN when absent */
    char tokenizer_sha256[65];             /* "" when absent */
    int64_t restarts;
    struct summary_ckpts ckpts;
    struct summary_rank_rec *ranks;        /* rank_results, in file order */
    size_t n_ranks;
    struct summary_net net[SUMMARY_MAX_NET_NODES]; /* the entries with "network", in order */
    int n_net;
};

/* Each node's peers[].lost and by_delivery, matching the two ends of every link among net[0..n)
 * by host name (summary_read does it). */
void summary_link_losses(struct summary_net *net, int n);

/* PATH into *s (zeroed first; summary_free it, also after an error).  RZ_EIO when it cannot be
 * read, RZ_EDATA naming the file when it is not JSON or has no 'aggregated_metrics' object. */
enum rz_status summary_read(const char *path, struct summary_rec *s, struct rz_err *err);
void summary_free(struct summary_rec *s);

#endif
