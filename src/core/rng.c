/* rng.c: the normal sampler of rng.h (Box-Muller; one of the pair is used, for simplicity of the
 * counter mapping). */
#include "config.h"

#include "core/rng.h"

#include <math.h>

double rz_rand_normal(uint64_t seed, uint64_t counter)
{
    double u1 = rz_rand_open01(seed, 2 * counter);
    double u2 = rz_rand_open01(seed, 2 * counter + 1);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
