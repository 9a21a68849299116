/* guard.h: the loss-spike and NaN guard (docs/operations.md, "Loss guard").
 *
 * A step whose loss or gradient norm is not finite, or is an outlier against the running
 * statistics of the accepted steps, is skipped: no parameter update, while the data position
 * advances as for any step.  An outlier exceeds the running mean by more than `threshold`
 * standard deviations and by more than 10% of the mean (so a nearly flat series does not turn
 * noise into spikes); only upward spikes count, and only after GUARD_WARMUP accepted steps.
 * When `max_skipped` steps were skipped within the last `window` steps, the guard says stop.
 *
 * The statistics are exponentially weighted (equal weights for the first GUARD_SPAN steps, then
 * a weight of 1/GUARD_SPAN for the newest), updated by accepted steps only, so a spike does not
 * widen the band that judges the next one.  Every rank judges the same gathered values with
 * the same state, so every rank takes the same decision; the state is saved in each checkpoint
 * (ckpt_meta.guard), so a resumed run judges exactly as an uninterrupted one would.
 * Ownership: plain values. */
#ifndef RZ_TRAIN_GUARD_H
#define RZ_TRAIN_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/ckpt.h"

#define GUARD_WARMUP 20   /* accepted steps before outliers are judged */
#define GUARD_SPAN 50     /* steps the running statistics weigh about equally */

struct guard_opts {
    int64_t max_skipped;  /* training.max_skipped_steps: skips in a window that stop the run */
    int64_t window;       /* training.skip_window, steps */
    double threshold;     /* training.spike_threshold, standard deviations; 0: non-finite only */
};

enum guard_verdict { GUARD_ACCEPT, GUARD_SKIP, GUARD_STOP };

/* Judge step `step` (1-based) by its global loss and gradient norm; updates g.  For a skip or a
 * stop, why gets the cause ("non-finite gradient norm (nan)", "loss 9.1 is 12.3 standard
 * deviations above its running mean 4.2", ...). */
enum guard_verdict guard_judge(struct ckpt_guard *g, const struct guard_opts *o, int64_t step,
                               double loss, double grad_norm, char *why, size_t why_len);

/* The skips within the window that ends at `step`, as "12, 15, 16" into buf; their count. */
int guard_recent_list(const struct ckpt_guard *g, const struct guard_opts *o, int64_t step,
                      char *buf, size_t len);

#endif
