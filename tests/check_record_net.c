/* check_record_net.c: a link's loss from both of its ends (summary_link_losses): the fewer of
 * what one node's TCP sent another less what the other's received from it, and TCP's own
 * account (resends less those D-SACKed); TCP's account alone where the other end was not read.
 * Test code only. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "record/summary.h"
#include "record_net.h"

/* Node `host`'s link to `peer`: sent, resent, D-SACKed, received from it (NaN: not counted). */
static void add_link(struct summary_net *g, const char *peer, double sent, double retrans,
                 double spurious, double received)
{
    struct summary_link *l = &g->peers[g->n_peers++];
    memset(l, 0, sizeof *l);
    strcpy(l->host, peer);
    l->data_segs = sent;
    l->retrans = retrans;
    l->spurious = spurious;
    l->data_segs_in = received;
}

/* n nodes named n1, n2, ... with no links yet. */
static void nodes(struct summary_net *net, int n)
{
    for (int i = 0; i < n; i++) {
        memset(&net[i], 0, sizeof net[i]);
        snprintf(net[i].host, sizeof net[i].host, "n%d", i + 1);
    }
}

/* The healthy phase2a that held (job 2732): n2 sent n1 5587 data segments, resent 6 of which
 * D-SACK proved 5 spurious, so TCP's account says 1 lost; n1 received all 5587: none lost. */
START_TEST(a_probe_without_its_d_sack_is_not_a_loss)
{
    struct summary_net net[2];
    nodes(net, 2);
    add_link(&net[0], "n2", 5603, 3, 3, 5587);
    add_link(&net[1], "n1", 5587, 6, 5, 5603);
    summary_link_losses(net, 2);
    ck_assert(net[1].peers[0].by_delivery);
    ck_assert_double_eq(net[1].peers[0].lost, 0.0);
    ck_assert(net[0].peers[0].by_delivery);
    ck_assert_double_eq(net[0].peers[0].lost, 0.0);
}
END_TEST

/* Segments the network dropped never reach the other end's TCP and are resent without a D-SACK:
 * both counts show them; the fewer is taken. */
START_TEST(what_never_arrived_is_lost)
{
    struct summary_net net[3];
    nodes(net, 3);
    add_link(&net[0], "n2", 1700, 40, 2, 1668);
    add_link(&net[0], "n3", 900, 0, 0, 900);
    add_link(&net[1], "n1", 1700, 30, 0, 1665);
    add_link(&net[2], "n1", 900, 0, 0, 900);
    summary_link_losses(net, 3);
    ck_assert_double_eq(net[0].peers[0].lost, 35.0); /* n1 -> n2: 1700 sent, n2 got 1665 */
    ck_assert_double_eq(net[1].peers[0].lost, 30.0); /* n2 -> n1: 32 missing, 30 resent */
    ck_assert_double_eq(net[0].peers[1].lost, 0.0);
    ck_assert_double_eq(net[2].peers[0].lost, 0.0);
}
END_TEST

/* The healthy phase2a that held after the change (job 2762): n1 sent 5584, n2 received 5583,
 * and TCP resent 7, all 7 D-SACKed: nothing was lost. */
START_TEST(one_missing_segment_without_a_resend_is_not_a_loss)
{
    struct summary_net net[2];
    nodes(net, 2);
    add_link(&net[0], "n2", 5584, 7, 7, 5602);
    add_link(&net[1], "n1", 5602, 9, 9, 5583);
    summary_link_losses(net, 2);
    ck_assert(net[0].peers[0].by_delivery);
    ck_assert_double_eq(net[0].peers[0].lost, 0.0);
}
END_TEST

/* Where the other end's count is missing (a node without counters, an older summary, a kernel
 * without tcpi_data_segs_in), TCP's own account stands; more received than sent is none lost. */
START_TEST(one_end_alone_falls_back_to_tcps_account)
{
    struct summary_net net[2];
    nodes(net, 2);
    add_link(&net[0], "n2", 1000, 4, 1, NAN);
    add_link(&net[0], "n9", 500, 2, 0, 500); /* n9 is not in the summary */
    add_link(&net[1], "n1", 800, 0, 0, NAN);
    summary_link_losses(net, 2);
    ck_assert(!net[1].peers[0].by_delivery); /* n1 did not count what it received */
    ck_assert_double_eq(net[1].peers[0].lost, 0.0);
    ck_assert(!net[0].peers[0].by_delivery);
    ck_assert_double_eq(net[0].peers[0].lost, 3.0);
    ck_assert(!net[0].peers[1].by_delivery);
    ck_assert_double_eq(net[0].peers[1].lost, 2.0);
    /* an older summary: no data segments sent either */
    nodes(net, 2);
    add_link(&net[0], "n2", NAN, 4, NAN, NAN);
    add_link(&net[1], "n1", 800, 0, 0, 10);
    summary_link_losses(net, 2);
    ck_assert(!net[0].peers[0].by_delivery);
    ck_assert_double_eq(net[0].peers[0].lost, 4.0);
    /* n1 received more from n2 than n2 says it sent (read at other times): none lost */
    nodes(net, 2);
    add_link(&net[0], "n2", 100, 0, 0, 820);
    add_link(&net[1], "n1", 800, 1, 0, 100);
    summary_link_losses(net, 2);
    ck_assert(net[1].peers[0].by_delivery);
    ck_assert_double_eq(net[1].peers[0].lost, 0.0);
}
END_TEST

TCase *record_net_tcase(void)
{
    TCase *tc = tcase_create("net");
    tcase_add_test(tc, a_probe_without_its_d_sack_is_not_a_loss);
    tcase_add_test(tc, what_never_arrived_is_lost);
    tcase_add_test(tc, one_missing_segment_without_a_resend_is_not_a_loss);
    tcase_add_test(tc, one_end_alone_falls_back_to_tcps_account);
    return tc;
}
