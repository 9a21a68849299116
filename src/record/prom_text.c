/* prom_text.c: the Prometheus text format's shared pieces (see prom_text.h). */
#include "config.h"

#include "record/prom_text.h"

#include <math.h>

void prom_text_label(FILE *f, const char *key, const char *v, bool first)
{
    fprintf(f, "%s%s=\"", first ? "" : ",", key);
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fprintf(f, "\\%c", *v);
        else if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
    fputc('"', f);
}

void prom_text_head(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void prom_text_value(FILE *f, double v)
{
    if (isnan(v))
        fputs(" NaN\n", f);
    else if (isinf(v))
        fputs(v > 0 ? " +Inf\n" : " -Inf\n", f);
    else if (fabs(v) >= 1e9)
        fprintf(f, v == floor(v) ? " %.0f\n" : " %.3f\n", v); /* timestamps, bytes: all digits */
    else
        fprintf(f, " %.9g\n", v);
}
