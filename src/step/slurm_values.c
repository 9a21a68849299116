/* slurm_values.c: Slurm's conventions for a value, shared by the text reader (slurm.c) and the
 * JSON reader (slurm_json.c): the words that mean "no value", and a duration such as
 * "1-02:03:04" or "UNLIMITED" in seconds.
 * Deliberately not here: running any Slurm command, and parsing a whole answer. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "step/step_internal.h"

bool slurm_empty_value(const char *v)
{
    return strcmp(v, "(null)") == 0 || strcmp(v, "None") == 0 || strcmp(v, "N/A") == 0 ||
           strcmp(v, "Unknown") == 0;
}

long slurm_parse_duration(const char *s)
{
    long d = 0, h = 0, m = 0, sec = 0;
    char tail;
    if (s == NULL || s[0] == '\0' || strcmp(s, "UNLIMITED") == 0 || strcmp(s, "INFINITE") == 0)
        return -1;
    if (sscanf(s, "%ld-%ld:%ld:%ld%c", &d, &h, &m, &sec, &tail) == 4)
        return ((d * 24 + h) * 60 + m) * 60 + sec;
    if (sscanf(s, "%ld:%ld:%ld%c", &h, &m, &sec, &tail) == 3)
        return (h * 60 + m) * 60 + sec;
    if (sscanf(s, "%ld:%ld%c", &m, &sec, &tail) == 2)
        return m * 60 + sec;
    return -1;
}
