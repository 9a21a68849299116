/* check_train_net.c: the end-of-run read of a node's connections (train_net_settle): read again
 * while a segment is unacknowledged or a resend unproven by a D-SACK, up to a bound.  The reader is a
 * script of successive reads, as the kernel's counters would move.  Test code only. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <string.h>

#include "train/train_net.h"
#include "train_net_cases.h"

/* A script of reads: read i gives one peer with retrans[i] resends, dsack[i] of them proven
 * spurious; fails past `fail_from` (-1: never). */
struct script {
    int reads, n, fail_from;
    double retrans[8], dsack[8], unacked[8];
};

static bool scripted(void *ctx, struct summary_rank *mine)
{
    struct script *s = ctx;
    int i = s->reads < s->n ? s->reads : s->n - 1;
    if (s->fail_from >= 0 && s->reads >= s->fail_from)
        return false;
    s->reads++;
    ck_assert_int_eq(mine->n_peers, 0);
    memset(&mine->peers[0], 0, sizeof mine->peers[0]);
    strcpy(mine->peers[0].host, "n2");
    mine->peers[0].conns = 2;
    mine->peers[0].data_segs_out = 1700;
    mine->peers[0].retrans = s->retrans[i];
    mine->peers[0].dsack_dups = s->dsack[i];
    mine->peers[0].unacked = s->unacked[i];
    mine->n_peers = 1;
    return true;
}

static double lost_of(const struct summary_rank *m)
{
    return netsock_lost(m->peers[0].retrans, m->peers[0].dsack_dups);
}

START_TEST(a_late_dsack_is_waited_for)
{
    /* a probe resent at the end, its D-SACK two reads later: nothing lost */
    struct script s = {.n = 3, .fail_from = -1, .retrans = {5, 5, 5}, .dsack = {4, 4, 5}};
    struct summary_rank m = {.n_peers = 0};
    ck_assert(train_net_settle(scripted, &s, 0.5, 0.001, &m));
    ck_assert_int_eq(s.reads, 3);
    ck_assert_double_eq(lost_of(&m), 0.0);
    ck_assert_double_eq(m.net_late_dsacks, 1.0);
    ck_assert_double_eq_tol(m.net_settle_s, 0.002, 1e-9);
}
END_TEST

START_TEST(a_loss_stays_lost_after_the_bound)
{
    /* a segment lost for good: read until the bound, then counted */
    struct script s = {.n = 1, .fail_from = -1, .retrans = {3}, .dsack = {1}};
    struct summary_rank m = {.n_peers = 0};
    ck_assert(train_net_settle(scripted, &s, 0.01, 0.002, &m));
    ck_assert_int_eq(s.reads, 6); /* the first, then one per step to the bound */
    ck_assert_double_eq(lost_of(&m), 2.0);
    ck_assert_double_eq(m.net_late_dsacks, 0.0);
    ck_assert_double_eq_tol(m.net_settle_s, 0.01, 1e-9);
}
END_TEST

/* Segments not yet acknowledged: waited for too, so that the other end has received them when
 * both ends' counts are compared. */
START_TEST(unacknowledged_segments_are_waited_for)
{
    struct script s = {.n = 4, .fail_from = -1, .retrans = {2, 2, 2, 2}, .dsack = {2, 2, 2, 2},
                       .unacked = {3, 1, 1, 0}};
    struct summary_rank m = {.n_peers = 0};
    ck_assert(train_net_settle(scripted, &s, 0.5, 0.001, &m));
    ck_assert_int_eq(s.reads, 4);
    ck_assert_double_eq(m.peers[0].unacked, 0.0);
    ck_assert_double_eq(m.net_late_dsacks, 0.0);
}
END_TEST

START_TEST(nothing_unproven_is_read_once)
{
    struct script s = {.n = 1, .fail_from = -1, .retrans = {4}, .dsack = {4}};
    struct summary_rank m = {.n_peers = 0};
    ck_assert(train_net_settle(scripted, &s, 0.5, 0.001, &m));
    ck_assert_int_eq(s.reads, 1);
    ck_assert_double_eq(m.net_settle_s, 0.0);
    ck_assert_double_eq(m.net_late_dsacks, 0.0);
}
END_TEST

START_TEST(a_first_read_that_fails_leaves_no_peers)
{
    struct script s = {.n = 1, .fail_from = 0, .retrans = {1}, .dsack = {0}};
    struct summary_rank m = {.n_peers = 0};
    ck_assert(!train_net_settle(scripted, &s, 0.5, 0.001, &m));
    ck_assert_int_eq(m.n_peers, 0);
}
END_TEST

START_TEST(a_re_read_that_fails_keeps_the_last_good_one)
{
    struct script s = {.n = 2, .fail_from = 1, .retrans = {3, 3}, .dsack = {2, 3}};
    struct summary_rank m = {.n_peers = 0};
    ck_assert(train_net_settle(scripted, &s, 0.5, 0.001, &m));
    ck_assert_int_eq(m.n_peers, 1);
    ck_assert_double_eq(lost_of(&m), 1.0); /* the first read's count */
    ck_assert_double_eq(m.net_late_dsacks, 0.0);
}
END_TEST

TCase *train_net_tcase(void)
{
    TCase *tc = tcase_create("net");
    tcase_add_test(tc, a_late_dsack_is_waited_for);
    tcase_add_test(tc, a_loss_stays_lost_after_the_bound);
    tcase_add_test(tc, unacknowledged_segments_are_waited_for);
    tcase_add_test(tc, nothing_unproven_is_read_once);
    tcase_add_test(tc, a_first_read_that_fails_leaves_no_peers);
    tcase_add_test(tc, a_re_read_that_fails_keeps_the_last_good_one);
    return tc;
}
