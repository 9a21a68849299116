/* markov.h: the random sparse first-order Markov chain behind data.kind = markov (markov.c):
 * build it, sample it, and its entropy rate; private to src/data/.
 * Deliberately not here: the data source that owns a chain (data.c).
 *
 * Ownership: struct data_markov is created by data_markov_create and freed by data_markov_destroy
 * (accepts NULL and half-built chains). */
#ifndef RZ_DATA_MARKOV_H
#define RZ_DATA_MARKOV_H

#include <stdint.h>

#include "core/status.h"

struct data_markov;

/* Build the chain for (V, branching, seed); the caller has checked 1 <= branching <= V. */
enum rz_status data_markov_create(struct data_markov **out, int32_t vocab, int32_t branching,
                                  uint64_t seed, struct rz_err *err);
void data_markov_destroy(struct data_markov *m);

/* tokens[0..T]: x_0 ~ pi, x_{t+1} ~ P(.|x_t), draws from the stream with key `key`. */
void data_markov_sample(const struct data_markov *m, uint64_t key, int64_t seq_len,
                        int32_t *tokens);

/* Entropy rate H = sum_s pi_s H(P(.|s)) in nats/token. */
double data_markov_entropy(const struct data_markov *m);

/* For tests: P(to | from) (0 when `to` is not a successor of `from`) and pi_s. */
double data_markov_prob(const struct data_markov *m, int32_t from, int32_t to);
double data_markov_pi(const struct data_markov *m, int32_t s);

#endif
