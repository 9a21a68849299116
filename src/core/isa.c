/* isa.c: the process's vector level (isa.h).  The CPU's features come from GCC's cpuid reader
 * (__builtin_cpu_supports), which also checks that the OS saves the wider registers. */
#include "config.h"

#include <stdatomic.h>
#include <string.h>

#include "core/isa.h"

static const char *const names[RZ_ISA_LEVELS] = {"baseline", "avx2", "avx512"};

/* -1: not set yet (the CPU's best).  Atomic: the first reader may be any thread, and detection
 * gives every reader the same value. */
static _Atomic int chosen = -1;

const char *rz_isa_name(enum rz_isa isa)
{
    return (unsigned)isa < RZ_ISA_LEVELS ? names[isa] : "?";
}

enum rz_isa rz_isa_detect(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4"))
        return RZ_ISA_AVX512;
    if (__builtin_cpu_supports("x86-64-v3"))
        return RZ_ISA_AVX2;
    return RZ_ISA_BASELINE;
}

enum rz_status rz_isa_parse(const char *text, const char *what, enum rz_isa *out,
                            struct rz_err *err)
{
    enum rz_isa best = rz_isa_detect();
    if (strcmp(text, "native") == 0) {
        *out = best;
        return RZ_OK;
    }
    for (int i = 0; i < RZ_ISA_LEVELS; i++) {
        if (strcmp(text, names[i]) != 0)
            continue;
        if (i > (int)best)
            return rz_fail(err, RZ_ECONFIG,
                           "%s=%s: this CPU runs at most %s (x86-64-v4 needs AVX-512 F, BW, DQ "
                           "and VL; x86-64-v3 needs AVX2 and FMA)",
                           what, text, names[best]);
        *out = (enum rz_isa)i;
        return RZ_OK;
    }
    return rz_fail(err, RZ_ECONFIG, "%s=%s: unknown level (native, avx512, avx2 or baseline)",
                   what, text);
}

void rz_isa_set(enum rz_isa isa)
{
    atomic_store_explicit(&chosen, (int)isa, memory_order_relaxed);
}

enum rz_isa rz_isa_active(void)
{
    int isa = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (isa < 0) {
        isa = (int)rz_isa_detect();
        atomic_store_explicit(&chosen, isa, memory_order_relaxed);
    }
    return (enum rz_isa)isa;
}
