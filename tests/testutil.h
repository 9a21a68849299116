/* testutil.h: what every Check suite of ryzen-llm shares: the runner, and scratch directories
 * made and removed without a shell.  Test code only. */
#ifndef RZ_TESTS_TESTUTIL_H
#define RZ_TESTS_TESTUTIL_H

#include <check.h>
#include <stddef.h>

/* Run the suite (Check's fork mode unless CK_FORK says otherwise); the process exit status:
 * EXIT_SUCCESS when no test failed. */
int rz_test_main(Suite *s);

/* Make /tmp/rz-TAG-XXXXXX into out (aborts the test on failure). */
void rz_test_tmpdir(char *out, size_t len, const char *tag);

/* Remove a file or a directory tree (best effort). */
void rz_test_rmtree(const char *path);

#endif
