/* markov.c: the random sparse first-order Markov chain behind data.kind = markov, its stationary
 * distribution, its entropy rate (the "entropy floor": the lowest expected loss any model can reach
 * on its samples) and its stationary samples.
 *
 * Construction, all from the counter generator keyed by the seed (counter_rng.h):
 *   - successors: state s always has (s+1) mod V, so 0 -> 1 -> ... -> V-1 -> 0 is a cycle through
 *     every state and the chain is irreducible; state 0 also has itself when branching >= 2, a
 *     self-loop that makes the chain aperiodic (a cycle of length 1 next to one of length V).  The
 *     other branching-1 (or -2) successors are distinct uniform draws (rejection of repeats).
 *     With branching 1 the chain is the deterministic cycle: irreducible, entropy 0, period V
 *     (aperiodicity needs two successors somewhere); its stationary distribution is still unique.
 *   - probabilities: normalised standard exponentials w = -ln u, i.e. a flat Dirichlet draw, so
 *     the branching probabilities of a row are unequal and all positive.
 *   - pi: lazy power iteration pi <- (pi + pi P) / 2 from the uniform distribution until
 *     ||pi P - pi||_1 < 1e-13.  The lazy step has the same fixed point as pi P and converges for
 *     every irreducible chain, periodic or not.
 *   - H = sum_s pi_s sum_j -P(j|s) ln P(j|s) nats/token (Cover & Thomas, Thm 4.2.4).
 *
 * Deliberately not here: higher-order chains, sparse-matrix tricks for huge V * branching (the
 * tables are dense (V, branching) arrays), and any per-sample state (a sample is a pure function
 * of its key). */
#include "config.h"

#include "data/markov.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "data/counter_rng.h"

#define MARKOV_PI_TOL 1e-13
#define MARKOV_PI_MAX_ITERS 100000

struct data_markov {
    int32_t vocab;     /* V */
    int32_t branching; /* b: successors per state */
    uint64_t seed;
    int32_t *succ;     /* (V, b) successor ids of each state */
    double *prob;      /* (V, b) P(succ | s), all > 0, each row sums to 1 */
    double *cum;       /* (V, b) running sums of prob along a row; last entry exactly 1 */
    double *pi;        /* (V) stationary distribution */
    double *pi_cum;    /* (V) running sums of pi; last entry exactly 1 */
    double entropy;    /* entropy rate, nats/token */
};

static enum rz_status markov_fail(const struct data_markov *m, struct rz_err *err,
                                  enum rz_status status, const char *cause)
{
    return rz_fail(err, status, "markov chain (V=%" PRId32 ", branching %" PRId32 ", seed %" PRIu64
                   "): %s", m->vocab, m->branching, m->seed, cause);
}

static enum rz_status markov_alloc(struct data_markov *m, struct rz_err *err)
{
    size_t v = (size_t)m->vocab, b = (size_t)m->branching;
    if (b > SIZE_MAX / sizeof(double) / v)
        return markov_fail(m, err, RZ_ENOMEM, "V * branching tables do not fit in memory");
    m->succ = malloc(v * b * sizeof *m->succ);
    m->prob = malloc(v * b * sizeof *m->prob);
    m->cum = malloc(v * b * sizeof *m->cum);
    m->pi = malloc(v * sizeof *m->pi);
    m->pi_cum = malloc(v * sizeof *m->pi_cum);
    if (!m->succ || !m->prob || !m->cum || !m->pi || !m->pi_cum)
        return markov_fail(m, err, RZ_ENOMEM, "out of memory for the transition tables");
    return RZ_OK;
}

/* Row s of succ: (s+1) mod V, the self-loop 0 -> 0, then distinct uniform draws.  mark[x] == s
 * says x is already in row s (mark starts all -1). */
static void markov_pick_successors(struct data_markov *m, int32_t s, int32_t *mark)
{
    int32_t vocab = m->vocab, b = m->branching, n = 0;
    int32_t *row = m->succ + (size_t)s * (size_t)b;
    uint64_t key = data_key(m->seed, DATA_STREAM_SUCC, (uint64_t)s);
    row[n++] = (s + 1) % vocab;
    mark[row[0]] = s;
    if (s == 0 && b >= 2) { /* b <= V, so V >= 2 and 0 is not yet in the row */
        row[n++] = 0;
        mark[0] = s;
    }
    for (uint64_t draw = 0; n < b; draw++) {
        int32_t x = (int32_t)data_below(data_draw(key, draw), (uint64_t)vocab);
        if (mark[x] != s) {
            mark[x] = s;
            row[n++] = x;
        }
    }
}

/* Row s of prob and cum: normalised exponential weights and their running sums. */
static void markov_weight_row(struct data_markov *m, int32_t s)
{
    size_t b = (size_t)m->branching, base = (size_t)s * b;
    uint64_t key = data_key(m->seed, DATA_STREAM_WEIGHT, (uint64_t)s);
    double total = 0.0, run = 0.0;
    for (size_t j = 0; j < b; j++) {
        double u = ((double)(data_draw(key, j) >> 11) + 0.5) * 0x1.0p-53; /* (0, 1) */
        m->prob[base + j] = -log(u);
        total += m->prob[base + j];
    }
    for (size_t j = 0; j < b; j++) {
        m->prob[base + j] /= total;
        run += m->prob[base + j];
        m->cum[base + j] = run;
    }
    m->cum[base + b - 1] = 1.0;
}

static enum rz_status markov_build_rows(struct data_markov *m, struct rz_err *err)
{
    int32_t *mark = malloc((size_t)m->vocab * sizeof *mark);
    if (mark == NULL)
        return markov_fail(m, err, RZ_ENOMEM, "out of memory building the successor lists");
    for (int32_t s = 0; s < m->vocab; s++)
        mark[s] = -1;
    for (int32_t s = 0; s < m->vocab; s++) {
        markov_pick_successors(m, s, mark);
        markov_weight_row(m, s);
    }
    free(mark);
    return RZ_OK;
}

/* next = pi P; returns ||next - pi||_1. */
static double markov_step(const struct data_markov *m, const double *pi, double *next)
{
    size_t v = (size_t)m->vocab, b = (size_t)m->branching;
    double residual = 0.0;
    for (size_t s = 0; s < v; s++)
        next[s] = 0.0;
    for (size_t s = 0; s < v; s++)
        for (size_t j = 0; j < b; j++)
            next[m->succ[s * b + j]] += pi[s] * m->prob[s * b + j];
    for (size_t s = 0; s < v; s++)
        residual += fabs(next[s] - pi[s]);
    return residual;
}

/* pi <- (pi + next) / 2, renormalised so rounding cannot drift the total away from 1. */
static void markov_lazy_update(double *pi, const double *next, size_t v)
{
    double total = 0.0;
    for (size_t s = 0; s < v; s++) {
        pi[s] = 0.5 * (pi[s] + next[s]);
        total += pi[s];
    }
    for (size_t s = 0; s < v; s++)
        pi[s] /= total;
}

static enum rz_status markov_stationary(struct data_markov *m, struct rz_err *err)
{
    size_t v = (size_t)m->vocab;
    double *next = malloc(v * sizeof *next);
    if (next == NULL)
        return markov_fail(m, err, RZ_ENOMEM, "out of memory for the stationary distribution");
    for (size_t s = 0; s < v; s++)
        m->pi[s] = 1.0 / (double)v;
    double residual = markov_step(m, m->pi, next);
    for (int iter = 0; residual >= MARKOV_PI_TOL && iter < MARKOV_PI_MAX_ITERS; iter++) {
        markov_lazy_update(m->pi, next, v);
        residual = markov_step(m, m->pi, next);
    }
    free(next);
    if (residual >= MARKOV_PI_TOL)
        return markov_fail(m, err, RZ_ECONFIG, "power iteration for the stationary distribution "
                           "did not reach ||pi P - pi||_1 < 1e-13");
    double run = 0.0;
    for (size_t s = 0; s < v; s++) {
        run += m->pi[s];
        m->pi_cum[s] = run;
    }
    m->pi_cum[v - 1] = 1.0;
    return RZ_OK;
}

static double markov_entropy_rate(const struct data_markov *m)
{
    size_t v = (size_t)m->vocab, b = (size_t)m->branching;
    double h = 0.0;
    for (size_t s = 0; s < v; s++) {
        double row = 0.0;
        for (size_t j = 0; j < b; j++) {
            double p = m->prob[s * b + j];
            row -= p * log(p);
        }
        h += m->pi[s] * row;
    }
    return h;
}

enum rz_status data_markov_create(struct data_markov **out, int32_t vocab, int32_t branching,
                                  uint64_t seed, struct rz_err *err)
{
    assert(vocab >= 1 && branching >= 1 && branching <= vocab);
    *out = NULL;
    struct data_markov *m = calloc(1, sizeof *m);
    if (m == NULL)
        return rz_fail(err, RZ_ENOMEM, "markov chain (V=%" PRId32 "): out of memory", vocab);
    m->vocab = vocab;
    m->branching = branching;
    m->seed = seed;
    enum rz_status rc = markov_alloc(m, err);
    if (rc == RZ_OK)
        rc = markov_build_rows(m, err);
    if (rc == RZ_OK)
        rc = markov_stationary(m, err);
    if (rc != RZ_OK) {
        data_markov_destroy(m);
        return rc;
    }
    m->entropy = markov_entropy_rate(m);
    *out = m;
    return RZ_OK;
}

void data_markov_destroy(struct data_markov *m)
{
    if (m == NULL)
        return;
    free(m->succ);
    free(m->prob);
    free(m->cum);
    free(m->pi);
    free(m->pi_cum);
    free(m);
}

/* Index of the first entry of the nondecreasing table cum[0..n) that is > u; cum[n-1] must be 1
 * and u in [0, 1), so the answer exists.  Binary search. */
static int32_t markov_cum_search(const double *cum, int32_t n, double u)
{
    int32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void data_markov_sample(const struct data_markov *m, uint64_t key, int64_t seq_len,
                        int32_t *tokens)
{
    size_t b = (size_t)m->branching;
    int32_t x = markov_cum_search(m->pi_cum, m->vocab, data_unit(data_draw(key, 0)));
    tokens[0] = x;
    for (int64_t t = 1; t <= seq_len; t++) {
        size_t base = (size_t)x * b;
        double u = data_unit(data_draw(key, (uint64_t)t));
        x = m->succ[base + (size_t)markov_cum_search(m->cum + base, m->branching, u)];
        tokens[t] = x;
    }
}

double data_markov_entropy(const struct data_markov *m)
{
    return m->entropy;
}

double data_markov_prob(const struct data_markov *m, int32_t from, int32_t to)
{
    assert(from >= 0 && from < m->vocab);
    size_t b = (size_t)m->branching, base = (size_t)from * b;
    for (size_t j = 0; j < b; j++)
        if (m->succ[base + j] == to)
            return m->prob[base + j];
    return 0.0;
}

double data_markov_pi(const struct data_markov *m, int32_t s)
{
    assert(s >= 0 && s < m->vocab);
    return m->pi[s];
}
