/* cli.c: --version and environment look-ups for every program (see cli.h). */
#include "config.h"

#include "core/cli.h"

#include <string.h>

#include "core/hooks.h"

void rz_cli_version(FILE *f, const char *prog)
{
    fprintf(f, "%s (%s) %s\n", prog, PACKAGE_NAME, PACKAGE_VERSION);
    fprintf(f, "test hooks: %s\n", RZ_HOOKS_ENABLED ? "compiled in (a test build; never use it in "
            "production)" : "off");
}

const char *rz_env_value(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; envp != NULL && envp[i] != NULL; i++)
        if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
            return envp[i] + n + 1;
    return NULL;
}
