/* check_step_nodes: a node lost, in check_step's "core" test case (check_step.c builds the
 * suite): Slurm's node lines parsed and read as unreachable, a node lost before this attempt
 * (a partition or a dead host) named and excluded, a step stopped from outside not taken as
 * done, a requeued attempt at the last step finishing, and a network fault Slurm cannot see
 * (two nodes up that cannot reach each other: probe.c) named and routed around; through
 * step_world.c's scripted command runner. */
#include "config.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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


/* ---- a network fault Slurm cannot see: two nodes up that cannot reach each other ------------------ */

/* As `scontrol show node -o` prints a node Slurm sees up, at its address and slurmd port. */
#define NODE_UP(n) "NodeName=n" #n " Arch=x86_64 CPUTot=8 NodeAddr=198.18.0.1" #n " " \
    "NodeHostName=n" #n " Port=1682" #n " State=ALLOCATED ThreadsPerCore=1 Partitions=batch\n"
#define FAIL(a, b) "link n" #a " n" #b " fail no answer in 3 s (198.18.0.1" #b ":1682" #b ")\n"
#define OK(a, b) "link n" #a " n" #b " ok connected in 0.2 ms (198.18.0.1" #b ":1682" #b ")\n"

START_TEST(links_are_parsed_and_covered)
{
    static struct step_links l;
    char pairs[256], ends[256], out[256];
    struct slurm_node n[2];
    ck_assert_int_eq(slurm_node_parse(NODE_UP(1) NODE_OK, n, 2), 2);
    ck_assert_str_eq(n[0].addr, "198.18.0.11");
    ck_assert_int_eq(n[0].port, 16821);
    ck_assert_str_eq(n[1].addr, "n1"); /* no NodeAddr: the name, as Slurm does */
    ck_assert_int_eq(n[1].port, 0);
    /* two nodes, one broken link: the other node is left out, not the batch host ... */
    step_links_init(&l, "n1,n2");
    step_links_parse(&l, "noise\n" FAIL(1, 2) "link n1 n9 fail not ours\n");
    ck_assert_int_eq(l.reach[0][1], 0);
    ck_assert_int_eq(l.reach[1][0], -1); /* n2's row: not probed */
    ck_assert_int_eq(step_links_broken(&l, pairs, sizeof pairs, ends, sizeof ends), 1);
    ck_assert_str_eq(pairs, "n1-n2");
    ck_assert_str_eq(ends, "n1,n2");
    step_links_cover(&l, "n1", false, out, sizeof out);
    ck_assert_str_eq(out, "n2");
    step_links_cover(&l, "n2", false, out, sizeof out);
    ck_assert_str_eq(out, "n1");
    /* ... unless the batch host was an end of a broken link in the pairing before */
    step_links_cover(&l, "n1", true, out, sizeof out);
    ck_assert_str_eq(out, "n1");
    /* three nodes: one broken link between the two that are not the batch host */
    step_links_init(&l, "n1,n2,n3");
    step_links_parse(&l, OK(1, 2) OK(1, 3) OK(2, 1) FAIL(2, 3) OK(3, 1) FAIL(3, 2));
    ck_assert_int_eq(step_links_broken(&l, pairs, sizeof pairs, NULL, 0), 1);
    ck_assert_str_eq(pairs, "n2-n3");
    step_links_cover(&l, "n1", false, out, sizeof out);
    ck_assert_str_eq(out, "n3"); /* a tie: the later node */
    /* the node at an end of every broken link is the one left out */
    step_links_init(&l, "n1,n2,n3");
    step_links_parse(&l, FAIL(1, 2) OK(1, 3) FAIL(3, 2));
    ck_assert_int_eq(step_links_broken(&l, pairs, sizeof pairs, NULL, 0), 2);
    step_links_cover(&l, "n1", false, out, sizeof out);
    ck_assert_str_eq(out, "n2");
    /* two links with no common end: one end of each */
    step_links_init(&l, "n1,n2,n3,n4");
    step_links_parse(&l, FAIL(1, 2) FAIL(3, 4));
    step_links_cover(&l, "n1", false, out, sizeof out);
    ck_assert_str_eq(out, "n4,n2");
    /* nothing broken, or nothing known: nothing left out */
    step_links_init(&l, "n1,n2");
    step_links_parse(&l, OK(1, 2) "link n2 n1 unknown address n1: unresolved\n");
    ck_assert_int_eq(step_links_broken(&l, pairs, sizeof pairs, NULL, 0), 0);
    step_links_cover(&l, "n1", false, out, sizeof out);
    ck_assert_str_eq(out, "");
}
END_TEST

/* The probe on this machine: a port that listens is reached, one that refuses is reached too
 * (the refusal came back), the node itself is skipped; bad arguments are refused. */
START_TEST(the_probe_connects_with_a_bound)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0), cfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(lfd, 4), 0);
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    int open_port = ntohs(a.sin_port);
    a.sin_port = 0; /* a port bound and never listened on: refused */
    ck_assert_int_eq(bind(cfd, (struct sockaddr *)&a, sizeof a), 0);
    alen = sizeof a;
    ck_assert_int_eq(getsockname(cfd, (struct sockaddr *)&a, &alen), 0);
    int closed_port = ntohs(a.sin_port);
    char up[64], shut[64], *text = NULL;
    size_t len = 0;
    snprintf(up, sizeof up, "n2=127.0.0.1:%d", open_port);
    snprintf(shut, sizeof shut, "n3=127.0.0.1:%d", closed_port);
    const char *args[] = {"5", up, shut, "n1=127.0.0.1:1", NULL};
    FILE *out = open_memstream(&text, &len);
    ck_assert_int_eq(step_probe_main(4, args, "n1", out, stderr), 0);
    fclose(out);
    static struct step_links l;
    step_links_init(&l, "n1,n2,n3");
    step_links_parse(&l, text);
    ck_assert_msg(has(text, "link n1 n2 ok connected in ") && has(text, "link n1 n3 ok refused") &&
                  !has(text, "link n1 n1"), "%s", text);
    ck_assert_int_eq(l.reach[0][1], 1);
    ck_assert_int_eq(l.reach[0][2], 1);
    free(text);
    close(lfd);
    close(cfd);
    /* errors: no peers, a bad timeout, a peer without an address */
    FILE *err = open_memstream(&text, &len);
    const char *none[] = {"3", NULL}, *slow[] = {"600", up, NULL}, *bare[] = {"3", "n2", NULL};
    ck_assert_int_eq(step_probe_main(1, none, "n1", stdout, err), RZ_EXIT_USAGE);
    ck_assert_int_eq(step_probe_main(2, slow, "n1", stdout, err), RZ_EXIT_USAGE);
    ck_assert_int_eq(step_probe_main(2, bare, "n1", stdout, err), RZ_EXIT_USAGE);
    fclose(err);
    ck_assert_msg(has(text, "usage: ryzen-step --probe-peers") && has(text, "'n2' is not "
                  "NAME=ADDR[:PORT]"), "%s", text);
    free(text);
}
END_TEST

/* A job of `nodes` nodes (n1 its batch host) whose training hung, with the probe's lines
 * `probe`: the world after its first attempt. */
static void hung_job(struct world *w, const char *node_list, const char *node_lines, long nodes,
                     const char *probe)
{
    static char job[4][4200];
    static int k;
    char *line = job[k++ % 4], extra[128];
    snprintf(extra, sizeof extra, "NodeList=%s NumNodes=%ld", node_list, nodes);
    snprintf(line, sizeof job[0], "%s", JOB_LINE("RUNNING", extra));
    w->env.nnodes = nodes;
    w->env.ntasks = 4 * nodes;
    w->env.ntasks_per_node = 4;
    rule_first(&w->f, "scontrol show job -o 100", 0, line, 0);
    rule(&w->f, "scontrol show node -o", 0, node_lines, 0);
    rule(&w->f, "ryzen-step --probe-peers", 0, probe, 1);
    step(w, preflight_ok);
    step(w, (struct fake_step){.status = 76, .ranks_recorded = (int)(4 * nodes),
                               .record_status = 76, .message = "held up by: none"});
}

/* Two nodes up, n1 (the batch host) cannot reach n2: named, and the job requeued without n2. */
START_TEST(a_link_slurm_cannot_see_is_named_and_left_out)
{
    struct world w;
    world_init(&w, "RUNNING");
    hung_job(&w, "n[1-2]", NODE_UP(1) NODE_UP(2), 2, FAIL(1, 2));
    ck_assert_int_eq(run(&w), 75);
    const char *probe = call(&w.f, "ryzen-step --probe-peers");
    ck_assert_msg(probe != NULL && has(probe, "--probe-peers 3 n1=198.18.0.11:16821 "
                  "n2=198.18.0.12:16822"), "%s", probe ? probe : "no probe");
    ck_assert_ptr_null(call(&w.f, "timeout")); /* n1 reaches no other node: no srun probe */
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "\"event\":\"network_partition\",\"message\":\"network fault: n1 and "
                      "n2 cannot reach each other (Slurm sees both up); Slurm: n1 ALLOCATED, "
                      "n2 ALLOCATED; probe: n1 -> n2: no answer in 3 s") &&
                  has(ev, "\"links\":\"n1-n2\",\"nodes\":\"n1,n2\",\"excluded_nodes\":\"n2\","
                      "\"batch_host\":\"n1\""), "%s", ev);
    ck_assert_msg(has(ev, "\"class\":\"hang\",\"cause\":\"network fault\"") &&
                  has(ev, "\"reason\":\"network\",\"excluded_nodes\":\"n4,n2\""), "%s", ev);
    free(ev);
    ck_assert_ptr_nonnull(call(&w.f, "scontrol update JobId=100 ExcNodeList=n4,n2"));
    struct step_history h;
    char path[700];
    snprintf(path, sizeof path, "%s/events.jsonl", w.rd);
    step_history_read(path, "100", &h);
    ck_assert_int_eq(h.requeues[EVENT_RQ_NETWORK], 1);
    ck_assert_int_eq(h.no_progress_run, 0); /* not "more of the same" */
    ck_assert_str_eq(h.net_ends, "n1,n2");
    world_free(&w);
}
END_TEST

/* A spare in the allocation (three nodes, the phase two): relaunched in it, without n2; the
 * next attempt's steps exclude it. */
START_TEST(a_spare_takes_the_place_of_the_cut_node)
{
    struct world w;
    char path[700];
    world_init(&w, "RUNNING");
    p1_restart("  failures: relaunch\n");
    snprintf(path, sizeof path, "%s/site/sbatch/p1.sh", dir);
    write_file(path, "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\nexit 0\n");
    hung_job(&w, "n[1-3]", NODE_UP(1) NODE_UP(2) NODE_UP(3), 3, FAIL(1, 2) OK(1, 3));
    step(&w, preflight_ok);
    step(&w, (struct fake_step){.status = 0, .ranks_recorded = 8, .ckpt_step = 20});
    rule(&w.f, "ryzen-gate", 0, "", 0);
    rule(&w.f, "sbatch", 0, "101;cluster\n", 0);
    ck_assert_int_eq(run(&w), 0);
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "left out: n2 (the allocation holds the phase without it: relaunched "
                      "in it)") && has(ev, "\"event\":\"relaunch\"") &&
                  has(ev, "without n2 (network restart 1") && !has(ev, "\"event\":\"requeue\""),
                  "%s", ev);
    free(ev);
    int seen = 0;
    for (int i = 0; i < w.f.n_calls; i++)
        seen += strncmp(w.f.calls[i], "srun", 4) == 0 && has(w.f.calls[i], "--exclude=n2");
    ck_assert_int_eq(seen, 2); /* the relaunch's preflight and training */
    world_free(&w);
}
END_TEST

/* Three nodes, n2 and n3 (not the batch host) cut from each other: their rows come from one srun
 * step of one task per node; one end left out, through a requeue (no node to spare). */
START_TEST(three_nodes_two_cut_from_each_other)
{
    struct world w;
    world_init(&w, "RUNNING");
    hung_job(&w, "n[1-3]", NODE_UP(1) NODE_UP(2) NODE_UP(3), 3, OK(1, 2) OK(1, 3));
    rule(&w.f, "timeout -k 5 30 srun --overlap --mpi=none", 0, OK(2, 1) FAIL(2, 3) OK(3, 1)
         FAIL(3, 2), 1);
    ck_assert_int_eq(run(&w), 75);
    const char *remote = call(&w.f, "timeout");
    ck_assert_msg(remote != NULL && has(remote, "-N 2 -n 2 --ntasks-per-node=1 --nodelist=n2,n3 "
                  "ryzen-step --probe-peers 3 n1="), "%s", remote ? remote : "no srun probe");
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "network fault: n2 and n3 cannot reach each other (Slurm sees both "
                      "up)") && has(ev, "n2 -> n3: no answer in 3 s") &&
                  has(ev, "\"excluded_nodes\":\"n3\"") &&
                  has(ev, "\"reason\":\"network\",\"excluded_nodes\":\"n4,n3\""), "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

/* The pairing after the exclusion fails too, the batch host at an end again: the batch host is
 * left out, through a requeue.  And once the restart budget is spent: NO-GO (health), the link
 * named. */
START_TEST(the_batch_host_goes_when_its_next_pairing_fails_too)
{
    struct world w;
    char path[700];
    world_init(&w, "RUNNING");
    w.env.restart_count = 1;
    snprintf(path, sizeof path, "%s/events.jsonl", w.rd);
    write_file(path, "{\"time\":\"x\",\"t\":1,\"job\":\"100\",\"restart\":0,\"event\":"
               "\"network_partition\",\"message\":\"\",\"nodes\":\"n1,n2\"}\n"
               "{\"time\":\"x\",\"t\":2,\"job\":\"100\",\"restart\":0,\"event\":\"requeue\","
               "\"message\":\"\",\"reason\":\"network\"}\n");
    hung_job(&w, "n[1,3]", NODE_UP(1) NODE_UP(3), 2, FAIL(1, 3));
    ck_assert_int_eq(run(&w), 75);
    char *ev = events_of(&w);
    ck_assert_msg(has(ev, "left out: n1 (the batch host, an end of a broken link in the "
                      "pairing before too: through a requeue)") &&
                  has(ev, "\"reason\":\"network\",\"excluded_nodes\":\"n4,n1\""), "%s", ev);
    free(ev);
    char rd[sizeof w.rd];
    snprintf(rd, sizeof rd, "%s", w.rd);
    world_free(&w);
    rz_test_rmtree(rd);
    /* the budget (restart.max_restarts 1) is spent: the job ends NO-GO (health), 70 */
    world_init(&w, "RUNNING");
    p1_restart("  max_restarts: 1\n");
    w.env.restart_count = 1;
    write_file(path, "{\"time\":\"x\",\"t\":2,\"job\":\"100\",\"restart\":0,\"event\":\"requeue\","
               "\"message\":\"\",\"reason\":\"network\"}\n");
    hung_job(&w, "n[1-2]", NODE_UP(1) NODE_UP(2), 2, FAIL(1, 2));
    rule(&w.f, "ryzen-gate", 1, "", 0);
    ck_assert_int_eq(run(&w), 70);
    assert_gate_ran_with(&w.f, "--ended health");
    ev = events_of(&w);
    ck_assert_msg(has(ev, "health: network fault: n1 and n2 cannot reach each other (Slurm "
                      "sees both up); the restart budget is spent (1 of 1") &&
                  !has(ev, "no_progress") && !has(ev, "\"reason\":\"network\",\"count\":2"),
                  "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

/* A crash on two nodes that can reach each other is a crash: no network fault, as before. */
START_TEST(a_crash_between_nodes_that_talk_is_a_crash)
{
    struct world w;
    world_init(&w, "RUNNING");
    hung_job(&w, "n[1-2]", NODE_UP(1) NODE_UP(2), 2, OK(1, 2));
    ck_assert_int_eq(run(&w), 75);
    ck_assert_ptr_nonnull(call(&w.f, "ryzen-step --probe-peers"));
    char *ev = events_of(&w);
    ck_assert_msg(!has(ev, "network_partition") && has(ev, "\"reason\":\"failure\""), "%s", ev);
    free(ev);
    world_free(&w);
}
END_TEST

void step_nodes_tests(TCase *tc)
{
    tcase_add_test(tc, links_are_parsed_and_covered);
    tcase_add_test(tc, the_probe_connects_with_a_bound);
    tcase_add_test(tc, a_link_slurm_cannot_see_is_named_and_left_out);
    tcase_add_test(tc, a_spare_takes_the_place_of_the_cut_node);
    tcase_add_test(tc, three_nodes_two_cut_from_each_other);
    tcase_add_test(tc, the_batch_host_goes_when_its_next_pairing_fails_too);
    tcase_add_test(tc, a_crash_between_nodes_that_talk_is_a_crash);
    tcase_add_test(tc, nodes_are_parsed);
    tcase_add_test(tc, a_node_lost_before_this_attempt_is_named);
    tcase_add_test(tc, a_step_stopped_from_outside_is_not_done);
    tcase_add_test(tc, a_requeued_attempt_at_the_last_step_finishes);
}
