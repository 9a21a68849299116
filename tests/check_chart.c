/* check_chart: the chart primitives (src/chart/) that report.html and ladder.html share.
 * "core": round axis steps, a threshold that widens the range only when it is near, points
 * placed inside the plot area, text escaped for HTML; "errors": what a chart does with data it
 * cannot draw (no finite range, a flat one, a NaN threshold or line: left out, never a NaN in
 * the SVG).  How report.html uses them (a far threshold named off the chart) is check_gate's
 * (check_gate_charts.c). */

#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chart/chart.h"

#include "testutil.h"

/* What fn(f) wrote, as a string the caller frees. */
static char *written(void (*fn)(FILE *, const void *), const void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    fn(f, arg);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

START_TEST(nice_steps_are_round)
{
    ck_assert_double_eq(chart_nice_step(10, 5), 2);
    ck_assert_double_eq(chart_nice_step(1, 4), 0.5);
    ck_assert_double_eq(chart_nice_step(0.07, 5), 0.02);
    ck_assert_double_eq(chart_nice_step(9000, 5), 2000);
    ck_assert_double_eq(chart_nice_step(26000, 5), 10000);
    ck_assert_double_eq(chart_nice_step(0, 5), 1); /* degenerate: any round step */
}
END_TEST

/* A threshold widens the data's range only when it is near: at most CHART_NEAR times the top,
 * at least the bottom / CHART_NEAR; with no data, always. */
START_TEST(thresholds_widen_the_range_only_when_near)
{
    double lo = 98, hi = 113;
    ck_assert(chart_range_threshold(&lo, &hi, 250));
    ck_assert(lo == 98 && hi == 250);
    ck_assert(!chart_range_threshold(&lo, &hi, 1e9));
    ck_assert(!chart_range_threshold(&lo, &hi, 20));
    ck_assert(chart_range_threshold(&lo, &hi, 30));
    ck_assert(lo == 30 && hi == 250);
    double nlo = INFINITY, nhi = -INFINITY;
    ck_assert(chart_range_threshold(&nlo, &nhi, 1e9));
    ck_assert(nlo == 1e9 && nhi == 1e9);
    double zlo = 0, zhi = 0; /* comm shares all zero (one rank) */
    ck_assert(chart_range_threshold(&zlo, &zhi, 0.2));
    ck_assert(zlo == 0 && zhi == 0.2);
}
END_TEST

/* The axes' ends land on the plot area's edges, and y grows upwards. */
START_TEST(points_land_inside_the_plot_area)
{
    struct chart_axes a = {.x0 = 10, .x1 = 20, .y0 = 0, .y1 = 4};
    ck_assert_double_eq(chart_px(&a, 10), CHART_L);
    ck_assert_double_eq(chart_px(&a, 20), CHART_W - CHART_R);
    ck_assert_double_eq(chart_py(&a, 0), CHART_H - CHART_B);
    ck_assert_double_eq(chart_py(&a, 4), CHART_T);
    ck_assert(chart_py(&a, 3) < chart_py(&a, 1));
}
END_TEST

static void html_text(FILE *f, const void *s) { chart_html_text(f, s); }

START_TEST(text_is_escaped_for_html)
{
    char *s = written(html_text, "n1 <-> n2 & \"n3\"");
    ck_assert_str_eq(s, "n1 &lt;-&gt; n2 &amp; &quot;n3&quot;");
    free(s);
}
END_TEST

/* No finite range (no data): 0 .. 1; a flat range is opened around its value; padding adds 5%
 * each side. */
START_TEST(ranges_without_data_or_width)
{
    double lo = INFINITY, hi = -INFINITY;
    chart_range(&lo, &hi, false);
    ck_assert(lo == 0 && hi == 1);
    lo = hi = 50;
    chart_range(&lo, &hi, false);
    ck_assert(lo < 50 && hi > 50 && isfinite(lo) && isfinite(hi));
    lo = hi = 0;
    chart_range(&lo, &hi, false);
    ck_assert(lo == -1 && hi == 1);
    lo = 0, hi = 100;
    chart_range(&lo, &hi, true);
    ck_assert(lo == -5 && hi == 105);
}
END_TEST

static void nan_line(FILE *f, const void *arg)
{
    const struct chart_axes *a = arg;
    chart_hline(f, a, NAN, "thr-go", "go");
    chart_hline(f, a, 9, "thr-go", "go"); /* above the axes */
}

/* A NaN threshold never widens a range, and a line with no value, or off the axes, is not
 * drawn at all (an SVG with "nan" in it draws nothing, silently). */
START_TEST(lines_without_a_value_are_left_out)
{
    double lo = 1, hi = 2;
    ck_assert(!chart_range_threshold(&lo, &hi, NAN));
    ck_assert(!chart_range_threshold(&lo, &hi, INFINITY));
    ck_assert(lo == 1 && hi == 2);
    struct chart_axes a = {.x0 = 0, .x1 = 1, .y0 = 0, .y1 = 4};
    char *s = written(nan_line, &a);
    ck_assert_str_eq(s, "");
    free(s);
}
END_TEST

static Suite *chart_suite(void)
{
    Suite *s = suite_create("chart");
    TCase *core = rz_test_tcase("core");
    tcase_add_test(core, nice_steps_are_round);
    tcase_add_test(core, thresholds_widen_the_range_only_when_near);
    tcase_add_test(core, points_land_inside_the_plot_area);
    tcase_add_test(core, text_is_escaped_for_html);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, ranges_without_data_or_width);
    tcase_add_test(errors, lines_without_a_value_are_left_out);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(chart_suite());
}
