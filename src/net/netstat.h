/* netstat.h: a node's network counters, as its kernel keeps them (one network namespace: on a
 * site, the whole host; on the dev cluster, one node).
 *   TCP        /proc/net/snmp, the "Tcp:" lines: OutSegs and RetransSegs
 *   interfaces /proc/net/dev, every interface but lo: bytes sent and received, drops and errors
 *              (receive and transmit together)
 *   TcpExt     /proc/net/netstat, optional (has_ext): how TCP's retransmissions came about
 *              (TCPLossProbes: tail-loss probes sent, RFC 8985; TCPLossProbeRecovery: losses a
 *              probe repaired; TCPDSACKRecv: D-SACKs received, each a resend that was not
 *              needed; TCPSpuriousRTOs: timeouts F-RTO proved spurious; TCPLostRetransmit: a
 *              retransmission lost again; TCPTimeouts: retransmission timeouts)
 *   fabric     /sys/class/infiniband/DEV/ports/N/counters, optional (fabric_ports > 0): an
 *              InfiniBand or RoCE port's packets (port_xmit_packets + port_rcv_packets) and
 *              errors (FABRIC_ERROR_COUNTERS in netstat.c), every port of every device summed
 * The counters are the kernel's since boot, for every process of the host: a delta between two
 * readings is what the host did meanwhile, ryzen-train's traffic and any other (ssh, NFS, the
 * scheduler).  A retransmitted segment is TCP's own record of a loss it repaired (or a timeout it
 * took for one): the packet-loss gate's figure.  Drops that a firewall makes before the interface
 * counts a packet (nftables at ingress) show only as retransmissions.
 * Ownership: plain values; no heap. */
#ifndef RZ_NET_NETSTAT_H
#define RZ_NET_NETSTAT_H

#include "core/status.h"

struct netstat {
    double tcp_out_segs;     /* TCP segments sent, retransmissions included */
    double tcp_retrans_segs; /* TCP segments retransmitted */
    double tx_bytes, rx_bytes;
    double drops, errors;    /* rx + tx, every interface but lo */
    int has_ext;             /* /proc/net/netstat was read */
    double loss_probes, loss_probe_recovery, dsack_recv, spurious_rtos, lost_retransmit,
        timeouts;
    double fabric_ports;     /* the ports read under /sys/class/infiniband; 0: none */
    double fabric_packets, fabric_errors;
};

/* Parse the text of /proc/net/snmp (its two "Tcp:" lines: names, then values); `what` names the
 * file in a message.  RZ_EIO when the lines or the two counters are missing. */
enum rz_status netstat_parse_snmp(const char *text, const char *what, struct netstat *out,
                                  struct rz_err *err);

/* Parse the text of /proc/net/dev: the sums over every interface but lo. */
enum rz_status netstat_parse_dev(const char *text, const char *what, struct netstat *out,
                                 struct rz_err *err);

/* Parse the text of /proc/net/netstat: its "TcpExt:" lines; RZ_EIO when they are missing. */
enum rz_status netstat_parse_ext(const char *text, const char *what, struct netstat *out,
                                 struct rz_err *err);

/* The ports of an InfiniBand/RoCE class directory ("/sys/class/infiniband", or a test's copy):
 * sums into out's fabric fields.  No directory, or no device: fabric_ports 0, RZ_OK.  A port's
 * counter that is missing or unreadable counts 0 (a driver shows the ones it has). */
enum rz_status netstat_read_fabric(const char *dir, struct netstat *out, struct rz_err *err);

/* snmp and dev under `proc` ("/proc", or a test's copy), and netstat when it is readable
 * (has_ext). */
enum rz_status netstat_read(const char *proc, struct netstat *out, struct rz_err *err);

/* later - earlier, counter by counter (a counter that went backwards, as after a wrap or an
 * interface that went away, gives 0, never a negative). */
struct netstat netstat_delta(const struct netstat *later, const struct netstat *earlier);

/* Retransmitted over sent segments, 0 when none were sent. */
double netstat_retrans_share(const struct netstat *d);

#endif
