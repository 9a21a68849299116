/* wrapper.h: ryzen-step's shared state between its sequence (ryzen-step.c) and the end of a
 * phase (chain.c: the gate, promotion and rollback).  Internal to src/step. */
#ifndef RZ_STEP_WRAPPER_H
#define RZ_STEP_WRAPPER_H

#include "config/config.h"
#include "step/step.h"

#define WRAPPER_MAX_SETS 256

struct wrapper {
    const char *config;                    /* --config as given */
    const char *raw_sets[WRAPPER_MAX_SETS];/* every --set as given (passed on along the chain) */
    int n_raw;
    const char *sets[WRAPPER_MAX_SETS];    /* the ones for this phase, "PHASE:" prefix removed */
    int n_sets;
    struct cfg cfg;
    struct step_env env;
    char run_dir[2048], phase[256];
    char train[4096], gate[4096];          /* programs */
    char mpi[64];                          /* srun --mpi plugin */
    struct step_events *ev;
};

/* Path of a sibling program: env VAR, else NAME next to ryzen-step, else NAME on the PATH. */
void wrapper_find_program(char *out, size_t len, const char *var, const char *name);

/* Add "--set k=v" for every override of this phase to argv. */
enum rz_status wrapper_add_sets(const struct wrapper *w, struct step_argv *v, struct rz_err *err);

/* After a finished training: run ryzen-gate, act on the verdict (promote / rollback / hold),
 * record the chain, and re-render the report so it shows the chain.  Returns the job's exit
 * status: 0 GO or promoted, 1 NO-GO, 2 HOLD, or 1 when the gate or a submission failed. */
int chain_finish_phase(struct wrapper *w);

#endif
