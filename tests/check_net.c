/* check_net.c: a node's network counters (src/net/): /proc/net/snmp's TCP counters,
 * /proc/net/netstat's TcpExt and /proc/net/dev's interfaces parse as the kernel writes them, lo
 * is left out, deltas never go negative, and a file without the counters is refused naming the
 * file and what is missing; an InfiniBand class directory's ports are summed, a missing one is
 * none; the kernel's socket diagnostics list a real connection with its counters, owner and
 * inode, and a process's descriptors give the inodes of the sockets it holds. */
#include "config.h"

#include <math.h>

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

/* As a Linux 6.1 kernel writes it (shortened: the counters around those read). */
static const char *ext =
    "TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes TCPLossProbeRecovery TCPDSACKRecv "
    "TCPSpuriousRTOs TCPLostRetransmit TCPFastRetrans\n"
    "TcpExt: 0 12 40 3 25 2 1 30\n"
    "IpExt: InNoRoutes\nIpExt: 0\n";

START_TEST(test_ext)
{
    struct netstat n = {0};
    struct rz_err err;
    ck_assert_int_eq(netstat_parse_ext(ext, "netstat", &n, &err), RZ_OK);
    ck_assert_int_eq(n.has_ext, 1);
    ck_assert_double_eq(n.timeouts, 12.0);
    ck_assert_double_eq(n.loss_probes, 40.0);
    ck_assert_double_eq(n.loss_probe_recovery, 3.0);
    ck_assert_double_eq(n.dsack_recv, 25.0);
    ck_assert_double_eq(n.spurious_rtos, 2.0);
    ck_assert_double_eq(n.lost_retransmit, 1.0);
    ck_assert_int_eq(netstat_parse_ext("TcpExt: TCPLossProbes\nTcpExt: 1\n", "x/netstat", &n,
                                       &err), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "x/netstat: the TcpExt: header names no"));
    ck_assert_int_eq(n.has_ext, 0);
}
END_TEST

/* Write `value` to dir/rel, making its directories. */
static void put_file(const char *dir, const char *rel, const char *value)
{
    char path[1024], cmd[1200];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    ck_assert_int_eq(system(cmd), 0);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(value, f);
    fclose(f);
}

/* Two devices, three ports: packets and the error counters summed, a counter a driver lacks is
 * 0, a directory that is not a port's counters is left out; no directory is no fabric. */
START_TEST(test_fabric)
{
    char dir[256];
    rz_test_tmpdir(dir, sizeof dir, "check_net");
    put_file(dir, "mlx5_0/ports/1/counters/port_xmit_packets", "1000\n");
    put_file(dir, "mlx5_0/ports/1/counters/port_rcv_packets", "2000\n");
    put_file(dir, "mlx5_0/ports/1/counters/symbol_error", "3\n");
    put_file(dir, "mlx5_0/ports/1/counters/port_xmit_wait", "99999\n"); /* congestion */
    put_file(dir, "mlx5_0/ports/2/counters/port_rcv_errors", "4\n");
    put_file(dir, "mlx5_0/ports/2/counters/link_downed", "1\n");
    put_file(dir, "mlx5_1/ports/1/counters/port_xmit_packets", "500\n");
    put_file(dir, "mlx5_1/ports/1/counters/port_xmit_discards", "2\n");
    put_file(dir, "mlx5_1/ports/1/hw_counters/out_of_sequence", "7\n");
    struct netstat n = {0};
    struct rz_err err;
    ck_assert_int_eq(netstat_read_fabric(dir, &n, &err), RZ_OK);
    ck_assert_double_eq(n.fabric_ports, 3.0);
    ck_assert_double_eq(n.fabric_packets, 3500.0);
    ck_assert_double_eq(n.fabric_errors, 3.0 + 4.0 + 1.0 + 2.0);
    struct netstat later = n;
    later.fabric_packets += 100;
    later.fabric_errors += 1;
    struct netstat d = netstat_delta(&later, &n);
    ck_assert_double_eq(d.fabric_ports, 3.0);
    ck_assert_double_eq(d.fabric_packets, 100.0);
    ck_assert_double_eq(d.fabric_errors, 1.0);
    rz_test_rmtree(dir);
    ck_assert_int_eq(netstat_read_fabric(dir, &n, &err), RZ_OK);
    ck_assert_double_eq(n.fabric_ports, 0.0);
    ck_assert_double_eq(n.fabric_packets, 0.0);
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
    ck_assert_ptr_nonnull(strstr(err.msg, "the Tcp: values line has no number for RetransSegs"));
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
            /* data segments: at least one per 64 KiB, and no more than every segment sent */
            ck_assert_msg(c[i].data_segs_out >= 16 && c[i].data_segs_out <= c[i].segs_out,
                          "%g data segments of %g", c[i].data_segs_out, c[i].segs_out);
            ck_assert(c[i].dsack_dups <= c[i].retrans); /* NaN (an old kernel) fails too */
            ck_assert_uint_eq(c[i].uid, (unsigned)getuid());
            /* its inode is the client socket's, one of this process's descriptors */
            struct stat sb;
            ck_assert_int_eq(fstat(cli, &sb), 0);
            ck_assert_uint_eq(c[i].inode, (unsigned long)sb.st_ino);
            unsigned long *ino = NULL;
            size_t n_ino = 0, cap = 0;
            ck_assert_msg(netsock_pid_sockets("/proc", (long)getpid(), &ino, &n_ino, &cap,
                                              &err) == RZ_OK, "%s", err.msg);
            int mine = 0;
            for (size_t k = 0; k < n_ino; k++)
                mine += ino[k] == c[i].inode;
            ck_assert_int_eq(mine, 1);
            ck_assert_uint_ge(n_ino, 3); /* the listener, the client and the accepted socket */
            free(ino);
        }
    ck_assert_int_eq(found, 1); /* the client's end; the listener is left out */
    free(c);
    close(acc);
    close(cli);
    close(srv);
}
END_TEST

/* A process's descriptors as /proc shows them: the sockets' inodes, appended to what the buffer
 * held; a pipe, a file and "." are not sockets; a process that is gone is an error. */
START_TEST(test_pid_sockets)
{
    char dir[256], fd[300], path[400];
    rz_test_tmpdir(dir, sizeof dir, "check_net");
    snprintf(fd, sizeof fd, "%s/42/fd", dir);
    put_file(dir, "42/fd/.keep", "");
    const char *links[][2] = {{"3", "socket:[12345]"}, {"4", "pipe:[777]"}, {"5", "/dev/null"},
                              {"6", "socket:[9]"}, {"7", "anon_inode:[eventfd]"}};
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", fd, links[i][0]);
        ck_assert_int_eq(symlink(links[i][1], path), 0);
    }
    unsigned long *ino = malloc(sizeof *ino);
    ck_assert_ptr_nonnull(ino);
    ino[0] = 1; /* what the buffer held stays */
    size_t n = 1, cap = 1;
    struct rz_err err;
    ck_assert_int_eq(netsock_pid_sockets(dir, 42, &ino, &n, &cap, &err), RZ_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(ino[0], 1);
    ck_assert(ino[1] + ino[2] == 12345 + 9 && (ino[1] == 9 || ino[2] == 9));
    ck_assert_int_eq(netsock_pid_sockets(dir, 43, &ino, &n, &cap, &err), RZ_EIO);
    ck_assert_msg(strstr(err.msg, "/43/fd") != NULL, "%s", err.msg);
    ck_assert_uint_eq(n, 3);
    free(ino);
    rz_test_rmtree(dir);
}
END_TEST

START_TEST(test_lost_less_spurious)
{
    ck_assert_double_eq(netsock_lost(10, 3), 7);  /* resent less those D-SACK proved spurious */
    ck_assert_double_eq(netsock_lost(2, 5), 0);   /* never below none */
    ck_assert_double_eq(netsock_lost(4, NAN), 4); /* no D-SACK count: every resend counts */
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
    tcase_add_test(parse, test_ext);
    tcase_add_test(parse, test_fabric);
    tcase_add_test(parse, test_dev_sums_all_but_lo);
    tcase_add_test(parse, test_delta_and_share);
    tcase_add_test(parse, test_read_proc);
    suite_add_tcase(s, parse);
    TCase *sock = tcase_create("sockets");
    tcase_add_test(sock, test_sock_lists_a_connection);
    tcase_add_test(sock, test_local_addrs_skip_loopback);
    tcase_add_test(sock, test_pid_sockets);
    tcase_add_test(sock, test_lost_less_spurious);
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
