/* check_step: ryzen-step's library without Slurm: parsing what Slurm says, the job's own flags,
 * --signal, classifying an attempt from the ranks' exit records, the requeue policy and its
 * budgets, the event log read back, the run directory's owner, and inputs refused before srun.
 * The suite also runs whole attempts through a scripted command runner (check_step_attempts.c)
 * and a node lost (check_step_nodes.c), in its "core" test case (step_cases.h).  The real thing
 * runs in tests/slurm.sh and tests/chain.sh. */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "core/util.h"
#include "step/step_internal.h"
#include "testutil.h"

#include "step_cases.h"
#include "step_world.h"

static void setup(void) { rz_test_tmpdir(dir, sizeof dir, "step"); }
static void teardown(void) { rz_test_rmtree(dir); }

/* ---- what Slurm says ---------------------------------------------------------------------------- */

START_TEST(scontrol_show_job_is_parsed)
{
    struct slurm_job j;
    slurm_job_parse(JOB_LINE("RUNNING", ""), &j);
    ck_assert(j.found);
    ck_assert_str_eq(j.state, "RUNNING");
    ck_assert_str_eq(j.partition, "batch");
    ck_assert_str_eq(j.account, "ml");
    ck_assert_str_eq(j.qos, "normal");
    ck_assert_str_eq(j.time_limit, "00:30:00");
    ck_assert_int_eq(j.time_limit_s, 1800);
    ck_assert_int_eq(j.cpus_per_task, 2);
    ck_assert_str_eq(j.min_mem_node, "512M");
    ck_assert_str_eq(j.exc_nodes, "n4");
    ck_assert_str_eq(j.features, "avx512");
    ck_assert_str_eq(j.reservation, "train");
    ck_assert_str_eq(j.mail_user, "rz@example.org");
    ck_assert_str_eq(j.mail_type, "END,FAIL");
    ck_assert_str_eq(j.command, "/site/share/ryzen-llm/sbatch/p1.sh --set data.path=/data/x.bin");
    ck_assert_str_eq(j.comment, "p1: running (attempt 1)"); /* a value with spaces */
    ck_assert_str_eq(j.preempt_time, "");                   /* None reads as empty */
    ck_assert(j.end_epoch > 0.0);
    slurm_job_parse("", &j);
    ck_assert(!j.found);
    ck_assert_int_eq(slurm_parse_duration("1-02:03:04"), ((24 + 2) * 60 + 3) * 60 + 4);
    ck_assert_int_eq(slurm_parse_duration("02:03:04"), (2 * 60 + 3) * 60 + 4);
    ck_assert_int_eq(slurm_parse_duration("03:04"), 3 * 60 + 4);
    ck_assert_int_eq(slurm_parse_duration("UNLIMITED"), -1);
    ck_assert_int_eq(slurm_parse_duration("soon"), -1);
}
END_TEST

/* Partition, account, QOS, time, memory, CPUs per task, reservation, constraint, exclusions,
 * mail settings and an explicit --signal all travel to the next job. */
START_TEST(the_jobs_own_flags_travel)
{
    struct slurm_job j;
    struct step_argv v = {0};
    struct rz_err err;
    char text[2048];
    slurm_job_parse(JOB_LINE("RUNNING", ""), &j);
    ck_assert_int_eq(slurm_job_flags(&j, "--signal=B:USR1@60", &v, &err), RZ_OK);
    step_argv_format(&v, text, sizeof text);
    ck_assert_str_eq(text, "--partition=batch --account=ml --qos=normal --time=00:30:00 "
                     "--mem=512M --cpus-per-task=2 --reservation=train --constraint=avx512 "
                     "--exclude=n4 --mail-type=END,FAIL --mail-user=rz@example.org "
                     "--signal=B:USR1@60");
    step_argv_free(&v);
    /* --mem-per-cpu when there is no --mem; nothing for unset fields */
    slurm_job_parse("JobId=7 JobState=RUNNING Partition=debug Account=(null) QOS=(null) "
                    "TimeLimit=UNLIMITED MinMemoryNode=0 MinMemoryCPU=256M CPUs/Task=1", &j);
    ck_assert_int_eq(slurm_job_flags(&j, NULL, &v, &err), RZ_OK);
    step_argv_format(&v, text, sizeof text);
    ck_assert_str_eq(text, "--partition=debug --mem-per-cpu=256M --cpus-per-task=1");
    step_argv_free(&v);
}
END_TEST

START_TEST(signal_specs)
{
    struct slurm_signal s;
    ck_assert(slurm_signal_parse("B:USR1@60", &s));
    ck_assert(s.batch);
    ck_assert_int_eq(s.signo, SIGUSR1);
    ck_assert_int_eq(s.lead_s, 60);
    ck_assert(slurm_signal_parse("USR2", &s));
    ck_assert(!s.batch);
    ck_assert_int_eq(s.signo, SIGUSR2);
    ck_assert_int_eq(s.lead_s, 60); /* sbatch's default lead */
    ck_assert(slurm_signal_parse("R:SIGTERM@30", &s));
    ck_assert_int_eq(s.signo, SIGTERM);
    ck_assert(slurm_signal_parse("12@5", &s));
    ck_assert_int_eq(s.signo, 12);
    ck_assert(!slurm_signal_parse("B:NOPE@60", &s));
    ck_assert(!slurm_signal_parse("B:USR1@soon", &s));
    ck_assert_str_eq(slurm_signal_name(SIGUSR1), "USR1");
}
END_TEST

/* The command line beats SBATCH_SIGNAL, which beats the script's #SBATCH line. */
START_TEST(the_jobs_signal_is_found)
{
    struct fake f;
    struct slurm_job j;
    struct slurm_signal s;
    slurm_job_parse(JOB_LINE("RUNNING", ""), &j);
    fake_init(&f);
    rule(&f, "sacct", 0, "sbatch -A ml --signal=B:USR1@90 /site/share/ryzen-llm/sbatch/p1.sh "
         "--set health.stop_signal=USR1 --signal=B:TERM@1\n", 0);
    slurm_job_signal(&f.r, "100", &j, "USR2@30", &s);
    ck_assert(s.found);
    ck_assert_int_eq(s.signo, SIGUSR1); /* the template's own arguments do not count */
    ck_assert_int_eq(s.lead_s, 90);
    ck_assert_str_eq(s.source, "command line");
    fake_init(&f);
    rule(&f, "sacct", 0, "sbatch p1.sh\n", 0);
    slurm_job_signal(&f.r, "100", &j, "USR2@30", &s);
    ck_assert_int_eq(s.signo, SIGUSR2);
    ck_assert_str_eq(s.source, "SBATCH_SIGNAL");
    fake_init(&f);
    rule(&f, "sacct", 1, "", 0); /* no accounting */
    rule(&f, "scontrol write batch_script", 0, "#!/bin/bash\n#SBATCH --nodes=1\n"
         "#SBATCH --signal=B:USR2@120\nexec ryzen-step\n", 0);
    slurm_job_signal(&f.r, "100", &j, "", &s);
    ck_assert_int_eq(s.signo, SIGUSR2);
    ck_assert_int_eq(s.lead_s, 120);
    ck_assert_str_eq(s.source, "batch script");
    fake_init(&f);
    rule(&f, "sacct", 1, "", 0);
    rule(&f, "scontrol write batch_script", 0, "#!/bin/bash\nexec ryzen-step\n", 0);
    slurm_job_signal(&f.r, "100", &j, "", &s);
    ck_assert(!s.found);
}
END_TEST

/* ---- how an attempt ended ------------------------------------------------------------------------- */

static struct exit_record rec(int rank, int status, const char *reason, const char *msg)
{
    struct exit_record r = {.rank = rank, .status = status};
    snprintf(r.host, sizeof r.host, "n%d", 1 + rank / 4);
    snprintf(r.end_reason, sizeof r.end_reason, "%s", reason);
    snprintf(r.message, sizeof r.message, "%s", msg);
    return r;
}

START_TEST(attempts_are_classified_from_the_ranks)
{
    char who[1024];
    struct exit_record r[4];
    for (int k = 0; k < 4; k++)
        r[k] = rec(k, 0, "done", "");
    ck_assert_int_eq(step_classify(0, r, 4, 4, who, sizeof who), CLASS_DONE);
    for (int k = 0; k < 4; k++)
        r[k] = rec(k, 75, "signal", "");
    ck_assert_int_eq(step_classify(75, r, 4, 4, who, sizeof who), CLASS_SIGNAL);
    /* A hung rank that srun killed reaches the wrapper as 137, but the peers' watchdog said 76
     * naming it: a hang, not a crash (the dead one left no record). */
    r[0] = rec(2, 76, "hang", "watchdog: rank 2: held up by: none (every rank reached the sync)");
    r[1] = rec(0, 76, "hang", "watchdog: rank 0: held up by: rank 1 (pid 7) not responding for 4 s");
    ck_assert_int_eq(step_classify(137, r, 2, 3, who, sizeof who), CLASS_HANG);
    ck_assert_msg(has(who, "rank 0 (n1): watchdog: rank 0: held up by: rank 1 (pid 7) not "
                  "responding"), "%s", who);
    /* kill -9 of rank 2: the others stopped by srun left nothing either */
    r[0] = rec(0, 75, "signal", "");
    ck_assert_int_eq(step_classify(137, r, 1, 4, who, sizeof who), CLASS_CRASH);
    ck_assert_msg(has(who, "rank(s) 1, 2, 3 left no exit record"), "%s", who);
    r[0] = rec(0, 74, "io", "save checkpoint: disk full (ENOSPC)");
    r[1] = rec(1, 70, "error", "another rank failed");
    ck_assert_int_eq(step_classify(74, r, 2, 2, who, sizeof who), CLASS_IO);
    ck_assert(has(who, "disk full"));
    r[0] = rec(0, 70, "diverged", "loss guard: 5 skipped steps");
    r[1] = rec(1, 70, "diverged", "loss guard: 5 skipped steps");
    ck_assert_int_eq(step_classify(70, r, 2, 2, who, sizeof who), CLASS_DIVERGED);
    /* no records at all: the status is all there is */
    ck_assert_int_eq(step_classify(0, r, 0, 2, who, sizeof who), CLASS_CRASH); /* not done */
    ck_assert_msg(has(who, "though the job step's status was 0: it was stopped from outside"),
                  "%s", who);
    ck_assert_int_eq(step_classify(76, r, 0, 2, who, sizeof who), CLASS_HANG);
    ck_assert_int_eq(step_classify(139, r, 0, 2, who, sizeof who), CLASS_CRASH);
    /* every rank said 0 but srun did not: something outside the ranks failed */
    r[0] = rec(0, 0, "done", "");
    r[1] = rec(1, 0, "done", "");
    ck_assert_int_eq(step_classify(1, r, 2, 2, who, sizeof who), CLASS_CRASH);
}
END_TEST

START_TEST(exit_records_are_read_from_the_attempt_directory)
{
    char path[256];
    struct exit_record r[8];
    int n = -1;
    snprintf(path, sizeof path, "%s/att/rank-00001.json", dir);
    write_file(path, "{\"rank\":1,\"host\":\"n2\",\"status\":76,\"end_reason\":\"hang\","
               "\"message\":\"watchdog\"}\n");
    snprintf(path, sizeof path, "%s/att/rank-00000.json", dir);
    write_file(path, "{\"rank\":0,\"status\":0");        /* cut short by a crash: skipped */
    snprintf(path, sizeof path, "%s/att/notes.txt", dir);
    write_file(path, "not a record");
    snprintf(path, sizeof path, "%s/att", dir);
    exit_records_read(path, r, 8, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(r[0].rank, 1);
    ck_assert_int_eq(r[0].status, 76);
    ck_assert_str_eq(r[0].host, "n2");
    ck_assert_str_eq(r[0].end_reason, "hang");
    exit_records_read("/nonexistent", r, 8, &n);
    ck_assert_int_eq(n, 0);
}
END_TEST

/* scancel, preemption, a requeue by someone, node failure, the time-limit warning and a signal by
 * hand are told apart by Slurm's view of the job, not by the signal. */
START_TEST(stop_causes_come_from_slurm)
{
    struct slurm_job j;
    double t = NOW;
    slurm_job_parse(JOB_LINE("CANCELLED", ""), &j);
    ck_assert_int_eq(step_stop_cause(&j, 0, true, t, 120), CAUSE_CANCELLED);
    slurm_job_parse(JOB_LINE("RUNNING", "PreemptTime=2026-11-22T10:05:00"), &j);
    ck_assert_int_eq(step_stop_cause(&j, 0, true, t, 120), CAUSE_PREEMPTED);
    slurm_job_parse(JOB_LINE("REQUEUED", ""), &j);
    ck_assert_int_eq(step_stop_cause(&j, 0, true, t, 120), CAUSE_REQUEUED);
    /* scontrol requeue as Slurm 22.05 shows it: COMPLETING with Restarts one higher at once */
    slurm_job_parse(job_line("COMPLETING", NOW, "Restarts=3"), &j);
    ck_assert_int_eq(step_stop_cause(&j, 2, true, t, 120), CAUSE_REQUEUED);
    slurm_job_parse(job_line("COMPLETING", NOW, "Restarts=3 Reason=NodeDown"), &j);
    ck_assert_int_eq(step_stop_cause(&j, 2, true, t, 120), CAUSE_NODE_FAILURE);
    /* scancel: COMPLETING, Restarts unchanged, EndTime = now (never a time limit) */
    slurm_job_parse(job_line("COMPLETING", NOW, "Restarts=2"), &j);
    ck_assert_int_eq(step_stop_cause(&j, 2, true, t, 120), CAUSE_CANCELLED);
    slurm_job_parse(job_line("COMPLETING", NOW, "Restarts=2 Reason=TimeLimit"), &j);
    ck_assert_int_eq(step_stop_cause(&j, 2, true, t, 120), CAUSE_TIME_LIMIT);
    slurm_job_parse(JOB_LINE("NODE_FAIL", ""), &j);
    ck_assert_int_eq(step_stop_cause(&j, 0, false, t, 120), CAUSE_NODE_FAILURE);
    slurm_job_parse(JOB_LINE("TIMEOUT", ""), &j);
    ck_assert_int_eq(step_stop_cause(&j, 0, false, t, 120), CAUSE_TIME_LIMIT);
    slurm_job_parse(JOB_LINE("RUNNING", ""), &j);
    ck_assert_int_eq(step_stop_cause(&j, 0, false, j.end_epoch - 1000, 120), CAUSE_NONE);
    ck_assert_int_eq(step_stop_cause(&j, 0, true, j.end_epoch - 1000, 120), CAUSE_USER_SIGNAL);
    ck_assert_int_eq(step_stop_cause(&j, 0, true, j.end_epoch - 150, 120), CAUSE_TIME_LIMIT);
    ck_assert_str_eq(step_cause_name(CAUSE_PREEMPTED), "preempted");
}
END_TEST

START_TEST(decisions_and_budgets)
{
    struct step_history h;
    struct step_budget b = {.max_failures = 2, .max_signal = 3};
    struct step_decision d;
    memset(&h, 0, sizeof h);
    step_decide(CLASS_DONE, CAUSE_CANCELLED, 0, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_FINISH); /* finished is finished */
    step_decide(CLASS_SIGNAL, CAUSE_CANCELLED, 75, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_CANCELLED); /* scancel never requeues */
    step_decide(CLASS_SIGNAL, CAUSE_TIME_LIMIT, 75, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_REQUEUE);
    ck_assert_int_eq(d.reason, EVENT_RQ_TIME_LIMIT);
    step_decide(CLASS_SIGNAL, CAUSE_PREEMPTED, 75, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_REQUEUE); /* exiting in GraceTime would end it: PREEMPTED */
    ck_assert_int_eq(d.reason, EVENT_RQ_PREEMPTION);
    step_decide(CLASS_CRASH, CAUSE_REQUEUED, 143, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_SLURM_REQUEUES); /* never "requeue_failed" after Slurm's */
    step_decide(CLASS_CRASH, CAUSE_NODE_FAILURE, 1, true, &h, &b, &d);
    ck_assert_int_eq(d.reason, EVENT_RQ_NODE_FAILURE);
    step_decide(CLASS_IO, CAUSE_NONE, 74, false, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_END);
    ck_assert_str_eq(d.ended, "io");
    ck_assert_int_eq(d.exit_status, 74); /* 74: no requeue (docs/exit-codes.md) */
    step_decide(CLASS_DIVERGED, CAUSE_NONE, 70, false, &h, &b, &d);
    ck_assert_str_eq(d.ended, "diverged");
    /* the failure budget */
    step_decide(CLASS_HANG, CAUSE_NONE, 76, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_REQUEUE);
    ck_assert_int_eq(d.reason, EVENT_RQ_FAILURE);
    b.relaunch = true; /* restart.failures relaunch: the same budget, a new step in place */
    step_decide(CLASS_CRASH, CAUSE_NONE, 137, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_RELAUNCH);
    ck_assert_int_eq(d.reason, EVENT_RQ_FAILURE);
    step_decide(CLASS_SIGNAL, CAUSE_USER_SIGNAL, 75, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_REQUEUE); /* a stop signal still goes through the queue */
    b.relaunch = false;
    h.requeues[EVENT_RQ_FAILURE] = 2;
    step_decide(CLASS_CRASH, CAUSE_NONE, 137, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_END);
    ck_assert_str_eq(d.ended, "give_up");
    ck_assert_int_eq(d.exit_status, 76); /* never 1 (NO-GO) nor a signal's 128+N */
    ck_assert_msg(has(d.why, "2 of 2 failure requeues"), "%s", d.why);
    /* signals, preemptions and time limits have their own cap; they never spend the budget */
    memset(&h, 0, sizeof h);
    h.requeues[EVENT_RQ_SIGNAL] = 1;
    h.requeues[EVENT_RQ_PREEMPTION] = 1;
    h.requeues[EVENT_RQ_TIME_LIMIT] = 1;
    step_decide(CLASS_SIGNAL, CAUSE_USER_SIGNAL, 75, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_END); /* restart.when_stuck fail: FAILED with a NO-GO */
    ck_assert_str_eq(d.ended, "give_up");
    ck_assert_int_eq(d.exit_status, 1);
    ck_assert_msg(has(d.why, "restart.max_signal_requeues = 3") && !has(d.why, "held"), "%s",
                  d.why);
    b.hold_when_stuck = true;
    step_decide(CLASS_SIGNAL, CAUSE_USER_SIGNAL, 75, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_HOLD);
    ck_assert_str_eq(d.ended, "give_up");
    ck_assert_msg(has(d.why, "held for a human"), "%s", d.why);
    /* two attempts in a row without a new checkpoint: failed, or held when the config says so */
    memset(&h, 0, sizeof h);
    h.no_progress_run = 1;
    b.hold_when_stuck = false;
    step_decide(CLASS_SIGNAL, CAUSE_TIME_LIMIT, 75, false, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_END);
    ck_assert_str_eq(d.ended, "no_progress");
    ck_assert_int_eq(d.exit_status, 1);
    b.hold_when_stuck = true;
    step_decide(CLASS_SIGNAL, CAUSE_TIME_LIMIT, 75, false, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_HOLD);
    ck_assert_str_eq(d.ended, "no_progress");
    ck_assert_int_eq(d.exit_status, 75);
    step_decide(CLASS_SIGNAL, CAUSE_TIME_LIMIT, 75, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_REQUEUE); /* this one made progress */
}
END_TEST

/* ---- the event log read back ------------------------------------------------------------------------ */

START_TEST(history_and_lineage_from_events)
{
    struct fake f;
    struct step_events ev;
    struct rz_err err;
    char rd[256], ids[256];
    fake_init(&f);
    snprintf(rd, sizeof rd, "%s/runs/p1", dir);
    ck_assert_int_eq(step_events_open(&ev, rd, "100", "90", 0, "p1", NULL, &f.r, &err), RZ_OK);
    struct event_kv sig[] = {{"reason", "signal", 0}}, fail[] = {{"reason", "failure", 0}};
    struct event_kv yes[] = {{"progress", NULL, 1}}, no[] = {{"progress", NULL, 0}};
    struct event_kv pf[] = {{"excluded_nodes", "n2,n3", 0}}, pf2[] = {{"excluded_nodes", "n3", 0}};
    step_event(&ev, "requeue", "", sig, 1);
    step_event(&ev, "requeue", "", fail, 1);
    step_event(&ev, "requeue", "", fail, 1);
    step_event(&ev, "attempt_end", "", yes, 1);
    step_event(&ev, "attempt_end", "", no, 1);
    step_event(&ev, "preflight_failed", "", pf, 1);
    step_event(&ev, "preflight_failed", "", pf2, 1);
    struct event_kv promo[] = {{"next_job", "101", 0}};
    step_event(&ev, "promote", "", promo, 1);
    step_events_close(&ev);
    /* another job's lines in the same file do not count */
    ck_assert_int_eq(step_events_open(&ev, rd, "555", "555", 0, "p1", NULL, &f.r, &err), RZ_OK);
    step_event(&ev, "requeue", "", fail, 1);
    struct event_kv other[] = {{"next_job", "777", 0}};
    step_event(&ev, "promote", "", other, 1);
    step_events_close(&ev);
    /* a rollback lineage's directory, two levels down */
    snprintf(rd, sizeof rd, "%s/runs/p0/rollback-101", dir);
    ck_assert_int_eq(step_events_open(&ev, rd, "102", "90", 0, "p0", NULL, &f.r, &err), RZ_OK);
    struct event_kv rb[] = {{"new_job", "103", 0}};
    step_event(&ev, "rollback", "", rb, 1);
    step_events_close(&ev);

    struct step_history h;
    snprintf(rd, sizeof rd, "%s/runs/p1/events.jsonl", dir);
    step_history_read(rd, "100", &h);
    ck_assert_int_eq(h.requeues[EVENT_RQ_SIGNAL], 1);
    ck_assert_int_eq(h.requeues[EVENT_RQ_FAILURE], 2);
    ck_assert_int_eq(h.attempts, 2);
    ck_assert_int_eq(h.no_progress_run, 1);
    ck_assert_str_eq(h.excluded, "n2,n3");
    snprintf(rd, sizeof rd, "%s/runs", dir);
    ck_assert_int_eq(step_lineage_jobs(rd, "90", ids, sizeof ids), 2);
    ck_assert(has(ids, "101") && has(ids, "103") && !has(ids, "777"));
}
END_TEST

/* ---- the run directory's owner ------------------------------------------------------------------------ */

START_TEST(one_live_job_owns_a_run_directory)
{
    struct fake f;
    struct rz_err err;
    enum step_owner how;
    char other[128], rd[128], path[256];
    snprintf(rd, sizeof rd, "%s/runs/p1", dir);
    ck_assert_int_eq(rz_mkdirs(rd, &err), RZ_OK);
    fake_init(&f);
    ck_assert_int_eq(step_owner_claim(&f.r, rd, "100", &how, other, sizeof other, &err), RZ_OK);
    ck_assert_int_eq(how, OWNER_TAKEN);
    ck_assert_int_eq(step_owner_claim(&f.r, rd, "100", &how, other, sizeof other, &err), RZ_OK);
    ck_assert_int_eq(how, OWNER_REENTERED); /* the same job after a requeue */
    rule(&f, "scontrol show job -o 100", 0, JOB_LINE("RUNNING", ""), 1);
    ck_assert_int_eq(step_owner_claim(&f.r, rd, "200", &how, other, sizeof other, &err), RZ_OK);
    ck_assert_int_eq(how, OWNER_BUSY);
    ck_assert_str_eq(other, "100");
    snprintf(path, sizeof path, "%s/owner", rd);
    char *text = slurp(path);
    ck_assert_str_eq(text, "100\n"); /* untouched */
    free(text);
    rule(&f, "scontrol show job -o 100", 0, JOB_LINE("COMPLETED", ""), 1);
    ck_assert_int_eq(step_owner_claim(&f.r, rd, "200", &how, other, sizeof other, &err), RZ_OK);
    ck_assert_int_eq(how, OWNER_TAKEN_OVER);
    ck_assert_str_eq(other, "100");
    text = slurp(path);
    ck_assert_str_eq(text, "200\n");
    free(text);
    /* Slurm forgot job 200 (scontrol fails): dead too */
    rule(&f, "scontrol show job -o 200", 1, "", 1);
    ck_assert_int_eq(step_owner_claim(&f.r, rd, "300", &how, other, sizeof other, &err), RZ_OK);
    ck_assert_int_eq(how, OWNER_TAKEN_OVER);
    step_owner_release(rd, "999"); /* not the owner: nothing happens */
    ck_assert_int_eq(access(path, F_OK), 0);
    step_owner_release(rd, "300");
    ck_assert_int_ne(access(path, F_OK), 0);
    /* outside Slurm: a live local process owns it, a dead one does not */
    char me[128], host[64];
    gethostname(host, sizeof host);
    snprintf(me, sizeof me, "local:%s:%ld", host, (long)getpid());
    ck_assert(step_job_alive(&f.r, me));
    snprintf(me, sizeof me, "local:%s:%d", host, 0x7ffffff0);
    ck_assert(!step_job_alive(&f.r, me));
}
END_TEST

START_TEST(names_and_places)
{
    const char *sets[] = {"training.steps=5", "p2:gates.comm_go=0.3", "p1:model.d_model=64",
                          "data.path=/a:b=c"};
    const char *out[4];
    ck_assert_int_eq(step_select_sets(sets, 4, "p1", out), 3);
    ck_assert_str_eq(out[1], "model.d_model=64");
    ck_assert_str_eq(out[2], "data.path=/a:b=c"); /* a ':' after the '=' is the value's */
    /* configs: the template's ../configs before the submit directory's */
    struct step_env e;
    memset(&e, 0, sizeof e);
    char tdir[256], cfg[512], path[256];
    snprintf(e.submit_dir, sizeof e.submit_dir, "%s/sub", dir);
    snprintf(tdir, sizeof tdir, "%s/prefix/sbatch", dir);
    snprintf(path, sizeof path, "%s/prefix/configs/p1.yaml", dir);
    write_file(path, "training:\n  steps: 3\n");
    snprintf(path, sizeof path, "%s/prefix/sbatch/p1.sh", dir);
    write_file(path, "#!/bin/bash\n");
    snprintf(path, sizeof path, "%s/sub/configs/p1.yaml", dir);
    write_file(path, "training:\n  steps: 4\n");
    ck_assert(step_find_config(cfg, sizeof cfg, "p1.yaml", &e, tdir));
    ck_assert_msg(has(cfg, "/prefix/configs/p1.yaml") && !has(cfg, ".."), "%s", cfg);
    ck_assert(step_find_config(cfg, sizeof cfg, "p1", &e, ""));
    ck_assert(has(cfg, "/sub/configs/p1.yaml"));
    ck_assert(!step_find_config(cfg, sizeof cfg, "p9", &e, tdir));
    ck_assert(!step_find_config(cfg, sizeof cfg, "/nonexistent/p1.yaml", &e, tdir));
    /* the environment, read once: array tasks are named ARRAY_TASK for scontrol */
    char *envp[] = {(char *)"SLURM_JOB_ID=57", (char *)"SLURM_ARRAY_JOB_ID=55",
                    (char *)"SLURM_ARRAY_TASK_ID=2", (char *)"SLURM_CPUS_PER_TASK=4",
                    (char *)"SLURM_RESTART_COUNT=3", (char *)"SBATCH_SIGNAL=B:USR1@30", NULL};
    step_env_parse(&e, envp);
    ck_assert_str_eq(e.job_id, "57");
    ck_assert_str_eq(e.display_id, "55_2"); /* `scontrol requeue 57` would requeue the array */
    ck_assert_int_eq(e.cpus_per_task, 4);
    ck_assert_int_eq(e.restart_count, 3);
    ck_assert_str_eq(e.cpu_bind, "cores");
    ck_assert_str_eq(e.srun_mpi, ""); /* unset: chosen from srun --mpi=list */
    ck_assert_str_eq(e.sbatch_signal, "B:USR1@30");
    char *plain[] = {(char *)"RYZEN_CPU_BIND=none", (char *)"RYZEN_SRUN_MPI=pmi2", NULL};
    step_env_parse(&e, plain);
    ck_assert_str_eq(e.srun_mpi, "pmi2");
    ck_assert_str_eq(e.job_id, "local");
    ck_assert_str_eq(e.display_id, "local");
    ck_assert_str_eq(e.cpu_bind, "none");
}
END_TEST

/* ---- errors ------------------------------------------------------------------------------------------------ */

/* `srun --mpi=list` of this project's Slurm 22.05.8 (Debian 12), recorded on the dev cluster. */
static const char srun_mpi_list[] = "MPI plugin types are...\n\tpmix\n\tnone\n\tcray_shasta\n"
                                    "\tpmi2\nspecific pmix plugin versions available: pmix_v4\n";

/* srun's --mpi: the operator's, else the build's best that this Slurm has, else its first. */
START_TEST(the_srun_plugin_is_chosen_from_the_list)
{
    char out[64], why[512];
    step_mpi_choose(out, sizeof out, why, sizeof why, "", "pmix,pmi2", srun_mpi_list);
    ck_assert_str_eq(out, "pmix"); /* Open MPI where pmix is there */
    ck_assert_msg(has(why, "srun --mpi=list offers"), "%s", why);
    step_mpi_choose(out, sizeof out, why, sizeof why, "", "pmi2", srun_mpi_list);
    ck_assert_str_eq(out, "pmi2"); /* MPICH even where pmix is there */
    const char *no_pmix = "MPI plugin types are...\n\tnone\n\tcray_shasta\n\tpmi2\n";
    step_mpi_choose(out, sizeof out, why, sizeof why, "", "pmix,pmi2", no_pmix);
    ck_assert_str_eq(out, "pmi2"); /* Open MPI on a Slurm without PMIx */
    const char *older = "srun: MPI types are...\nsrun: none\nsrun: pmi2\n";
    step_mpi_choose(out, sizeof out, why, sizeof why, "", "pmix,pmi2", older);
    ck_assert_str_eq(out, "pmi2");
    step_mpi_choose(out, sizeof out, why, sizeof why, "none", "pmix,pmi2", srun_mpi_list);
    ck_assert_str_eq(out, "none"); /* RYZEN_SRUN_MPI overrides */
    ck_assert_str_eq(why, "RYZEN_SRUN_MPI=none");
}
END_TEST

START_TEST(the_srun_plugin_without_a_usable_list)
{
    char out[64], why[512];
    step_mpi_choose(out, sizeof out, why, sizeof why, "", "pmix,pmi2", "");
    ck_assert_str_eq(out, "pmix"); /* srun --mpi=list failed: the first, the launch check explains */
    ck_assert_msg(has(why, "offers none of pmix,pmi2"), "%s", why);
    /* "pmix_v4" on the versions line is not the plugin pmix */
    step_mpi_choose(out, sizeof out, why, sizeof why, "", "pmix,pmi2",
                    "MPI plugin types are...\n\tnone\nspecific pmix plugin versions available: "
                    "pmix_v4\n\tpmix_v4\n");
    ck_assert_str_eq(out, "pmix");
    ck_assert_msg(has(why, "offers none"), "%s", why);
    step_mpi_choose(out, sizeof out, why, sizeof why, "", "pmi2", "\tpmix\n\tnone\n");
    ck_assert_str_eq(out, "pmi2");
    ck_assert_msg(has(why, "offers none of pmi2"), "%s", why);
}
END_TEST

/* A whole attempt without RYZEN_SRUN_MPI on a Slurm without PMIx: srun --mpi=list is asked once,
 * the training step runs under pmi2 (either build), and an srun_mpi event says why. */
START_TEST(an_attempt_asks_srun_for_its_plugins)
{
    struct world w;
    world_init(&w, "RUNNING");
    w.env.srun_mpi[0] = '\0';
    rule(&w.f, "srun --mpi=list", 0, "MPI plugin types are...\n\tnone\n\tpmi2\n", 0);
    step(&w, preflight_ok);
    step(&w, ranks(0, 0, 20));
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(&w), 0);
    bool pmi2 = call(&w.f, "srun --mpi=pmi2 --kill-on-bad-exit=1") != NULL;
    ck_assert_msg(pmi2 && call(&w.f, "srun --mpi=pmix") == NULL &&
                  count_calls(&w.f, "srun --mpi=list") == 1, "srun --mpi=list once, then pmi2");
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"srun_mpi\"") && has(ev, "\"plugin\":\"pmi2\""), "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

START_TEST(bad_inputs_end_before_srun)
{
    struct world w;
    world_init(&w, "RUNNING");
    w.args.resume_from = "/nonexistent/step-1.h5";
    w.args.rollback_of = "7";
    ck_assert_int_eq(run(&w), 64);
    ck_assert_ptr_null(call(&w.f, "srun"));
    ck_assert_msg(has(w.log, "--resume-from '/nonexistent/step-1.h5': No such file"), "%s", w.log);
    world_free(&w);

    world_init(&w, "RUNNING");
    char path[512];
    snprintf(path, sizeof path, "%s/site/configs/p1.yaml", dir);
    write_file(path, "data:\n  kind: tokens\n  path: /nonexistent/corpus.bin\n");
    ck_assert_int_eq(run(&w), 64);
    ck_assert_ptr_null(call(&w.f, "srun"));
    ck_assert_msg(has(w.log, "data.path '/nonexistent/corpus.bin'"), "%s", w.log);
    world_free(&w);

    world_init(&w, "RUNNING");
    write_file(path, "model:\n  d_model: 250\n");
    ck_assert_int_eq(run(&w), 64);
    ck_assert_msg(has(w.log, "p1.yaml"), "%s", w.log);
    world_free(&w);

    world_init(&w, "RUNNING");
    w.args.config = "p9";
    ck_assert_int_eq(run(&w), 64);
    ck_assert_msg(has(w.log, "config 'p9' not found"), "%s", w.log);
    world_free(&w);

    world_init(&w, "RUNNING");
    snprintf(w.env.run_root, sizeof w.env.run_root, "/proc/rz-no-such-root");
    ck_assert_int_eq(run(&w), 64);
    ck_assert_msg(has(w.log, "the run directory cannot be written"), "%s", w.log);
    world_free(&w);
}
END_TEST

static Suite *step_suite(void)
{
    Suite *s = suite_create("step");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, scontrol_show_job_is_parsed);
    tcase_add_test(core, the_jobs_own_flags_travel);
    tcase_add_test(core, signal_specs);
    tcase_add_test(core, the_jobs_signal_is_found);
    tcase_add_test(core, attempts_are_classified_from_the_ranks);
    tcase_add_test(core, exit_records_are_read_from_the_attempt_directory);
    tcase_add_test(core, stop_causes_come_from_slurm);
    tcase_add_test(core, decisions_and_budgets);
    tcase_add_test(core, history_and_lineage_from_events);
    tcase_add_test(core, one_live_job_owns_a_run_directory);
    tcase_add_test(core, names_and_places);
    tcase_add_test(core, the_srun_plugin_is_chosen_from_the_list);
    tcase_add_test(core, an_attempt_asks_srun_for_its_plugins);
    step_attempts_tests(core);
    step_nodes_tests(core);
    step_proc_tests(core);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, bad_inputs_end_before_srun);
    tcase_add_test(errors, the_srun_plugin_without_a_usable_list);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(step_suite());
}
