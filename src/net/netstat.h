/* netstat.h: a node's network counters, as its kernel keeps them (one network namespace: on a
 * site, the whole host; on the dev cluster, one node).
 *   TCP        /proc/net/snmp, the "Tcp:" lines: OutSegs and RetransSegs
 *   interfaces /proc/net/dev, every interface but lo: bytes sent and received, drops and errors
 *              (receive and transmit together)
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
};

/* Parse the text of /proc/net/snmp (its two "Tcp:" lines: names, then values); `what` names the
 * file in a message.  RZ_EIO when the lines or the two counters are missing. */
enum rz_status netstat_parse_snmp(const char *text, const char *what, struct netstat *out,
                                  struct rz_err *err);

/* Parse the text of /proc/net/dev: the sums over every interface but lo. */
enum rz_status netstat_parse_dev(const char *text, const char *what, struct netstat *out,
                                 struct rz_err *err);

/* Both files under `proc` ("/proc", or a test's copy). */
enum rz_status netstat_read(const char *proc, struct netstat *out, struct rz_err *err);

/* later - earlier, counter by counter (a counter that went backwards, as after a wrap or an
 * interface that went away, gives 0, never a negative). */
struct netstat netstat_delta(const struct netstat *later, const struct netstat *earlier);

/* Retransmitted over sent segments, 0 when none were sent. */
double netstat_retrans_share(const struct netstat *d);

#endif
