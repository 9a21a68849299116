/* gate_internal.h: helpers shared by the src/gate/ files; not part of the public API (gate.h).
 * Ownership as in gate.h; gj_parse_file's tree is freed with gj_free. */
#ifndef RZ_GATE_GATE_INTERNAL_H
#define RZ_GATE_GATE_INTERNAL_H

#include <stdio.h>

#include "gate/gate.h"
#include "core/json_read.h"

/* ---- the rest ---- */

/* Fill in->baseline: `path` if given, else the newest RUNROOT/<phase.previous>/reports/
 * <job>/report.json by mtime; absent baselines get a reason, not an error. */
enum rz_status gate_find_baseline(struct gate_input *in, const struct cfg *c, const char *path,
                                  struct rz_err *err);

/* gate_links.c: the links between the nodes (in->links; nothing, or null, without them). */
struct rz_json;
void gate_json_links(struct rz_json *j, const struct gate_input *in);
void gate_md_links(FILE *f, const struct gate_input *in);
void gate_html_links(FILE *f, const struct gate_input *in);


/* "lo .. hi" of a phase's predicted throughput, or why there is no range. */
void gate_predicted_range(char *buf, size_t len, const struct gate_result *res);

/* ---- gate_crit.c: a criterion's figures, for the files that judge one ---- */

/* Append "; " and a formatted text to the criterion's note. */
void gate_note(struct gate_criterion *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Measured `value` over `samples`, judged against the criterion's thresholds. */
void gate_measure(struct gate_criterion *k, double value, int64_t samples);
/* A status without a figure (not judged, not applicable). */
void gate_set(struct gate_criterion *k, enum gate_status s);

/* ---- gate_loss.c: the loss criteria ---- */

/* loss_vs_baseline, entropy_gap and unigram_margin into res (RZ_ENOMEM only). */
enum rz_status gate_loss_criteria(struct gate_result *res, const struct gate_input *in,
                                  const struct cfg *c, struct rz_err *err);

/* ---- gate_topo.c: where the ranks ran ---- */

struct health_doc;
/* in->topo from health.json's ranks. */
void gate_topology_read(struct gate_input *in, const struct health_doc *h);
void gate_json_topology(struct rz_json *j, const struct gate_input *in);
void gate_md_topology(FILE *f, const struct gate_input *in);
void gate_html_topology(FILE *f, const struct gate_input *in);

/* ---- gate_recover.c: the stops and the runs after them ---- */

/* Rank 0's rows in the order written: each run after the first is a recovery (in->recov). */
void gate_recoveries_scan(struct gate_input *in, const struct rank_row *rows, size_t n);
/* What stopped each: the job's events between the two runs (after the events are read). */
void gate_recoveries_causes(struct gate_input *in);
void gate_json_recoveries(struct rz_json *j, const struct gate_input *in);
void gate_md_recoveries(FILE *f, const struct gate_input *in);
void gate_html_recoveries(FILE *f, const struct gate_input *in);

/* ---- gate_net.c: the network during training ---- */

/* packet_loss: the data segments each node's MPI connections to the other nodes lost while it
 * trained (retransmitted, less those D-SACK proved spurious), judged with exact binomial bounds
 * (docs/gates.md): NO-GO only when the sample shows more than the NO-GO share, n/a on one node,
 * without a sample that can show the NO-GO share, or without counters; the fabric's port errors
 * where the ranks did not talk over TCP.  The worst node is named, the hosts' own counters and
 * the wire bytes per step against the gradient's bytes are context. */
#define GATE_LOSS_ALPHA 0.05 /* one-sided: each bound holds with 95% confidence */
/* Clopper-Pearson bounds on a share from `k` of `n`: P(X >= k | lo) = P(X <= k | hi) = alpha. */
void gate_loss_bounds(double k, double n, double alpha, double *lo, double *hi);
/* The segments a sample needs, none lost, for its upper bound to be at most `no_go`. */
double gate_loss_min_segments(double no_go, double alpha);
void gate_packet_loss(struct gate_result *res, const struct gate_input *in);
/* The nodes' network while training, as report.json's "network", a Markdown table, an HTML
 * table (nothing, or null, without counters). */
void gate_json_network(struct rz_json *j, const struct gate_input *in,
                       const struct gate_result *res);
void gate_md_network(FILE *f, const struct gate_input *in, const struct gate_result *res);
void gate_html_network(FILE *f, const struct gate_input *in, const struct gate_result *res);

#endif
