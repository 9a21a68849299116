/* layout.h: the run-directory layout of docs/DESIGN.md, built and parsed in one place.
 *   RUN_ROOT/<phase>                   a phase's run directory
 *   RUN_ROOT/<phase>/rollback-<job>    a rollback's lineage of that phase (its own checkpoints)
 *   .../task-<N>                       one task of a job array
 * Built by ryzen-step (the run directory of an attempt), parsed by ryzen-gate (the run root of a
 * run directory, where the baseline phase and the ladder's other phases are). */
#ifndef RZ_RECORD_LAYOUT_H
#define RZ_RECORD_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

/* RUN_ROOT/PHASE[/rollback-JOB][/task-N] into out (rollback_of, array_task NULL or "" for
 * none); false when it does not fit in len. */
bool layout_run_dir(char *out, size_t len, const char *run_root, const char *phase,
                    const char *rollback_of, const char *array_task);

/* The run root of a run directory built so (trailing slashes ignored). */
void layout_run_root(const char *run_dir, char *root, size_t len);

/* A directory name of the layout: rollback-<job>, task-<digits>. */
bool layout_is_rollback(const char *name);
bool layout_is_task(const char *name);

#endif
