/* check_gate_net.c: the packet_loss criterion (gate_net.c) at its defaults, GO at none lost and
 * NO-GO above 0.1%: the exact binomial bounds against their closed forms; one node, no counters,
 * a summary older than the loss count, too little traffic and the 1-of-132 of a quiet node are
 * n/a with the reason, never NO-GO; TCP's housekeeping (resends D-SACK proved spurious) is not
 * loss; 2% and 0.5% of 50,000 are NO-GO naming the node at an end of every lossy link, and one
 * lossy link is told by the links that lost anything (net.sh's 0.5% on 10 steps); a fabric
 * without TCP between the nodes is judged on its ports' errors; and the report's section. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg.h"
#include "core/json.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"

#include "gate_fixtures.h"

/* One node's "network" object: whole-host counters and its MPI connections to `peers` other
 * nodes, each with `data` data segments, `retrans` resent and `spurious` of those D-SACKed. */
static void net_obj(char *out, size_t len, const char *const *peers, int n_peers, double data,
                    double retrans, double spurious)
{
    int used = snprintf(out, len, ",\"network\":{\"seconds\":4,\"tcp_segments_sent\":%.0f,"
                        "\"tcp_retransmitted\":%.0f,\"tx_bytes\":8e6,\"drops\":0,\"errors\":0,"
                        "\"tcp_ext\":{\"loss_probes\":7,\"dsacks_received\":%.0f},\"peers\":[",
                        2 * data * n_peers, retrans * n_peers, spurious * n_peers);
    for (int p = 0; p < n_peers; p++)
        used += snprintf(out + used, len - (size_t)used,
                         "%s{\"host\":\"%s\",\"connections\":3,\"tcp_segments_sent\":%.0f,"
                         "\"tcp_data_segments_sent\":%.0f,\"tcp_retransmitted\":%.0f,"
                         "\"tcp_spurious_retransmits\":%.0f}",
                         p ? "," : "", peers[p], 2 * data, data, retrans, spurious);
    snprintf(out + used, len - (size_t)used, "]}");
}

/* summary.json of ranks 0..n-1, rank i on node n(i+1) with network object nets[i]. */
static void summary_nodes(const char *const *nets, int n)
{
    char text[8192];
    int used = snprintf(text, sizeof text, "{\"num_processes\":%d,\"aggregated_metrics\":{"
                        "\"avg_loss\":3.9,\"num_parameters\":250000},\"rank_results\":[", n);
    for (int i = 0; i < n; i++)
        used += snprintf(text + used, sizeof text - (size_t)used,
                         "%s{\"rank\":%d,\"host\":\"n%d\",\"steps\":40%s}", i ? "," : "", i,
                         i + 1, nets[i]);
    snprintf(text + used, sizeof text - (size_t)used, "]}\n");
    put("summary.json", "w", text);
}

/* Thresholds two_nodes sets instead of the defaults when `opened` (a test's opened gate). */
static bool opened;

/* Two nodes, each sending `data` segments to the other, `retrans` resent, `spurious` D-SACKed:
 * the criterion's status (its note in *note when not NULL). */
static enum gate_status two_nodes(double data, double retrans, double spurious, char *note,
                                  size_t note_len)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    char a[1024], b[1024];
    const char *to_n2[] = {"n2"}, *to_n1[] = {"n1"};
    cfg_defaults(&c);
    if (opened)
        c.gates.packet_loss_go = c.gates.packet_loss_no_go = 1;
    net_obj(a, sizeof a, to_n2, 1, data, retrans, spurious);
    net_obj(b, sizeof b, to_n1, 1, data, 0, 0);
    const char *nets[] = {a, b};
    summary_nodes(nets, 2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    enum gate_status st = res.crit[GATE_PACKET_LOSS].status;
    if (note != NULL)
        snprintf(note, note_len, "%s", res.crit[GATE_PACKET_LOSS].note);
    gate_result_free(&res);
    gate_input_free(&in);
    return st;
}

/* ---- the statistics -------------------------------------------------------------------------- */

START_TEST(bounds_match_their_closed_forms)
{
    double lo, hi;
    /* none lost: lo 0, hi = 1 - alpha^(1/n) */
    gate_loss_bounds(0, 1000, 0.05, &lo, &hi);
    ck_assert_double_eq(lo, 0.0);
    ck_assert_double_eq_tol(hi, 1.0 - pow(0.05, 1.0 / 1000), 1e-12);
    /* one lost: P(X >= 1 | lo) = 1 - (1 - lo)^n = alpha */
    gate_loss_bounds(1, 132, 0.05, &lo, &hi);
    ck_assert_double_eq_tol(lo, 1.0 - pow(0.95, 1.0 / 132), 1e-12);
    /* all lost: hi 1, lo = alpha^(1/n) */
    gate_loss_bounds(20, 20, 0.05, &lo, &hi);
    ck_assert_double_eq(hi, 1.0);
    ck_assert_double_eq_tol(lo, pow(0.05, 1.0 / 20), 1e-12);
    /* symmetry: the bounds of k of n are one minus those of n - k */
    double lo2, hi2;
    gate_loss_bounds(1000, 50000, 0.05, &lo, &hi);
    gate_loss_bounds(49000, 50000, 0.05, &lo2, &hi2);
    ck_assert_double_eq_tol(lo, 1.0 - hi2, 1e-9);
    ck_assert_double_eq_tol(hi, 1.0 - lo2, 1e-9);
    ck_assert(lo < 0.02 && 0.02 < hi && hi - lo < 0.004);
    /* the segments a sample needs to show 0.1%: its upper bound with none lost is under it, one
     * fewer is over it */
    double need = gate_loss_min_segments(0.001, 0.05);
    ck_assert_double_eq(need, 2995.0);
    gate_loss_bounds(0, need, 0.05, &lo, &hi);
    ck_assert(hi <= 0.001);
    gate_loss_bounds(0, need - 1, 0.05, &lo, &hi);
    ck_assert(hi > 0.001);
    ck_assert(isinf(gate_loss_min_segments(0, 0.05)));
}
END_TEST

/* ---- what is judged, and what is not --------------------------------------------------------- */

/* The AMD Zen 5 phase1: one node, 1 of its host's 132 segments resent.  n/a, the reason said. */
START_TEST(one_node_is_not_applicable)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture(); /* two ranks on n1 */
    cfg_defaults(&c);
    put("summary.json", "w", "{\"num_processes\":2,\"aggregated_metrics\":{\"avg_loss\":3.9},"
        "\"rank_results\":[{\"rank\":0,\"host\":\"n1\",\"steps\":300,\"network\":{\"seconds\":"
        "4.3,\"tcp_segments_sent\":132,\"tcp_retransmitted\":1,\"peers\":[]}},{\"rank\":1,"
        "\"host\":\"n1\",\"steps\":300}]}\n");
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    const struct gate_criterion *k = &res.crit[GATE_PACKET_LOSS];
    ck_assert_int_eq(k->status, GATE_NA);
    ck_assert_msg(strstr(k->note, "one node (n1): its ranks talk through shared memory, no "
                         "network to judge") != NULL, "%s", k->note);
    /* the host's counters stay as context */
    ck_assert_msg(strstr(k->note, "whole hosts (context): 1 of 132 TCP segments resent") != NULL,
                  "%s", k->note);
    ck_assert_str_eq(res.lossy_host, "");
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

START_TEST(no_counters_and_older_summaries_are_not_applicable)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    cfg_defaults(&c);
    const char *none[] = {"", ""};
    summary_nodes(none, 2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_NA);
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_PACKET_LOSS].note, "no network counters"));
    gate_result_free(&res);
    gate_input_free(&in);
    /* a summary from before the loss count: connections, but no data segments */
    const char *old = ",\"network\":{\"tcp_segments_sent\":20000,\"tcp_retransmitted\":400,"
                      "\"peers\":[{\"host\":\"n9\",\"tcp_segments_sent\":20000,"
                      "\"tcp_retransmitted\":400}]}";
    const char *two_old[] = {old, old};
    summary_nodes(two_old, 2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_NA);
    ck_assert_msg(strstr(res.crit[GATE_PACKET_LOSS].note, "predate the count of data segments")
                  != NULL, "%s", res.crit[GATE_PACKET_LOSS].note);
    ck_assert(isnan(res.crit[GATE_PACKET_LOSS].measured));
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* Too little traffic is n/a, never NO-GO, whatever the share: 1 of 132, 2 of 1000, none of
 * 2000.  Enough of it to show the limit is NO-GO all the same: 5 of 132. */
START_TEST(too_little_traffic_is_never_no_go)
{
    char note[GATE_NOTE_MAX];
    fixture();
    ck_assert_int_eq(two_nodes(132, 1, 0, note, sizeof note), GATE_NA);
    ck_assert_msg(strstr(note, "too little traffic: 1 data segments lost of 264 between nodes "
                         "cannot show a share of 0.1% (2995 needed with none lost)") != NULL,
                  "%s", note);
    ck_assert_int_eq(two_nodes(1000, 2, 0, NULL, 0), GATE_NA);
    ck_assert_int_eq(two_nodes(1000, 0, 0, NULL, 0), GATE_NA);
    /* 5 of 132 (3.8%): its lower bound, 1.5%, is over 0.1%: the sample shows it */
    ck_assert_int_eq(two_nodes(132, 5, 0, note, sizeof note), GATE_NO_GO);
    /* a test's opened gate (go = no_go = 1, net.sh's flap): no share is above it, n/a, said so */
    opened = true;
    ck_assert_int_eq(two_nodes(5766, 54, 0, note, sizeof note), GATE_NA);
    opened = false;
    ck_assert_msg(strstr(note, "no share can be above gates.packet_loss_no_go = 1: not judged; "
                         "54 data segments lost of 11532 between nodes") != NULL, "%s", note);
    teardown_fixture();
}
END_TEST

/* The undisturbed phase2a: 10 of 65,017 resent.  Probes and spurious resends the receiver
 * D-SACKed are TCP's housekeeping, not loss: all 10 of them GO; 8 of them, 2 lost: HOLD (loss
 * seen, not shown above 0.1%); never NO-GO.  So is every share the sample cannot show over
 * 0.1%: 60 of 65,017 (0.092%). */
START_TEST(housekeeping_is_not_loss)
{
    char note[GATE_NOTE_MAX];
    fixture();
    ck_assert_int_eq(two_nodes(65017, 10, 10, note, sizeof note), GATE_GO);
    ck_assert_msg(strstr(note, "MPI's TCP connections between nodes: worst node n1: 0 of 65017 "
                         "data segments lost (0%, 95% bounds 0%-0.00461%)") != NULL, "%s", note);
    ck_assert_msg(strstr(note, "n2 0 of 65017") != NULL, "%s", note);
    ck_assert_msg(strstr(note, "whole hosts (context): 10 of 260068 TCP segments resent; 14 "
                         "tail-loss probes (0 taken by TCP for a repaired loss), 10 D-SACKs") != NULL,
                  "%s", note);
    ck_assert_int_eq(two_nodes(65017, 10, 8, note, sizeof note), GATE_HOLD);
    ck_assert_msg(strstr(note, "worst node n1: 2 of 65017 data segments lost") != NULL, "%s",
                  note);
    ck_assert_int_eq(two_nodes(65017, 60, 0, NULL, 0), GATE_HOLD);
    /* and 100 of 65,017 (0.15%): its lower bound, 0.127%, is over 0.1% */
    ck_assert_int_eq(two_nodes(65017, 100, 0, note, sizeof note), GATE_NO_GO);
    ck_assert_msg(strstr(note, "two nodes: a lossy link cannot tell which end loses; lossy "
                         "links: n1 -> n2 0.154% (100 of 65017)") != NULL, "%s", note);
    teardown_fixture();
}
END_TEST

/* Three nodes, n2's link lossy both ways at `pct`% of 50,000 segments on each of its links; n1
 * and n3 lose nothing between them.  NO-GO, naming n2. */
static void lossy_n2(double pct)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    char n1[1024], n2[1024], n3[1024];
    double lost = 50000 * pct / 100;
    cfg_defaults(&c);
    snprintf(n1, sizeof n1, ",\"network\":{\"tcp_segments_sent\":2e5,\"tcp_retransmitted\":%.0f,"
             "\"peers\":[{\"host\":\"n2\",\"tcp_data_segments_sent\":50000,\"tcp_retransmitted\":"
             "%.0f,\"tcp_spurious_retransmits\":1},{\"host\":\"n3\",\"tcp_data_segments_sent\":"
             "50000,\"tcp_retransmitted\":3,\"tcp_spurious_retransmits\":3}]}", lost + 4,
             lost + 1);
    snprintf(n2, sizeof n2, ",\"network\":{\"tcp_segments_sent\":2e5,\"tcp_retransmitted\":%.0f,"
             "\"peers\":[{\"host\":\"n1\",\"tcp_data_segments_sent\":50000,\"tcp_retransmitted\":"
             "%.0f,\"tcp_spurious_retransmits\":0},{\"host\":\"n3\",\"tcp_data_segments_sent\":"
             "50000,\"tcp_retransmitted\":%.0f,\"tcp_spurious_retransmits\":0}]}", 2 * lost,
             lost, lost);
    snprintf(n3, sizeof n3, ",\"network\":{\"tcp_segments_sent\":2e5,\"tcp_retransmitted\":%.0f,"
             "\"peers\":[{\"host\":\"n1\",\"tcp_data_segments_sent\":50000,\"tcp_retransmitted\":"
             "0},{\"host\":\"n2\",\"tcp_data_segments_sent\":50000,\"tcp_retransmitted\":%.0f}]}",
             lost, lost);
    const char *nets[] = {n1, n2, n3};
    summary_nodes(nets, 3);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    const struct gate_criterion *k = &res.crit[GATE_PACKET_LOSS];
    ck_assert_int_eq(k->status, GATE_NO_GO);
    ck_assert_double_eq_tol(k->measured, pct / 100, 1e-12);
    ck_assert_str_eq(res.lossy_host, "n2");
    char want[128];
    snprintf(want, sizeof want, "worst node n2: %.0f of 100000 data segments lost (%g%%", 2 * lost,
             pct);
    ck_assert_msg(strstr(k->note, want) != NULL, "%s", k->note);
    snprintf(want, sizeof want, "lossy links: n1 -> n2 %g%% (%.0f of 50000)", pct, lost);
    ck_assert_msg(strstr(k->note, want) != NULL, "%s", k->note);
    ck_assert_msg(strstr(k->note, "every lossy link is n2's") != NULL, "%s", k->note);
    ck_assert_ptr_null(strstr(k->note, "n1 -> n3"));
    gate_result_free(&res);
    gate_input_free(&in);
}

/* One end of a link: a one-peer network object (net_obj) toward `peer`, with what it received
 * from that peer added. */
static void link_end(char *obj, size_t len, const char *peer, double sent, double retrans,
                     double spurious, double received)
{
    const char *peers[] = {peer};
    net_obj(obj, len, peers, 1, sent, retrans, spurious);
    char *end = strstr(obj, "}]}");
    ck_assert_ptr_nonnull(end);
    snprintf(end, len - (size_t)(end - obj), ",\"tcp_data_segments_received\":%.0f}]}", received);
}

/* Where both ends of the link were read, lost is the fewer of what one end's TCP sent and the
 * other's never received, and TCP's resends less those D-SACKed.  The healthy phase2a that held
 * under load (n2 -> n1: 6 resent, 5 D-SACKed; no drop seen, 61 duplicates freed for 61 resends
 * in skb:kfree_skb) is GO; segments that did not arrive and were resent are counted. */
START_TEST(both_ends_count_what_never_arrived)
{
    char a[1024], b[1024], note[GATE_NOTE_MAX];
    const char *to_n2[] = {"n2"};
    struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    cfg_defaults(&c);
    link_end(a, sizeof a, "n2", 5603, 3, 3, 5587);
    link_end(b, sizeof b, "n1", 5587, 6, 5, 5603);
    const char *nets[] = {a, b};
    summary_nodes(nets, 2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    snprintf(note, sizeof note, "%s", res.crit[GATE_PACKET_LOSS].note);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_GO);
    ck_assert_msg(strstr(note, "n1: 0 of 5603") != NULL && strstr(note, "n2 0 of 5587") != NULL,
                  "%s", note);
    ck_assert_msg(strstr(note, "lost = the fewer of the segments one end sent and the other "
                         "never received, and of TCP's resends less those D-SACKed") != NULL,
                  "%s", note);
    gate_result_free(&res);
    gate_input_free(&in);
    /* 20 of n2's 5587 never reached n1, and TCP resent 26, 5 of them D-SACKed: 20, NO-GO */
    link_end(a, sizeof a, "n2", 5603, 3, 3, 5567);
    link_end(b, sizeof b, "n1", 5587, 26, 5, 5603);
    summary_nodes(nets, 2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    snprintf(note, sizeof note, "%s", res.crit[GATE_PACKET_LOSS].note);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_NO_GO);
    ck_assert_msg(strstr(note, "worst node n2: 20 of 5587 data segments lost") != NULL, "%s",
                  note);
    gate_result_free(&res);
    gate_input_free(&in);
    /* one end read, the other not: each link as it can be counted, and the note says so */
    net_obj(a, sizeof a, to_n2, 1, 5603, 3, 3);
    summary_nodes(nets, 2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_msg(strstr(res.crit[GATE_PACKET_LOSS].note, "D-SACKed on 1 of 2 links, TCP's count "
                         "alone on the others") != NULL, "%s", res.crit[GATE_PACKET_LOSS].note);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* A resend that a D-SACK proved spurious after the last step (train_net_settle) is not lost:
 * the node's count already leaves it out, and the note's context says how many there were. */
START_TEST(resends_proven_at_the_end_are_context)
{
    char a[1024], b[1024];
    const char *to_n2[] = {"n2"}, *to_n1[] = {"n1"};
    struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    cfg_defaults(&c);
    char raw[1024];
    net_obj(raw, sizeof raw, to_n2, 1, 1700, 5, 5);
    raw[strlen(raw) - 1] = '\0'; /* the network object reopened for one more key */
    const char *probes = strstr(raw, "\"loss_probes\":7");
    ck_assert_ptr_nonnull(probes);
    snprintf(a, sizeof a, "%.*s\"loss_probes\":7,\"loss_probe_recoveries\":1%s,"
             "\"resends_proven_at_end\":1}", (int)(probes - raw), raw,
             probes + strlen("\"loss_probes\":7"));
    net_obj(b, sizeof b, to_n1, 1, 1700, 0, 0);
    const char *nets[] = {a, b};
    summary_nodes(nets, 2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_GO); /* 0 of 3400 lost */
    ck_assert_msg(strstr(res.crit[GATE_PACKET_LOSS].note, "14 tail-loss probes (1 taken by TCP for "
                         "a repaired loss)") != NULL, "%s", res.crit[GATE_PACKET_LOSS].note);
    ck_assert_msg(strstr(res.crit[GATE_PACKET_LOSS].note, "1 resend(s) proven spurious by a "
                         "D-SACK after the last step") != NULL, "%s",
                  res.crit[GATE_PACKET_LOSS].note);
    gate_result_free(&res);
    gate_input_free(&in);
    /* a summary without the key (an older one, or none proven): no such words */
    char note[GATE_NOTE_MAX];
    ck_assert_int_eq(two_nodes(65017, 10, 10, note, sizeof note), GATE_GO);
    ck_assert_msg(strstr(note, "after the last step") == NULL, "%s", note);
    teardown_fixture();
}
END_TEST

START_TEST(loss_of_two_and_half_a_percent_is_no_go_naming_the_node)
{
    fixture();
    lossy_n2(2);
    lossy_n2(0.5);
    teardown_fixture();
}
END_TEST

/* One lossy link over the limit, whose two ends are both at an end of every lossy link: as
 * tests/net.sh measured phase2b with 0.5% loss on n2 for 10 steps (the ring n1 -> n2 -> n3 -> n1
 * carries most segments).  n1 -> n2 lost 5 of 1471, over the limit; n2 -> n3 lost 2 of 1466 (3
 * resent, 1 D-SACKed), not; n3 -> n1 none of 1452.  n2 is at an end of both links that lost
 * anything, n1 of one: NO-GO naming n2, not n1.  Had n2 -> n3 lost nothing, the two ends could
 * not be told apart: no node named. */
static void one_lossy_link(double n2_n3_retrans, const char *want_host, const char *want_note)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    char n2[512];
    cfg_defaults(&c);
    const char *n1 = ",\"network\":{\"tcp_segments_sent\":2800,\"tcp_retransmitted\":6,\"peers\":["
                     "{\"host\":\"n2\",\"tcp_data_segments_sent\":1471,\"tcp_retransmitted\":5,"
                     "\"tcp_spurious_retransmits\":0},{\"host\":\"n3\",\"tcp_data_segments_sent\":"
                     "201,\"tcp_retransmitted\":0,\"tcp_spurious_retransmits\":0}]}";
    snprintf(n2, sizeof n2, ",\"network\":{\"tcp_segments_sent\":2800,\"tcp_retransmitted\":3,"
             "\"peers\":[{\"host\":\"n3\",\"tcp_data_segments_sent\":1466,\"tcp_retransmitted\":"
             "%.0f,\"tcp_spurious_retransmits\":1},{\"host\":\"n1\",\"tcp_data_segments_sent\":"
             "198,\"tcp_retransmitted\":0,\"tcp_spurious_retransmits\":0}]}", n2_n3_retrans);
    const char *n3 = ",\"network\":{\"tcp_segments_sent\":2800,\"tcp_retransmitted\":0,\"peers\":["
                     "{\"host\":\"n2\",\"tcp_data_segments_sent\":195,\"tcp_retransmitted\":0,"
                     "\"tcp_spurious_retransmits\":0},{\"host\":\"n1\",\"tcp_data_segments_sent\":"
                     "1452,\"tcp_retransmitted\":0,\"tcp_spurious_retransmits\":0}]}";
    const char *nets[] = {n1, n2, n3};
    summary_nodes(nets, 3);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    const struct gate_criterion *k = &res.crit[GATE_PACKET_LOSS];
    ck_assert_int_eq(k->status, GATE_NO_GO);
    ck_assert_msg(strstr(k->note, "worst node n1: 5 of 1672 data segments lost (0.299%, 95% "
                         "bounds 0.118%-0.628%)") != NULL, "%s", k->note);
    ck_assert_str_eq(res.lossy_host, want_host);
    ck_assert_msg(strstr(k->note, want_note) != NULL, "%s", k->note);
    ck_assert_msg(strstr(k->note, "lossy links: n1 -> n2 0.34% (5 of 1471)") != NULL, "%s",
                  k->note);
    ck_assert_ptr_null(strstr(k->note, "n2 -> n3 0."));
    gate_result_free(&res);
    gate_input_free(&in);
}

START_TEST(one_lossy_link_is_told_by_the_links_that_lost_anything)
{
    fixture();
    one_lossy_link(3, "n2", "every lossy link is n2's; and so is every link that lost anything");
    one_lossy_link(1, "", "a lossy link's two ends: the links that lost anything cannot tell "
                          "which loses");
    teardown_fixture();
}
END_TEST

/* Ranks that did not talk over TCP (no connection between the nodes): the fabric's ports are
 * judged where the kernel shows them; else n/a, and why. */
START_TEST(a_fabric_is_judged_on_its_ports)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    cfg_defaults(&c);
    const char *ib_ok = ",\"network\":{\"tcp_segments_sent\":300,\"tcp_retransmitted\":1,"
                        "\"peers\":[],\"fabric\":{\"ports\":1,\"packets\":1e6,\"errors\":0}}";
    const char *ib_bad = ",\"network\":{\"tcp_segments_sent\":300,\"tcp_retransmitted\":0,"
                         "\"peers\":[],\"fabric\":{\"ports\":1,\"packets\":1e6,\"errors\":5000}}";
    const char *ok_ok[] = {ib_ok, ib_ok}, *ok_bad[] = {ib_ok, ib_bad};
    summary_nodes(ok_ok, 2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_GO);
    ck_assert_msg(strstr(res.crit[GATE_PACKET_LOSS].note, "fabric ports: worst node n1: 0 of "
                         "1000000 fabric packets in error") != NULL, "%s",
                  res.crit[GATE_PACKET_LOSS].note);
    gate_result_free(&res);
    gate_input_free(&in);
    summary_nodes(ok_bad, 2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_NO_GO);
    ck_assert_ptr_nonnull(strstr(res.crit[GATE_PACKET_LOSS].note, "worst node n2: 5000 of"));
    gate_result_free(&res);
    gate_input_free(&in);
    const char *tcp_none = ",\"network\":{\"tcp_segments_sent\":300,\"tcp_retransmitted\":1,"
                           "\"peers\":[]}";
    const char *none[] = {tcp_none, tcp_none};
    summary_nodes(none, 2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    ck_assert_int_eq(res.crit[GATE_PACKET_LOSS].status, GATE_NA);
    ck_assert_msg(strstr(res.crit[GATE_PACKET_LOSS].note, "no TCP connection of the job between "
                         "its nodes: its ranks talked over another transport (InfiniBand or "
                         "RoCE through UCX or verbs); no fabric counters") != NULL, "%s",
                  res.crit[GATE_PACKET_LOSS].note);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

/* The report's section: the lossy node in JSON, Markdown and HTML, each link's lost / sent. */
START_TEST(the_section_names_the_lossy_node)
{
    static struct cfg c;
    struct gate_input in;
    struct gate_result res;
    struct rz_err err;
    fixture();
    cfg_defaults(&c);
    lossy_n2(2);
    ck_assert_int_eq(judge(&in, &res, &c, &err), RZ_OK);
    char *text = NULL;
    size_t len = 0;
    struct rz_json j;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    gate_json_network(&j, &in, &res);
    rz_json_object_end(&j);
    gate_md_network(f, &in, &res);
    gate_html_network(f, &in, &res);
    fclose(f);
    ck_assert_msg(strstr(text, "{\"network\":{\"lossy_host\":\"n2\",") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "\"host\":\"n2\",\"seconds\":0,\"tcp_segments_sent\":200000,"
                         "\"tcp_retransmitted\":2000,\"retransmit_share\":0.01,") != NULL, "%s",
                  text);
    ck_assert_ptr_nonnull(strstr(text, "\"mpi_data_segments_sent\":100000,\"mpi_lost\":2000,"));
    ck_assert_ptr_nonnull(strstr(text, "Every lossy link is **n2**'s."));
    ck_assert_msg(strstr(text, "| n1 | 200000 | 1004 | 0.502% | 0 | 0 | 0 | n2 1000 / 50000, "
                         "n3 0 / 50000 |") != NULL, "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "<strong id=\"lossy-host\">n2</strong>"));
    free(text);
    gate_result_free(&res);
    gate_input_free(&in);
    teardown_fixture();
}
END_TEST

void gate_net_tests(TCase *tc)
{
    tcase_add_test(tc, bounds_match_their_closed_forms);
    tcase_add_test(tc, one_node_is_not_applicable);
    tcase_add_test(tc, no_counters_and_older_summaries_are_not_applicable);
    tcase_add_test(tc, too_little_traffic_is_never_no_go);
    tcase_add_test(tc, housekeeping_is_not_loss);
    tcase_add_test(tc, resends_proven_at_the_end_are_context);
    tcase_add_test(tc, both_ends_count_what_never_arrived);
    tcase_add_test(tc, loss_of_two_and_half_a_percent_is_no_go_naming_the_node);
    tcase_add_test(tc, a_fabric_is_judged_on_its_ports);
    tcase_add_test(tc, the_section_names_the_lossy_node);
    tcase_add_test(tc, one_lossy_link_is_told_by_the_links_that_lost_anything);
}
