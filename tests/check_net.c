/* check_net.c: a node's network counters (src/net/): /proc/net/snmp's TCP counters and
 * /proc/net/dev's interfaces parse as the kernel writes them, lo is left out, deltas never go
 * negative, and a file without the counters is refused naming the file and what is missing;
 * the kernel's socket diagnostics list a real connection with its counters. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "net/netsock.h"
#include "net/netstat.h"
#include "testutil.h"

/* As a Linux 6.1 kernel writes them (the IP line shortened). */
static const char *snmp =
    "Ip: Forwarding DefaultTTL InReceives\n"
    "Ip: 1 64 94721\n"
    "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets "
    "CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
    "Tcp: 1 200 120000 -1 1341 1313 10 20 6 34539 33786 3 0 31 0\n"
    "Udp: InDatagrams NoPorts InErrors OutDatagrams\n"
    "Udp: 10 0 0 10\n";

static const char *dev =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
    "drop fifo colls carrier compressed\n"
    "    lo: 3734416   24307    0    0    0     0          0         0  3734416   24307    0    "
    "0    0     0       0          0\n"
    "  eth0: 1000   10    1    2    0     0          0         0  5000   50    3    4    0     0  "
    "     0          0\n"
    "  eth1:  200    2    0    1    0     0          0         0   300    3    0    0    0     0  "
    "     0          0\n";

START_TEST(test_snmp)
{
    struct netstat n = {0};
    struct rz_err err;
    ck_assert_int_eq(netstat_parse_snmp(snmp, "snmp", &n, &err), RZ_OK);
    ck_assert_double_eq(n.tcp_out_segs, 33786.0);
    ck_assert_double_eq(n.tcp_retrans_segs, 3.0);
}
END_TEST

START_TEST(test_dev_sums_all_but_lo)
{
    struct netstat n = {0};
    struct rz_err err;
    ck_assert_int_eq(netstat_parse_dev(dev, "dev", &n, &err), RZ_OK);
    ck_assert_double_eq(n.rx_bytes, 1200.0);
    ck_assert_double_eq(n.tx_bytes, 5300.0);
    ck_assert_double_eq(n.errors, 1.0 + 3.0);
    ck_assert_double_eq(n.drops, 2.0 + 4.0 + 1.0);
}
END_TEST

START_TEST(test_delta_and_share)
{
    struct netstat a = {.tcp_out_segs = 1000, .tcp_retrans_segs = 1, .tx_bytes = 10,
                        .rx_bytes = 50, .drops = 2, .errors = 0};
    struct netstat b = {.tcp_out_segs = 3000, .tcp_retrans_segs = 5, .tx_bytes = 4,
                        .rx_bytes = 60, .drops = 2, .errors = 1};
    struct netstat d = netstat_delta(&b, &a);
    ck_assert_double_eq(d.tcp_out_segs, 2000.0);
    ck_assert_double_eq(d.tcp_retrans_segs, 4.0);
    ck_assert_double_eq(d.tx_bytes, 0.0); /* went backwards: 0, not -6 */
    ck_assert_double_eq(d.rx_bytes, 10.0);
    ck_assert_double_eq(d.drops, 0.0);
    ck_assert_double_eq(d.errors, 1.0);
    ck_assert_double_eq_tol(netstat_retrans_share(&d), 0.002, 1e-12);
    struct netstat none = {0};
    ck_assert_double_eq(netstat_retrans_share(&none), 0.0);
}
END_TEST

START_TEST(test_read_proc)
{
    /* this machine's own counters: they parse, and they only grow */
    struct netstat a, b;
    struct rz_err err;
    ck_assert_int_eq(netstat_read("/proc", &a, &err), RZ_OK);
    ck_assert_int_eq(netstat_read("/proc", &b, &err), RZ_OK);
    ck_assert(b.tcp_out_segs >= a.tcp_out_segs);
    ck_assert(a.tcp_retrans_segs <= a.tcp_out_segs);
}
END_TEST

START_TEST(test_snmp_errors)
{
    struct netstat n = {0};
    struct rz_err err;
    ck_assert_int_eq(netstat_parse_snmp("Ip: a b\nIp: 1 2\n", "x/snmp", &n, &err), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "x/snmp: no \"Tcp:\""));
    ck_assert_int_eq(netstat_parse_snmp("Tcp: InSegs RetransSegs\nTcp: 1 2\n", "x/snmp", &n,
                                        &err), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "names no OutSegs"));
    ck_assert_int_eq(netstat_parse_snmp("Tcp: OutSegs RetransSegs\nTcp: 1\n", "x/snmp", &n,
                                        &err), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "no number for OutSegs or RetransSegs"));
    ck_assert_int_eq(netstat_parse_snmp("Tcp: OutSegs RetransSegs\nTcp: 1 x2\n", "x/snmp", &n,
                                        &err), RZ_EIO);
}
END_TEST

START_TEST(test_dev_errors)
{
    struct netstat n = {0};
    struct rz_err err;
    ck_assert_int_eq(netstat_parse_dev("  eth0: 1 2 3\n", "x/dev", &n, &err), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "x/dev: interface eth0: 3 counters, not 16"));
}
END_TEST

START_TEST(test_read_missing)
{
    struct netstat n;
    struct rz_err err;
    ck_assert_int_eq(netstat_read("/nonexistent-proc", &n, &err), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent-proc/net/snmp"));
}
END_TEST

/* A real connection over loopback: the kernel's diagnostics list it with the peer's port, and
 * its segments-sent counter covers the bytes sent. */
START_TEST(test_sock_lists_a_connection)
{
    int srv = socket(AF_INET, SOCK_STREAM, 0), cli = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(srv, 0);
    ck_assert_int_ge(cli, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    ck_assert_int_eq(bind(srv, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(srv, 1), 0);
    ck_assert_int_eq(getsockname(srv, (struct sockaddr *)&a, &al), 0);
    ck_assert_int_eq(connect(cli, (struct sockaddr *)&a, sizeof a), 0);
    int acc = accept(srv, NULL, NULL);
    ck_assert_int_ge(acc, 0);
    static char buf[1 << 16];
    for (int i = 0; i < 16; i++) { /* 1 MiB: many segments, read as they come */
        ck_assert_int_eq(send(cli, buf, sizeof buf, 0), (ssize_t)sizeof buf);
        for (size_t got = 0; got < sizeof buf;) {
            ssize_t r = recv(acc, buf, sizeof buf - got, 0);
            ck_assert_int_gt(r, 0);
            got += (size_t)r;
        }
    }
    struct netsock_conn *c = NULL;
    size_t n = 0;
    struct rz_err err;
    ck_assert_msg(netsock_list(&c, &n, &err) == RZ_OK, "%s", err.msg);
    int port = ntohs(a.sin_port), found = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].remote_port == port && strcmp(c[i].remote, "127.0.0.1") == 0) {
            found++;
            ck_assert_msg(c[i].segs_out >= 16, "%g segments for 1 MiB", c[i].segs_out);
            ck_assert(c[i].retrans <= c[i].segs_out);
        }
    ck_assert_int_eq(found, 1); /* the client's end; the listener is left out */
    free(c);
    close(acc);
    close(cli);
    close(srv);
}
END_TEST

START_TEST(test_local_addrs_skip_loopback)
{
    char addrs[16][NETSOCK_ADDR_LEN];
    int n = -1;
    struct rz_err err;
    ck_assert_int_eq(netsock_local_addrs(addrs, 16, &n, &err), RZ_OK);
    ck_assert_int_ge(n, 0);
    for (int i = 0; i < n; i++) {
        ck_assert_str_ne(addrs[i], "127.0.0.1");
        ck_assert_str_ne(addrs[i], "::1");
    }
    ck_assert_int_eq(netsock_local_addrs(addrs, 0, &n, &err), RZ_OK);
    ck_assert_int_eq(n, 0);
}
END_TEST

static Suite *net_suite(void)
{
    Suite *s = suite_create("net");
    TCase *parse = tcase_create("parse");
    tcase_add_test(parse, test_snmp);
    tcase_add_test(parse, test_dev_sums_all_but_lo);
    tcase_add_test(parse, test_delta_and_share);
    tcase_add_test(parse, test_read_proc);
    suite_add_tcase(s, parse);
    TCase *sock = tcase_create("sockets");
    tcase_add_test(sock, test_sock_lists_a_connection);
    tcase_add_test(sock, test_local_addrs_skip_loopback);
    suite_add_tcase(s, sock);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, test_snmp_errors);
    tcase_add_test(errors, test_dev_errors);
    tcase_add_test(errors, test_read_missing);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(net_suite());
}
