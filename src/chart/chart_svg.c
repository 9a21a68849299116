#include "config.h"

/* chart_svg.c: the chart primitives (chart.h) that the phase report (gate/gate_html.c) and the
 * ladder report (ladder/ladder_write.c) share: HTML escaping, axes with round ticks, the frame
 * and labels, threshold lines, and the page's CSS.  Ticks are round numbers: steps of 1, 2 or 5
 * times a power of ten, the axis ends snapped outward to a multiple of the step; per-rank axes
 * tick whole ranks; log2 axes tick powers of two.  Every tick label carries data-axis and
 * data-tick, so tests can check the numbers.  Deliberately not here: any chart's content, and
 * anything of gate/ or ladder/ (this room includes neither). */

#include "chart/chart.h"

#include <math.h>
#include <stdbool.h>

const char chart_css[] =
    "body{font-family:sans-serif;margin:16px;color:#222;max-width:1160px}"
    "h1{margin:0 0 8px}h2{margin:18px 0 6px;font-size:18px}"
    ".v{display:inline-block;padding:4px 14px;border-radius:4px;color:#fff;font-weight:bold}"
    ".GO{background:#2e7d32}.NO-GO{background:#c62828}.HOLD{background:#ef8f00}"
    "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px;"
    "text-align:left;vertical-align:top}"
    ".s-go{background:#d7f0d8}.s-no_go{background:#f8d0d0}.s-hold{background:#ffe9c2}"
    ".s-not_judged{background:#e4e4e4}.s-na{color:#888}"
    ".charts{display:flex;flex-wrap:wrap;gap:8px}figure{margin:0;border:1px solid #ddd}"
    "svg .frame{fill:none;stroke:#999}svg .t{font-size:14px;font-weight:bold}"
    "svg .tick{font-size:10px;fill:#555}svg .lab{font-size:11px;fill:#333}"
    "svg .line{fill:none;stroke:#1565c0;stroke-width:1.5}svg .pt{fill:#1565c0}"
    "svg .base{fill:none;stroke:#888;stroke-width:1.5;stroke-dasharray:5 3}"
    "svg .floor{stroke:#6a1b9a;stroke-dasharray:2 2}svg .restart{stroke:#c62828;stroke-width:1.5}"
    "svg .thr-go{stroke:#2e7d32;stroke-dasharray:4 3}svg .thr-nogo{stroke:#c62828;"
    "stroke-dasharray:4 3}svg .box rect{fill:#bbdefb;stroke:#1565c0}svg .box line{stroke:#1565c0}"
    "svg .box .med{stroke:#0d47a1;stroke-width:2}svg .bar{fill:#64b5f6}"
    "svg .model{fill:none;stroke:#6a1b9a;stroke-width:1.5;stroke-dasharray:6 3}"
    "svg .pred{fill:#fff;stroke:#6a1b9a;stroke-width:1.5}svg .err{stroke:#6a1b9a}"
    "svg .over{fill:#c62828}svg .full{stroke:#888;stroke-dasharray:2 3}"
    ".ev{font-family:monospace;font-size:11px;white-space:pre-wrap;word-break:break-all}"
    ".flag{color:#c62828;font-weight:bold}";

void chart_html_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

double chart_px(const struct chart_axes *a, double x)
{
    return CHART_L + (x - a->x0) / (a->x1 - a->x0) * (CHART_W - CHART_L - CHART_R);
}

double chart_py(const struct chart_axes *a, double y)
{
    return CHART_H - CHART_B - (y - a->y0) / (a->y1 - a->y0) * (CHART_H - CHART_T - CHART_B);
}

void chart_range(double *lo, double *hi, bool pad)
{
    if (!isfinite(*lo) || !isfinite(*hi)) {
        *lo = 0;
        *hi = 1;
    }
    if (*hi - *lo < 1e-12 * fmax(1.0, fabs(*hi))) {
        double d = fabs(*hi) > 0 ? fabs(*hi) * 0.05 : 1;
        *lo -= d;
        *hi += d;
    }
    double d = pad ? (*hi - *lo) * 0.05 : 0;
    *lo -= d;
    *hi += d;
}

bool chart_range_threshold(double *lo, double *hi, double v)
{
    if (!isfinite(v))
        return false;
    bool data = isfinite(*lo) && isfinite(*hi) && *hi > 0;
    if (data && (v > CHART_NEAR * *hi || v < *lo / CHART_NEAR))
        return false;
    *lo = fmin(*lo, v);
    *hi = fmax(*hi, v);
    return true;
}

void chart_thresholds(FILE *f, const struct chart_axes *a, double go, double no_go)
{
    const double v[2] = {go, no_go};
    const char *const cls[2] = {"thr-go", "thr-nogo"}, *const label[2] = {"go", "no-go"};
    char text[160] = "";
    size_t used = 0;
    for (int i = 0; i < 2; i++) {
        chart_hline(f, a, v[i], cls[i], label[i]);
        if (isfinite(v[i]) && (v[i] > a->y1 || v[i] < a->y0))
            used += (size_t)snprintf(text + used, sizeof text - used, "%s%s %.6g (%s)",
                                     used ? ", " : "off the chart: ", label[i], v[i],
                                     v[i] > a->y1 ? "above" : "below");
    }
    if (used > 0)
        fprintf(f, "<text class=\"lab offchart\" x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                CHART_L + 4, CHART_T + 12, text);
}

double chart_nice_step(double range, int ticks)
{
    double raw = range / (ticks > 1 ? ticks : 1);
    if (!(raw > 0) || !isfinite(raw))
        return 1;
    double p = pow(10.0, floor(log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* Snap [lo, hi] outward to multiples of a round step for about 5 ticks. */
static double chart_snap(double *lo, double *hi)
{
    double step = chart_nice_step(*hi - *lo, 5);
    *lo = floor(*lo / step + 1e-9) * step;
    *hi = ceil(*hi / step - 1e-9) * step;
    return step;
}

static void chart_tick(FILE *f, char axis, double at_x, double at_y, const char *anchor, double v,
                       const char *label)
{
    if (fabs(v) < 1e-12)
        v = 0; /* no "-0" */
    fprintf(f, "<text class=\"tick\" data-axis=\"%c\" data-tick=\"%.9g\" x=\"%.1f\" y=\"%.1f\" "
               "text-anchor=\"%s\">", axis, v, at_x, at_y, anchor);
    if (label != NULL)
        fputs(label, f);
    else
        fprintf(f, "%.6g", v);
    fputs("</text>\n", f);
}

static void chart_x_ticks(FILE *f, const struct chart_axes *a)
{
    double y = CHART_H - CHART_B + 14;
    if (a->xkind == CHART_X_RANKS) {
        int n = (int)(a->x1 + 0.5), every = (int)chart_nice_step(n, 16);
        for (int i = 0; i < n; i += every > 0 ? every : 1)
            chart_tick(f, 'x', chart_px(a, i), y, "middle", i, NULL);
    } else if (a->xkind == CHART_X_LOG2) {
        for (int k = (int)ceil(a->x0); k <= (int)floor(a->x1); k++) {
            char label[32];
            snprintf(label, sizeof label, "%.0f", ldexp(1.0, k));
            chart_tick(f, 'x', chart_px(a, k), y, "middle", ldexp(1.0, k), label);
        }
    } else {
        for (int i = 0; a->x0 + i * a->xstep <= a->x1 + 1e-9 * a->xstep; i++)
            chart_tick(f, 'x', chart_px(a, a->x0 + i * a->xstep), y, "middle",
                       a->x0 + i * a->xstep, NULL);
    }
}

void chart_begin(FILE *f, const char *id, const char *title, const char *xl, const char *yl,
                 struct chart_axes *a)
{
    double ystep = chart_snap(&a->y0, &a->y1);
    if (a->xkind == CHART_X_LINEAR)
        a->xstep = chart_snap(&a->x0, &a->x1);
    fprintf(f, "<figure><svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
               "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\"><title>%s</title>\n",
            id, CHART_W, CHART_H, CHART_W, CHART_H, title);
    fprintf(f, "<text class=\"t\" x=\"%.1f\" y=\"18\">%s</text>\n", CHART_L, title);
    fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
            CHART_L, CHART_T, CHART_W - CHART_L - CHART_R, CHART_H - CHART_T - CHART_B);
    for (int i = 0; a->y0 + i * ystep <= a->y1 + 1e-9 * ystep; i++)
        chart_tick(f, 'y', CHART_L - 4, chart_py(a, a->y0 + i * ystep) + 4, "end",
                   a->y0 + i * ystep, NULL);
    chart_x_ticks(f, a);
    fprintf(f, "<text class=\"lab\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n"
               "<text class=\"lab\" x=\"12\" y=\"%.1f\" text-anchor=\"middle\" "
               "transform=\"rotate(-90 12 %.1f)\">%s</text>\n",
            (CHART_L + CHART_W - CHART_R) / 2, CHART_H - 6, xl, CHART_H / 2, CHART_H / 2, yl);
}

void chart_end(FILE *f)
{
    fputs("</svg></figure>\n", f);
}

void chart_empty(FILE *f, const char *why)
{
    fprintf(f, "<text class=\"lab\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
            CHART_W / 2, CHART_H / 2, why);
}

void chart_hline(FILE *f, const struct chart_axes *a, double y, const char *cls,
                 const char *label)
{
    if (isnan(y) || y < a->y0 || y > a->y1)
        return;
    fprintf(f, "<line class=\"%s\" data-value=\"%.9g\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.2f\" "
               "y2=\"%.2f\"/>\n<text class=\"lab\" x=\"%.1f\" y=\"%.2f\" "
               "text-anchor=\"end\">%s</text>\n",
            cls, y, CHART_L, CHART_W - CHART_R, chart_py(a, y), chart_py(a, y), CHART_W - CHART_R - 2,
            chart_py(a, y) - 3, label);
}
