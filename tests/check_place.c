/* check_place: where an attempt's job steps run (src/step/place.c), against the scripted runner
 * of step_world.c: a spare node keeps the phase's ranks after a loss, no spare requeues without
 * the lost node, a node that failed twice in the run root is left out of every step and passed
 * on to the next phase, and a Slurm that cannot be asked leaves the placement to srun.  The
 * real thing runs in tests/faults.sh on the dev cluster. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "step/step_internal.h"
#include "testutil.h"

#include "step_world.h"

static void setup(void) { rz_test_tmpdir(dir, sizeof dir, "place"); }
static void teardown(void) { rz_test_rmtree(dir); }

#define NODE(name, state) "NodeName=" name " Arch=x86_64 CoresPerSocket=8 State=" state \
                          " Partitions=batch Reason=" "\n"

/* The world's job 100 on `nodes` (n of them) of 4 tasks each; its template p1.sh asks for 2
 * nodes: 8 ranks. */
static void eight_ranks(struct world *w, const char *node_list, int n)
{
    static char extra[4][128];
    static int k;
    char *e = extra[k++ % 4], path[600];
    snprintf(e, sizeof extra[0], "NodeList=%s NumNodes=%d NumTasks=%d", node_list, n, 4 * n);
    w->env.ntasks = 4 * n;
    w->env.ntasks_per_node = 4;
    w->env.nnodes = n;
    rule_first(&w->f, "scontrol show job -o 100", 0, JOB_LINE("RUNNING", e), 0);
    snprintf(path, sizeof path, "%s/site/sbatch/p1.sh", dir);
    write_file(path, "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\nexec x\n");
    snprintf(path, sizeof path, "%s/site/sbatch/p2.sh", dir);
    write_file(path, "#!/bin/bash\n#SBATCH --nodes=3\n#SBATCH --ntasks-per-node=4\nexec x\n");
}

/* A training of 8 ranks that all end well, committing a checkpoint of step ckpt. */
static struct fake_step eight_done(int64_t ckpt)
{
    return (struct fake_step){.status = 0, .ranks_recorded = 8, .ckpt_step = ckpt};
}

/* The gate and sbatch answer; the run ends 0 (GO, the next phase submitted). */
static void runs_to_go(struct world *w)
{
    rule(&w->f, "ryzen-gate", 0, "", 0);
    rule(&w->f, "sbatch", 0, "101\n", 0);
    int rc = run(w);
    ck_assert_msg(rc == 0, "status %d: %s", rc, w->log);
}

/* The n-th call that starts with prefix (0 the first), or NULL. */
static const char *nth_call(const struct fake *f, const char *prefix, int n)
{
    for (int i = 0; i < f->n_calls; i++)
        if (strncmp(f->calls[i], prefix, strlen(prefix)) == 0 && n-- == 0)
            return f->calls[i];
    return NULL;
}

START_TEST(the_nodes_a_phase_needs)
{
    /* the template asks for 2 nodes of 4 ranks; sbatch -N 3 gave 3 nodes, 12 tasks */
    struct step_env e = {.ntasks = 12, .ntasks_per_node = 4, .nnodes = 3};
    struct step_place p;
    step_place_size(&e, 2, &p);
    ck_assert_int_eq(p.needed, 2);
    ck_assert_int_eq(p.ranks, 8);
    ck_assert_int_eq(p.spare, 1);
    e.ntasks_per_node = 0; /* not given: the tasks' share */
    step_place_size(&e, 2, &p);
    ck_assert_int_eq(p.ranks, 8);
    step_place_size(&e, 0, &p); /* the template unknown: all of the allocation */
    ck_assert_int_eq(p.needed, 3);
    ck_assert_int_eq(p.ranks, 12);
    ck_assert_int_eq(p.spare, 0);
    step_place_size(&e, 4, &p); /* fewer nodes than asked: Slurm's -N wins */
    ck_assert_int_eq(p.needed, 3);
    /* requeued asking for one node fewer (spare_shrunk): Slurm started it again with the
     * first submission's SLURM_NTASKS=12 on 2 nodes; the ranks are 2 nodes x 4 */
    e = (struct step_env){.ntasks = 12, .ntasks_per_node = 4, .nnodes = 2};
    step_place_size(&e, 2, &p);
    ck_assert_int_eq(p.needed, 2);
    ck_assert_int_eq(p.ranks, 8);
    ck_assert_int_eq(p.spare, 0);
    e = (struct step_env){.ntasks = 5, .nnodes = 0}; /* outside Slurm's counts: as given */
    step_place_size(&e, 0, &p);
    ck_assert_int_eq(p.ranks, 5);
    char *plain[] = {(char *)"SLURM_JOB_ID=7", (char *)"SLURM_NTASKS=8", (char *)"SLURM_NNODES=3",
                     (char *)"SLURM_NTASKS_PER_NODE=4(x3)", NULL};
    step_env_parse(&e, plain);
    ck_assert_int_eq(e.ntasks_per_node, 4);
    /* the script as sbatch reads it: #SBATCH lines up to the first command */
    ck_assert_int_eq(slurm_script_nodes("#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH -n 8\n"), 2);
    ck_assert_int_eq(slurm_script_nodes("#!/bin/bash\n#SBATCH -N 3 --ntasks-per-node=4\n"), 3);
    ck_assert_int_eq(slurm_script_nodes("#!/bin/bash\n#SBATCH -N4\n"), 4);
    ck_assert_int_eq(slurm_script_nodes("#SBATCH --nodes 2-4\n"), 2);
    ck_assert_int_eq(slurm_script_nodes("#!/bin/bash\necho\n#SBATCH --nodes=2\n"), 0);
    ck_assert_int_eq(slurm_script_nodes("# --nodes=2\n#SBATCH --nodes=x\n"), 0);
    ck_assert_int_eq(slurm_template_nodes("/proc/rz-no-such-template.sh"), 0);
}
END_TEST

/* A relaunching job on n[1-3] (one spare) whose first placement sees every node up, and
 * every query after it `after` (the crash's nodes). */
static void spare_world(struct world *w, const char *after)
{
    world_init(w, "RUNNING");
    p1_restart("  failures: relaunch\n");
    eight_ranks(w, "n[1-3]", 3);
    rule_first(&w->f, "scontrol show node -o n[1-3]", 0, NODE("n1", "MIXED") NODE("n2", "IDLE")
               NODE("n3", "MIXED"), 1);
    rule(&w->f, "scontrol show node -o n[1-3]", 0, after, 0);
}

/* A spare node: the steps run on 2 of the 3 nodes with the phase's 8 ranks; the crash that lost
 * n2 (DOWN) is named, and the relaunch keeps 8 ranks on the two nodes left, without n2 and
 * without a trip through the queue, overlapping the lost step (srun --overlap). */
START_TEST(a_spare_node_keeps_the_ranks)
{
    struct world w;
    spare_world(&w, NODE("n1", "MIXED") NODE("n2", "DOWN") NODE("n3", "MIXED"));
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 137, .ranks_recorded = 0, .ckpt_step = 10});
    step(&w, preflight_ok);
    step(&w, eight_done(20));
    runs_to_go(&w);
    const char *first = call(&w.f, "srun");
    ck_assert_msg(has(first, "--nodes=2 --ntasks=8 ryzen-train"), "%s", first);
    /* the relaunch's steps, on n1 and n3: the lost step may still hold n1's CPUs, so they
     * overlap it */
    ck_assert_msg(!has(nth_call(&w.f, "srun", 1), "--overlap"), "%s", nth_call(&w.f, "srun", 1));
    for (int k = 2; k <= 3; k++) {
        const char *again = nth_call(&w.f, "srun", k);
        ck_assert_ptr_nonnull(again);
        ck_assert_msg(has(again, "--nodes=2 --ntasks=8 --overlap --exclude=n2 ryzen-train"),
                      "%s", again);
    }
    ck_assert_ptr_null(call(&w.f, "scontrol requeue"));
    const char *sb = call(&w.f, "sbatch"); /* the next phase (3 nodes) gets a spare too */
    ck_assert_msg(sb != NULL && has(sb, " --nodes=4 --no-kill "), "%s", sb ? sb : "no sbatch");
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"node_failed\"") && has(ev, "\"nodes\":\"n2\""), "%s", ev);
    ck_assert_msg(has(ev, "\"event\":\"relaunch\""), "%s", ev);
    /* a lost node is not a failure of ours: no restart budget spent */
    ck_assert_msg(has(ev, "\"cause\":\"node lost\""), "%s", ev);
    ck_assert_msg(has(ev, "\"reason\":\"node_failure\"") && !has(ev, "\"reason\":\"failure\""),
                  "%s", ev);
    ck_assert_msg(!has(ev, "node_excluded"), "one failure is not two: %s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

/* No spare: the allocation left after the loss cannot hold the phase, so the job is requeued
 * without the node, under either restart.failures. */
START_TEST(without_a_spare_the_job_is_requeued_without_the_node)
{
    for (int relaunch = 0; relaunch <= 1; relaunch++) {
        struct world w;
        world_init(&w, "RUNNING");
        if (relaunch)
            p1_restart("  failures: relaunch\n");
        eight_ranks(&w, "n[1-2]", 2);
        rule(&w.f, "scontrol show node -o n[1-2]", 0, NODE("n1", "MIXED")
             NODE("n2", "DOWN+NOT_RESPONDING"), 0);
        rule_first(&w.f, "scontrol show node -o n[1-2]", 0, NODE("n1", "MIXED")
                   NODE("n2", "MIXED"), 1);
        step(&w, preflight_ok);
        step(&w, (struct fake_step){.status = 137, .ranks_recorded = 0, .ckpt_step = 10});
        ck_assert_int_eq(run(&w), 75);
        const char *srun = call(&w.f, "srun"); /* the allocation read: its counts said */
        ck_assert_msg(has(srun, "--nodes=2 --ntasks=8 ryzen-train"), "%s", srun);
        ck_assert_msg(call(&w.f, "scontrol update JobId=100 ExcNodeList=n4,n2") != NULL,
                      "relaunch %d: %s", relaunch, w.log);
        ck_assert_ptr_nonnull(call(&w.f, "scontrol release 100"));
        ck_assert_int_eq(w.f.next_step, 2); /* no launch on one node */
        char *ev = events_of(&w);
        ck_assert_msg(has(ev, "\"event\":\"requeue\",") &&
                      has(ev, "\"reason\":\"node_failure\""), "%s", ev);
        ck_assert_msg(relaunch == has(ev, "the phase needs 2 (lost: n2;"), "%s", ev);
        free(ev);
        char rd[sizeof w.rd];
        snprintf(rd, sizeof rd, "%s", w.rd);
        world_free(&w);
        rz_test_rmtree(rd);
    }
}
END_TEST

/* Both other nodes of a spare allocation lost: requeued without them, and, since the partition
 * has one usable node left outside the exclusions, asking for the phase's 2 nodes and 8 tasks
 * instead of 3 and 12 (else it would wait for nodes the partition no longer has). */
START_TEST(a_spare_the_partition_cannot_give_is_given_up)
{
    struct world w;
    spare_world(&w, NODE("n1", "MIXED") NODE("n2", "DOWN") NODE("n3", "DOWN+NOT_RESPONDING"));
    rule(&w.f, "sinfo", 0, "n1 mix\nn2 down*\nn3 down*\nn4 idle\nn1 mix\n", 0);
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 137, .ranks_recorded = 0, .ckpt_step = 10});
    ck_assert_int_eq(run(&w), 75);
    ck_assert_msg(call(&w.f, "scontrol update JobId=100 ExcNodeList=n4,n2,n3") != NULL, "%s",
                  w.log);
    ck_assert_ptr_nonnull(call(&w.f, "scontrol update JobId=100 NumNodes=2"));
    ck_assert_ptr_nonnull(call(&w.f, "scontrol update JobId=100 NumTasks=8"));
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"spare_shrunk\"") && has(ev, "the spare given up"), "%s",
                  ev);
    free(ev);
    world_free(&w);
    /* the partition still has room: the job keeps asking for its spare */
    world_init(&w, "RUNNING");
    p1_restart("  failures: relaunch\n");
    eight_ranks(&w, "n[1-3]", 3);
    rule(&w.f, "scontrol show node -o n[1-3]", 0, NODE("n1", "MIXED") NODE("n2", "DOWN")
         NODE("n3", "DOWN"), 0);
    rule(&w.f, "sinfo", 0, "n1 mix\nn2 down*\nn3 down*\nn4 idle\nn5 idle\nn6 idle\n", 0);
    ck_assert_int_eq(run(&w), 75);
    ck_assert_ptr_nonnull(call(&w.f, "scontrol update JobId=100 ExcNodeList=n4,n2,n3"));
    ck_assert_ptr_null(call(&w.f, "scontrol update JobId=100 NumNodes"));
    world_free(&w);
}
END_TEST

/* The allocation shrank under --no-kill (n2 left it) while the job's environment still says 3
 * nodes and 12 tasks: srun is told the phase's 2 nodes and 8 ranks, or it would ask for the old
 * counts and fail (measured on the dev cluster: "More processors requested than permitted"). */
START_TEST(a_shrunk_allocation_is_told_to_srun)
{
    struct world w;
    world_init(&w, "RUNNING");
    eight_ranks(&w, "n[1,3]", 3);
    rule(&w.f, "scontrol show node -o n[1,3]", 0, NODE("n1", "MIXED") NODE("n3", "MIXED"), 0);
    step(&w, preflight_ok);
    step(&w, eight_done(20));
    runs_to_go(&w);
    const char *srun = call(&w.f, "srun");
    ck_assert_msg(has(srun, "--nodes=2 --ntasks=8 ryzen-train"), "%s", srun);
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"placement\"") && has(ev, "\"usable\":2"), "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

/* A job Slurm requeues has no allocation left: its nodes are not "lost" (measured: a requeue
 * by Slurm named every node of phase2b lost, two such and a node is out for the ladder). */
START_TEST(a_requeue_by_slurm_loses_no_node)
{
    struct world w;
    world_init(&w, "RUNNING");
    eight_ranks(&w, "n[1-3]", 3);
    w.f.rules[0].times = 3; /* locate, the placement, the stop's cause: running on n[1-3] */
    w.f.rules[1].times = -1; /* world_init's line: never */
    rule(&w.f, "scontrol show node -o n[1-3]", 0, NODE("n1", "IDLE") NODE("n2", "IDLE")
         NODE("n3", "IDLE"), 0);
    rule(&w.f, "scontrol show job -o 100", 0, JOB_LINE("PENDING", "NodeList=n2 Restarts=1"), 0);
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 137, .ranks_recorded = 0, .ckpt_step = 10});
    run(&w);
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"attempt_end\""), "%s", w.log);
    ck_assert_msg(!has(ev, "node_failed"), "a requeue named nodes lost: %s", w.log);
    free(ev);
    world_free(&w);
}
END_TEST

/* A node with two failures in the run root (another phase's, and this job's preflight) is
 * excluded for the rest of the ladder: named once, left out of the steps, passed on to the next
 * phase's submission. */
START_TEST(a_node_that_failed_twice_is_excluded_for_the_ladder)
{
    struct world w;
    world_init(&w, "RUNNING");
    eight_ranks(&w, "n[1-3]", 3);
    rule(&w.f, "scontrol show node -o n[1-3]", 0, NODE("n1", "MIXED") NODE("n2", "MIXED")
         NODE("n3", "MIXED"), 0);
    char path[700];
    snprintf(path, sizeof path, "%s/runs,a/p0/events.jsonl", dir);
    write_file(path, "{\"job\":\"90\",\"event\":\"node_failed\",\"nodes\":\"n3,n2\","
               "\"cause\":\"unreachable\"}\n"
               "{\"job\":\"91\",\"event\":\"node_failed\",\"nodes\":\"n3\",\"cause\":\"preflight\"}\n");
    step(&w, preflight_ok);
    step(&w, eight_done(20));
    runs_to_go(&w);
    const char *srun = call(&w.f, "srun");
    ck_assert_msg(has(srun, "--nodes=2 --ntasks=8 --exclude=n3 ryzen-train"), "%s", srun);
    const char *sb = call(&w.f, "sbatch");
    ck_assert_msg(has(sb, "--exclude=n4,n3 "), "%s", sb);
    char *ev = events_of(&w);
    const char *first = strstr(ev, "\"event\":\"node_excluded\"");
    ck_assert_msg(first != NULL && has(first, "\"nodes\":\"n3\""), "%s", ev);
    ck_assert_msg(strstr(first + 1, "\"event\":\"node_excluded\"") == NULL, "named once: %s", ev);
    ck_assert_msg(!has(ev, "\"nodes\":\"n2\",\"failures\""), "n2 failed once: %s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

/* Errors: a Slurm that cannot say where the job is leaves the placement to srun (no flags), and
 * the attempt goes on; a lost node with no other in the allocation is requeued, not launched. */
START_TEST(without_slurms_answer_srun_places)
{
    struct world w;
    world_init(&w, "RUNNING");
    w.env.ntasks = 8;
    w.env.ntasks_per_node = 4;
    w.env.nnodes = 3;
    rule_first(&w.f, "scontrol show node", 1, "slurm_load_node error: Unable to contact slurm "
               "controller\n", 0);
    step(&w, preflight_ok);
    step(&w, eight_done(20));
    runs_to_go(&w);
    const char *srun = call(&w.f, "srun");
    ck_assert_msg(!has(srun, "--nodes") && !has(srun, "--exclude"), "%s", srun);
    world_free(&w);
}
END_TEST

static Suite *place_suite(void)
{
    Suite *s = suite_create("place");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, the_nodes_a_phase_needs);
    tcase_add_test(core, a_spare_node_keeps_the_ranks);
    tcase_add_test(core, without_a_spare_the_job_is_requeued_without_the_node);
    tcase_add_test(core, a_node_that_failed_twice_is_excluded_for_the_ladder);
    tcase_add_test(core, a_shrunk_allocation_is_told_to_srun);
    tcase_add_test(core, a_requeue_by_slurm_loses_no_node);
    tcase_add_test(core, a_spare_the_partition_cannot_give_is_given_up);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, without_slurms_answer_srun_places);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(place_suite());
}
