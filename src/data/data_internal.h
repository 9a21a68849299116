/* data_internal.h: what the files of src/data/ share and the tests may inspect; not for other
 * modules (they use data.h only).  The parts each have a header of their own, so that each file
 * takes only what it needs and the arrows between them run one way:
 *   counter_rng.h  the counter-based generator every random number of the module comes from
 *   file.h         one text or tokens file (file.c)
 *   seq.h          the sequence of them a source samples from: a file or a manifest (seq.c)
 *   markov.h       the markov chain (markov.c)
 * What remains here is data.c's own: the chain behind a data source, for tests. */
#ifndef RZ_DATA_DATA_INTERNAL_H
#define RZ_DATA_DATA_INTERNAL_H

#include "data/counter_rng.h"
#include "data/data.h"
#include "data/file.h"
#include "data/markov.h"
#include "data/seq.h"

/* For tests: the chain of a markov data source, NULL for other kinds (data.c). */
const struct data_markov *data_markov_of(const struct data *d);

#endif
