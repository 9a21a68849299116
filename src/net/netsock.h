/* netsock.h: the TCP connections of this network namespace, each with its own counters, from the
 * kernel's socket diagnostics (NETLINK_SOCK_DIAG, inet_diag: what `ss -ti` shows).  Where
 * netstat.h has the host's totals, these tell the peers apart: the segments a node sent to each
 * other node and how many of them it had to send again, so that a lossy link can be named.
 * A connection's counters run from when it was opened: ryzen-train's MPI connections open on
 * first use, so read before MPI_Finalize they count this run's traffic alone.
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
};

/* Every TCP socket of the namespace in any state but LISTEN, IPv4 and IPv6. */
enum rz_status netsock_list(struct netsock_conn **out, size_t *n, struct rz_err *err);

/* This host's addresses but loopback's (getifaddrs), numeric, at most `max`. */
enum rz_status netsock_local_addrs(char (*addrs)[NETSOCK_ADDR_LEN], int max, int *n,
                                   struct rz_err *err);

#endif
