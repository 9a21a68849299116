/* gate_fixtures.h: what the files of check_gate share (gate_fixtures.c): a run directory of two
 * ranks written by hand in a mkdtemp directory, its configuration and the judge on it, a file
 * read whole, a criterion's thresholds, report.html counted and checked, the reports of two
 * ranks, and the tests that check_gate.c adds to its suite from check_gate_verdicts.c,
 * check_gate_net.c, check_gate_reports.c, check_gate_charts.c,
 * check_gate_ended.c and check_gate_errors.c.  Test code only. */
#ifndef RZ_TESTS_GATE_FIXTURES_H
#define RZ_TESTS_GATE_FIXTURES_H

#include <check.h>
#include <stddef.h>

#include "config/cfg.h"
#include "core/status.h"
#include "gate/gate.h"

/* The scratch directory (fixture: $TMPDIR/check_gate.XXXXXX, /tmp without TMPDIR) and the run
 * directory written into (fixture: root/phase). */
extern char root[256], run[512];

/* not NaN: metrics() adds val_loss = val_base + 0.001 s every 5 steps */
extern double val_base;

/* Write text to run/rel (fopen's mode), making its directory first. */
void put(const char *rel, const char *mode, const char *text);

/* Steps [from, to] of one rank of job 7, run_step counting from run0; sync check every 10. */
void metrics(int rank, int from, int to, int run0, double step_time);

/* The baseline phase's report.json (root/base/reports/1) of this throughput, with more added
 * to its object. */
void baseline_report_with(double throughput, const char *more);

/* baseline_report_with(throughput, ""). */
void baseline_report(double throughput);

/* A complete, healthy run of 40 steps on 2 ranks of one node: throughput 128 samples/s, comm
 * 1/16, allreduce 1.953125 ms, memory 0.5, uptime 0.5, one failure requeue, efficiency 1. */
void fixture(void);

/* The configuration the fixture is judged under: batch 8, 5 warm-up steps, markov data, phases
 * base and next, and gates that the fixture passes. */
void config(struct cfg *c);

/* Remove root and all it holds. */
void teardown_fixture(void);

/* Job 7, no exit status given. */
extern const struct gate_opts job7;

/* gate_read of run for job 7, then gate_evaluate if that succeeded (err cleared first). */
enum rz_status judge(struct gate_input *in, struct gate_result *res, const struct cfg *c,
                     struct rz_err *err);

/* The whole file at path (the test fails if it cannot be read; the caller frees it). */
char *slurp(const char *path);

/* Threshold fields of each judged criterion, so each can be put exactly at its measurement. */
void thresholds(struct cfg *c, int k, double **go, double **no_go);

/* How many times needle occurs in hay. */
size_t count(const char *hay, const char *needle);

/* Every tag opened is closed in order; void and self-closed ones stand alone. */
void assert_balanced(const char *html);

/* The text of <svg id="ID" ...>...</svg> (caller frees). */
char *chart(const char *html, const char *id);

/* The fixture's two ranks of 250 steps at 128 samples/s, judged under these throughput gates
 * with a Prometheus copy directory; writes the reports into `dir` (no warning) and returns
 * report.html (the caller frees it, and in, res and the fixture). */
char *two_rank_reports(struct cfg *c, double go, double no_go, struct gate_input *in,
                       struct gate_result *res, char *dir, size_t len);

/* Add the verdicts' tests (the rules, the fixture's verdicts, baselines, suspect efficiency,
 * requeue duplicates, the rollback checkpoint) to tc (check_gate_verdicts.c). */
void gate_verdicts_tests(TCase *tc);

/* Add the packet-loss criterion's tests to tc (check_gate_net.c). */
void gate_net_tests(TCase *tc);

/* Add the report files' tests (the reports of two ranks, the JSON reader, the dashboard) to tc
 * (check_gate_reports.c). */
void gate_reports_tests(TCase *tc);


/* Add the report charts' test (a threshold far from the data named off the chart) to tc
 * (check_gate_charts.c). */
void gate_charts_tests(TCase *tc);

/* Add the tests of how a phase ended (requeues by reason, the --ended report) to tc
 * (check_gate_ended.c). */
void gate_ended_tests(TCase *tc);

/* Add the text criteria's tests (unigram_margin's GO, HOLD, NO-GO and n/a, the tokenizer and
 * the unigram entropy in the reports) to tc (check_gate_text.c). */
void gate_text_tests(TCase *tc);

/* The "errors" test case: malformed inputs and the reasons --ended accepts
 * (check_gate_errors.c). */
TCase *gate_errors_tcase(void);

#endif
