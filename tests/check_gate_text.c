/* check_gate_text: the gate on text data, in check_gate's "core" test case (check_gate.c builds
 * the suite): unigram_margin (the corpus's unigram entropy minus the final loss) at GO, HOLD and
 * NO-GO under its default thresholds and n/a with its reasons, and the tokenizer and the unigram
 * entropy in report.json, report.md, report.html and gate.prom.  Fixtures from gate_fixtures.c
 * (two ranks of 40 steps, loss 4 - 0.001 s: the last 10 steps' mean is 3.9645). */

#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "gate/gate.h"

#include "gate_fixtures.h"

#define TOK "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* The fixture's summary.json with this unigram entropy (NaN: none) and the tokenizer. */
static void text_summary(double unigram)
{
    char text[1024], uni[64] = "";
    if (!isnan(unigram))
        snprintf(uni, sizeof uni, "\"unigram_entropy\":%.9g,", unigram);
    snprintf(text, sizeof text, "{\"num_processes\":2,\"aggregated_metrics\":{\"avg_loss\":3.9,"
             "%s\"tokenizer_sha256\":\"" TOK "\",\"restarts\":1},\"rank_results\":[{\"rank\":0,"
             "\"host\":\"n1\",\"steps\":40},{\"rank\":1,\"host\":\"n1\",\"steps\":40}]}\n", uni);
    put("summary.json", "w", text);
}

/* The fixture's configuration on token data, the unigram margin's default thresholds. */
static void text_config(struct cfg *c)
{
    struct cfg d;
    config(c);
    cfg_defaults(&d);
    snprintf(c->data.kind, sizeof c->data.kind, "tokens");
    ck_assert_double_eq(d.gates.unigram_margin_go, 0.5);
    ck_assert_double_eq(d.gates.unigram_margin_no_go, 0.1);
}

/* unigram_margin of the fixture's run under a summary of this unigram entropy. */
static struct gate_criterion margin_with(const struct cfg *c, double unigram,
                                         enum gate_verdict *verdict, enum gate_status *gap)
{
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    text_summary(unigram);
    ck_assert_int_eq(judge(&in, &res, c, &err), RZ_OK);
    struct gate_criterion k = res.crit[GATE_UNIGRAM_MARGIN];
    if (verdict != NULL)
        *verdict = res.verdict;
    if (gap != NULL)
        *gap = res.crit[GATE_ENTROPY_GAP].status;
    gate_result_free(&res);
    gate_input_free(&in);
    return k;
}

/* A model well below the frequencies' loss is GO, one a little below HOLD, one no better
 * than them NO-GO, and that NO-GO is the phase's verdict. */
START_TEST(unigram_margin_go_hold_no_go)
{
    static struct cfg c;
    enum gate_verdict v;
    enum gate_status gap;
    fixture();
    text_config(&c);
    struct gate_criterion k = margin_with(&c, 4.5, &v, &gap);
    ck_assert_int_eq(gap, GATE_NA); /* no entropy floor on text */
    ck_assert_int_eq(v, GATE_VERDICT_GO);
    ck_assert_double_eq_tol(k.measured, 4.5 - 3.9645, 1e-9);
    ck_assert_int_eq(k.samples, 10);
    ck_assert_int_eq(k.status, GATE_GO);
    ck_assert(k.higher_is_better);
    ck_assert_str_eq(k.unit, "nats");
    ck_assert_msg(strstr(k.note, "the unigram entropy 4.5 minus the mean loss of the last 10 "
                         "steps (3.9645)") != NULL, "%s", k.note);
    k = margin_with(&c, 4.2, &v, NULL);
    ck_assert_double_eq_tol(k.measured, 4.2 - 3.9645, 1e-9);
    ck_assert_int_eq(k.status, GATE_HOLD);
    ck_assert_int_eq(v, GATE_VERDICT_HOLD);
    k = margin_with(&c, 4.0, &v, NULL); /* 0.0355 nats: the frequencies, hardly more */
    ck_assert_int_eq(k.status, GATE_NO_GO);
    ck_assert_int_eq(v, GATE_VERDICT_NO_GO);
    k = margin_with(&c, 3.5, &v, NULL); /* above the unigram entropy: negative, NO-GO */
    ck_assert_double_eq_tol(k.measured, 3.5 - 3.9645, 1e-9);
    ck_assert_int_eq(k.status, GATE_NO_GO);
    teardown_fixture();
}
END_TEST

/* With validation losses, the margin is to their last 10 (validations at steps 5, 10, .., 40:
 * 3.005 .. 3.04, the last 8 of them since there are only 8). */
START_TEST(unigram_margin_judges_validation_loss)
{
    static struct cfg c;
    val_base = 3.0;
    fixture();
    val_base = NAN;
    text_config(&c);
    struct gate_criterion k = margin_with(&c, 4.0, NULL, NULL);
    ck_assert_double_eq_tol(k.measured, 4.0 - 3.0225, 1e-9);
    ck_assert_int_eq(k.samples, 8);
    ck_assert_int_eq(k.status, GATE_GO);
    ck_assert_msg(strstr(k.note, "mean validation loss of the last 8 validations") != NULL,
                  "%s", k.note);
    teardown_fixture();
}
END_TEST

/* n/a, with the reason: no text (random, markov), no unigram entropy in summary.json, a run too
 * short to have learned more than the frequencies. */
START_TEST(unigram_margin_not_applicable)
{
    static struct cfg c;
    fixture();
    text_config(&c);
    snprintf(c.data.kind, sizeof c.data.kind, "random");
    c.model.vocab_size = 2048;
    struct gate_criterion k = margin_with(&c, 4.5, NULL, NULL);
    ck_assert_int_eq(k.status, GATE_NA);
    ck_assert(isnan(k.measured));
    ck_assert_msg(strstr(k.note, "data.kind is random: no text (uniform tokens' unigram entropy, "
                         "ln V = 7.62462 nats, is the loss of a model that has learned "
                         "nothing)") != NULL, "%s", k.note);
    snprintf(c.data.kind, sizeof c.data.kind, "markov");
    k = margin_with(&c, 4.5, NULL, NULL);
    ck_assert_int_eq(k.status, GATE_NA);
    ck_assert_str_eq(k.note, "data.kind is markov: no text (entropy_gap judges learning on it)");
    snprintf(c.data.kind, sizeof c.data.kind, "text");
    k = margin_with(&c, NAN, NULL, NULL);
    ck_assert_int_eq(k.status, GATE_NA);
    ck_assert_msg(strstr(k.note, "summary.json has no unigram_entropy") != NULL, "%s", k.note);
    for (int r = 0; r < 2; r++) { /* 9 steps: too few */
        char rel[64];
        snprintf(rel, sizeof rel, "metrics/7/rank-%05d.jsonl", r);
        put(rel, "w", "");
        metrics(r, 1, 9, 1, 0.125);
    }
    k = margin_with(&c, 4.5, NULL, NULL);
    ck_assert_int_eq(k.status, GATE_NA);
    ck_assert_str_eq(k.note, "9 step(s) trained: the margin needs at least 10 to show learning");
    for (int r = 0; r < 2; r++)
        metrics(r, 10, 10, 10, 0.125);
    k = margin_with(&c, 4.5, NULL, NULL); /* 10: judged */
    ck_assert_int_eq(k.status, GATE_GO);
    teardown_fixture();
}
END_TEST

/* The reports of a text run: the tokenizer in full in report.json, its first 12 hex digits in
 * report.md and report.html (the whole on hover), the unigram entropy as a fact and as the
 * loss chart's reference line, and the margin's family in gate.prom.  A markov run's reports
 * name neither. */
START_TEST(reports_show_the_tokenizer_and_the_unigram_entropy)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    char dir[4096], warn[256], path[4200];
    fixture();
    text_config(&c);
    text_summary(4.5);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    struct gate_doc doc;
    gate_doc_build(&doc, &in, &res, &c);
    ck_assert_int_eq(gate_write_reports(&doc, dir, sizeof dir, warn, sizeof warn, &err), RZ_OK);
    snprintf(path, sizeof path, "%s/report.json", dir);
    char *json = slurp(path);
    ck_assert_ptr_nonnull(strstr(json, "\"data_kind\":\"tokens\",\"tokenizer_sha256\":\"" TOK
                                       "\",\"unigram_entropy\":4.5,"));
    ck_assert_ptr_nonnull(strstr(json, "\"name\":\"unigram_margin\""));
    free(json);
    snprintf(path, sizeof path, "%s/report.md", dir);
    char *md = slurp(path);
    ck_assert_ptr_nonnull(strstr(md, "| data | tokens |\n| tokenizer | `0123456789ab` |\n"
                                     "| unigram entropy | 4.5000 nats/token |\n| baseline | "));
    ck_assert_ptr_null(strstr(md, TOK));
    free(md);
    snprintf(path, sizeof path, "%s/report.html", dir);
    char *html = slurp(path);
    assert_balanced(html);
    ck_assert_ptr_nonnull(strstr(html, "<tr><th>tokenizer</th><td><code title=\"" TOK
                                       "\">0123456789ab</code></td></tr>"));
    char *loss = chart(html, "chart-loss");
    ck_assert_msg(strstr(loss, "<line class=\"floor unigram\" data-value=\"4.5\"") != NULL, "%s",
                  loss);
    ck_assert_ptr_nonnull(strstr(loss, ">unigram entropy</text>"));
    ck_assert_ptr_null(strstr(loss, ">entropy floor<"));
    free(loss);
    free(html);
    snprintf(path, sizeof path, "%s/gate.prom", dir);
    char *prom = slurp(path);
    ck_assert_ptr_nonnull(strstr(prom, "# TYPE ryzen_gate_unigram_margin_nats gauge\n"
                                       "ryzen_gate_unigram_margin_nats{slurm_job_id=\"7\","
                                       "phase=\"phase\"} 0.5355"));
    ck_assert_ptr_nonnull(strstr(prom, "ryzen_gate_criterion_status{slurm_job_id=\"7\","
                                       "phase=\"phase\",criterion=\"unigram_margin\"} 0\n"));
    free(prom);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
    /* the markov fixture: no tokenizer, no unigram entropy; the criterion's row is n/a */
    fixture();
    config(&c);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    gate_doc_build(&doc, &in, &res, &c);
    ck_assert_int_eq(gate_write_reports(&doc, dir, sizeof dir, warn, sizeof warn, &err), RZ_OK);
    snprintf(path, sizeof path, "%s/report.md", dir);
    md = slurp(path);
    ck_assert_ptr_null(strstr(md, "tokenizer"));
    ck_assert_ptr_null(strstr(md, "unigram entropy"));
    ck_assert_ptr_nonnull(strstr(md, "| data | markov |\n| baseline | "));
    ck_assert_ptr_nonnull(strstr(md, "unigram_margin"));
    free(md);
    snprintf(path, sizeof path, "%s/report.json", dir);
    json = slurp(path);
    ck_assert_ptr_null(strstr(json, "tokenizer_sha256"));
    ck_assert_ptr_null(strstr(json, "\"unigram_entropy\""));
    free(json);
    snprintf(path, sizeof path, "%s/report.html", dir);
    html = slurp(path);
    ck_assert_ptr_null(strstr(html, "unigram entropy"));
    ck_assert_ptr_null(strstr(html, "<th>tokenizer</th>"));
    free(html);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

void gate_text_tests(TCase *tc)
{
    tcase_add_test(tc, unigram_margin_go_hold_no_go);
    tcase_add_test(tc, unigram_margin_judges_validation_loss);
    tcase_add_test(tc, unigram_margin_not_applicable);
    tcase_add_test(tc, reports_show_the_tokenizer_and_the_unigram_entropy);
}
