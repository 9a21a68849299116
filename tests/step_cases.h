/* step_cases.h: the parts of check_step's "core" test case that live outside check_step.c, which
 * builds the suite: whole attempts (check_step_attempts.c), a node lost (check_step_nodes.c)
 * and the posix runner (check_step_proc.c).  Each adds its tests to the test case it is given,
 * in the order they run; the scripted runner the first two share is step_world.h's. */
#ifndef RZ_TESTS_STEP_CASES_H
#define RZ_TESTS_STEP_CASES_H

#include <check.h>

/* Add the whole-attempt tests (promotion, rollback, requeue, give-up, hold, a busy run
 * directory, a node excluded after the preflight) to tc. */
void step_attempts_tests(TCase *tc);

/* Add the node-lost tests (Slurm's node lines, a partition or a dead host named) to tc. */
void step_nodes_tests(TCase *tc);

/* Add the posix runner's tests (real children: statuses, a signal sent on, a time limit). */
void step_proc_tests(TCase *tc);

#endif
