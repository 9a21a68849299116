/* testutil.h: what every Check suite of ryzen-llm shares: the runner, and scratch directories
 * made and removed without a shell.  Test code only. */
#ifndef RZ_TESTS_TESTUTIL_H
#define RZ_TESTS_TESTUTIL_H

#include <check.h>
#include <stddef.h>

/* Run the suite (Check's fork mode unless CK_FORK says otherwise); the process exit status:
 * EXIT_SUCCESS when no test failed. */
int rz_test_main(Suite *s);

/* A test case with the one per-test timeout of every suite (testutil.c, 600 s).  The timeout
 * only catches a hang; it is never a speed check.  It is a fixed, generous bound because what it
 * bounds (kernels, model gradients, whole short training runs) scales with the CPU, the
 * sanitizers and the load: the slowest test measured here, check_data's test_below_uniform,
 * took 44 s under ASan+UBSan at a load of 12 on this project's 2-vCPU Zen 5, and 600 s leaves
 * 13 times that, room for a CPU four times slower under three times the load.  Check's
 * CK_TIMEOUT_MULTIPLIER still scales it, and the bound is the same under make check and by hand
 * (Check alone gives a case without one 4 s). */
TCase *rz_test_tcase(const char *name);

/* Make /tmp/rz-TAG-XXXXXX into out (aborts the test on failure). */
void rz_test_tmpdir(char *out, size_t len, const char *tag);

/* Remove a file or a directory tree (best effort). */
void rz_test_rmtree(const char *path);

#endif
