/* train_net.c: the network while a run trained (see train_net.h). */
#include "config.h"

#include "train/train_net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "net/netsock.h"

enum { MAX_ADDRS = 8 };

void train_net_start(struct train_net *n, bool node_first, int rank, const char *host)
{
    struct rz_err e;
    memset(n, 0, sizeof *n);
    n->node_first = node_first;
    if (!node_first)
        return;
    n->ok = netstat_read("/proc", &n->start, &e) == RZ_OK;
    n->t0 = rz_now();
    if (!n->ok)
        fprintf(stderr, "ryzen-train: rank %d: network counters: %s (the report shows none for "
                "node %s)\n", rank, e.msg, host);
}

bool train_net_since(const struct train_net *n, struct netstat *d, double *seconds)
{
    struct netstat now;
    struct rz_err e;
    if (!n->ok || netstat_read("/proc", &now, &e) != RZ_OK)
        return false;
    *d = netstat_delta(&now, &n->start);
    if (seconds != NULL)
        *seconds = rz_now() - n->t0;
    return true;
}

/* The node of a remote address: the rank whose gathered addresses hold it, or -1. */
static int rank_of_addr(const char (*addrs)[MAX_ADDRS][NETSOCK_ADDR_LEN], int world,
                        const char *remote)
{
    for (int r = 0; r < world; r++)
        for (int k = 0; k < MAX_ADDRS && addrs[r][k][0] != '\0'; k++)
            if (strcmp(addrs[r][k], remote) == 0)
                return r;
    return -1;
}

/* Sum this node's connections per other node into mine->peers. */
static void sum_peers(const char (*addrs)[MAX_ADDRS][NETSOCK_ADDR_LEN], int world,
                      const char (*hosts)[64], const char *me,
                      const struct netsock_conn *conn, size_t n_conn,
                      struct metrics_rank_result *mine)
{
    for (size_t i = 0; i < n_conn; i++) {
        int r = rank_of_addr(addrs, world, conn[i].remote);
        if (r < 0 || strcmp(hosts[r], me) == 0)
            continue; /* not the job's, or a connection within the node */
        int p = 0;
        while (p < mine->n_peers && strcmp(mine->peers[p].host, hosts[r]) != 0)
            p++;
        if (p == mine->n_peers) {
            if (p == METRICS_MAX_PEERS)
                continue;
            rz_fmt(mine->peers[p].host, sizeof mine->peers[p].host, "%s", hosts[r]);
            mine->n_peers++;
        }
        mine->peers[p].segs_out += conn[i].segs_out;
        mine->peers[p].retrans += conn[i].retrans;
    }
}

enum rz_status train_net_summary(const struct train_net *n, struct comm *c,
                                 const char (*hosts)[64], struct metrics_rank_result *mine,
                                 struct rz_err *err)
{
    int world = comm_size(c), n_addr = 0;
    char local[MAX_ADDRS][NETSOCK_ADDR_LEN];
    memset(local, 0, sizeof local);
    mine->has_net = train_net_since(n, &mine->net, &mine->net_seconds);
    mine->n_peers = 0;
    struct rz_err e;
    if (mine->has_net && netsock_local_addrs(local, MAX_ADDRS, &n_addr, &e) != RZ_OK) {
        fprintf(stderr, "ryzen-train: rank %d: %s (the report shows no links for node %s)\n",
                comm_rank(c), e.msg, hosts[comm_rank(c)]);
        memset(local, 0, sizeof local); /* no addresses: no connection is matched */
    }
    char(*addrs)[MAX_ADDRS][NETSOCK_ADDR_LEN] = calloc((size_t)world, sizeof *addrs);
    if (addrs == NULL)
        return rz_fail(err, RZ_ENOMEM, "trainer: out of memory for the nodes' addresses");
    enum rz_status st = comm_allgather_bytes(c, local, sizeof local, addrs, err);
    struct netsock_conn *conn = NULL;
    size_t n_conn = 0;
    if (st == RZ_OK && mine->has_net && netsock_list(&conn, &n_conn, &e) != RZ_OK)
        fprintf(stderr, "ryzen-train: rank %d: %s (the report shows no links for node %s)\n",
                comm_rank(c), e.msg, hosts[comm_rank(c)]);
    else if (st == RZ_OK && mine->has_net)
        sum_peers((const char(*)[MAX_ADDRS][NETSOCK_ADDR_LEN])addrs, world, hosts,
                  hosts[comm_rank(c)], conn, n_conn, mine);
    free(conn);
    free(addrs);
    return st;
}
