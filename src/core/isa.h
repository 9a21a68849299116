/* isa.h: which vector instruction set our own loops run (the row kernels, the optimizer, the
 * elementwise helpers), chosen once per process.
 *
 * Each of those loops is compiled three times, for the levels below, and each module keeps one
 * ops table per level (kern_rows.c, optim_rows.c).  The process runs one level: the best the CPU
 * has, or lower when main caps it (RYZEN_ISA, read by ryzen-train's main).  The levels compute
 * the same operations in the same order lane by lane, so every level gives the same bits; a cap
 * changes the speed, never the result.  The foreign libraries' own caps (oneDNN, libxsmm, BLIS)
 * are set from the same level by kern_isa_cap (kernels.h). */
#ifndef RZ_CORE_ISA_H
#define RZ_CORE_ISA_H

#include <stdbool.h>

#include "core/status.h"

enum rz_isa {
    RZ_ISA_BASELINE, /* x86-64: SSE2, 16 lanes as four xmm registers */
    RZ_ISA_AVX2,     /* x86-64-v3: AVX2 + FMA, two ymm registers */
    RZ_ISA_AVX512,   /* x86-64-v4: AVX-512 F/BW/DQ/VL, one zmm register */
    RZ_ISA_LEVELS
};

/* "baseline", "avx2", "avx512". */
const char *rz_isa_name(enum rz_isa isa);

/* The best level this CPU runs. */
enum rz_isa rz_isa_detect(void);

/* Parse a cap: "native" (the CPU's best) or a level name.  A level above the CPU's is an error
 * (RZ_ECONFIG): a proxy must never claim an ISA that did not run.  `what` names the source in
 * the message ("RYZEN_ISA"). */
enum rz_status rz_isa_parse(const char *text, const char *what, enum rz_isa *out,
                            struct rz_err *err);

/* Set the process's level, once, before any kernel runs (main).  Without a call the level is the
 * CPU's best. */
void rz_isa_set(enum rz_isa isa);

/* The level the process runs. */
enum rz_isa rz_isa_active(void);

#endif
