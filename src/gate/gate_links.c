/* gate_links.c: the report's section on the links between the job's nodes, as the preflight
 * measured them (health.json's links, record/health_json.h): in report.json, a table in report.md,
 * and a table and a picture (a matrix of coloured cells) in report.html. */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "chart/chart.h"
#include "core/json.h"
#include "core/util.h"
#include "gate/gate_internal.h"
#include "record/health_json.h"

#define PICTURE_MAX_HOSTS 16 /* larger jobs get the table only */

/* The slowest directed link; false when there are fewer than two hosts. */
static bool slowest(const struct health_links *l, int *from, int *to)
{
    *from = -1;
    for (int i = 0; i < l->n_hosts; i++)
        for (int j = 0; j < l->n_hosts; j++)
            if (i != j && (*from < 0 || l->gbps[i][j] < l->gbps[*from][*to]))
                *from = i, *to = j;
    return *from >= 0;
}

static double fastest(const struct health_links *l)
{
    double m = 0.0;
    for (int i = 0; i < l->n_hosts; i++)
        for (int j = 0; j < l->n_hosts; j++)
            if (i != j)
                m = fmax(m, l->gbps[i][j]);
    return m;
}

void gate_json_links(struct rz_json *j, const struct gate_input *in)
{
    const struct health_links *l = in->links;
    rz_json_key(j, "links");
    if (l == NULL) {
        rz_json_null(j);
        return;
    }
    rz_json_object_begin(j);
    health_links_fields(j, l); /* health.json's links, and the slowest link after them */
    int from, to;
    rz_json_key(j, "slowest");
    if (slowest(l, &from, &to)) {
        rz_json_object_begin(j);
        rz_json_kv_string(j, "from", l->hosts[from]);
        rz_json_kv_string(j, "to", l->hosts[to]);
        rz_json_kv_double(j, "gbps", l->gbps[from][to]);
        rz_json_object_end(j);
    } else {
        rz_json_null(j);
    }
    rz_json_object_end(j);
}

void gate_md_links(FILE *f, const struct gate_input *in)
{
    const struct health_links *l = in->links;
    int from, to;
    if (l == NULL || !slowest(l, &from, &to))
        return;
    fprintf(f, "## Links between nodes (preflight)\n\nGbit/s from the row's node to the column's, "
               "and latency in us; %lld-byte sends.  Slowest: %s -> %s, %.3g Gbit/s.\n\n| from \\\\ to |",
            (long long)l->probe_bytes, l->hosts[from], l->hosts[to], l->gbps[from][to]);
    for (int b = 0; b < l->n_hosts; b++)
        fprintf(f, " %s |", l->hosts[b]);
    fputs("\n|---|", f);
    for (int b = 0; b < l->n_hosts; b++)
        fputs("---|", f);
    fputc('\n', f);
    for (int a = 0; a < l->n_hosts; a++) {
        fprintf(f, "| %s |", l->hosts[a]);
        for (int b = 0; b < l->n_hosts; b++)
            if (a == b)
                fputs(" - |", f);
            else
                fprintf(f, " %.3g / %.0f us |", l->gbps[a][b], l->latency_us[a][b]);
        fputc('\n', f);
    }
    fputc('\n', f);
}

/* The matrix as coloured cells: green at the fastest link's rate, red at none. */
static void links_picture(FILE *f, const struct health_links *l)
{
    const double cell = 64.0, left = 48.0, top = 40.0;
    double w = left + cell * l->n_hosts + 8, h = top + cell * l->n_hosts + 8, top_rate = fastest(l);
    fprintf(f, "<svg id=\"chart-links\" class=\"chart\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
               "height=\"%.0f\" role=\"img\"><title>Link rate from row to column, Gbit/s"
               "</title>\n", w, h, w, h);
    fprintf(f, "<text x=\"%.0f\" y=\"14\" text-anchor=\"middle\">to</text>"
               "<text x=\"%.0f\" y=\"32\" text-anchor=\"end\">from</text>\n",
            left + cell * l->n_hosts / 2, left - 6);
    for (int b = 0; b < l->n_hosts; b++) {
        fprintf(f, "<text x=\"%.1f\" y=\"32\" text-anchor=\"middle\">", left + cell * (b + 0.5));
        chart_html_text(f, l->hosts[b]);
        fputs("</text>\n", f);
    }
    for (int a = 0; a < l->n_hosts; a++) {
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", left - 6,
                top + cell * (a + 0.5) + 4);
        chart_html_text(f, l->hosts[a]);
        fputs("</text>\n", f);
        for (int b = 0; b < l->n_hosts; b++) {
            double x = left + cell * b, y = top + cell * a;
            if (a == b) {
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                           "fill=\"#ddd\"/>\n", x, y, cell - 2, cell - 2);
                continue;
            }
            double share = top_rate > 0 ? l->gbps[a][b] / top_rate : 0.0;
            fprintf(f, "<rect class=\"link\" data-from=\"%d\" data-to=\"%d\" data-gbps=\"%.9g\" "
                       "data-latency-us=\"%.9g\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                       "height=\"%.1f\" fill=\"hsl(%.0f,60%%,%s)\"/>\n", a, b, l->gbps[a][b],
                    l->latency_us[a][b], x, y, cell - 2, cell - 2, 120.0 * fmin(share, 1.0),
                    "45%");
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#fff\">%.3g</text>"
                       "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#fff\" "
                       "font-size=\"10\">%.0f us</text>\n", x + cell / 2 - 1, y + cell / 2 - 2,
                    l->gbps[a][b], x + cell / 2 - 1, y + cell / 2 + 12, l->latency_us[a][b]);
        }
    }
    fputs("</svg>\n", f);
}

void gate_html_links(FILE *f, const struct gate_input *in)
{
    const struct health_links *l = in->links;
    int from, to;
    if (l == NULL || !slowest(l, &from, &to))
        return;
    fputs("<h2>Links between nodes (preflight)</h2>\n<p id=\"links-slowest\">Slowest: ", f);
    chart_html_text(f, l->hosts[from]);
    fputs(" &rarr; ", f);
    chart_html_text(f, l->hosts[to]);
    fprintf(f, ", %.3g Gbit/s (the fastest: %.3g). Each cell: the rate from the row's node to "
               "the column's, and the latency; %lld-byte sends.</p>\n", l->gbps[from][to],
            fastest(l), (long long)l->probe_bytes);
    if (l->n_hosts <= PICTURE_MAX_HOSTS)
        links_picture(f, l);
    fputs("<table id=\"links\"><tr><th>from \\ to</th>", f);
    for (int b = 0; b < l->n_hosts; b++) {
        fputs("<th>", f);
        chart_html_text(f, l->hosts[b]);
        fputs("</th>", f);
    }
    fputs("</tr>\n", f);
    for (int a = 0; a < l->n_hosts; a++) {
        fputs("<tr><th>", f);
        chart_html_text(f, l->hosts[a]);
        fputs("</th>", f);
        for (int b = 0; b < l->n_hosts; b++)
            if (a == b)
                fputs("<td>-</td>", f);
            else
                fprintf(f, "<td>%.3g Gbit/s, %.0f us</td>", l->gbps[a][b], l->latency_us[a][b]);
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}
