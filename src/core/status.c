/* status.c: status names, exit-code mapping and the error record. */
#include "config.h"

#include "core/status.h"

#include <stdio.h>
#include <string.h>

void rz_err_clear(struct rz_err *err)
{
    if (err == NULL)
        return;
    err->status = RZ_OK;
    err->msg[0] = '\0';
}

enum rz_status rz_fail(struct rz_err *err, enum rz_status status, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

void rz_err_append(struct rz_err *err, const char *fmt, ...)
{
    if (err == NULL)
        return;
    size_t used = strnlen(err->msg, sizeof err->msg);
    if (used + 1 >= sizeof err->msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + used, sizeof err->msg - used, fmt, ap);
    va_end(ap);
}

const char *rz_status_name(enum rz_status status)
{
    switch (status) {
    case RZ_OK: return "ok";
    case RZ_ECONFIG: return "config error";
    case RZ_EDATA: return "data error";
    case RZ_ENOCKPT: return "no valid checkpoint";
    case RZ_EHEALTH: return "health check failed";
    case RZ_ENOMEM: return "out of memory";
    case RZ_EBACKEND: return "backend error";
    case RZ_EIO: return "I/O error";
    case RZ_ESIGNAL: return "checkpointed on signal";
    case RZ_EHANG: return "watchdog";
    }
    return "unknown status";
}

int rz_exit_code(enum rz_status status)
{
    switch (status) {
    case RZ_OK: return RZ_EXIT_OK;
    case RZ_ECONFIG:
    case RZ_EDATA: return RZ_EXIT_USAGE;
    case RZ_ENOCKPT: return RZ_EXIT_NOCKPT;
    case RZ_EHEALTH:
    case RZ_ENOMEM:
    case RZ_EBACKEND: return RZ_EXIT_HEALTH;
    case RZ_EIO: return RZ_EXIT_IO;
    case RZ_ESIGNAL: return RZ_EXIT_REQUEUE;
    case RZ_EHANG: return RZ_EXIT_WATCHDOG;
    }
    return RZ_EXIT_HEALTH;
}
