/* exits.h: ATTEMPT_DIR/rank-NNNNN.json, one rank's exit record: its struct, its writer and its
 * reader, the one place that knows the format.
 *   written by  ryzen-train, each rank as it ends (and the watchdog for the rank it stops)
 *   read by     ryzen-step, how the attempt ended (step_classify)
 * Fields: rank, host, status, end_reason, message, pid (the writer's). */
#ifndef RZ_RECORD_EXITS_H
#define RZ_RECORD_EXITS_H

#include "core/status.h"

struct exit_record {
    int rank;
    int status;                 /* the exit status the rank chose */
    char host[64];
    char end_reason[32];        /* "done", "signal", "io", "hang", ... */
    char message[512];
};

/* DIR/rank-NNNNN.json, durably (core/durable.h); DIR made if missing. */
enum rz_status exit_record_write(const char *dir, const struct exit_record *r,
                                 struct rz_err *err);

/* The records of DIR (rank-*.json), at most max, into out; *n read.  A file that does not parse
 * is left out (a rank that died writing it left no word). */
void exit_records_read(const char *dir, struct exit_record *out, int max, int *n);

#endif
