/* netsock.h: the TCP connections of this network namespace, each with its own counters, from the
 * kernel's socket diagnostics (NETLINK_SOCK_DIAG, inet_diag: what `ss -ti` shows).  Where
 * netstat.h has the host's totals, these tell the peers apart: the segments a node sent to each
 * other node and how many of them it had to send again, so that a lossy link can be named.
 * A connection's counters run from when it was opened: ryzen-train's MPI connections open on
 * first use, so read before MPI_Finalize they count this run's traffic alone.
 * What a connection's tcp_info tells of loss (include/uapi/linux/tcp.h, RFC 4898):
 *   tcpi_data_segs_out  data segments sent, retransmissions included (pure ACKs are not: they
 *                       are never retransmitted, and counting them would dilute the share)
 *   tcpi_total_retrans  segments retransmitted, for every reason: a fast retransmit after a loss
 *                       the SACKs showed, a timeout (RTO), and also a tail-loss probe (RFC 8985)
 *                       that resent the last segment, and a resend that was not needed
 *   tcpi_dsack_dups     retransmissions the receiver reported as duplicates (D-SACK, RFC 2883):
 *                       the original had arrived, so the resend was spurious (a probe or a timeout
 *                       that fired early, reordering taken for loss)
 *   tcpi_data_segs_in   data segments received, duplicates included: what reached this end's TCP
 *   tcpi_unacked        segments sent and not yet acknowledged (now)
 * total_retrans - dsack_dups is the segments resent for a loss the kernel could not disprove:
 * TCP's own account of loss.  It also counts a tail-loss probe whose D-SACK the sender never
 * counted, though no drop was seen and the receiver freed as many duplicates as were resent
 * (under load on the dev cluster, issue 37): so where both ends of a link are read, the packet-loss gate also asks what one
 * end's TCP sent and the other's never received (record/summary.h, summary_link_losses).  tcpi_lost and tcpi_retrans are not used: they are the segments
 * lost or resent *now* (the current window), not counts since the connection opened.
 * Ownership: netsock_list allocates *out; the caller frees it. */
#ifndef RZ_NET_NETSOCK_H
#define RZ_NET_NETSOCK_H

#include <stddef.h>

#include "core/status.h"

#define NETSOCK_ADDR_LEN 48 /* an IPv6 address as text, with room */

struct netsock_conn {
    char remote[NETSOCK_ADDR_LEN]; /* numeric; an IPv4-mapped IPv6 address as plain IPv4 */
    int remote_port, local_port;
    double segs_out, retrans;      /* tcp_info: tcpi_segs_out, tcpi_total_retrans */
    double data_segs_out;          /* tcpi_data_segs_out */
    double dsack_dups;             /* tcpi_dsack_dups; NaN where the kernel has none (before 5.0) */
    double data_segs_in;           /* tcpi_data_segs_in; NaN where the kernel has none (before 4.6) */
    double unacked;                /* tcpi_unacked */
    unsigned uid;                  /* the socket's owner (inet_diag_msg.idiag_uid) */
    unsigned long inode;           /* the socket's inode (idiag_inode): which process holds it */
};

/* Every TCP socket of the namespace in any state but LISTEN, IPv4 and IPv6. */
enum rz_status netsock_list(struct netsock_conn **out, size_t *n, struct rz_err *err);
/* The segments lost, as above: total_retrans less dsack_dups, never below 0; all of
 * total_retrans where the kernel reports no D-SACKs (dsack_dups NaN). */
double netsock_lost(double total_retrans, double dsack_dups);

/* The inodes of the sockets process `pid` holds open (/proc/PID/fd/N -> "socket:[INODE]"),
 * `proc` being "/proc" or a test's copy: appended to *inodes (grown with *cap; the caller frees).
 * RZ_EIO when its descriptors cannot be read (a process that ended, another user's). */
enum rz_status netsock_pid_sockets(const char *proc, long pid, unsigned long **inodes, size_t *n,
                                   size_t *cap, struct rz_err *err);

/* This host's addresses but loopback's (getifaddrs), numeric, at most `max`. */
enum rz_status netsock_local_addrs(char (*addrs)[NETSOCK_ADDR_LEN], int max, int *n,
                                   struct rz_err *err);

#endif
