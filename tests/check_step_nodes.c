/* check_step_nodes: a node lost, in check_step's "core" test case (check_step.c builds the
 * suite): Slurm's node lines parsed and read as unreachable, a node lost before this attempt
 * (a partition or a dead host) named and excluded, a step stopped from outside not taken as
 * done, and a requeued attempt at the last step finishing; through step_world.c's scripted
 * command runner. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "step/step_internal.h"
#include "testutil.h"

#include "step_cases.h"
#include "step_world.h"

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

void step_nodes_tests(TCase *tc)
{
    tcase_add_test(tc, nodes_are_parsed);
    tcase_add_test(tc, a_node_lost_before_this_attempt_is_named);
    tcase_add_test(tc, a_step_stopped_from_outside_is_not_done);
    tcase_add_test(tc, a_requeued_attempt_at_the_last_step_finishes);
}
