/* check_step: ryzen-step's library without Slurm: parsing what Slurm says, the job's own flags,
 * --signal, classifying an attempt from the ranks' exit records, the requeue policy and its
 * budgets, the event log read back, the run directory's owner, and whole attempts through a
 * scripted command runner (promotion with the job's flags, rollback that cancels only its own
 * lineage's jobs, requeue, give-up, hold, a busy run directory, a node excluded after the
 * preflight).  The real thing runs in tests/slurm.sh and tests/chain.sh. */
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
    ck_assert_int_eq(d.reason, RQ_TIME_LIMIT);
    step_decide(CLASS_SIGNAL, CAUSE_PREEMPTED, 75, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_REQUEUE); /* exiting in GraceTime would end it: PREEMPTED */
    ck_assert_int_eq(d.reason, RQ_PREEMPTION);
    step_decide(CLASS_CRASH, CAUSE_REQUEUED, 143, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_SLURM_REQUEUES); /* never "requeue_failed" after Slurm's */
    step_decide(CLASS_CRASH, CAUSE_NODE_FAILURE, 1, true, &h, &b, &d);
    ck_assert_int_eq(d.reason, RQ_NODE_FAILURE);
    step_decide(CLASS_IO, CAUSE_NONE, 74, false, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_END);
    ck_assert_str_eq(d.ended, "io");
    ck_assert_int_eq(d.exit_status, 74); /* 74: no requeue (docs/exit-codes.md) */
    step_decide(CLASS_DIVERGED, CAUSE_NONE, 70, false, &h, &b, &d);
    ck_assert_str_eq(d.ended, "diverged");
    /* the failure budget */
    step_decide(CLASS_HANG, CAUSE_NONE, 76, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_REQUEUE);
    ck_assert_int_eq(d.reason, RQ_FAILURE);
    b.relaunch = true; /* restart.failures relaunch: the same budget, a new step in place */
    step_decide(CLASS_CRASH, CAUSE_NONE, 137, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_RELAUNCH);
    ck_assert_int_eq(d.reason, RQ_FAILURE);
    step_decide(CLASS_SIGNAL, CAUSE_USER_SIGNAL, 75, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_REQUEUE); /* a stop signal still goes through the queue */
    b.relaunch = false;
    h.requeues[RQ_FAILURE] = 2;
    step_decide(CLASS_CRASH, CAUSE_NONE, 137, true, &h, &b, &d);
    ck_assert_int_eq(d.action, ACT_END);
    ck_assert_str_eq(d.ended, "give_up");
    ck_assert_int_eq(d.exit_status, 76); /* never 1 (NO-GO) nor a signal's 128+N */
    ck_assert_msg(has(d.why, "2 of 2 failure requeues"), "%s", d.why);
    /* signals, preemptions and time limits have their own cap; they never spend the budget */
    memset(&h, 0, sizeof h);
    h.requeues[RQ_SIGNAL] = 1;
    h.requeues[RQ_PREEMPTION] = 1;
    h.requeues[RQ_TIME_LIMIT] = 1;
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
    struct step_kv sig[] = {{"reason", "signal", 0}}, fail[] = {{"reason", "failure", 0}};
    struct step_kv yes[] = {{"progress", NULL, 1}}, no[] = {{"progress", NULL, 0}};
    struct step_kv pf[] = {{"excluded_nodes", "n2,n3", 0}}, pf2[] = {{"excluded_nodes", "n3", 0}};
    step_event(&ev, "requeue", "", sig, 1);
    step_event(&ev, "requeue", "", fail, 1);
    step_event(&ev, "requeue", "", fail, 1);
    step_event(&ev, "attempt_end", "", yes, 1);
    step_event(&ev, "attempt_end", "", no, 1);
    step_event(&ev, "preflight_failed", "", pf, 1);
    step_event(&ev, "preflight_failed", "", pf2, 1);
    struct step_kv promo[] = {{"next_job", "101", 0}};
    step_event(&ev, "promote", "", promo, 1);
    step_events_close(&ev);
    /* another job's lines in the same file do not count */
    ck_assert_int_eq(step_events_open(&ev, rd, "555", "555", 0, "p1", NULL, &f.r, &err), RZ_OK);
    step_event(&ev, "requeue", "", fail, 1);
    struct step_kv other[] = {{"next_job", "777", 0}};
    step_event(&ev, "promote", "", other, 1);
    step_events_close(&ev);
    /* a rollback lineage's directory, two levels down */
    snprintf(rd, sizeof rd, "%s/runs/p0/rollback-101", dir);
    ck_assert_int_eq(step_events_open(&ev, rd, "102", "90", 0, "p0", NULL, &f.r, &err), RZ_OK);
    struct step_kv rb[] = {{"new_job", "103", 0}};
    step_event(&ev, "rollback", "", rb, 1);
    step_events_close(&ev);

    struct step_history h;
    snprintf(rd, sizeof rd, "%s/runs/p1/events.jsonl", dir);
    step_history_read(rd, "100", &h);
    ck_assert_int_eq(h.requeues[RQ_SIGNAL], 1);
    ck_assert_int_eq(h.requeues[RQ_FAILURE], 2);
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
    ck_assert_str_eq(e.srun_mpi, "pmix");
    ck_assert_str_eq(e.sbatch_signal, "B:USR1@30");
    char *plain[] = {(char *)"RYZEN_CPU_BIND=none", NULL};
    step_env_parse(&e, plain);
    ck_assert_str_eq(e.job_id, "local");
    ck_assert_str_eq(e.display_id, "local");
    ck_assert_str_eq(e.cpu_bind, "none");
}
END_TEST

/* ---- whole attempts --------------------------------------------------------------------------------------- */

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

START_TEST(crashes_spend_the_budget_then_give_up_with_a_report)
{
    struct world w;
    /* restart.failures requeue (the default): a crash goes back through the queue */
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
 * (health) report and exit 70. */
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
    ck_assert_double_eq_tol(h.down_s[RQ_FAILURE], 30.0, 1e-9);
    ck_assert_int_eq(h.pending_reason, RQ_SLURM);
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
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 139, .ranks_recorded = 0});
    step(&w, preflight_ok); /* relaunched in the allocation; this time it trains to the end */
    step(&w, ranks(0, 0, 20));
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(&w), 0);
    ck_assert_ptr_null(call(&w.f, "scontrol requeue"));
    char *ev = events_of(&w);
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

/* ---- a node lost: a partition, or a dead host ---------------------------------------------------------- */

/* As Slurm 22.05 prints a node it lost contact with, and one it did not. */
#define NODE_LOST "NodeName=n2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=4 " \
    "State=DOWN+NOT_RESPONDING ThreadsPerCore=1 Partitions=batch " \
    "Reason=Not responding [slurm@2026-11-26T14:08:49]\n"
#define NODE_OK "NodeName=n1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=4 State=IDLE " \
    "ThreadsPerCore=1 Partitions=batch\n"

START_TEST(nodes_are_parsed)
{
    struct slurm_node n[4];
    ck_assert_int_eq(slurm_node_parse(NODE_OK NODE_LOST, n, 4), 2);
    ck_assert_str_eq(n[0].name, "n1");
    ck_assert_str_eq(n[0].state, "IDLE");
    ck_assert_str_eq(n[0].reason, "");
    ck_assert(!slurm_node_unreachable(&n[0]));
    ck_assert_str_eq(n[1].name, "n2");
    ck_assert_str_eq(n[1].state, "DOWN+NOT_RESPONDING");
    ck_assert_str_eq(n[1].reason, "Not responding [slurm@2026-11-26T14:08:49]");
    ck_assert(slurm_node_unreachable(&n[1]));
    ck_assert_int_eq(slurm_node_parse(NODE_OK NODE_LOST, n, 1), 1); /* at most max */
    ck_assert_int_eq(slurm_node_parse("", n, 4), 0);
    slurm_node_parse("NodeName=n3 State=ALLOCATED+NOT_RESPONDING\n", n, 4);
    ck_assert(slurm_node_unreachable(&n[0])); /* not responding yet, not down */
    slurm_node_parse("NodeName=n3 State=DOWN Reason=maintenance\n", n, 4);
    ck_assert(slurm_node_unreachable(&n[0]));
}
END_TEST

/* The attempt before ran on n[1-2] and n2 stopped answering: this attempt names it, a network
 * fault, and records it excluded. */
START_TEST(a_node_lost_before_this_attempt_is_named)
{
    struct world w;
    char path[700];
    world_init(&w, "RUNNING");
    w.env.restart_count = 1;
    snprintf(path, sizeof path, "%s/events.jsonl", w.rd);
    write_file(path, "{\"time\":\"x\",\"t\":1,\"job\":\"100\",\"restart\":0,\"event\":"
                     "\"start\",\"message\":\"\",\"node_list\":\"n[1-2]\"}\n");
    rule(&w.f, "scontrol show node -o n[1-2]", 0, NODE_OK NODE_LOST, 0);
    step(&w, preflight_ok);
    step(&w, ranks(0, 0, 20));
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    run(&w);
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"nodes_lost\",\"message\":\"the attempt before (restart 0, "
                      "on n[1-2]) lost n2: Slurm cannot reach it (n2 DOWN+NOT_RESPONDING (Not "
                      "responding [slurm@2026-11-26T14:08:49])), a network fault"), "%s", ev);
    ck_assert(has(ev, "\"nodes\":\"n2\",\"cause\":\"unreachable\",\"excluded_nodes\":\"n2\""));
    free(ev);
    struct step_history h;
    step_history_read(path, "100", &h);
    ck_assert_str_eq(h.excluded, "n2");
    char rd[sizeof w.rd];
    snprintf(rd, sizeof rd, "%s", w.rd);
    world_free(&w);
    rz_test_rmtree(rd); /* the next job's history starts empty */
    /* the first attempt names no lost node, though n2 is down (placement.c leaves it out) */
    world_init(&w, "RUNNING");
    rule(&w.f, "scontrol show node -o n[1-2]", 0, NODE_OK NODE_LOST, 0);
    step(&w, preflight_ok);
    step(&w, ranks(0, 0, 20));
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    run(&w);
    ev = events_of(&w);
    ck_assert_msg(!has(ev, "nodes_lost"), "a first attempt named a lost node");
    free(ev);
    world_free(&w);
}
END_TEST

/* A step that returned 0 with no exit record was stopped from outside (measured: Slurm's requeue
 * after a node stopped answering): not "done", and the phase is not finished. */
START_TEST(a_step_stopped_from_outside_is_not_done)
{
    struct world w;
    world_init(&w, "NODE_FAIL");
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 0, .ranks_recorded = 0, .ckpt_step = 10});
    ck_assert_int_eq(run(&w), 75);
    ck_assert_ptr_null(call(&w.f, "ryzen-gate"));
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"class\":\"crash\",\"cause\":\"node failure\"") &&
                  has(ev, "it was stopped from outside") &&
                  has(ev, "\"event\":\"requeue\"") && !has(ev, "\"event\":\"finished\""),
                  "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

/* A requeued attempt finds the last step's checkpoint: training finished in the attempt before,
 * which was stopped before it could say so; the phase is finished, not "nothing to train". */
START_TEST(a_requeued_attempt_at_the_last_step_finishes)
{
    struct world w;
    world_init(&w, "RUNNING");
    w.env.restart_count = 1;
    save_checkpoint(w.rd, 20);
    step(&w, preflight_ok);
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(&w), 0);
    ck_assert_int_eq(count_calls(&w.f, "srun"), 1); /* the preflight alone */
    assert_gate_ran_with(&w.f, "ryzen-gate");
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "training finished in an earlier attempt of this job") &&
                  !has(ev, "nothing_to_train"), "%s", ev);
    free(ev);
    world_free(&w);
    /* a new job on the same run directory still says there is nothing to train */
    world_init(&w, "RUNNING");
    save_checkpoint(w.rd, 20);
    step(&w, preflight_ok);
    rule(&w.f, "ryzen-gate", 0, "", 0);
    ck_assert_int_eq(run(&w), 2);
    ev = events_of(&w);
    ck_assert(has(ev, "nothing_to_train"));
    free(ev);
    world_free(&w);
}
END_TEST

/* ---- errors ------------------------------------------------------------------------------------------------ */

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
    tcase_add_test(core, go_promotes_with_the_jobs_flags);
    tcase_add_test(core, no_go_rolls_back_and_cancels_only_its_own_jobs);
    tcase_add_test(core, a_rollback_with_nothing_to_train_is_not_submitted);
    tcase_add_test(core, a_diverged_run_rolls_back);
    tcase_add_test(core, crashes_spend_the_budget_then_give_up_with_a_report);
    tcase_add_test(core, young_daly_gets_the_observed_mtbf);
    tcase_add_test(core, a_relaunch_after_the_last_checkpoint_finishes_the_phase);
    tcase_add_test(core, scancel_is_never_requeued);
    tcase_add_test(core, time_limit_warning_requeues);
    tcase_add_test(core, a_start_inside_the_warning_window_does_not_train);
    tcase_add_test(core, a_busy_run_directory_is_refused);
    tcase_add_test(core, a_signal_that_disagrees_with_the_config_is_an_error_at_start);
    tcase_add_test(core, a_stop_before_training_requeues_cleanly_then_gives_up);
    tcase_add_test(core, a_node_that_fails_the_preflight_is_excluded);
    tcase_add_test(core, an_exclusion_does_not_count_as_no_progress);
    tcase_add_test(core, a_stop_from_outside_does_not_count_as_no_progress);
    tcase_add_test(core, restarts_and_down_time_live);
    tcase_add_test(core, nodes_are_parsed);
    tcase_add_test(core, a_node_lost_before_this_attempt_is_named);
    tcase_add_test(core, a_step_stopped_from_outside_is_not_done);
    tcase_add_test(core, a_requeued_attempt_at_the_last_step_finishes);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, bad_inputs_end_before_srun);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(step_suite());
}
