/* metrics.c: the progress line's helpers (see metrics.h).  Not here: the per-step log and the
 * summary (record/rank_log.c, record/summary.c). */
#include "config.h"

#include "metrics/metrics.h"

#include <stdio.h>

void metrics_format_eta(char *buf, size_t len, double seconds)
{
    if (!(seconds >= 0.0) || seconds > 1e8) {
        snprintf(buf, len, "?");
        return;
    }
    long s = (long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
    else
        snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
}
