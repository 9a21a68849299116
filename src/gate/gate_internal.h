/* gate_internal.h: helpers shared by the src/gate/ files; not part of the public API (gate.h).
 * Ownership as in gate.h; gj_parse_file's tree is freed with gj_free. */
#ifndef RZ_GATE_GATE_INTERNAL_H
#define RZ_GATE_GATE_INTERNAL_H

#include <stdio.h>

#include "gate/gate.h"
#include "core/json_read.h"

/* ---- gate_jsonl.c: JSON Lines, and events.jsonl's lines as events ---- */

typedef enum rz_status (*gate_line_fn)(void *ctx, const struct gj_value *v, const char *path,
                                       long line, const char *text, struct rz_err *err);

/* Call fn for every non-blank line of a JSON Lines file; each must be an object.  A last line
 * without a newline is an error ("PATH:LINE: truncated line"). */
enum rz_status gate_read_jsonl(const char *path, gate_line_fn fn, void *ctx, struct rz_err *err);

/* promote, rollback and rollback_start events (any job) form the phase chain. */
bool gate_is_chain_event(const struct gate_event *e);
/* start, requeue, attempt_end, verdict, promote, rollback, ...: the verdict timeline. */
bool gate_is_verdict_event(const struct gate_event *e);
/* A requeue event's reason as the report counts it (unknown ones: other). */
enum gate_requeue gate_requeue_of(const char *reason);

/* Append the events of an events.jsonl file to *ev (n of them); a missing file adds none. */
enum rz_status gate_read_events_file(const char *path, struct gate_event **ev, size_t *n,
                                     struct rz_err *err);

/* ---- the rest ---- */

/* Fill in->baseline: `path` if given, else the newest RUNROOT/<phase.previous>/reports/
 * <job>/report.json by mtime; absent baselines get a reason, not an error. */
enum rz_status gate_find_baseline(struct gate_input *in, const struct cfg *c, const char *path,
                                  struct rz_err *err);

/* Quantile q in [0,1] of v[0..n) (sorts v in place; linear interpolation between order
 * statistics, "type 7"); NaN for n == 0. */
double gate_quantile(double *v, size_t n, double q);

/* gate_links.c: the links between the nodes (in->links; nothing, or null, without them). */
struct rz_json;
void gate_json_links(struct rz_json *j, const struct gate_input *in);
void gate_md_links(FILE *f, const struct gate_input *in);
void gate_html_links(FILE *f, const struct gate_input *in);
/* The slowest link between two of its hosts in bytes/s, and the median latency in seconds (NaN
 * without such a link): what the ladder's model takes of a phase's network. */
void gate_link_figures(const struct health_links *l, double *slowest_Bps, double *median_lat_s);


/* "lo .. hi" of a phase's predicted throughput, or why there is no range. */
void gate_predicted_range(char *buf, size_t len, const struct gate_result *res);

/* ---- SVG charts (gate_svg.c): shared by report.html and ladder.html ------------------------- */

#define GATE_W 540.0
#define GATE_H 300.0
#define GATE_L 64.0            /* plot area margins */
#define GATE_R 16.0
#define GATE_T 30.0
#define GATE_B 42.0

enum gate_xaxis {
    GATE_X_LINEAR,             /* round ticks */
    GATE_X_RANKS,              /* x0 = -0.5 .. x1 = n - 0.5: whole ranks */
    GATE_X_LOG2                /* x is log2(value): ticks at powers of two */
};

struct gate_axes {
    double x0, x1, y0, y1;
    enum gate_xaxis xkind;
    double xstep;              /* set by gate_svg_begin for linear axes */
};

extern const char gate_css[];
void gate_html_text(FILE *f, const char *s);
double gate_px(const struct gate_axes *a, double x);
double gate_py(const struct gate_axes *a, double y);
/* Widen a degenerate or unset range and pad it by 5% (`pad`). */
void gate_range(double *lo, double *hi, bool pad);
/* Widen [lo, hi], the range of non-negative data, to hold the threshold v when v is at most
 * GATE_NEAR times the data's top (and at least its bottom / GATE_NEAR): returns whether it did.
 * A threshold further off would squash the data into a sliver; it stays off the axes, and
 * gate_thresholds names it. */
#define GATE_NEAR 4.0
bool gate_range_threshold(double *lo, double *hi, double v);
/* A gate's go and no-go lines (gate_hline), and one line at the plot's top left naming those
 * off the axes (none: nothing). */
void gate_thresholds(FILE *f, const struct gate_axes *a, double go, double no_go);
/* A round step (1, 2 or 5 times a power of ten) that cuts `range` into about `ticks` parts. */
double gate_nice_step(double range, int ticks);
/* The frame, title, axis labels and round ticks; snaps a's ends to the ticks first. */
void gate_svg_begin(FILE *f, const char *id, const char *title, const char *xl, const char *yl,
                    struct gate_axes *a);
void gate_svg_end(FILE *f);
void gate_svg_empty(FILE *f, const char *why);
/* A horizontal threshold line at y with a label (nothing when y is off the axes). */
void gate_hline(FILE *f, const struct gate_axes *a, double y, const char *cls,
                const char *label);

/* ---- gate_crit.c: a criterion's figures, for the files that judge one ---- */

/* Append "; " and a formatted text to the criterion's note. */
void gate_note(struct gate_criterion *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Measured `value` over `samples`, judged against the criterion's thresholds. */
void gate_measure(struct gate_criterion *k, double value, int64_t samples);
/* A status without a figure (not judged, not applicable). */
void gate_set(struct gate_criterion *k, enum gate_status s);

/* ---- gate_topo.c: where the ranks ran ---- */

struct health_doc;
/* in->topo from health.json's ranks. */
void gate_topology_read(struct gate_input *in, const struct health_doc *h);
void gate_json_topology(struct rz_json *j, const struct gate_input *in);
void gate_md_topology(FILE *f, const struct gate_input *in);
void gate_html_topology(FILE *f, const struct gate_input *in);

/* ---- gate_recover.c: the stops and the runs after them ---- */

/* Rank 0's rows in the order written: each run after the first is a recovery (in->recov). */
void gate_recoveries_scan(struct gate_input *in, const struct gate_row *rows, size_t n);
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
