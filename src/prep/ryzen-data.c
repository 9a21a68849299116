#include "config.h"

/* ryzen-data: data preparation (tokenizer training, encoding, decoding, token-file and manifest
 * inspection, manifests).  A thin main over prep/: it reads the environment once
 * (SLURM_CPUS_PER_TASK, whether stderr is a terminal, the test hooks), runs prep_run and maps
 * its status to the documented exit code (docs/exit-codes.md): 0 ok, 64 usage or bad input,
 * 74 I/O error or disk full. */

#include <stdio.h>
#include <unistd.h>

#include "core/cli.h"
#include "core/hooks.h"
#include "core/status.h"
#include "prep/prep.h"

int main(int argc, char **argv, char **envp)
{
    struct rz_err err;
    rz_err_clear(&err);
    if (rz_hooks_load(&err) != RZ_OK) {
        fprintf(stderr, "ryzen-data: %s\n", err.msg);
        return rz_exit_code(err.status);
    }
    struct prep_env env = {
        .cpus_per_task = rz_env_value(envp, "SLURM_CPUS_PER_TASK"),
        .log_tty = isatty(STDERR_FILENO) == 1,
        .out = stdout,
        .log = stderr,
    };
    enum rz_status st = prep_run(&env, argc, argv, &err);
    if (st != RZ_OK)
        fprintf(stderr, "ryzen-data: %s\n", err.msg);
    if (fflush(stdout) != 0 && st == RZ_OK) {
        perror("ryzen-data: stdout");
        st = RZ_EIO;
    }
    return rz_exit_code(st);
}
