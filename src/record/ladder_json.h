/* ladder_json.h: RUN_ROOT/ladder.json, the ladder report of every phase and attempt of a run root:
 * its struct (the ladder as one document) and its writer, the one place that knows the format.
 *   written by  ryzen-gate --ladder (ladder/ladder_write.c writes it durably, beside ladder.md and
 *               ladder.html, which format the same document)
 *   read by     no program: tests/ladder.sh and operators read it with jq.  A reader, when one
 *               is needed, goes here.
 * Keys (in this order): root, time, base {phase, job, world_size} | null, attempts [...],
 * hindcast {fitted_to_ranks_at_most, ok, error_rel, note, rows [...]}, model {...},
 * predictions [...], timeline [...] (docs/ladder.md; docs/gates.md "Ladder report").
 * Ownership: the ladder's reader (ladder/ladder.h: ladder_read) allocates att, hindcast and
 * timeline; ladder_free releases them.  The writer only formats: every figure it prints is in
 * the struct (deliberately no fitting, no reading and no event filtering here). */
#ifndef RZ_RECORD_LADDER_JSON_H
#define RZ_RECORD_LADDER_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "record/report.h"

#define LADDER_NAME_MAX 128
#define LADDER_NOTE_MAX 512
#define LADDER_RUNGS 5          /* predictions at 8, 12, 16, 32 and 64 ranks */
#define LADDER_EARLY_RANKS 8    /* the hindcast's fit: phases of at most this many ranks */
#define LADDER_MAX_RQ 16        /* requeue reasons counted per attempt */

#define LADDER_MODEL_FORMULA "T(P, b) = c*b/s + H + k_net*(2(P-1)/P*M/B + 2(P-1)*lat) on " \
                             "several nodes, c*b/s + H + k_local*2(P-1)/P*M/s on one, H = " \
                             "2(P-1)*q/s while s is under 1; throughput = P*b/T"

/* The ladder's scaling model (ladder/ladder_model.c; docs/gates.md, "Ladder report"), fitted to
 * measured phases:  T(P, b) = c*b + alpha*ceil(log2 P) + beta*2(P-1)/P*M  seconds per step,
 * throughput P*b/T, for P ranks of b samples each and M gradient bytes (4 per parameter). */
struct ladder_fit {
    bool ok;
    int points;                 /* measured attempts the fit rests on */
    double c_s;                 /* seconds per sample on a whole core (the 1-rank phase) */
    double k_local;             /* seconds per byte of the ring, per core share, within a node */
    double k_net;               /* the share of the ring's time over the links a step waits */
    double hop_s;               /* q: what a ring hop waits per rank sharing its core, seconds:
                                 * the median over the fitted phases on fewer cores than ranks
                                 * of their small collective's p50 per round x s, measured while
                                 * they trained (not the preflight's idle ring hop, 4 to 7 times
                                 * shorter: docs/ladder.md); 0: none.  2(P-1)*q/s a step */
    double bytes;               /* M, the gradient's bytes (NaN: unknown) */
    /* the measured attempts' layout, to place a rung not run yet */
    double ranks_per_node, machine_cpus, link_Bps, link_lat_s;
    double node_quota;          /* each node's CPU quota in cores, as the newest attempt's nodes
                                 * had it (NaN: none): a node's cores are the least of its
                                 * machine's CPUs over the nodes sharing them and this */
    bool shared_machine;        /* their nodes are one machine's CPUs (the dev cluster) */
    double err_rel;             /* the band: RMS relative error in-sample, or the spread */
    char note[LADDER_NOTE_MAX]; /* what the fit used, and what it lacked */
};

/* One phase report under RUN_ROOT (an attempt of a phase: its first run or a rollback). */
struct ladder_attempt {
    char phase[LADDER_NAME_MAX], job[64];
    char lineage[LADDER_NAME_MAX * 2]; /* "<phase>" or "<phase>/rollback-<job>" */
    char report[4096];
    char verdict[16], ended[32], action[16], action_phase[LADDER_NAME_MAX];
    char time[32];
    int world;
    double throughput, efficiency_prev;   /* the report's own efficiency (vs its baseline) */
    double efficiency;          /* against the ladder's base attempt */
    double model;               /* the fit's throughput on the attempt's own layout (NaN) */
    double comm, p50_ms, p99_ms, straggler;
    double per_rank_batch;      /* global batch / world */
    double compute_s;           /* median over ranks of the mean compute time per step */
    double params;              /* number of parameters (NaN unknown) */
    double throughput_p10;      /* the report's 10th percentile over windows (NaN unknown) */
    /* where it ran (report.json topology and links; NaN / 0 when the report predates them) */
    int nodes;
    double cores_per_rank;      /* what each rank really had of a core */
    double machine_cpus;        /* CPUs of the machine behind its first node */
    double node_quota;          /* its nodes' CPU quota in cores, the tightest (NaN: none) */
    bool shared_machine;        /* all its nodes are one machine (the dev cluster) */
    double link_Bps, link_lat_s;/* the slowest link between its nodes, bytes/s; the median
                                 * latency (NaN: one node, or no preflight links) */
    double ring_hop_s;          /* its preflight's ring hop on its own placement, seconds (NaN:
                                 * one rank, or a report from before it was measured) */
    int64_t steps, skipped;
    char from_ckpt[4096];       /* the checkpoint its run started from ("" fresh / unknown) */
    char rollback_ckpt[4096];   /* the report's rollback checkpoint ("" none) */
    char handed_to[128];        /* "job J (phase)" its checkpoint was handed to by a rollback */
    int64_t requeues[LADDER_MAX_RQ]; /* by reason, as struct ladder's rq_names; [0] failure */
    double goodput;             /* the report's uptime: useful training time / wall time (NaN) */
    struct report_lost lost[REPORT_MAX_LOST]; /* the report's time lost by kind of restart */
    int n_lost;
    char nodes_lost[256], nodes_excluded[256];
};

struct ladder_prediction {
    int world;
    double throughput, lo, hi, efficiency;
};

/* A phase of more than LADDER_EARLY_RANKS ranks measured after the early fit: what that fit
 * predicted for it on its own layout, and what it measured. */
struct ladder_hindcast_row {
    char phase[LADDER_NAME_MAX], job[64];
    int world;
    double predicted, lo, hi, measured, ratio; /* ratio: measured / predicted */
};

/* One line of the verdict timeline: a wrapper event of some lineage under the run root. */
struct ladder_event {
    char when[32];              /* "YYYY-MM-DD HH:MM:SSZ" */
    double t;                   /* seconds since the epoch */
    char lineage[LADDER_NAME_MAX * 2], job[64], event[64];
    char summary[LADDER_NOTE_MAX]; /* message and the event's key fields */
};

struct ladder {
    char root[4096];
    char time[32];
    struct ladder_attempt *att; /* by world size, then time */
    size_t n_att;
    int base;                   /* the attempt efficiencies are measured against (-1: none) */
    const char *rq_names[LADDER_MAX_RQ]; /* the requeue reasons counted, "failure" first */
    int n_rq;
    struct ladder_fit fit;
    /* the model as it stood after the phases of at most LADDER_EARLY_RANKS ranks (phase 1 and
     * 2a), and its hindcast of the larger phases measured since (none unless early.ok) */
    struct ladder_fit early;
    struct ladder_hindcast_row *hindcast;
    size_t n_hindcast;
    struct ladder_prediction pred[LADDER_RUNGS];
    int n_pred;                 /* rungs not measured yet */
    struct ladder_event *timeline; /* start, requeue, verdict, promote, ...: by time */
    size_t n_timeline;
};

/* Whether an efficiency is flagged: above 100% under weak scaling is a measurement's error. */
bool ladder_over_100(double efficiency);

/* ladder.json: the document as JSON (one object and a newline). */
void ladder_json_write(FILE *f, const struct ladder *l);

#endif
