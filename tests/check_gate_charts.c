/* check_gate_charts: report.html's charts (chart/chart.h, whose own suite is check_chart), in
 * check_gate's "core" test case (check_gate.c builds the suite): a threshold far from the data
 * kept off the chart and named.  Fixtures from gate_fixtures.c. */

#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chart/chart.h"
#include "config/cfg.h"
#include "gate/gate.h"

#include "gate_fixtures.h"

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
    tcase_add_test(tc, far_thresholds_stay_off_the_chart);
}
