/* prom_text.h: the Prometheus text exposition format (0.0.4) that node_exporter's textfile
 * collector reads: the pieces its three writers share, the one place that knows how a label
 * is escaped, how a family is introduced and how a value is spelt.
 *   written by  ryzen-train (the node's live file: metrics/live_series.c), ryzen-step (its
 *               restarts: step/step_prom.c), ryzen-gate (gate.prom: gate/gate_prom.c)
 *   read by     node_exporter, Prometheus, promtool (tests/ops.sh checks every file with it);
 *               no program of ours reads it back
 * What each file holds (its series) stays with its writer; docs/monitoring.md lists them. */
#ifndef RZ_RECORD_PROM_TEXT_H
#define RZ_RECORD_PROM_TEXT_H

#include <stdbool.h>
#include <stdio.h>

/* `key="value"`, with \, " and newline escaped; a comma before it unless first. */
void prom_text_label(FILE *f, const char *key, const char *value, bool first);
/* A family's "# HELP" and "# TYPE" lines. */
void prom_text_head(FILE *f, const char *name, const char *type, const char *help);
/* " VALUE\n": NaN, +Inf and -Inf as Prometheus spells them; 1e9 and above with all its digits
 * (timestamps, bytes), else 9 significant digits. */
void prom_text_value(FILE *f, double v);

#endif
