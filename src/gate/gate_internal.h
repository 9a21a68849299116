/* gate_internal.h: helpers shared by the src/gate/ files; not part of the public API (gate.h).
 * Ownership as in gate.h; gate_read_json_file's tree is freed with gj_free. */
#ifndef RZ_GATE_GATE_INTERNAL_H
#define RZ_GATE_GATE_INTERNAL_H

#include <stdio.h>

#include "gate/gate.h"
#include "gate/gate_json.h"

typedef enum rz_status (*gate_line_fn)(void *ctx, const struct gj_value *v, const char *path,
                                       long line, const char *text, struct rz_err *err);

/* Call fn for every non-blank line of a JSON Lines file; each must be an object.  A last line
 * without a newline is an error ("PATH:LINE: truncated line"). */
enum rz_status gate_read_jsonl(const char *path, gate_line_fn fn, void *ctx, struct rz_err *err);

/* Parse a whole JSON file. */
enum rz_status gate_read_json_file(const char *path, struct gj_value **out, struct rz_err *err);

/* Fill in->baseline: `path` if given, else the newest RUNROOT/<phase.previous>/reports/
 * <job>/report.json by mtime; absent baselines get a reason, not an error. */
enum rz_status gate_find_baseline(struct gate_input *in, const struct cfg *c, const char *path,
                                  struct rz_err *err);

/* Quantile q in [0,1] of v[0..n) (sorts v in place; linear interpolation between order
 * statistics, "type 7"); NaN for n == 0. */
double gate_quantile(double *v, size_t n, double q);

/* promote, rollback and rollback_start events (any job) form the phase chain. */
bool gate_is_chain_event(const struct gate_event *e);

#endif
