/* kern_blis.c: the oneDNN backend's weight-gradient matmuls on CPUs where oneDNN runs AVX2, from
 * BLIS; the only file that includes blis.h.
 *
 * Why: capped at AVX2, oneDNN 2.6's matmuls with a transposed first operand (dW += dY^T X, the
 * "TN" form of every weight gradient) run far below its others: on an AMD EPYC Zen 4 with
 * ONEDNN_MAX_CPU_ISA=AVX2, 42.8 GFLOP/s for the head's (2048 x 256 x 2048) against BLIS's 96.4
 * on its haswell kernels, and 74.4 against 98.1 for fc1's, while the forward and input-gradient
 * forms are level (0.96x to 1.02x); with AVX-512 oneDNN leads on every form (docs/performance.md,
 * the Zen 4's section: "The AVX2 proxy on this CPU").  BLIS takes any row and column strides, so op(A) is read in place.
 *
 * Which matmuls come here is kern_blis_takes's rule, fixed per machine and shape, so a run's
 * kernels (and bits) never depend on timing.  BLIS splits the output among the OpenMP threads;
 * each element's sum over k runs in the same order whatever the thread count.  Deliberately
 * not here: bf16 (oneDNN's, where the CPU has it), bias and alpha (the weight gradients have
 * neither), and batches. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include <blis.h>

#include "kernels/kern_impl.h"

/* BLIS's kernel set.  bli_init first (idempotent): BLIS 0.9 checks a BLIS_ARCH_TYPE from the
 * environment against its table of kernel sets, and aborts the process when that table is not
 * yet built (seen: BLIS_ARCH_TYPE=3 without it). */
static arch_t blis_arch(void)
{
    bli_init();
    return bli_arch_query_id();
}

/* BLIS 0.9 runs its generic C kernels on a CPU model it does not know (seen: Zen 5, 30.5
 * GFLOP/s): oneDNN's slow form is still faster than that. */
bool kern_blis_usable(void)
{
    return rz_isa_active() >= RZ_ISA_AVX2 && blis_arch() != BLIS_ARCH_GENERIC;
}

/* BLIS has no call that picks its kernel set, only BLIS_ARCH_TYPE, read once at its first
 * initialization: so the cap sets it before any BLIS call, and reads back what BLIS chose.  An
 * AVX2 cap on an AVX-512 CPU pins the haswell kernels, which every AVX2 CPU runs; at the
 * baseline BLIS is not used at all (kern_blis_usable). */
enum rz_status kern_blis_cap(enum rz_isa cap, struct rz_err *err)
{
    if (cap < RZ_ISA_AVX2)
        return RZ_OK;
    char id[16];
    snprintf(id, sizeof id, "%d", (int)BLIS_ARCH_HASWELL);
    if (setenv("BLIS_ARCH_TYPE", id, 1) != 0)
        return rz_fail(err, RZ_EBACKEND, "RYZEN_ISA: setting BLIS_ARCH_TYPE=%s: %s", id,
                       strerror(errno));
    if (blis_arch() != BLIS_ARCH_HASWELL)
        return rz_fail(err, RZ_EBACKEND, "RYZEN_ISA: capping BLIS at its haswell kernels: it "
                       "runs %s (was BLIS used before the cap?)", kern_blis_arch());
    return RZ_OK;
}

bool kern_blis_takes(const struct kern_matmul_desc *d, bool avx512)
{
    if (avx512 || d->bf16 || d->bias || d->alpha != 1.0f || d->batch != 1)
        return false;
    if (!d->trans_a || d->trans_b)
        return false;
    return kern_blis_usable();
}

const char *kern_blis_arch(void)
{
    return bli_arch_string(blis_arch());
}

void kern_blis_matmul_run(const struct kern_matmul_desc *d, float *c, const float *a,
                          const float *b)
{
    float one = 1.0f, beta = d->accumulate ? 1.0f : 0.0f;
    /* op(A) (m, k) is A stored (k, m) row-major: element (i, p) at a[p m + i] */
    inc_t rsa = d->trans_a ? 1 : d->k, csa = d->trans_a ? d->m : 1;
    inc_t rsb = d->trans_b ? 1 : d->n, csb = d->trans_b ? d->k : 1;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(omp_get_max_threads(), &rntm);
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, d->m, d->n, d->k, &one, (float *)a, rsa,
                 csa, (float *)b, rsb, csb, &beta, c, d->n, 1, NULL, &rntm);
}
