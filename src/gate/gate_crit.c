/* gate_crit.c: a criterion's pieces that every file judging one uses: the judgement
 * of a value against GO and NO-GO thresholds, the verdict of a list of criteria, the names of
 * statuses and verdicts, and a criterion's note and measurement (gate_internal.h). */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"

/* ---- small helpers --------------------------------------------------------------------------- */

enum gate_status gate_judge(double value, double go, double no_go, bool higher_is_better)
{
    if (isnan(value))
        return GATE_NOT_JUDGED;
    if (higher_is_better) {
        if (!isnan(no_go) && value < no_go)
            return GATE_NO_GO;
        return value >= go ? GATE_GO : GATE_HOLD;
    }
    if (!isnan(no_go) && value > no_go)
        return GATE_NO_GO;
    return value <= go ? GATE_GO : GATE_HOLD;
}

enum gate_verdict gate_verdict_of(const struct gate_criterion *crit, size_t n)
{
    bool hold = false;
    for (size_t i = 0; i < n; i++) {
        if (crit[i].status == GATE_NO_GO)
            return GATE_VERDICT_NO_GO;
        hold |= crit[i].status == GATE_HOLD || crit[i].status == GATE_NOT_JUDGED;
    }
    return hold ? GATE_VERDICT_HOLD : GATE_VERDICT_GO;
}

const char *gate_status_name(enum gate_status s)
{
    static const char *const names[] = {"go", "no_go", "hold", "not_judged", "n/a"};
    return (unsigned)s < RZ_ARRAY_LEN(names) ? names[s] : "?";
}

const char *gate_verdict_name(enum gate_verdict v)
{
    static const char *const names[] = {"GO", "NO-GO", "HOLD"};
    return (unsigned)v < RZ_ARRAY_LEN(names) ? names[v] : "?";
}

void gate_note(struct gate_criterion *k, const char *fmt, ...)
{
    size_t used = strlen(k->note);
    if (used + 3 >= sizeof k->note)
        return;
    if (used > 0) {
        memcpy(k->note + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->note + used, sizeof k->note - used, fmt, ap);
    va_end(ap);
}

void gate_measure(struct gate_criterion *k, double value, int64_t samples)
{
    k->measured = value;
    k->samples = samples;
    k->status = gate_judge(value, k->go, k->no_go, k->higher_is_better);
}

void gate_set(struct gate_criterion *k, enum gate_status s)
{
    k->status = s;
    k->measured = NAN;
}
