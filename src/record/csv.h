/* csv.h: RFC 4180 CSV cells and rows, the one place that knows the quoting (ryzen-gate --csv:
 * gate/gate_csv.c's steps.csv, ladder/ladder_csv.c's ladder.csv; docs/gates.md, docs/ladder.md).
 *   strings   quoted ("...") when they hold a comma, a quote, CR or LF (quotes doubled);
 *             NULL is an empty cell
 *   numbers   as the JSON writer spells them (core/json.c: "%.9g", integers in full); a NaN or
 *             infinite value (absent) is an empty cell
 *   rows      end in CRLF, as RFC 4180 has it
 * It does not know any column: the callers own their headers and rows. */
#ifndef RZ_RECORD_CSV_H
#define RZ_RECORD_CSV_H

#include <stdint.h>
#include <stdio.h>

/* One row being written: the comma goes before every cell but the first. */
struct rz_csv {
    FILE *out;
    int col;
};

void rz_csv_str(struct rz_csv *c, const char *s);
void rz_csv_num(struct rz_csv *c, double v);
void rz_csv_int(struct rz_csv *c, int64_t v);
/* The header: NAMES, comma-separated already (column names need no quoting), as one row. */
void rz_csv_header(struct rz_csv *c, const char *names);
void rz_csv_end_row(struct rz_csv *c);

#endif
