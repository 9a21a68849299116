/* cli.h: what every program's command line shares: --version's text, and looking a variable up
 * in the environment array main passes down (the library never calls getenv).
 * Ownership: returned strings point into envp. */
#ifndef RZ_CORE_CLI_H
#define RZ_CORE_CLI_H

#include <stdio.h>

/* "PROG (ryzen-llm) VERSION" and the build's options (test hooks on or off). */
void rz_cli_version(FILE *f, const char *prog);

/* The value of NAME in envp ("NAME=value" entries), or NULL. */
const char *rz_env_value(char *const *envp, const char *name);

#endif
