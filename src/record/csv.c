#include "config.h"

/* csv.c: RFC 4180 cells (record/csv.h).  Owns the quoting and the spelling of numbers in CSV; it
 * deliberately knows no column, no file and no report (the gate's and the ladder's writers do). */

#include "record/csv.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static void csv_sep(struct rz_csv *c)
{
    if (c->col++ > 0)
        fputc(',', c->out);
}

void rz_csv_str(struct rz_csv *c, const char *s)
{
    csv_sep(c);
    if (s == NULL)
        return;
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, c->out);
        return;
    }
    fputc('"', c->out);
    for (const char *p = s; *p != '\0'; p++) {
        if (*p == '"')
            fputc('"', c->out);
        fputc(*p, c->out);
    }
    fputc('"', c->out);
}

void rz_csv_num(struct rz_csv *c, double v)
{
    csv_sep(c);
    if (isfinite(v))
        fprintf(c->out, "%.9g", v);
}

void rz_csv_int(struct rz_csv *c, int64_t v)
{
    csv_sep(c);
    fprintf(c->out, "%" PRId64, v);
}

void rz_csv_header(struct rz_csv *c, const char *names)
{
    c->col = 0;
    fputs(names, c->out);
    fputs("\r\n", c->out);
}

void rz_csv_end_row(struct rz_csv *c)
{
    fputs("\r\n", c->out);
    c->col = 0;
}
