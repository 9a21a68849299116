/* status.h: the one status enum of ryzen-llm and the error record that carries its message.
 *
 * Every fallible function returns `enum rz_status` and, on failure, leaves one message in a
 * caller-owned `struct rz_err` naming the operation, the object (file, key, rank) and the cause.
 * Only a program's main() maps a status to a process exit code (rz_exit_code); nothing below main
 * calls exit().  Ownership: struct rz_err is a plain value owned by the caller; no heap. */
#ifndef RZ_CORE_STATUS_H
#define RZ_CORE_STATUS_H

#include <stdarg.h>
#include <stddef.h>

enum rz_status {
    RZ_OK = 0,
    RZ_ECONFIG,   /* bad config, override or usage (exit 64) */
    RZ_EDATA,     /* bad input data file, e.g. token id >= vocab (exit 64) */
    RZ_ENOCKPT,   /* no valid checkpoint where one is required (exit 65) */
    RZ_EHEALTH,   /* health check failed, wrong launch (exit 70) */
    RZ_ENOMEM,    /* allocation failed (exit 70) */
    RZ_EBACKEND,  /* a math/communication library call failed (exit 70) */
    RZ_EIO,       /* file or checkpoint I/O error (exit 74) */
    RZ_ESIGNAL,   /* stopped by a signal after checkpointing: requeue me (exit 75) */
    RZ_EHANG,     /* watchdog: hang, dead rank or rank disagreement (exit 76) */
};

/* Documented process exit codes (docs/exit-codes.md). */
enum rz_exit {
    RZ_EXIT_OK = 0,
    RZ_EXIT_USAGE = 64,
    RZ_EXIT_NOCKPT = 65,
    RZ_EXIT_HEALTH = 70,
    RZ_EXIT_IO = 74,
    RZ_EXIT_REQUEUE = 75,
    RZ_EXIT_WATCHDOG = 76,
};

#define RZ_ERR_MSG_MAX 4096

struct rz_err {
    enum rz_status status;
    char msg[RZ_ERR_MSG_MAX];
};

/* Record `status` and a printf-style message in `err` (which may be NULL); returns `status`, so
 * callers write `return rz_fail(err, RZ_EIO, "open %s: %s", path, strerror(errno));`. */
enum rz_status rz_fail(struct rz_err *err, enum rz_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Append more text to an existing message (used to collect several config problems). */
void rz_err_append(struct rz_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void rz_err_clear(struct rz_err *err);

/* Short name of a status ("config error", "I/O error", ...). */
const char *rz_status_name(enum rz_status status);

/* The documented exit code for a status. */
int rz_exit_code(enum rz_status status);

#endif
