/* train_net.h: what the network did while a run trained, for its summary and live metrics: the
 * node's kernel counters (net/netstat.h) between the first step and the end, and the counters of
 * its TCP connections to each other node of the job (net/netsock.h).  The lowest rank of each
 * node reads them; every rank takes part in the one gather.  Unreadable counters are said once
 * and leave the summary without them: monitoring never stops training. */
#ifndef RZ_TRAIN_TRAIN_NET_H
#define RZ_TRAIN_TRAIN_NET_H

#include <stdbool.h>

#include "comm/comm.h"
#include "metrics/metrics.h"
#include "net/netstat.h"

struct train_net {
    bool node_first;   /* the lowest rank of its node: it reads */
    bool ok;           /* start was read */
    struct netstat start;
    double t0;
};

/* As training starts: the node's counters (node_first only). */
void train_net_start(struct train_net *n, bool node_first, int rank, const char *host);

/* Their change since train_net_start; false on other ranks or when unreadable.  `seconds` may be
 * NULL. */
bool train_net_since(const struct train_net *n, struct netstat *d, double *seconds);

/* Collective, before MPI_Finalize (the connections are still open): fill `mine` (has_net, net,
 * net_seconds, peers) on each node's lowest rank.  `hosts` holds every rank's node name.  Each
 * node's non-loopback addresses are gathered; a connection counts for the node whose address
 * is its remote end. */
enum rz_status train_net_summary(const struct train_net *n, struct comm *c,
                                 const char (*hosts)[64], struct metrics_rank_result *mine,
                                 struct rz_err *err);

#endif
