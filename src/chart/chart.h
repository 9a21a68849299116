/* chart.h: the inline-SVG chart primitives and the page furniture that report.html
 * (gate/gate_html.c and its sections) and ladder.html (ladder/ladder_write.c) share: the CSS,
 * HTML escaping, axes with round ticks, the frame and labels, threshold lines.  Every function
 * writes to a caller's FILE and keeps no state; no chart's content is here, and nothing of a
 * phase or of a ladder.  Ownership: nothing is allocated; the strings passed in stay the
 * caller's. */
#ifndef RZ_CHART_CHART_H
#define RZ_CHART_CHART_H

#include <stdbool.h>
#include <stdio.h>

#define CHART_W 540.0
#define CHART_H 300.0
#define CHART_L 64.0            /* plot area margins */
#define CHART_R 16.0
#define CHART_T 30.0
#define CHART_B 42.0

enum chart_xaxis {
    CHART_X_LINEAR,             /* round ticks */
    CHART_X_RANKS,              /* x0 = -0.5 .. x1 = n - 0.5: whole ranks */
    CHART_X_LOG2                /* x is log2(value): ticks at powers of two */
};

struct chart_axes {
    double x0, x1, y0, y1;
    enum chart_xaxis xkind;
    double xstep;              /* set by chart_begin for linear axes */
};

/* The pages' style sheet, inlined into report.html and ladder.html. */
extern const char chart_css[];
/* `s` with <, >, & and " escaped for HTML text and attribute values. */
void chart_html_text(FILE *f, const char *s);
double chart_px(const struct chart_axes *a, double x);
double chart_py(const struct chart_axes *a, double y);
/* Widen a degenerate or unset range and pad it by 5% (`pad`). */
void chart_range(double *lo, double *hi, bool pad);
/* Widen [lo, hi], the range of non-negative data, to hold the threshold v when v is at most
 * CHART_NEAR times the data's top (and at least its bottom / CHART_NEAR): returns whether it
 * did.  A threshold further off would squash the data into a sliver; it stays off the axes, and
 * chart_thresholds names it. */
#define CHART_NEAR 4.0
bool chart_range_threshold(double *lo, double *hi, double v);
/* A gate's go and no-go lines (chart_hline), and one line at the plot's top left naming those
 * off the axes (none: nothing). */
void chart_thresholds(FILE *f, const struct chart_axes *a, double go, double no_go);
/* A round step (1, 2 or 5 times a power of ten) that cuts `range` into about `ticks` parts. */
double chart_nice_step(double range, int ticks);
/* The frame, title, axis labels and round ticks; snaps a's ends to the ticks first. */
void chart_begin(FILE *f, const char *id, const char *title, const char *xl, const char *yl,
                 struct chart_axes *a);
void chart_end(FILE *f);
/* A centred note in an empty plot ("no steps"). */
void chart_empty(FILE *f, const char *why);
/* A horizontal threshold line at y with a label (nothing when y is off the axes). */
void chart_hline(FILE *f, const struct chart_axes *a, double y, const char *cls,
                 const char *label);

#endif
