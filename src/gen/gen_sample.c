/* gen_sample.c: choosing the next token from the logits (gen.h): greedy (argmax), or a draw
 * from softmax(logits / temperature) restricted to the top-k tokens and then to the smallest
 * set of most likely tokens whose probability reaches top-p (Holtzman et al. 2020, "The curious
 * case of neural text degeneration"), renormalized.  The draw is rz_rand_open01(seed, step)
 * (core/rng.h): a pure function of the seed and the step, so the same seed gives the same
 * tokens.  Filtered candidates are ordered by logit, then id, so ties never depend on a sort's
 * whims; top-k selects with a heap of k (O(V log k)), and only top-p sorts the whole vocabulary.
 * Deliberately not here: repetition penalties, beam search. */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "gen/gen.h"

enum rz_status gen_sample_check(const struct gen_sample_opts *o, struct rz_err *err)
{
    if (!(o->temperature >= 0.0) || !isfinite(o->temperature))
        return rz_fail(err, RZ_ECONFIG, "--temperature %g: must be a finite number >= 0 (0 is "
                       "greedy)", o->temperature);
    if (o->top_k < 0)
        return rz_fail(err, RZ_ECONFIG, "--top-k %lld: must be >= 0 (0 keeps every token)",
                       (long long)o->top_k);
    if (!(o->top_p > 0.0 && o->top_p <= 1.0))
        return rz_fail(err, RZ_ECONFIG, "--top-p %g: must be in (0, 1] (1 keeps every token)",
                       o->top_p);
    return RZ_OK;
}

/* A candidate token: its logit (the order), its unnormalized probability (the draw). */
struct cand {
    float logit;
    double p;
    int32_t id;
};

size_t gen_sample_scratch_bytes(int64_t V)
{
    return (size_t)V * sizeof(struct cand);
}

static int32_t argmax(const float *x, int64_t V)
{
    int64_t best = 0;
    for (int64_t i = 1; i < V; i++)
        if (x[i] > x[best])
            best = i;
    return (int32_t)best;
}

double gen_logprob(const float *logits, int64_t V, int32_t id)
{
    double mx = (double)logits[argmax(logits, V)], sum = 0.0;
    for (int64_t i = 0; i < V; i++)
        sum += exp((double)logits[i] - mx);
    return (double)logits[id] - mx - log(sum);
}

/* Whether candidate x comes before y: the larger logit, then the smaller id. */
static bool before(const struct cand *x, const struct cand *y)
{
    return x->logit != y->logit ? x->logit > y->logit : x->id < y->id;
}

static int by_order(const void *a, const void *b)
{
    return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

/* Restore the heap h[0..n) below i: the candidate that comes last sits at the root. */
static void sift_down(struct cand *h, int64_t n, int64_t i)
{
    for (;;) {
        int64_t w = i, l = 2 * i + 1, r = l + 1;
        if (l < n && before(&h[w], &h[l]))
            w = l;
        if (r < n && before(&h[w], &h[r]))
            w = r;
        if (w == i)
            return;
        struct cand t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* The k first candidates of the whole vocabulary into c[0..k), in order: a heap of the k best
 * so far, O(V log k) instead of sorting all V. */
static void select_top_k(struct cand *c, const float *logits, int64_t V, int64_t k)
{
    for (int64_t i = 0; i < V; i++) {
        struct cand x = {logits[i], 0.0, (int32_t)i};
        if (i < k) {
            c[i] = x;
            if (i == k - 1)
                for (int64_t j = k / 2; j-- > 0;)
                    sift_down(c, k, j);
        } else if (before(&x, &c[0])) {
            c[0] = x;
            sift_down(c, k, 0);
        }
    }
    qsort(c, (size_t)k, sizeof *c, by_order);
}

/* How many of the ordered candidates (c, n of them, summing to total) top-p keeps: the smallest
 * prefix whose sum reaches top_p * total, at least one. */
static int64_t nucleus(const struct cand *c, int64_t n, double total, double top_p)
{
    if (top_p >= 1.0)
        return n;
    double cum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        cum += c[i].p;
        if (cum >= top_p * total)
            return i + 1;
    }
    return n;
}

/* The candidates the filters keep, in c[0..n): top-k by selection, then (top-p only) in order;
 * without a filter, every token in id order (the draw needs no order then). */
static int64_t candidates(struct cand *c, const float *logits, int64_t V,
                          const struct gen_sample_opts *o)
{
    int64_t n = V;
    if (o->top_k > 0 && o->top_k < V) {
        n = o->top_k;
        select_top_k(c, logits, V, n);
    } else {
        for (int64_t i = 0; i < V; i++)
            c[i] = (struct cand){logits[i], 0.0, (int32_t)i};
        if (o->top_p < 1.0)
            qsort(c, (size_t)V, sizeof *c, by_order);
    }
    return n;
}

int32_t gen_sample(const float *logits, int64_t V, const struct gen_sample_opts *o, uint64_t step,
                   void *scratch)
{
    if (o->greedy || o->temperature == 0.0 || o->top_k == 1)
        return argmax(logits, V);
    struct cand *c = scratch;
    double mx = (double)logits[argmax(logits, V)], total = 0.0;
    int64_t n = candidates(c, logits, V, o);
    for (int64_t i = 0; i < n; i++) {
        c[i].p = exp(((double)c[i].logit - mx) / o->temperature);
        total += c[i].p;
    }
    n = nucleus(c, n, total, o->top_p);
    total = 0.0;
    for (int64_t i = 0; i < n; i++)
        total += c[i].p;
    double u = rz_rand_open01(o->seed, step) * total, cum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        cum += c[i].p;
        if (u < cum)
            return c[i].id;
    }
    return c[n - 1].id; /* u within rounding of total */
}
