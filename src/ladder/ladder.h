/* ladder.h: the ladder of phases under a run root (ryzen-gate --ladder RUN_ROOT; docs/ladder.md):
 *   ladder_read     every RUN_ROOT/<phase>[/rollback-<job>]/reports/<job>/report.json and
 *                   events.jsonl -> struct ladder (record/ladder_json.h): the attempts, their
 *                   efficiencies against the base, the fitted model and its predictions, the
 *                   hindcast and the verdict timeline, computed once
 *   ladder_fit ...  the scaling model: fit, layout, prediction (ladder_model.c); a phase's own
 *                   report (gate/) takes its predicted throughput from here
 *   ladder_write_*  ladder.md and ladder.html (ladder_write.c), ladder.json (record/), ladder.csv
 *                   (ladder_csv.c, with --csv): they only
 *                   format the document; ladder_write puts the three into RUN_ROOT durably
 * Works on a run root, never on one phase's metrics.  Ownership: ladder_read fills a caller-owned
 * struct ladder whose arrays it allocates; ladder_free releases them (safe on a zeroed or
 * half-filled one). */
#ifndef RZ_LADDER_LADDER_H
#define RZ_LADDER_LADDER_H

#include <stdio.h>

#include "core/status.h"
#include "record/ladder_json.h"

struct health_links; /* record/health_json.h */

/* Where a phase runs, as the model takes it: ranks, nodes, each rank's cores, the slowest link
 * (bytes/s) and the latency (NaN: unknown). */
struct ladder_layout {
    int world, nodes;
    double cores, link_Bps, link_lat_s;
};

/* Read every RUN_ROOT/<phase>[/rollback-<job>]/reports/<job>/report.json and events.jsonl,
 * the efficiencies against the base (the 1-rank attempt, else the smallest), the fit and the
 * predictions.  Malformed reports are RZ_EDATA naming the file. */
enum rz_status ladder_read(struct ladder *l, const char *root, struct rz_err *err);
void ladder_free(struct ladder *l);

/* The model fitted to the attempts under ROOT with fewer than `below_world` ranks: a phase's
 * prediction.  Best effort: a run root that cannot be read leaves the fit not ok with the
 * reason in its note. */
void ladder_fit_root(struct ladder_fit *fit, const char *root, int below_world);

/* ---- ladder_model.c ---- */

/* Fit the model to the attempts with fewer than `below_world` ranks (0: all). */
void ladder_fit(const struct ladder *l, int below_world, struct ladder_fit *fit);
/* The document's derived figures, once: efficiencies against the base, the fits, each attempt's
 * model throughput, the hindcast rows and the predictions for the rungs not measured. */
enum rz_status ladder_derive(struct ladder *l, struct rz_err *err);
/* A rung not run yet, placed as the fitted attempts were (ranks per node, CPUs per machine,
 * shared or not, their links) on the nodes the newest attempt had: each rank's cores are the
 * least of 1, its machine's CPUs over the ranks on the machine, and its node's CPU quota over
 * the node's ranks, as gate_topology_read counts them for a phase that ran. */
void ladder_rung_layout(const struct ladder_fit *fit, int world, struct ladder_layout *out);
/* A measured attempt's own layout (its topology and links), the fit's where it lacks them. */
void ladder_attempt_layout(const struct ladder_attempt *a, const struct ladder_fit *fit,
                           struct ladder_layout *out);
/* The model's throughput for a layout and `per_rank_batch` samples per rank; NaN if !fit->ok:
 *   T = c*b/s + H + k_net * (2(P-1)/P * M / B + 2(P-1) * lat)   on several nodes
 *   T = c*b/s + H + k_local * 2(P-1)/P * M / s                   on one
 *   throughput = P*b/T, s = each rank's cores, B = the slowest link; H = 2(P-1)*q/s, the ring's
 *   hops each waiting a turn of the ranks that share a core, where s < 1 (else 0); q the fit's. */
double ladder_predict(const struct ladder_fit *fit, const struct ladder_layout *lay,
                      double per_rank_batch);
/* ladder_predict at ladder_rung_layout(world). */
double ladder_model(const struct ladder_fit *fit, int world, double per_rank_batch);
/* The slowest link between two of its hosts in bytes/s, and the median latency in seconds (NaN
 * without such a link): what the model takes of a phase's network. */
void ladder_link_figures(const struct health_links *l, double *slowest_Bps, double *median_lat_s);

/* ---- ladder_write.c ---- */

void ladder_write_md(FILE *f, const struct ladder *l);
void ladder_write_html(FILE *f, const struct ladder *l);
/* RUN_ROOT/ladder.json, ladder.md, ladder.html (core/durable.h). */
enum rz_status ladder_write(const struct ladder *l, struct rz_err *err);

/* ---- ladder_csv.c ---- */

/* ladder.csv (docs/ladder.md): a header, then one row per attempt; RFC 4180 (record/csv.h).
 * ladder_write_csv_file: RUN_ROOT/ladder.csv, durably (ryzen-gate --ladder ROOT --csv). */
void ladder_write_csv(FILE *f, const struct ladder *l);
enum rz_status ladder_write_csv_file(const struct ladder *l, struct rz_err *err);

#endif
