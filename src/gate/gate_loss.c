/* gate_loss.c: the criteria that judge the loss (docs/gates.md): loss_vs_baseline (against the
 * previous phase's curve at matched samples seen), entropy_gap (markov data: above its known
 * entropy floor) and unigram_margin (text and tokens: below the corpus's unigram entropy, the
 * loss of a model that learned only the tokens' frequencies).  Each judges the validation
 * losses when the run has any, else the training losses.
 * Deliberately not here: reading the curves and the figures (gate_read.c, gate_baseline.c), the
 * loss chart and its reference lines (gate_html.c), the other criteria (gate_eval.c). */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"

#define GATE_FINAL_POINTS 10      /* a final loss is the mean of this many last points */
#define GATE_UNIGRAM_MIN_STEPS 10 /* fewer steps cannot have taught a model more than the
                                   * frequencies: the margin is n/a */

/* The losses the loss criteria judge, as (samples_seen, loss) pairs in xy (2 * n_steps): the
 * validation losses when this run has any, else the per-step training losses. */
static size_t gate_judged_losses(const struct gate_input *in, double *xy, bool *val)
{
    size_t n = 0;
    *val = false;
    for (size_t i = 0; i < in->n_steps && !*val; i++)
        *val = !isnan(in->steps[i].val_loss);
    for (size_t i = 0; i < in->n_steps; i++) {
        double y = *val ? in->steps[i].val_loss : in->steps[i].loss;
        if (isnan(y))
            continue;
        xy[2 * n] = (double)in->steps[i].samples_seen;
        xy[2 * n + 1] = y;
        n++;
    }
    return n;
}

/* A curve's loss at samples_seen x, linear between its points (x inside the curve's range). */
static double gate_interp(const double *curve, size_t n, double x)
{
    size_t lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (curve[2 * mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    double x0 = curve[2 * lo], x1 = curve[2 * hi];
    double y0 = curve[2 * lo + 1], y1 = curve[2 * hi + 1];
    return x1 > x0 ? y0 + (y1 - y0) * (x - x0) / (x1 - x0) : y1;
}

/* Over the last 10% of the overlap of both curves' samples_seen: 100 (ours - base) / base. */
static void gate_loss_compare(struct gate_criterion *k, const double *xy, size_t n,
                              const double *curve, size_t n_curve, const char *what,
                              const struct gate_baseline *b)
{
    double lo = fmax(xy[0], curve[0]);
    double hi = fmin(xy[2 * n - 2], curve[2 * n_curve - 2]);
    double cut = hi - 0.1 * (hi - lo), ours = 0, base = 0;
    int64_t m = 0;
    for (size_t i = 0; hi >= lo && i < n; i++) {
        if (xy[2 * i] < cut || xy[2 * i] > hi)
            continue;
        ours += xy[2 * i + 1];
        base += gate_interp(curve, n_curve, xy[2 * i]);
        m++;
    }
    if (m == 0) {
        gate_note(k, "no overlap in samples seen with the baseline (%s job %s: %.6g..%.6g)",
                  b->phase, b->job, curve[0], curve[2 * n_curve - 2]);
        return;
    }
    ours /= (double)m;
    base /= (double)m;
    gate_measure(k, 100.0 * (ours - base) / base, m);
    gate_note(k, "mean %s %.6g vs baseline %.6g (%s job %s) over samples seen %.6g..%.6g", what,
              ours, base, b->phase, b->job, cut, hi);
}

static void gate_loss_vs_baseline(struct gate_result *res, const struct gate_input *in,
                                  double *xy)
{
    struct gate_criterion *k = &res->crit[GATE_LOSS_VS_BASELINE_PCT];
    const struct gate_baseline *b = &in->baseline;
    if (!b->wanted || !b->present) {
        if (!b->wanted)
            gate_set(k, GATE_NA);
        gate_note(k, "%s", b->reason);
        return;
    }
    bool val = false;
    size_t n = gate_judged_losses(in, xy, &val);
    /* validation against the baseline's validation curve; its training curve if it has none */
    bool base_val = val && b->n_val_curve > 0;
    const double *curve = base_val ? b->val_curve : b->curve;
    size_t n_curve = base_val ? b->n_val_curve : b->n_curve;
    if (n_curve == 0 || n == 0) {
        gate_note(k, "no loss curve in %s", n_curve == 0 ? "the baseline" : "this run");
        return;
    }
    gate_loss_compare(k, xy, n, curve, n_curve, !val ? "loss" : base_val ? "validation loss" :
                      "validation loss (the baseline has only training losses)", b);
}

/* The mean of the last GATE_FINAL_POINTS losses of xy's n (fewer when there are fewer): a final
 * loss that one noisy step does not decide.  *m receives how many. */
static double gate_final_loss(const double *xy, size_t n, size_t *m)
{
    *m = n < GATE_FINAL_POINTS ? n : GATE_FINAL_POINTS;
    double sum = 0;
    for (size_t i = n - *m; i < n; i++)
        sum += xy[2 * i + 1];
    return sum / (double)*m;
}

static void gate_entropy(struct gate_result *res, const struct gate_input *in,
                         const struct cfg *c, double *xy)
{
    struct gate_criterion *k = &res->crit[GATE_ENTROPY_GAP];
    bool val = false;
    size_t n = gate_judged_losses(in, xy, &val);
    if (strcmp(c->data.kind, "random") == 0) {
        /* the floor is known, and the loss chart draws it, but it says nothing here */
        gate_set(k, GATE_NA);
        gate_note(k, "data.kind is random: its floor ln V = %.6g nats is also the loss of a model "
                  "that has learned nothing, so the gap cannot show learning",
                  log((double)c->model.vocab_size));
    } else if (strcmp(c->data.kind, "markov") != 0) {
        gate_set(k, GATE_NA);
        gate_note(k, "data.kind is %s: no known entropy floor", c->data.kind);
    } else if (isnan(in->entropy_floor)) {
        gate_note(k, "summary.json has no entropy_floor");
    } else if (n == 0) {
        gate_note(k, "no steps");
    } else {
        size_t m = 0;
        double last = gate_final_loss(xy, n, &m);
        gate_measure(k, last - in->entropy_floor, (int64_t)m);
        gate_note(k, "mean %s of the last %zu %s minus the entropy floor %.6g",
                  val ? "validation loss" : "loss", m, val ? "validations" : "steps",
                  in->entropy_floor);
    }
}

/* Why the unigram margin cannot be judged on this data or run ("" when it can). */
static void gate_unigram_na(char *why, size_t len, const struct gate_input *in,
                            const struct cfg *c)
{
    size_t trained = 0;
    for (size_t i = 0; i < in->n_steps; i++)
        trained += !isnan(in->steps[i].loss);
    why[0] = '\0';
    if (strcmp(c->data.kind, "random") == 0)
        rz_fmt(why, len, "data.kind is random: no text (uniform tokens' unigram entropy, ln V = "
               "%.6g nats, is the loss of a model that has learned nothing)",
               log((double)c->model.vocab_size));
    else if (strcmp(c->data.kind, "markov") == 0)
        rz_fmt(why, len, "data.kind is markov: no text (entropy_gap judges learning on it)");
    else if (isnan(in->unigram_entropy))
        rz_fmt(why, len, "summary.json has no unigram_entropy (a run that did not finish, or a "
               "ryzen-train older than it)");
    else if (trained < GATE_UNIGRAM_MIN_STEPS)
        rz_fmt(why, len, "%zu step(s) trained: the margin needs at least %d to show learning",
               trained, GATE_UNIGRAM_MIN_STEPS);
}

/* unigram_margin: how far below the corpus's unigram entropy (the loss of a model that learned
 * only how often each token occurs) the final loss ends; text and tokens only. */
static void gate_unigram(struct gate_result *res, const struct gate_input *in,
                         const struct cfg *c, double *xy)
{
    struct gate_criterion *k = &res->crit[GATE_UNIGRAM_MARGIN];
    char why[GATE_NOTE_MAX];
    gate_unigram_na(why, sizeof why, in, c);
    bool val = false;
    size_t n = gate_judged_losses(in, xy, &val);
    if (why[0] != '\0') {
        gate_set(k, GATE_NA);
        gate_note(k, "%s", why);
    } else if (n == 0) {
        gate_note(k, "no finite loss");
    } else {
        size_t m = 0;
        double last = gate_final_loss(xy, n, &m);
        gate_measure(k, in->unigram_entropy - last, (int64_t)m);
        gate_note(k, "the unigram entropy %.6g minus the mean %s of the last %zu %s (%.6g)",
                  in->unigram_entropy, val ? "validation loss" : "loss", m,
                  val ? "validations" : "steps", last);
    }
}

enum rz_status gate_loss_criteria(struct gate_result *res, const struct gate_input *in,
                                  const struct cfg *c, struct rz_err *err)
{
    double *xy = calloc(2 * in->n_steps + 2, sizeof *xy);
    if (xy == NULL)
        return rz_fail(err, RZ_ENOMEM, "gate: out of memory");
    gate_loss_vs_baseline(res, in, xy);
    gate_entropy(res, in, c, xy);
    gate_unigram(res, in, c, xy);
    free(xy);
    return RZ_OK;
}
