/* train_net.h: what the network did while a run trained, for its summary and live metrics: the
 * node's kernel counters (net/netstat.h) between the first step and the end, and the counters of
 * its TCP connections to each other node of the job (net/netsock.h).  The lowest rank of each
 * node reads them; every rank takes part in the one gather of the nodes' addresses, at start-up
 * (train_net_addrs).  The connections counted are the job's ranks' to the job's other nodes
 * (MPI's; the job user's where the ranks' descriptors cannot be read): the summary's peers and the live loss figures (train_net_mpi) are the same sample the
 * packet-loss gate judges.  An InfiniBand/RoCE port's counters are read with the node's when the
 * kernel shows them (/sys/class/infiniband).  Unreadable counters are said once and leave the
 * summary without them: monitoring never stops training. */
#ifndef RZ_TRAIN_TRAIN_NET_H
#define RZ_TRAIN_TRAIN_NET_H

#include <stdbool.h>

#include "comm/comm.h"
#include "net/netsock.h"
#include "net/netstat.h"
#include "record/summary.h"

enum { TRAIN_NET_MAX_ADDRS = 8 }; /* a node's addresses matched, at most */

struct train_net {
    bool node_first;   /* the lowest rank of its node: it reads */
    bool ok;           /* start was read */
    struct netstat start;
    double t0;
    /* Every rank's node's addresses and every rank's process id (train_net_addrs; NULL
     * before): a connection is the job's when its remote end is one of those addresses and a
     * rank of this node holds it (its socket is among the rank's descriptors), or, where the
     * ranks' descriptors cannot be read, when the job's user owns it. */
    int world;
    char (*addrs)[TRAIN_NET_MAX_ADDRS][NETSOCK_ADDR_LEN];
    long *pids;
};

/* The node's MPI connections summed over its peers: data segments sent and lost (retransmitted
 * less the resends D-SACK proved spurious, per peer: the gate's count). */
struct train_net_mpi {
    double data_segs, lost;
    int peers, conns;
};

/* Collective, at start-up: every node's non-loopback addresses into n->addrs (read by its
 * lowest rank, `node_first`; the other ranks send none), every rank's pid into n->pids.  A node whose addresses cannot be read
 * is said once and matches no connection.  train_net_free frees them. */
enum rz_status train_net_addrs(struct train_net *n, struct comm *c, bool node_first,
                               struct rz_err *err);
void train_net_free(struct train_net *n);

/* As training starts: the node's counters (node_first only); the addresses are kept. */
void train_net_start(struct train_net *n, bool node_first, int rank, const char *host);

/* Their change since train_net_start; false on other ranks or when unreadable.  `seconds` may be
 * NULL. */
bool train_net_since(const struct train_net *n, struct netstat *d, double *seconds);

/* The node's MPI connections now (node_first only, after train_net_addrs): what the live
 * metrics show of loss.  `hosts` holds every rank's node name, `me` this node's.  False when
 * they cannot be read (or on another rank). */
bool train_net_mpi(const struct train_net *n, const char (*hosts)[64], const char *me,
                   struct train_net_mpi *out);

/* The counts are read once nothing is left in flight.  After a barrier (every rank's last
 * all-reduce has arrived: what is still in flight is a duplicate), the node's connections are
 * read again every TRAIN_NET_SETTLE_STEP_S while some segment is unacknowledged or some resend
 * unproven by a D-SACK (which comes a round trip after its duplicate), for at most
 * TRAIN_NET_SETTLE_S; then, after a second barrier (every node has settled), read for good in
 * a window of TRAIN_NET_QUIET_S on each side in which no rank sends (skipped on one node).
 * So what one end sent and the other received (the gate's count, record/summary.h) are read
 * when they should agree on a healthy link.  A loss stays unproven: a lossy phase pays the
 * bound once, at its end. */
#define TRAIN_NET_SETTLE_S 0.5
#define TRAIN_NET_SETTLE_STEP_S 0.02
#define TRAIN_NET_QUIET_S 0.2 /* before and after the final read: see train_net_summary */

/* Reads a node's connections into mine->peers (mine->n_peers is 0 on entry); false when they
 * cannot be read. */
typedef bool (*train_net_reader)(void *ctx, struct summary_rank *mine);

/* mine->peers from `read`, read again every `step_s` while a segment is unacknowledged or a
 * resend unproven, for at most `bound_s` (a failed re-read keeps the last good one).  Sets mine->net_settle_s (the time
 * waited) and mine->net_late_dsacks (the resends proven spurious after the first read).  False
 * when the first read fails (mine->n_peers 0). */
bool train_net_settle(train_net_reader read, void *ctx, double bound_s, double step_s,
                      struct summary_rank *mine);

/* Collective, before MPI_Finalize (the connections are still open): two barriers, and on each
 * node's lowest rank fill `mine` (has_net, net, net_seconds, peers, settled as above).  `hosts`
 * holds every rank's node name; a connection counts for the node whose address
 * (train_net_addrs) is its remote end. */
enum rz_status train_net_summary(const struct train_net *n, struct comm *c,
                                 const char (*hosts)[64], struct summary_rank *mine,
                                 struct rz_err *err);

#endif
