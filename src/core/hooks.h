/* hooks.h: test-only fault injection, compiled in only by `configure --enable-test-hooks` (as jq's
 * --enable-error-injection).  A production build has none of it: every RZ_HOOK(...) is then a
 * constant and the code behind it disappears.
 *
 * The environment is read once, by a program's main (rz_hooks_load); the library only reads the
 * struct.  Variables (docs/operations.md, "Test-only hooks"):
 *   RYZEN_TEST_CRASH_AT=TAG:STAGE   _exit(86) at a durable write's stage (core/durable.h): TAG
 *                                   "ckpt", "report", ...; STAGE before_fsync | before_rename |
 *                                   before_dirsync
 *   RYZEN_TEST_SAVE_DELAY_S=N       rank 0 waits before writing each checkpoint, N s or until a
 *                                   stop signal arrives, saying so on stderr first: a test that
 *                                   signals after that line signals during the write
 *   RYZEN_TEST_STARTUP_DELAY_S=N    each rank sleeps N s after MPI_Init
 *   RYZEN_TEST_AFTER_INIT_DELAY=R:S rank R sleeps S s between MPI_Init and the start-up
 *                                   rendezvous (comm.h), saying when it is done; every rank says
 *                                   when it is past the rendezvous (wall-clock seconds, stderr)
 *   RYZEN_TEST_DESYNC_RANK=R        rank R perturbs a parameter before each sync check
 *   RYZEN_TEST_STOP_AT_START=R      rank R stops itself (SIGSTOP) at the start, once its
 *                                   watchdog runs: a rank frozen before step 1
 *   RYZEN_TEST_PREFLIGHT_FAIL_HOST=H the preflight's memory probe fails on host H
 *   RYZEN_TEST_PREFLIGHT_HANG=FILE  a preflight's rank 0, when FILE does not exist, creates it
 *                                   and waits (600 s at most, whatever signal comes) before
 *                                   MPI_Init: the other ranks wait in MPI's start-up, as in a
 *                                   hung PMIx collective.  The next preflight runs as usual
 *   RYZEN_TEST_START_HANG=FILE      the same for a training launch (not a preflight): a hung
 *                                   start-up, before any watchdog runs
 *   RYZEN_TEST_SLOW_RANK=R RYZEN_TEST_SLOW_FACTOR=F   (F >= 1; both or neither) after rank R
 *                                   computes a step it sleeps F-1 times that step's own measured
 *                                   compute time: its steps take about F times as long on any
 *                                   CPU, a straggler of ratio about F
 *   RYZEN_TEST_HOLD=STEP[,STEP...]:FILE   (up to 4 steps, ascending) once step STEP has fully
 *                                   completed (its metrics line written, a checkpoint due at STEP
 *                                   committed), every rank waits before step STEP+1 until FILE
 *                                   exists or this process got a stop signal, polling every 10 ms
 *                                   and keeping its watchdog fed; a run that did not compute step
 *                                   STEP itself (a resume at or after it) does not hold there.  A
 *                                   test acts on a job that cannot get past STEP, then touches
 *                                   FILE: no race with a short job.  Two steps let a test signal
 *                                   one job twice, once per attempt.  STEP 0: a fresh run holds
 *                                   before step 1 (before the ranks agree on a stop signal there)
 *   RYZEN_TEST_HOLD_MAX_S=N         the hold gives up after N s (default 600) with a message
 *   RYZEN_TEST_CKPT_FULL=STEP[,STEP...]   (up to 8 steps, ascending) the checkpoint of step
 *                                   STEP finds its filesystem full (as statvfs would say), in
 *                                   line or behind training: the full-disk path on any machine
 *   RYZEN_TEST_BAD_GRAD=FIRST[-LAST][:FACTOR][,...]   on steps FIRST..LAST rank 0 scales its
 *                                   loss gradient by FACTOR (default nan: a non-finite gradient;
 *                                   a large number: a gradient-norm spike); up to 4 ranges
 * Ownership: the struct is a process-wide value written once by main. */
#ifndef RZ_CORE_HOOKS_H
#define RZ_CORE_HOOKS_H

#include <stdbool.h>

#include "core/status.h"

struct rz_hooks {
    char crash_at[96];
    double save_delay_s;
    double startup_delay_s;
    int after_init_delay_rank;   /* -1: off */
    double after_init_delay_s;
    int desync_rank;             /* -1: off */
    int stop_at_start_rank;      /* -1: off */
    char preflight_fail_host[64];
    char preflight_hang[4096];   /* "": off */
    char start_hang[4096];       /* "": off */
    int slow_rank;               /* -1: off */
    double slow_factor;          /* >= 1 */
    struct rz_hook_hold {
        long long steps[4];      /* ascending; n of them used (0: off) */
        int n;
        char file[4096];
        double max_s;
    } hold;
    struct rz_hook_bad_grad {
        long long first, last;   /* 0: unused */
        double factor;
    } bad_grad[4];
    struct rz_hook_steps {
        long long steps[8];      /* ascending; n of them used (0: off) */
        int n;
    } ckpt_full;
};

#ifdef RZ_TEST_HOOKS
extern struct rz_hooks rz_hooks;
/* main only: read the RYZEN_TEST_* variables.  RZ_ECONFIG naming the variable when one is
 * malformed (a hook a test asked for and silently did not get would make the test race), or
 * when the removed RYZEN_TEST_SLOW_MS is set. */
enum rz_status rz_hooks_load(struct rz_err *err);
/* _exit(86) if RYZEN_TEST_CRASH_AT is "tag:stage". */
void rz_hook_crash_point(const char *tag, const char *stage);
/* Whether step is one of s's. */
bool rz_hook_step_in(const struct rz_hook_steps *s, long long step);
#define RZ_HOOKS_ENABLED 1
#define RZ_HOOK(field, off) (rz_hooks.field)
#else
static inline enum rz_status rz_hooks_load(struct rz_err *err)
{
    (void)err;
    return RZ_OK;
}
static inline void rz_hook_crash_point(const char *tag, const char *stage)
{
    (void)tag;
    (void)stage;
}
#define RZ_HOOKS_ENABLED 0
#define RZ_HOOK(field, off) (off)
#endif

#endif
