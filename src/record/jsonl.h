/* jsonl.h: the JSON Lines reader of record/'s line formats (events.jsonl, metrics/<job>/
 * rank-NNNNN.jsonl): one JSON object per line, each handed to a callback with its file and line.
 * Two policies, chosen by the caller:
 *   strict     a line that is not a JSON object, or a last line without its newline (a writer
 *              died mid-line), is RZ_EDATA "FILE:LINE: cause"; a missing file is RZ_EDATA,
 *              another open error RZ_EIO.  ryzen-gate: a report must say its input is damaged.
 *   tolerant   such lines are skipped and a missing file reads as empty.  ryzen-step: a line
 *              cut by a crash must not stop the job.
 * Blank lines are skipped in both.  It knows no field of either format (events.h, rank_log.h). */
#ifndef RZ_RECORD_JSONL_H
#define RZ_RECORD_JSONL_H

#include <stdbool.h>

#include "core/status.h"

struct gj_value;

/* One line: v is a JSON object, text the line without its newline.  A status other than RZ_OK
 * stops the read and is returned (the callback names the file and line in err). */
typedef enum rz_status (*jsonl_line_fn)(void *ctx, const struct gj_value *v, const char *path,
                                        long line, const char *text, struct rz_err *err);

enum jsonl_policy { JSONL_STRICT, JSONL_TOLERANT };

enum rz_status jsonl_read(const char *path, enum jsonl_policy policy, jsonl_line_fn fn,
                          void *ctx, struct rz_err *err);

#endif
