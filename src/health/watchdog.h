/* watchdog.h: the trainer's own health machinery, independent of MPI:
 *
 *   stop signals   SIGUSR2 (or the configured signal) and SIGTERM only set a flag; the trainer
 *                  polls it at step boundaries, where all ranks agree and checkpoint together.
 *                  Install before MPI_Init so the MPI library cannot claim the signals first.
 *   heartbeats     each rank records the step it reached, the step whose gradient
 *                  synchronization it arrived at, its pid and the wall time, in
 *                  RUN_DIR/health/rank-NNNNN.hb (one 64-byte text line, rewritten in place)
 *   watchdog       a thread that ends the process with exit 76 when the current step has run
 *                  longer than max(factor x median step time, floor), naming the ranks whose
 *                  heartbeats are behind.  It is the one place below main that ends the process
 *                  (_exit): a rank stuck in a collective cannot return to main.
 *
 * Ownership: health_watchdog_start allocates; health_watchdog_stop joins and frees (NULL ok). */
#ifndef RZ_HEALTH_WATCHDOG_H
#define RZ_HEALTH_WATCHDOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* Parse "USR1" | "USR2" | "TERM" | "INT" (with or without "SIG"). */
enum rz_status health_signal_parse(const char *name, int *signo, struct rz_err *err);

/* Install flag-only handlers for `signo` and SIGTERM. */
enum rz_status health_signals_install(int signo, struct rz_err *err);
/* The signal that asked us to stop, or 0. */
int health_stop_signal(void);
/* Test hook: raise the flag as if `signo` had arrived. */
void health_request_stop(int signo);

/* One rank's exit record, ATTEMPT_DIR/rank-NNNNN.json: {rank, host, status, end_reason,
 * message}, written durably.  ryzen-step classifies an attempt from these, so a hang is reported
 * as a hang naming the rank even when srun reports the killed rank's 137.  dir NULL or "": none. */
enum rz_status health_exit_record(const char *dir, int rank, const char *host, int status,
                                  const char *end_reason, const char *message, struct rz_err *err);
/* The end reason of an exit status: "done", "signal", "hang", "io", "health", "config",
 * "nockpt", or "error". */
const char *health_end_reason(int status);

struct health_watchdog;

struct health_watchdog_opts {
    const char *run_dir;
    const char *attempt_dir;  /* exit record of a watchdog exit ("" or NULL: none) */
    const char *host;
    int rank, world;
    double floor_s;           /* a step may always take this long */
    double factor;            /* ... or this many times the median step time */
    double checkpoint_s;      /* the start (from the watchdog's own until step 1), a checkpoint
                               * commit, or the work between two steps, may take this long
                               * (0: no limit) */
    /* The clock every limit is measured on (seconds) and who looks at it.  The product leaves
     * both zero: rz_now, and a thread that looks every 250 ms.  A test passes a clock it moves
     * by hand and no_thread, then asks health_watchdog_poll: the verdict then depends on the
     * times it set, never on how fast or how loaded the machine is. */
    double (*clock)(void *ctx);
    void *clock_ctx;
    bool no_thread;
};

enum rz_status health_watchdog_start(struct health_watchdog **out,
                                     const struct health_watchdog_opts *opts, struct rz_err *err);
void health_watchdog_stop(struct health_watchdog *w);

/* Whether a limit has run out now (by opts.clock), and then the message the watchdog thread
 * prints before it ends the process with 76 (msg may be NULL).  The thread's own test; with
 * opts.no_thread the caller's, which decides what to do. */
bool health_watchdog_poll(struct health_watchdog *w, char *msg, size_t len);

/* Phase marks, cheap: a step begins / this rank arrived at the gradient synchronization /
 * the step ended after `seconds` (feeds the median).  Out of a step, opts.checkpoint_s is the
 * limit: from the watchdog's start to step 1 (choosing and loading a checkpoint, the ranks'
 * first agreements), and from a step's end to the next one's begin (metrics, the ranks'
 * agreement, validation, and after the last step until the watchdog stops).  A rank stopped
 * there leaves the others in a collective as surely as one stopped in a step. */
void health_step_begin(struct health_watchdog *w, int64_t step);
void health_sync_arrived(struct health_watchdog *w, int64_t step);
void health_step_end(struct health_watchdog *w, int64_t step, double seconds);
/* Between steps: this rank got on with its work (a validation chunk done), so the limit counts
 * from now; long work that moves is not a hang. */
void health_progress(struct health_watchdog *w);

/* Around a checkpoint commit (1 at its start, 0 at its end): the step limit gives way to
 * opts.checkpoint_s, counted from the start.  A rank that hangs in the commit (a frozen rank
 * leaves the others in the commit's agreement, between steps) is caught by that limit. */
void health_watchdog_pause(struct health_watchdog *w, int paused);

#endif
