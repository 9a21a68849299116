/* check_gate_charts: the axes of report.html's charts, in check_gate's "core" test case
 * (check_gate.c builds the suite): round steps, a threshold that widens the range only when it
 * is near, and one far from the data kept off the chart and named.  Fixtures from
 * gate_fixtures.c. */

#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"

#include "gate_fixtures.h"

START_TEST(nice_steps_are_round)
{
    ck_assert_double_eq(gate_nice_step(10, 5), 2);
    ck_assert_double_eq(gate_nice_step(1, 4), 0.5);
    ck_assert_double_eq(gate_nice_step(0.07, 5), 0.02);
    ck_assert_double_eq(gate_nice_step(9000, 5), 2000);
    ck_assert_double_eq(gate_nice_step(26000, 5), 10000);
    ck_assert_double_eq(gate_nice_step(0, 5), 1); /* degenerate: any round step */
}
END_TEST

/* A threshold widens the data's range only when it is near: at most GATE_NEAR times the top,
 * at least the bottom / GATE_NEAR; with no data, always. */
START_TEST(thresholds_widen_the_range_only_when_near)
{
    double lo = 98, hi = 113;
    ck_assert(gate_range_threshold(&lo, &hi, 250));
    ck_assert(lo == 98 && hi == 250);
    ck_assert(!gate_range_threshold(&lo, &hi, 1e9));
    ck_assert(!gate_range_threshold(&lo, &hi, 20));
    ck_assert(gate_range_threshold(&lo, &hi, 30));
    ck_assert(lo == 30 && hi == 250);
    ck_assert(!gate_range_threshold(&lo, &hi, NAN));
    double nlo = INFINITY, nhi = -INFINITY;
    ck_assert(gate_range_threshold(&nlo, &nhi, 1e9));
    ck_assert(nlo == 1e9 && nhi == 1e9);
    double zlo = 0, zhi = 0; /* comm shares all zero (one rank) */
    ck_assert(gate_range_threshold(&zlo, &zhi, 0.2));
    ck_assert(zlo == 0 && zhi == 0.2);
}
END_TEST

/* A threshold far from the data (throughput go 1e9 against 128 samples/s) stays off the axes
 * instead of squashing the data into a sliver, and the chart names it; near ones are drawn. */
START_TEST(far_thresholds_stay_off_the_chart)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    char dir[4096];
    char *html = two_rank_reports(&c, 1e9, 5e8, &in, &res, dir, sizeof dir);
    char *tp = chart(html, "chart-throughput");
    ck_assert_ptr_null(strstr(tp, "thr-go"));
    ck_assert_ptr_null(strstr(tp, "thr-nogo"));
    ck_assert_msg(strstr(tp, ">off the chart: go 1e+09 (above), no-go 5e+08 (above)<") != NULL,
                  "%s", tp);
    free(tp);
    free(html);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

void gate_charts_tests(TCase *tc)
{
    tcase_add_test(tc, nice_steps_are_round);
    tcase_add_test(tc, thresholds_widen_the_range_only_when_near);
    tcase_add_test(tc, far_thresholds_stay_off_the_chart);
}
