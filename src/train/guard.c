/* guard.c: the loss-spike and NaN guard (see guard.h).  Pure arithmetic on a small state:
 * no I/O, no MPI; train_step.c feeds it the step's gathered loss and gradient norm. */
#include "config.h"

#include "train/guard.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Exponentially weighted mean and variance (West 1979): equal weights while n <= GUARD_SPAN. */
static void guard_update(double *mean, double *var, int64_t n, double x)
{
    double a = 1.0 / (double)(n < GUARD_SPAN ? n : GUARD_SPAN);
    double d = x - *mean;
    *mean += a * d;
    *var = (1.0 - a) * (*var + a * d * d);
}

/* How many standard deviations x stands above the mean, or 0 when it is no outlier. */
static double guard_outlier(double x, double mean, double var, double threshold)
{
    double sd = sqrt(var);
    if (!(sd > 0.0) || !(x > mean * 1.1))
        return 0.0;
    double z = (x - mean) / sd;
    return z > threshold ? z : 0.0;
}

/* Why step's values are bad ("" when they are fine). */
static void guard_cause(const struct ckpt_guard *g, const struct guard_opts *o, double loss,
                        double gnorm, char *why, size_t len)
{
    why[0] = '\0';
    if (!isfinite(loss)) {
        snprintf(why, len, "non-finite loss (%g)", loss);
    } else if (!isfinite(gnorm)) {
        snprintf(why, len, "non-finite gradient norm (%g)", gnorm);
    } else if (o->threshold > 0.0 && g->seen >= GUARD_WARMUP) {
        double zl = guard_outlier(loss, g->loss_mean, g->loss_var, o->threshold);
        double zg = guard_outlier(gnorm, g->gnorm_mean, g->gnorm_var, o->threshold);
        if (zl > 0.0)
            snprintf(why, len, "loss %.6g is %.1f standard deviations above its running mean "
                     "%.6g", loss, zl, g->loss_mean);
        else if (zg > 0.0)
            snprintf(why, len, "gradient norm %.6g is %.1f standard deviations above its "
                     "running mean %.6g", gnorm, zg, g->gnorm_mean);
    }
}

/* Keep the skips still inside the window ending at `step` (recent[] holds steps, oldest
 * first; 0 marks an unused slot), then add `step` if it was skipped. */
static int guard_window(struct ckpt_guard *g, const struct guard_opts *o, int64_t step,
                        int add)
{
    int n = 0;
    for (int i = 0; i < CKPT_GUARD_RECENT; i++)
        if (g->recent[i] > 0 && g->recent[i] > step - o->window)
            g->recent[n++] = g->recent[i];
    if (add) {
        if (n == CKPT_GUARD_RECENT) { /* full: the oldest leaves (max_skipped <= this) */
            memmove(g->recent, g->recent + 1, (CKPT_GUARD_RECENT - 1) * sizeof g->recent[0]);
            n--;
        }
        g->recent[n++] = step;
    }
    for (int i = n; i < CKPT_GUARD_RECENT; i++)
        g->recent[i] = 0;
    return n;
}

enum guard_verdict guard_judge(struct ckpt_guard *g, const struct guard_opts *o, int64_t step,
                               double loss, double grad_norm, char *why, size_t why_len)
{
    guard_cause(g, o, loss, grad_norm, why, why_len);
    if (why[0] == '\0') {
        g->seen++;
        guard_update(&g->loss_mean, &g->loss_var, g->seen, loss);
        guard_update(&g->gnorm_mean, &g->gnorm_var, g->seen, grad_norm);
        guard_window(g, o, step, 0);
        return GUARD_ACCEPT;
    }
    g->skipped++;
    int n = guard_window(g, o, step, 1);
    return n >= o->max_skipped ? GUARD_STOP : GUARD_SKIP;
}

int guard_recent_list(const struct ckpt_guard *g, const struct guard_opts *o, int64_t step,
                      char *buf, size_t len)
{
    int n = 0;
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < CKPT_GUARD_RECENT; i++) {
        if (g->recent[i] <= 0 || g->recent[i] <= step - o->window)
            continue;
        n++;
        if (used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%lld", used ? ", " : "",
                                     (long long)g->recent[i]);
    }
    return n;
}
