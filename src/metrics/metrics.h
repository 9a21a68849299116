/* metrics.h: the human progress line's helpers.  The files the trainer writes for other programs
 * live in record/: the per-step log RUN_DIR/metrics/<run-id>/rank-NNNNN.jsonl in
 * record/rank_log.h, RUN_DIR/summary.json in record/summary.h; the live Prometheus series in
 * metrics/live_series.h. */
#ifndef RZ_METRICS_METRICS_H
#define RZ_METRICS_METRICS_H

#include <stddef.h>

/* "H:MM:SS" (or "M:SS") for an ETA into buf. */
void metrics_format_eta(char *buf, size_t len, double seconds);

#endif
