/* check_step: ryzen-step's policy, restart budget, event log, run-directory naming and argv
 * handling (the end-to-end behaviour under Slurm is tests/slurm.sh). */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "step/step.h"
#include "testutil.h"

static char dir[64];

static void setup(void)
{
    rz_test_tmpdir(dir, sizeof dir, "step");
}

static void teardown(void)
{
    rz_test_rmtree(dir);
}

START_TEST(exit_status_policy)
{
    ck_assert_int_eq(step_decide(0, 0, 3), STEP_DONE);
    ck_assert_int_eq(step_decide(75, 99, 3), STEP_REQUEUE_SIGNAL); /* signals never spend it */
    ck_assert_int_eq(step_decide(64, 0, 3), STEP_NO_REQUEUE);
    ck_assert_int_eq(step_decide(65, 0, 3), STEP_NO_REQUEUE);
    ck_assert_int_eq(step_decide(70, 0, 3), STEP_NO_REQUEUE);
    ck_assert_int_eq(step_decide(76, 0, 3), STEP_REQUEUE_FAILURE);
    ck_assert_int_eq(step_decide(76, 2, 3), STEP_REQUEUE_FAILURE);
    ck_assert_int_eq(step_decide(76, 3, 3), STEP_GIVE_UP);
    ck_assert_int_eq(step_decide(137, 0, 3), STEP_REQUEUE_FAILURE); /* a rank killed by -9 */
    ck_assert_int_eq(step_decide(1, 0, 0), STEP_GIVE_UP);
    ck_assert_str_eq(step_action_name(STEP_GIVE_UP), "give up");
}
END_TEST

/* The trainer's answers to --preflight are final; a launch that failed before it could answer
 * (srun's own statuses) is tried again, then handled like a failed step. */
START_TEST(preflight_status_policy)
{
    ck_assert_int_eq(step_preflight_classify(0, true, 1), STEP_PREFLIGHT_PASSED);
    ck_assert_int_eq(step_preflight_classify(70, true, 1), STEP_PREFLIGHT_NO_GO);
    ck_assert_int_eq(step_preflight_classify(70, false, 1), STEP_PREFLIGHT_NO_GO);
    ck_assert_int_eq(step_preflight_classify(64, false, 1), STEP_PREFLIGHT_NO_GO);
    ck_assert_int_eq(step_preflight_classify(65, false, 1), STEP_PREFLIGHT_NO_GO);
    /* one rank's 70 reached srun as 137 (-K1 killed the others), but health.json was written */
    ck_assert_int_eq(step_preflight_classify(137, true, 1), STEP_PREFLIGHT_NO_GO);
    ck_assert_int_eq(step_preflight_classify(75, false, 1), STEP_PREFLIGHT_DECIDE); /* a signal */
    /* srun could not launch the tasks: no answer */
    ck_assert_int_eq(step_preflight_classify(1, false, 1), STEP_PREFLIGHT_RETRY);
    ck_assert_int_eq(step_preflight_classify(167, false, 2), STEP_PREFLIGHT_RETRY);
    ck_assert_int_eq(step_preflight_classify(1, false, STEP_PREFLIGHT_TRIES), STEP_PREFLIGHT_DECIDE);
    ck_assert_int_eq(step_preflight_classify(0, true, STEP_PREFLIGHT_TRIES), STEP_PREFLIGHT_PASSED);
    /* ... and after the retries, such a status is a failure requeue within the budget. */
    ck_assert_int_eq(step_decide(167, 0, 3), STEP_REQUEUE_FAILURE);
}
END_TEST

START_TEST(events_are_json_lines_and_count_failures)
{
    struct step_env env;
    memset(&env, 0, sizeof env);
    snprintf(env.job_id, sizeof env.job_id, "42");
    env.restart_count = 1;
    struct step_events *ev;
    char out[4096] = "";
    FILE *echo = fmemopen(out, sizeof out, "w");
    ck_assert_int_eq(step_events_open(&ev, dir, &env, "phase1_4proc", echo, NULL), RZ_OK);
    struct step_kv kv[] = {{"reason", "failure", 0}, {"status", NULL, 76}};
    step_event(ev, "requeue", "step exited 76: \"quoted\"", kv, 2);
    struct step_kv sig[] = {{"reason", "signal", 0}};
    step_event(ev, "requeue", "signal", sig, 1);
    step_event(ev, "start", "hello", NULL, 0);
    char path[256];
    snprintf(path, sizeof path, "%s", step_events_path(ev));
    step_events_close(ev);
    fclose(echo);
    ck_assert_ptr_nonnull(strstr(out, "ryzen-step: requeue: step exited 76: \"quoted\"\n"));
    char *text = NULL;
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_ptr_nonnull(strstr(text, "\"job\":\"42\",\"restart\":1,\"phase\":\"phase1_4proc\","
                                       "\"event\":\"requeue\",\"message\":\"step exited 76: "
                                       "\\\"quoted\\\"\",\"reason\":\"failure\",\"status\":76}\n"));
    free(text);
    ck_assert_int_eq(step_count_failures(path, "42"), 1);  /* the signal requeue does not count */
    ck_assert_int_eq(step_count_failures(path, "43"), 0);  /* another job's budget */
    ck_assert_int_eq(step_count_failures("/nonexistent/events.jsonl", "42"), 0);
}
END_TEST

START_TEST(run_dir_from_submit_dir_and_phase)
{
    struct step_env env;
    memset(&env, 0, sizeof env);
    snprintf(env.submit_dir, sizeof env.submit_dir, "/home/u/job");
    char run[256], phase[64];
    unsetenv("RYZEN_RUN_ROOT");
    ck_assert(step_run_dir(run, sizeof run, &env, "configs/phase2a_8proc.yaml", phase,
                           sizeof phase));
    ck_assert_str_eq(phase, "phase2a_8proc");
    ck_assert_str_eq(run, "/home/u/job/runs/phase2a_8proc");
    setenv("RYZEN_RUN_ROOT", "/scratch/r", 1);
    ck_assert(step_run_dir(run, sizeof run, &env, "x.yml", phase, sizeof phase));
    ck_assert_str_eq(run, "/scratch/r/x");
    setenv("RYZEN_ROLLBACK_OF", "77", 1); /* a rollback lineage never shares checkpoints */
    ck_assert(step_run_dir(run, sizeof run, &env, "x.yml", phase, sizeof phase));
    ck_assert_str_eq(run, "/scratch/r/x/rollback-77");
    unsetenv("RYZEN_ROLLBACK_OF");
    unsetenv("RYZEN_RUN_ROOT");
    ck_assert(!step_run_dir(run, 8, &env, "configs/phase1_4proc.yaml", phase, sizeof phase));
}
END_TEST

START_TEST(argv_runs_without_a_shell)
{
    struct step_argv v = {0};
    char marker[256];
    snprintf(marker, sizeof marker, "%s/it ran; $(echo not-a-shell)", dir);
    const char *args[] = {"touch", marker};
    for (size_t i = 0; i < 2; i++)
        ck_assert_int_eq(step_argv_add(&v, args[i], NULL), RZ_OK);
    char shown[512];
    step_argv_format(&v, shown, sizeof shown);
    ck_assert_ptr_nonnull(strstr(shown, "touch '"));
    ck_assert_int_eq(step_run(&v, NULL), 0);
    ck_assert_int_eq(access(marker, F_OK), 0); /* the odd name was one argument, unexpanded */
    step_argv_free(&v);
    struct step_argv f = {0};
    ck_assert_int_eq(step_argv_add(&f, "false", NULL), RZ_OK);
    ck_assert_int_eq(step_run(&f, NULL), 1);
    step_argv_free(&f);
}
END_TEST

START_TEST(missing_program_is_reported)
{
    struct step_argv v = {0};
    struct rz_err e;
    ck_assert_int_eq(step_argv_add(&v, "/nonexistent/srun", NULL), RZ_OK);
    ck_assert_int_eq(step_run(&v, &e), -1);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/srun"));
    step_argv_free(&v);
}
END_TEST

START_TEST(unwritable_run_dir_is_an_io_error)
{
    struct step_env env;
    memset(&env, 0, sizeof env);
    struct step_events *ev = NULL;
    struct rz_err e;
    ck_assert_int_eq(step_events_open(&ev, "/proc/self/rz-no", &env, "p", NULL, &e), RZ_EIO);
    ck_assert_ptr_null(ev);
}
END_TEST

static Suite *step_suite(void)
{
    Suite *s = suite_create("step");
    TCase *core = tcase_create("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, exit_status_policy);
    tcase_add_test(core, preflight_status_policy);
    tcase_add_test(core, events_are_json_lines_and_count_failures);
    tcase_add_test(core, run_dir_from_submit_dir_and_phase);
    tcase_add_test(core, argv_runs_without_a_shell);
    suite_add_tcase(s, core);
    TCase *errors = tcase_create("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, missing_program_is_reported);
    tcase_add_test(errors, unwritable_run_dir_is_an_io_error);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(step_suite());
}
