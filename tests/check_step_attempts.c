/* check_step_attempts: whole attempts of ryzen-step through step_world.c's scripted command
 * runner, in check_step's "core" test case (check_step.c builds the suite): promotion with the
 * job's flags, rollback that cancels only its own lineage's jobs, a diverged run, requeue on a
 * time-limit warning and never on scancel, crashes that spend the budget then give up with a
 * report, Young/Daly with the observed MTBF, hold, a busy run directory, a signal that disagrees
 * with the config, a node excluded after the preflight, a preflight that hangs, and what counts
 * as no progress. */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "step/step_internal.h"
#include "testutil.h"

#include "step_cases.h"
#include "step_world.h"

/* ---- whole attempts --------------------------------------------------------------------------------------- */

/* GO: the next phase is submitted with this job's own flags, after it, in its lineage. */
START_TEST(go_promotes_with_the_jobs_flags)
{
    struct world w;
    world_init(&w, "RUNNING");
    w.env.sbatch_dir[0] = '\0'; /* the next template is found beside the running one */
    step(&w, preflight_ok);
    step(&w, ranks(0, 0, 20));
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(&w), 0);
    const char *srun = call(&w.f, "srun");
    ck_assert_ptr_nonnull(srun);
    ck_assert_msg(has(srun, "srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task=2 "
                  "--cpu-bind=cores ryzen-train --config "), "%s", srun);
    const char *sb = call(&w.f, "sbatch");
    ck_assert_ptr_nonnull(sb);
    char want[2048];
    snprintf(want, sizeof want, "sbatch --parsable --partition=batch --account=ml --qos=normal "
             "--time=00:30:00 --mem=512M --cpus-per-task=2 --reservation=train "
             "--constraint=avx512 --exclude=n4 --mail-type=END,FAIL --mail-user=rz@example.org "
             "--dependency=afterok:100 /site/share/ryzen-llm/sbatch/p2.sh --lineage 100");
    ck_assert_msg(strcmp(sb, want) == 0, "%s", sb);
    const char *c = call(&w.f, "scontrol update JobId=100 Comment=p1: GO");
    ck_assert_ptr_nonnull(c);
    char *ev = events_of(&w);
    ck_assert(has(ev, "\"event\":\"promote\"") && has(ev, "\"next_job\":\"101\""));
    ck_assert(has(ev, "\"lineage\":\"100\""));
    free(ev);
    /* the run directory is free again */
    char path[600];
    snprintf(path, sizeof path, "%s/owner", w.rd);
    ck_assert_int_ne(access(path, F_OK), 0);
    world_free(&w);
}
END_TEST

/* A GO phase (preflight, training, promotion) launched with the job's SLURM_PMIX_FENCE
 * (NULL: unset) and srun plugin. */
static void go_phase(struct world *w, const char *fence, const char *mpi)
{
    world_init(w, "RUNNING");
    w->env.sbatch_dir[0] = '\0';
    /* a run root of its own: the phase before left a finished run in the default one */
    snprintf(w->env.run_root, sizeof w->env.run_root, "%s/runs-%s-%s", dir, fence ? fence : "-",
             mpi);
    snprintf(w->rd, sizeof w->rd, "%s/runs-%s-%s/p1", dir, fence ? fence : "-", mpi);
    snprintf(w->f.run_dir, sizeof w->f.run_dir, "%s", w->rd);
    snprintf(w->env.pmix_fence, sizeof w->env.pmix_fence, "%s", fence ? fence : "");
    snprintf(w->env.srun_mpi, sizeof w->env.srun_mpi, "%s", mpi);
    step(w, preflight_ok);
    step(w, ranks(0, 0, 20));
    rule(&w->f, "ryzen-gate", 0, "", 0);
    rule(&w->f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(w), 0);
    ck_assert_msg(w->f.next_step == 2, "%s/%s: %d steps", fence ? fence : "-", mpi, w->f.next_step);
}

/* Every srun --mpi=pmix gets SLURM_PMIX_FENCE=ring, so that Slurm's PMIx plugin runs MPI_Init's
 * closing fence as a barrier (its default tree let a node out before another had entered it:
 * tools/pmix-fences); the launch event says so.  A job that set SLURM_PMIX_FENCE itself keeps
 * its choice, and an srun with another plugin gets nothing. */
START_TEST(every_pmix_fence_runs_as_a_ring)
{
    struct world w;
    go_phase(&w, NULL, "pmix");
    for (int k = 0; k < 2; k++)
        ck_assert_msg(strcmp(w.f.launch_env[k], "SLURM_PMIX_FENCE=ring") == 0, "launch %d: '%s'", k,
                      w.f.launch_env[k]);
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "launching: SLURM_PMIX_FENCE=ring srun --mpi=pmix "), "%s", ev);
    free(ev);
    world_free(&w);

    go_phase(&w, "tree", "pmix");
    ck_assert_str_eq(w.f.launch_env[0], "");
    ck_assert_str_eq(w.f.launch_env[1], "");
    world_free(&w);

    go_phase(&w, NULL, "pmi2");
    ck_assert_str_eq(w.f.launch_env[1], "");
    ck_assert_msg(has(call(&w.f, "srun"), "srun --mpi=pmi2 "), "%s", call(&w.f, "srun"));
    world_free(&w);
}
END_TEST

/* NO-GO: cancel only this lineage's pending jobs (never by name, never another user's), then
 * roll back with the checkpoint path as an argument (a comma in it arrives intact). */
START_TEST(no_go_rolls_back_and_cancels_only_its_own_jobs)
{
    struct world w;
    world_init(&w, "RUNNING");
    w.args.lineage = "90";
    step(&w, preflight_ok);
    step(&w, ranks(0, 0, 20));
    /* an earlier attempt of this lineage promoted job 101 (still pending); another lineage
     * promoted 777 */
    char path[700], ck[700];
    snprintf(path, sizeof path, "%s/events.jsonl", w.rd);
    write_file(path, "{\"job\":\"100\",\"lineage\":\"90\",\"event\":\"promote\",\"next_job\":\"101\"}\n"
               "{\"job\":\"555\",\"lineage\":\"555\",\"event\":\"promote\",\"next_job\":\"777\"}\n");
    snprintf(ck, sizeof ck, "%s/checkpoints/step-00000010.h5", w.rd);
    save_checkpoint(w.rd, 10);
    snprintf(path, sizeof path, "%s/reports/100/report.json", w.rd);
    char report[1024];
    snprintf(report, sizeof report, "{\"phase\":\"phase1\",\"job\":\"100\",\"world_size\":4,"
             "\"verdict\":\"NO-GO\",\"rollback_checkpoint\":"
             "{\"path\":\"%s\"}}\n", ck);
    write_file(path, report);
    rule(&w.f, "ryzen-gate", 1, "", 0);
    rule(&w.f, "squeue --me --noheader --states=PENDING --format=%i --jobs 101", 0, "101\n", 0);
    rule(&w.f, "sbatch", 0, "102\n", 0);
    ck_assert_int_eq(run(&w), 1);
    ck_assert_int_eq(count_calls(&w.f, "scancel"), 1);
    ck_assert_ptr_nonnull(call(&w.f, "scancel 101"));
    ck_assert_ptr_null(call(&w.f, "squeue --me --noheader --states=PENDING --format=%i --jobs 777"));
    const char *sb = call(&w.f, "sbatch");
    ck_assert_ptr_nonnull(sb);
    char want[1500];
    snprintf(want, sizeof want, "%s/site/sbatch/p0.sh --lineage 90 --rollback-of 100 "
             "--resume-from %s", dir, ck);
    ck_assert_msg(has(sb, want), "%s", sb);
    ck_assert(!has(sb, "--export"));
    ck_assert(!has(sb, "--dependency"));
    char *ev = events_of(&w);
    ck_assert(has(ev, "\"event\":\"rollback\"") && has(ev, "\"new_job\":\"102\""));
    free(ev);
    world_free(&w);
}
END_TEST

/* A rollback whose checkpoint is already at the end of the previous phase's schedule would
 * train nothing: it is not submitted, and the events say why. */
START_TEST(a_rollback_with_nothing_to_train_is_not_submitted)
{
    struct world w;
    world_init(&w, "RUNNING");
    step(&w, preflight_ok);
    step(&w, ranks(0, 0, 40));
    char path[700], ck[700], report[1024];
    snprintf(ck, sizeof ck, "%s/checkpoints/step-00000040.h5", w.rd);
    snprintf(path, sizeof path, "%s/reports/100/report.json", w.rd);
    snprintf(report, sizeof report, "{\"phase\":\"phase1\",\"job\":\"100\",\"world_size\":4,"
             "\"rollback_checkpoint\":{\"path\":\"%s\"}}\n", ck);
    write_file(path, report);
    rule(&w.f, "ryzen-gate", 1, "", 0);
    ck_assert_int_eq(run(&w), 1);
    ck_assert_ptr_null(call(&w.f, "sbatch"));
    char *ev = events_of(&w);
    ck_assert(has(ev, "\"event\":\"rollback_skipped\"") && has(ev, "a rollback would train nothing"));
    free(ev);
    world_free(&w);
}
END_TEST

/* The loss guard stopped the run: a NO-GO report (ended diverged), then the NO-GO policy rolls
 * back from the last good checkpoint; no requeue. */
START_TEST(a_diverged_run_rolls_back)
{
    struct world w;
    world_init(&w, "RUNNING");
    step(&w, preflight_ok);
    struct fake_step s = ranks(70, 70, 0);
    s.end_reason = "diverged";
    s.message = "loss guard: 5 skipped steps in 50";
    step(&w, s);
    char path[700], ck[700], report[1024];
    save_checkpoint(w.rd, 10);
    snprintf(ck, sizeof ck, "%s/checkpoints/step-00000010.h5", w.rd);
    snprintf(path, sizeof path, "%s/reports/100/report.json", w.rd);
    snprintf(report, sizeof report, "{\"phase\":\"phase1\",\"job\":\"100\",\"world_size\":4,"
             "\"rollback_checkpoint\":{\"path\":\"%s\"}}\n", ck);
    write_file(path, report);
    rule(&w.f, "ryzen-gate", 1, "", 0);
    rule(&w.f, "sbatch", 0, "102\n", 0);
    ck_assert_int_eq(run(&w), 70);
    ck_assert_ptr_null(call(&w.f, "scontrol requeue"));
    assert_gate_ran_with(&w.f, "--ended diverged");
    const char *sb = call(&w.f, "sbatch");
    ck_assert_ptr_nonnull(sb);
    ck_assert_msg(has(sb, "/site/sbatch/p0.sh --lineage 100 --rollback-of 100 --resume-from "), "%s", sb);
    char *ev = events_of(&w);
    ck_assert(has(ev, "\"class\":\"diverged\"") && has(ev, "loss guard: 5 skipped"));
    free(ev);
    world_free(&w);
}
END_TEST

/* A crash within the budget requeues; with the budget spent: a NO-GO report that says why. */
/* A crash after the last checkpoint, relaunched in the allocation: the phase is done (the
 * relaunch finds the last step committed by an earlier attempt of this job), not "nothing to
 * train". */
START_TEST(a_relaunch_after_the_last_checkpoint_finishes_the_phase)
{
    struct world w;
    world_init(&w, "RUNNING");
    p1_restart("  failures: relaunch\n");
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 137, .ranks_recorded = 0, .ckpt_step = 20});
    step(&w, preflight_ok);
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(&w), 0);
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"relaunch\"") &&
                  has(ev, "training finished in an earlier attempt of this job"), "%s", ev);
    ck_assert_msg(!has(ev, "nothing_to_train"), "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

/* checkpoint.policy young_daly without an MTBF: the job's own failures so far give one, from its
 * first start to its last attempt's end (two failures in 1200 s: 600 s), passed to the trainer;
 * with no failure, or with an MTBF of the config's own, nothing is added. */
START_TEST(young_daly_gets_the_observed_mtbf)
{
    struct world w;
    char path[700];
    const char *history =
        "{\"t\":1000,\"job\":\"100\",\"event\":\"start\"}\n"
        "{\"t\":1600,\"job\":\"100\",\"event\":\"attempt_end\",\"class\":\"crash\",\"progress\":1}\n"
        "{\"t\":1700,\"job\":\"100\",\"event\":\"start\"}\n"
        "{\"t\":2200,\"job\":\"100\",\"event\":\"attempt_end\",\"class\":\"hang\",\"progress\":1}\n"
        "{\"t\":2300,\"job\":\"100\",\"event\":\"attempt_end\",\"class\":\"signal\",\"progress\":1}\n";
    struct step_history h;
    snprintf(path, sizeof path, "%s/history.jsonl", dir);
    write_file(path, history);
    step_history_read(path, "100", &h);
    ck_assert_int_eq(h.failures, 2);
    ck_assert_double_eq_tol(step_observed_mtbf(&h), 650.0, 1e-9); /* (2300 - 1000) / 2 */
    step_history_read(path, "999", &h);
    ck_assert_double_eq(step_observed_mtbf(&h), 0.0);
    for (int own = 0; own <= 1; own++) {
        world_init(&w, "RUNNING");
        snprintf(path, sizeof path, "%s/site/configs/p1.yaml", dir);
        write_file(path, own ? "training:\n  steps: 20\ncheckpoint:\n  policy: young_daly\n"
                               "  mtbf_s: 7200\n"
                             : "training:\n  steps: 20\ncheckpoint:\n  policy: young_daly\n");
        snprintf(path, sizeof path, "%s/events.jsonl", w.rd);
        write_file(path, history);
        w.env.restart_count = 3;
        step(&w, preflight_ok);
        step(&w, ranks(0, 0, 20));
        rule(&w.f, "ryzen-gate", 0, "", 0);
        ck_assert_int_eq(run(&w), 0);
        const char *srun = call(&w.f, "srun");
        ck_assert_ptr_nonnull(srun);
        ck_assert_msg(own ? !has(srun, "checkpoint.mtbf_s=")
                          : has(srun, "--set checkpoint.mtbf_s=650.0 "), "%s", srun);
        char rd[sizeof w.rd];
        snprintf(rd, sizeof rd, "%s", w.rd);
        world_free(&w);
        rz_test_rmtree(rd);
    }
}
END_TEST

/* A preflight, the crash `crash`, then (relaunched in the allocation) a preflight and a training
 * to the end: the job finishes (0) without a requeue.  Returns the events (free them). */
static char *crash_then_finish(struct world *w, struct fake_step crash)
{
    step(w, preflight_ok);
    step(w, crash);
    step(w, preflight_ok);
    step(w, ranks(0, 0, 20));
    rule(&w->f, "ryzen-gate", 0, "", 0);
    rule(&w->f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(w), 0);
    ck_assert_ptr_null(call(&w->f, "scontrol requeue"));
    return events_of(w);
}

/* With no restart section, a crash is relaunched in the allocation (restart.failures relaunch,
 * the default), not requeued. */
START_TEST(by_default_a_crash_is_relaunched_in_the_allocation)
{
    struct world w;
    world_init(&w, "RUNNING");
    p1_defaults();
    char *ev = crash_then_finish(&w, (struct fake_step){.status = 137, .ckpt_step = 5});
    ck_assert_msg(has(ev, "\"event\":\"relaunch\"") && has(ev, "\"reason\":\"failure\"") &&
                  has(ev, "failure restart 1 of 3, restart.failures relaunch"), "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

START_TEST(crashes_spend_the_budget_then_give_up_with_a_report)
{
    struct world w;
    /* restart.failures requeue: a crash goes back through the queue */
    world_init(&w, "RUNNING");
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 137, .ranks_recorded = 0, .ckpt_step = 5});
    ck_assert_int_eq(run(&w), 75);
    ck_assert_ptr_nonnull(call(&w.f, "scontrol requeue 100"));
    char rd[sizeof w.rd];
    snprintf(rd, sizeof rd, "%s", w.rd);
    world_free(&w);
    rz_test_rmtree(rd); /* the next job's history starts empty */

    /* relaunch: each crash runs the preflight and the training again in this allocation,
     * never through the queue, until restart.max_restarts (3) is spent */
    world_init(&w, "RUNNING");
    p1_restart("  failures: relaunch\n");
    for (int i = 0; i < 4; i++) {
        step(&w, preflight_ok);
        step(&w, (struct fake_step){.status = 137, .ranks_recorded = 0, .ckpt_step = 2 * (i + 1)});
    }
    ck_assert_int_eq(run(&w), 76);
    ck_assert_ptr_null(call(&w.f, "scontrol requeue"));
    ck_assert_int_eq(w.f.next_step, 8); /* 4 preflights, 4 trainings: all of them ran */
    assert_gate_ran_with(&w.f, "--ended give_up --why the restart budget is spent (3 of 3");
    char *ev = events_of(&w);
    const char *p = ev;
    int relaunches = 0;
    while ((p = strstr(p, "\"event\":\"relaunch\"")) != NULL) {
        relaunches++;
        p++;
    }
    ck_assert_msg(relaunches == 3, "%d relaunches: %s", relaunches, ev);
    ck_assert_msg(has(ev, "failure restart 3 of 3, restart.failures relaunch"), "%s", ev);
    free(ev);
    world_free(&w);

    world_init(&w, "RUNNING");
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 137, .ckpt_step = 10});
    char path[700];
    snprintf(path, sizeof path, "%s/events.jsonl", w.rd);
    write_file(path, "{\"job\":\"100\",\"event\":\"requeue\",\"reason\":\"failure\"}\n"
               "{\"job\":\"100\",\"event\":\"requeue\",\"reason\":\"failure\"}\n"
               "{\"job\":\"100\",\"event\":\"requeue\",\"reason\":\"failure\"}\n");
    ck_assert_int_eq(run(&w), 76);
    ck_assert_ptr_null(call(&w.f, "scontrol requeue"));
    assert_gate_ran_with(&w.f, "--ended give_up --why the restart budget is spent (3 of 3");
    ck_assert_ptr_nonnull(call(&w.f, "scontrol update JobId=100 Comment=p1: NO-GO (give_up)"));
    world_free(&w);
}
END_TEST

/* scancel: the trainer checkpoints on the forwarded signal, and nothing is requeued. */
START_TEST(scancel_is_never_requeued)
{
    struct world w;
    world_init(&w, "RUNNING");
    w.f.rules[0].times = 1; /* RUNNING at the start, then CANCELLED */
    rule(&w.f, "scontrol show job -o 100", 0, JOB_LINE("CANCELLED", ""), 0);
    step(&w, preflight_ok);
    struct fake_step s = ranks(75, 75, 12);
    s.signal = SIGTERM;
    step(&w, s);
    ck_assert_int_eq(run(&w), 0);
    ck_assert_ptr_nonnull(call(&w.f, "wait 1 forward 12")); /* the trainer got the stop signal */
    ck_assert_ptr_null(call(&w.f, "scontrol requeue"));
    ck_assert_ptr_null(call(&w.f, "ryzen-gate"));
    char *ev = events_of(&w);
    ck_assert(has(ev, "\"event\":\"cancelled\""));
    ck_assert(has(ev, "\"progress\":1")); /* the checkpoint on the way out was made */
    free(ev);
    world_free(&w);
}
END_TEST

/* The time-limit warning: checkpoint, requeue (its own cap); the stop signal is forwarded. */
START_TEST(time_limit_warning_requeues)
{
    struct world w;
    world_init(&w, "RUNNING");
    w.f.rules[0].times = 1; /* an hour left at the start; 100 s left (the warning) at the end */
    rule(&w.f, "scontrol show job -o 100", 0, job_line("RUNNING", NOW + 100, ""), 0);
    step(&w, preflight_ok);
    struct fake_step s = ranks(75, 75, 12);
    s.signal = SIGUSR2;
    step(&w, s);
    ck_assert_int_eq(run(&w), 75);
    ck_assert_ptr_nonnull(call(&w.f, "wait 1 forward 12")); /* SIGUSR2 went to the step */
    ck_assert_ptr_nonnull(call(&w.f, "scontrol requeue 100"));
    char *ev = events_of(&w);
    ck_assert(has(ev, "\"reason\":\"time_limit\""));
    free(ev);
    world_free(&w);
}
END_TEST

/* The template ignores stop signals until ryzen-step runs: a job that starts inside its warning
 * window (the warning came, or comes at once) stops before training; so does a preemption. */
START_TEST(a_start_inside_the_warning_window_does_not_train)
{
    struct world w;
    world_init(&w, "RUNNING");
    w.f.rules[0].out = job_line("RUNNING", NOW + 100, ""); /* lead 120 s */
    ck_assert_int_eq(run(&w), 75);
    ck_assert_ptr_null(call(&w.f, "srun"));
    ck_assert_ptr_nonnull(call(&w.f, "scontrol requeue 100"));
    char *ev = events_of(&w);
    ck_assert(has(ev, "\"event\":\"stop_before_training\"") && has(ev, "(time limit)"));
    free(ev);
    world_free(&w);
    char root[128];
    snprintf(root, sizeof root, "%s/runs,a", dir);
    rz_test_rmtree(root); /* a new job's history */
    world_init(&w, "RUNNING");
    w.f.rules[0].out = JOB_LINE("RUNNING", "PreemptTime=2026-11-22T10:05:00");
    ck_assert_int_eq(run(&w), 75);
    ck_assert_ptr_null(call(&w.f, "srun"));
    ck_assert_ptr_nonnull(call(&w.f, "scontrol requeue 100")); /* ours: exiting ends the job */
    ev = events_of(&w);
    ck_assert(has(ev, "\"reason\":\"preemption\""));
    free(ev);
    world_free(&w);
}
END_TEST

START_TEST(a_busy_run_directory_is_refused)
{
    struct world w;
    world_init(&w, "RUNNING");
    char path[700];
    snprintf(path, sizeof path, "%s/owner", w.rd);
    write_file(path, "99\n");
    rule(&w.f, "scontrol show job -o 99", 0, "JobId=99 JobState=RUNNING\n", 0);
    ck_assert_int_eq(run(&w), 64);
    ck_assert_ptr_null(call(&w.f, "srun"));
    ck_assert_ptr_null(call(&w.f, "scontrol requeue"));
    char *ev = events_of(&w);
    ck_assert(has(ev, "\"event\":\"run_dir_busy\"") && has(ev, "belongs to job 99"));
    free(ev);
    char *text = slurp(path);
    ck_assert_str_eq(text, "99\n"); /* still the other job's */
    free(text);
    world_free(&w);
}
END_TEST

START_TEST(a_signal_that_disagrees_with_the_config_is_an_error_at_start)
{
    struct world w;
    world_init(&w, "RUNNING");
    w.f.rules[1].out = "sbatch --signal=B:USR1@60 p1.sh\n"; /* health.stop_signal is USR2 */
    ck_assert_int_eq(run(&w), 64);
    ck_assert_ptr_null(call(&w.f, "srun"));
    char *ev = events_of(&w);
    ck_assert(has(ev, "\"event\":\"signal_mismatch\"") && has(ev, "sends SIGUSR1"));
    free(ev);
    world_free(&w);
}
END_TEST


/* A stop before the step ran: no training, a clean requeue; the second attempt in a row without a
 * checkpoint ends FAILED (exit 1) with a NO-GO report (e.g. --time shorter than the signal lead),
 * or, with restart.when_stuck hold, is held with that report. */
START_TEST(a_stop_before_training_requeues_cleanly_then_gives_up)
{
    for (int hold = 0; hold <= 1; hold++) {
        struct world w;
        world_init(&w, "RUNNING");
        if (hold)
            p1_holds_when_stuck();
        step_signals_note(SIGUSR2);
        ck_assert_int_eq(run(&w), 75);
        ck_assert_ptr_null(call(&w.f, "srun"));
        ck_assert_ptr_nonnull(call(&w.f, "scontrol requeue 100"));
        world_free(&w);
        world_init(&w, "RUNNING"); /* the next attempt, same directory, signal again */
        if (hold)
            p1_holds_when_stuck();
        ck_assert_int_eq(run(&w), hold ? 75 : 1);
        ck_assert(hold == (call(&w.f, "scontrol requeuehold 100") != NULL));
        assert_gate_ran_with(&w.f, "--ended no_progress");
        char *ev = events_of(&w);
        ck_assert_msg(has(ev, "\"event\":\"no_progress\""), "%s", ev);
        free(ev);
        char rd[sizeof w.rd];
        snprintf(rd, sizeof rd, "%s", w.rd);
        world_free(&w);
        rz_test_rmtree(rd); /* the next round starts without this one's events */
    }
}
END_TEST

/* A node that fails the preflight for a reason of its own is excluded from the next attempt:
 * requeuehold, update, release; a failure of the job's own settings (no failed host) is a NO-GO
 * (health) report and exit 70; refused input (exit 64) an ended (config) report and exit 64. */
START_TEST(a_node_that_fails_the_preflight_is_excluded)
{
    struct world w;
    world_init(&w, "RUNNING");
    step(&w, (struct fake_step){.status = 70, .ranks_recorded = 8, .record_status = 70,
                                .health = "{\"ok\":false,\"hosts\":[\"n1\",\"n2\"],"
                                          "\"failed_hosts\":[\"n2\"],\"ranks\":[]}\n"});
    ck_assert_int_eq(run(&w), 75);
    ck_assert_ptr_nonnull(call(&w.f, "scontrol requeuehold 100"));
    ck_assert_ptr_nonnull(call(&w.f, "scontrol update JobId=100 ExcNodeList=n4,n2"));
    ck_assert_ptr_nonnull(call(&w.f, "scontrol release 100"));
    world_free(&w);
    world_init(&w, "RUNNING");
    step(&w, (struct fake_step){.status = 70, .ranks_recorded = 4, .record_status = 70,
                                .health = "{\"ok\":false,\"hosts\":[\"n1\"],"
                                          "\"failed_hosts\":[],\"ranks\":[]}\n"});
    ck_assert_int_eq(run(&w), 70);
    ck_assert_ptr_null(call(&w.f, "scontrol requeue"));
    assert_gate_ran_with(&w.f, "--ended health");
    world_free(&w);
    /* the data check refused a changed shard (exit 64): the input, not a node, so no exclusion */
    world_init(&w, "RUNNING");
    step(&w, (struct fake_step){.status = 64, .ranks_recorded = 4, .record_status = 64,
                                .health = "{\"ok\":false,\"hosts\":[\"n1\",\"n2\"],"
                                          "\"failed_hosts\":[\"n2\"],\"ranks\":[]}\n"});
    ck_assert_int_eq(run(&w), 64);
    ck_assert_ptr_null(call(&w.f, "scontrol requeue"));
    ck_assert_ptr_null(call(&w.f, "scontrol update JobId=100 ExcNodeList"));
    assert_gate_ran_with(&w.f, "--ended config");
    world_free(&w);
}
END_TEST

/* A preflight that hangs (an MPI start-up that never completes) is ended at
 * health.preflight_timeout_s and launched again; the training's wait is limited only until its
 * ranks are up (health.start_timeout_s; then the trainer's watchdog watches).  Three that hang
 * end the attempt as a crash, with the watchdog's status, and it is restarted per
 * restart.failures. */
START_TEST(a_preflight_that_hangs_is_ended_and_launched_again)
{
    struct world w;
    char want[96];
    world_init(&w, "RUNNING");
    p1_health("  preflight_timeout_s: 45\n");
    step(&w, (struct fake_step){.hangs = true});
    step(&w, preflight_ok);
    step(&w, ranks(0, 0, 20));
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(&w), 0);
    for (int h = 0; h < 2; h++) {
        snprintf(want, sizeof want, "wait %d forward %d timeout 45", h, SIGCONT);
        ck_assert_msg(call(&w.f, want) != NULL, "no '%s'", want);
    }
    snprintf(want, sizeof want, "wait 2 forward %d timeout 120 until up", SIGUSR2);
    ck_assert_msg(call(&w.f, want) != NULL, "no '%s'", want);
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"preflight_timeout\"") &&
                  has(ev, "past health.preflight_timeout_s = 45 s (attempt 1 of 3)") &&
                  has(ev, "\"event\":\"preflight_retry\"") &&
                  has(ev, "the launch hung and was ended with status 76 before the trainer "
                          "answered (attempt 1 of 3)"), "%s", ev);
    free(ev);
    world_free(&w);

    world_init(&w, "RUNNING");
    for (int i = 0; i < 3; i++)
        step(&w, (struct fake_step){.hangs = true});
    ck_assert_int_eq(run(&w), 75);
    ck_assert_int_eq(w.f.next_step, 3); /* no training was launched */
    ck_assert_ptr_nonnull(call(&w.f, "scontrol requeue 100"));
    snprintf(want, sizeof want, "wait 2 forward %d timeout 120", SIGCONT); /* the default */
    ck_assert_msg(call(&w.f, want) != NULL, "no '%s'", want);
    ev = events_of(&w);
    ck_assert_msg(has(ev, "(attempt 3 of 3)") && has(ev, "\"status\":76"), "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

/* A training step whose MPI start-up hangs (2 of its 4 ranks never start their watchdog) is
 * ended at health.start_timeout_s, named, and counted as a hang: restarted per restart.failures
 * (here relaunched in the allocation).  The heartbeat files an earlier step left are removed
 * before the launch, so they never pass for this step's ranks; a step whose ranks are all up
 * has no limit left. */
START_TEST(a_training_start_that_hangs_is_ended_and_restarted)
{
    struct world w;
    char want[96], hb[1400];
    world_init(&w, "RUNNING");
    p1_sections("  failures: relaunch\n", "  start_timeout_s: 50\n");
    for (int k = 0; k < 4; k++) { /* an earlier step's heartbeats */
        snprintf(hb, sizeof hb, "%s/health", w.f.run_dir);
        mkdir(hb, 0755);
        snprintf(hb, sizeof hb, "%s/health/rank-%05d.hb", w.f.run_dir, k);
        write_file(hb, "step 7 sync 5 pid 1 wall 0\n");
    }
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.hangs = true, .up = 2});
    step(&w, preflight_ok);
    struct fake_step done = ranks(0, 0, 20);
    done.up = 4;
    step(&w, done);
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(&w), 0);
    snprintf(want, sizeof want, "wait 1 forward %d timeout 50 until up", SIGUSR2);
    ck_assert_msg(call(&w.f, want) != NULL && call(&w.f, "wait 1 forward") == call(&w.f, want),
                  "no '%s'", want);
    snprintf(want, sizeof want, "wait 3 forward %d timeout 50 until up: up", SIGUSR2);
    ck_assert_msg(call(&w.f, want) != NULL, "no '%s'", want);
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"start_timeout\"") &&
                  has(ev, "past health.start_timeout_s = 50 s and was ended: 2 of 4 rank(s) "
                          "never started their watchdog (not started: rank 2 rank 3)") &&
                  has(ev, "\"event\":\"relaunch\"") && has(ev, "\"class\":\"hang\""),
                  "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

/* The attempt before excluded a node its preflight failed (no checkpoint, an exclusion requeue):
 * a crash of this attempt before its first checkpoint is requeued on the failure budget, not
 * held as "two attempts without progress" (seen on a fresh clone's CI: the phase2b after a slow
 * link's exclusion lost a rank to a signal and was held); a second exclusion in a row is held. */
/* An attempt stopped from outside (here Slurm requeued the job during its preflight: a node
 * stopped answering) is not "the same again": the crash after it, with no checkpoint either,
 * is restarted on the failure budget, not given up as no_progress (measured on net.sh's ladder:
 * phase2b given up so, where a plain restart finished).  Two crashes in a row still are. */
START_TEST(a_stop_from_outside_does_not_count_as_no_progress)
{
    struct world w;
    char path[700];
    const char *before =
        "{\"time\":\"x\",\"t\":1,\"job\":\"100\",\"restart\":0,\"event\":\"attempt_end\","
        "\"message\":\"\",\"status\":75,\"class\":\"signal\",\"cause\":\"requeued\","
        "\"progress\":0}\n";
    world_init(&w, "RUNNING");
    w.env.restart_count = 1;
    snprintf(path, sizeof path, "%s/events.jsonl", w.rd);
    write_file(path, before);
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 139, .ranks_recorded = 0});
    ck_assert_int_eq(run(&w), 75);
    ck_assert_ptr_nonnull(call(&w.f, "scontrol requeue 100"));
    char *ev = events_of(&w);
    ck_assert_msg(!has(ev, "no_progress"), "%s", w.log);
    struct step_history h;
    step_history_read(path, "100", &h);
    ck_assert_int_eq(h.no_progress_run, 1); /* the crash counts; the requeue before it did not */
    free(ev);
    char rd[sizeof w.rd];
    snprintf(rd, sizeof rd, "%s", w.rd);
    world_free(&w);
    rz_test_rmtree(rd);
    /* the same with a crash before: given up */
    world_init(&w, "RUNNING");
    w.env.restart_count = 1;
    write_file(path, "{\"time\":\"x\",\"t\":1,\"job\":\"100\",\"restart\":0,\"event\":"
               "\"attempt_end\",\"message\":\"\",\"status\":139,\"class\":\"crash\","
               "\"cause\":\"none\",\"progress\":0}\n");
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 139, .ranks_recorded = 0});
    ck_assert_int_eq(run(&w), 1);
    ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"no_progress\""), "%s", w.log);
    free(ev);
    world_free(&w);
}
END_TEST

/* The live textfile: restarts and down time by reason, from the events (an attempt's end to
 * the next training launch), the restart launching now included. */
START_TEST(restarts_and_down_time_live)
{
    struct world w;
    char path[700];
    world_init(&w, "RUNNING");
    w.env.restart_count = 1;
    snprintf(path, sizeof path, "%s/events.jsonl", w.rd);
    /* an earlier attempt: ended at NOW-100, requeued (failure), trained again at NOW-70, ended
     * at NOW-40 and requeued by Slurm: down 30 s for a failure, and 40 s (to this launch) */
    char text[2048];
    snprintf(text, sizeof text,
             "{\"job\":\"100\",\"t\":%.0f,\"event\":\"attempt_end\",\"progress\":1}\n"
             "{\"job\":\"100\",\"t\":%.0f,\"event\":\"requeue\",\"reason\":\"failure\"}\n"
             "{\"job\":\"100\",\"t\":%.0f,\"event\":\"train_start\"}\n"
             "{\"job\":\"100\",\"t\":%.0f,\"event\":\"attempt_end\",\"progress\":1}\n"
             "{\"job\":\"100\",\"t\":%.0f,\"event\":\"requeue\",\"reason\":\"slurm\"}\n",
             NOW - 100, NOW - 99, NOW - 70, NOW - 40, NOW - 39);
    write_file(path, text);
    struct step_history h;
    step_history_read(path, "100", &h);
    ck_assert_double_eq_tol(h.down_s[EVENT_RQ_FAILURE], 30.0, 1e-9);
    ck_assert_int_eq(h.pending_reason, EVENT_RQ_SLURM);
    step(&w, preflight_ok);
    step(&w, ranks(0, 0, 20));
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(&w), 0);
    snprintf(path, sizeof path, "%s/prom/ryzen-100-step.prom", w.rd);
    char *prom = slurp(path);
    ck_assert_msg(prom != NULL, "no %s: %s", path, w.log);
    ck_assert_msg(has(prom, "# TYPE ryzen_step_restarts_total counter\n") &&
                  has(prom, "ryzen_step_restarts_total{slurm_job_id=\"100\",phase=\"p1\","
                            "reason=\"failure\"} 1\n") &&
                  has(prom, "ryzen_step_down_seconds_total{slurm_job_id=\"100\",phase=\"p1\","
                            "reason=\"failure\"} 30\n") &&
                  has(prom, "ryzen_step_down_seconds_total{slurm_job_id=\"100\",phase=\"p1\","
                            "reason=\"slurm\"} 40\n"), "%s", prom);
    free(prom);
    char rd[sizeof w.rd];
    snprintf(rd, sizeof rd, "%s", w.rd);
    world_free(&w);
    rz_test_rmtree(rd); /* the next job starts without this one's checkpoint */
    /* a directory it cannot write: said once in the job output, and the job goes on */
    world_init(&w, "RUNNING");
    snprintf(path, sizeof path, "%s/site/configs/p1.yaml", dir);
    write_file(path, "training:\n  steps: 20\nphase:\n  previous: \"p0\"\n  next: \"p2\"\n"
                     "metrics:\n  prom_dir: /proc/rz-no-such-dir\n");
    step(&w, preflight_ok);
    step(&w, ranks(0, 0, 20));
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(&w), 0);
    ck_assert_msg(has(w.log, "warning: live metrics not written") &&
                  has(w.log, "/proc/rz-no-such-dir"), "%s", w.log);
    world_free(&w);
}
END_TEST

START_TEST(an_exclusion_does_not_count_as_no_progress)
{
    struct world w;
    char path[700];
    const char *before =
        "{\"time\":\"x\",\"t\":1,\"job\":\"100\",\"restart\":0,\"event\":\"attempt_end\","
        "\"message\":\"\",\"status\":70,\"class\":\"health\",\"progress\":0}\n"
        "{\"time\":\"x\",\"t\":2,\"job\":\"100\",\"restart\":0,\"event\":\"requeue\","
        "\"message\":\"\",\"reason\":\"preflight_node\",\"excluded_nodes\":\"n3\"}\n";
    world_init(&w, "RUNNING");
    p1_restart("  failures: relaunch\n");
    w.env.restart_count = 1;
    snprintf(path, sizeof path, "%s/events.jsonl", w.rd);
    write_file(path, before);
    char *ev = crash_then_finish(&w, (struct fake_step){.status = 139});
    ck_assert_msg(has(ev, "\"event\":\"relaunch\"") && has(ev, "\"reason\":\"failure\"") &&
                  !has(ev, "no_progress"), "%s", ev);
    free(ev);
    world_free(&w);
    /* the preflight fails on another node right after an exclusion: the job gives up (FAILED) */
    world_init(&w, "RUNNING");
    w.env.restart_count = 1;
    write_file(path, before);
    step(&w, (struct fake_step){.status = 70, .ranks_recorded = 8, .record_status = 70,
                                .health = "{\"ok\":false,\"hosts\":[\"n1\",\"n2\"],"
                                          "\"failed_hosts\":[\"n2\"],\"ranks\":[]}\n"});
    rule(&w.f, "ryzen-gate", 0, "", 0);
    ck_assert_int_eq(run(&w), 1);
    ck_assert_ptr_null(call(&w.f, "scontrol requeuehold"));
    ck_assert_ptr_null(call(&w.f, "scontrol release"));
    ev = events_of(&w);
    ck_assert_msg(has(ev, "after an attempt that excluded nodes already"), "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

void step_attempts_tests(TCase *tc)
{
    tcase_add_test(tc, go_promotes_with_the_jobs_flags);
    tcase_add_test(tc, every_pmix_fence_runs_as_a_ring);
    tcase_add_test(tc, no_go_rolls_back_and_cancels_only_its_own_jobs);
    tcase_add_test(tc, a_rollback_with_nothing_to_train_is_not_submitted);
    tcase_add_test(tc, a_diverged_run_rolls_back);
    tcase_add_test(tc, crashes_spend_the_budget_then_give_up_with_a_report);
    tcase_add_test(tc, young_daly_gets_the_observed_mtbf);
    tcase_add_test(tc, a_relaunch_after_the_last_checkpoint_finishes_the_phase);
    tcase_add_test(tc, by_default_a_crash_is_relaunched_in_the_allocation);
    tcase_add_test(tc, scancel_is_never_requeued);
    tcase_add_test(tc, time_limit_warning_requeues);
    tcase_add_test(tc, a_start_inside_the_warning_window_does_not_train);
    tcase_add_test(tc, a_busy_run_directory_is_refused);
    tcase_add_test(tc, a_signal_that_disagrees_with_the_config_is_an_error_at_start);
    tcase_add_test(tc, a_stop_before_training_requeues_cleanly_then_gives_up);
    tcase_add_test(tc, a_node_that_fails_the_preflight_is_excluded);
    tcase_add_test(tc, a_preflight_that_hangs_is_ended_and_launched_again);
    tcase_add_test(tc, a_training_start_that_hangs_is_ended_and_restarted);
    tcase_add_test(tc, an_exclusion_does_not_count_as_no_progress);
    tcase_add_test(tc, a_stop_from_outside_does_not_count_as_no_progress);
    tcase_add_test(tc, restarts_and_down_time_live);
}
