/* train_net.c: the network while a run trained (see train_net.h). */
#include "config.h"

#include "train/train_net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "net/netsock.h"

enum { MAX_ADDRS = TRAIN_NET_MAX_ADDRS };
static const char FABRIC_DIR[] = "/sys/class/infiniband";

enum rz_status train_net_addrs(struct train_net *n, struct comm *c, bool node_first,
                               struct rz_err *err)
{
    char local[MAX_ADDRS][NETSOCK_ADDR_LEN];
    int n_addr = 0;
    struct rz_err e;
    memset(local, 0, sizeof local);
    if (node_first && netsock_local_addrs(local, MAX_ADDRS, &n_addr, &e) != RZ_OK) {
        fprintf(stderr, "ryzen-train: rank %d: %s (the report shows no links for node %s)\n",
                comm_rank(c), e.msg, comm_host(c));
        memset(local, 0, sizeof local); /* no addresses: no connection is matched */
    }
    train_net_free(n);
    n->addrs = calloc((size_t)comm_size(c), sizeof *n->addrs);
    n->pids = calloc((size_t)comm_size(c), sizeof *n->pids);
    if (n->addrs == NULL || n->pids == NULL) {
        train_net_free(n);
        return rz_fail(err, RZ_ENOMEM, "trainer: out of memory for the nodes' addresses");
    }
    n->world = comm_size(c);
    long pid = (long)getpid();
    enum rz_status st = comm_allgather_bytes(c, local, sizeof local, n->addrs, err);
    if (st == RZ_OK)
        st = comm_allgather_bytes(c, &pid, sizeof pid, n->pids, err);
    if (st != RZ_OK)
        train_net_free(n);
    return st;
}

void train_net_free(struct train_net *n)
{
    free(n->addrs);
    free(n->pids);
    n->addrs = NULL;
    n->pids = NULL;
    n->world = 0;
}

void train_net_start(struct train_net *n, bool node_first, int rank, const char *host)
{
    struct rz_err e;
    int world = n->world;
    char(*addrs)[MAX_ADDRS][NETSOCK_ADDR_LEN] = n->addrs;
    long *pids = n->pids;
    memset(n, 0, sizeof *n);
    n->world = world; /* train_net_addrs' gathers stand */
    n->addrs = addrs;
    n->pids = pids;
    n->node_first = node_first;
    if (!node_first)
        return;
    n->ok = netstat_read("/proc", &n->start, &e) == RZ_OK &&
            netstat_read_fabric(FABRIC_DIR, &n->start, &e) == RZ_OK;
    n->t0 = rz_now();
    if (!n->ok)
        fprintf(stderr, "ryzen-train: rank %d: network counters: %s (the report shows none for "
                "node %s)\n", rank, e.msg, host);
}

bool train_net_since(const struct train_net *n, struct netstat *d, double *seconds)
{
    struct netstat now;
    struct rz_err e;
    if (!n->ok || netstat_read("/proc", &now, &e) != RZ_OK ||
        netstat_read_fabric(FABRIC_DIR, &now, &e) != RZ_OK)
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

/* Which of the node's connections are the job's: those its ranks hold (`inodes`, sorted: the
 * sockets of the node's ranks' processes), else, when they could not be read, the job user's
 * (`uid`).  Either way MPI's connections count and Slurm's, PMIx's and munge's (root's,
 * slurm's) do not; by process, another job of the same user on the same nodes does not either. */
struct job_socks {
    bool by_uid;
    const unsigned long *inodes;
    size_t n;
    unsigned uid;
};

static int ulong_cmp(const void *a, const void *b)
{
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return (x > y) - (x < y);
}

static bool job_conn(const struct job_socks *js, const struct netsock_conn *c)
{
    if (js->by_uid)
        return c->uid == js->uid;
    return js->n > 0 &&
           bsearch(&c->inode, js->inodes, js->n, sizeof *js->inodes, ulong_cmp) != NULL;
}

/* Sum this node's connections to each other node of the job into mine->peers. */
static void sum_peers(const char (*addrs)[MAX_ADDRS][NETSOCK_ADDR_LEN], int world,
                      const char (*hosts)[64], const char *me,
                      const struct netsock_conn *conn, size_t n_conn, const struct job_socks *js,
                      struct summary_rank *mine)
{
    for (size_t i = 0; i < n_conn; i++) {
        int r = rank_of_addr(addrs, world, conn[i].remote);
        if (r < 0 || strcmp(hosts[r], me) == 0 || !job_conn(js, &conn[i]))
            continue; /* not to the job's nodes, within the node, or not the job's own */
        int p = 0;
        while (p < mine->n_peers && strcmp(mine->peers[p].host, hosts[r]) != 0)
            p++;
        if (p == mine->n_peers) {
            if (p == SUMMARY_MAX_PEERS)
                continue;
            memset(&mine->peers[p], 0, sizeof mine->peers[p]);
            rz_fmt(mine->peers[p].host, sizeof mine->peers[p].host, "%s", hosts[r]);
            mine->n_peers++;
        }
        struct summary_peer *q = &mine->peers[p];
        q->conns++;
        q->segs_out += conn[i].segs_out;
        q->data_segs_out += conn[i].data_segs_out;
        q->retrans += conn[i].retrans;
        q->dsack_dups += conn[i].dsack_dups; /* NaN stays NaN: the kernel cannot tell */
        q->data_segs_in += conn[i].data_segs_in;
        q->unacked += conn[i].unacked;
    }
}

/* The sockets of the node's ranks (`me`'s), sorted, into *js; by uid when a rank's descriptors
 * cannot be read. */
static void node_socks(const struct train_net *n, const char (*hosts)[64], const char *me,
                       struct job_socks *js, unsigned long **buf)
{
    size_t len = 0, cap = 0;
    struct rz_err e;
    *js = (struct job_socks){.by_uid = true, .uid = (unsigned)getuid()};
    for (int r = 0; r < n->world; r++)
        if (strcmp(hosts[r], me) == 0 &&
            netsock_pid_sockets("/proc", n->pids[r], buf, &len, &cap, &e) != RZ_OK)
            return; /* *buf is freed by the caller */
    if (len > 0)
        qsort(*buf, len, sizeof **buf, ulong_cmp);
    js->by_uid = false;
    js->inodes = *buf;
    js->n = len;
}

/* This node's connections per other node, among the sockets js, into mine->peers (mine->n_peers
 * 0 first); false when the connections cannot be listed (said on stderr unless `quiet`). */
static bool node_peers(const struct train_net *n, const char (*hosts)[64], const char *me,
                       const struct job_socks *js, bool quiet, struct summary_rank *mine)
{
    struct netsock_conn *conn = NULL;
    size_t n_conn = 0;
    struct rz_err e;
    if (n->addrs == NULL)
        return false;
    if (netsock_list(&conn, &n_conn, &e) != RZ_OK) {
        if (!quiet)
            fprintf(stderr, "ryzen-train: %s (the report shows no links for node %s)\n", e.msg,
                    me);
        return false;
    }
    sum_peers((const char(*)[MAX_ADDRS][NETSOCK_ADDR_LEN])n->addrs, n->world, hosts, me, conn,
              n_conn, js, mine);
    free(conn);
    return true;
}

/* The resends of mine->peers not proven spurious (yet): TCP's own count of loss. */
static double unproven(const struct summary_rank *mine)
{
    double lost = 0.0;
    for (int p = 0; p < mine->n_peers; p++)
        lost += netsock_lost(mine->peers[p].retrans, mine->peers[p].dsack_dups);
    return lost;
}

bool train_net_mpi(const struct train_net *n, const char (*hosts)[64], const char *me,
                   struct train_net_mpi *out)
{
    struct summary_rank mine = {.n_peers = 0};
    unsigned long *buf = NULL;
    struct job_socks js;
    memset(out, 0, sizeof *out);
    if (!n->node_first)
        return false;
    node_socks(n, hosts, me, &js, &buf);
    bool ok = node_peers(n, hosts, me, &js, true, &mine);
    free(buf);
    if (!ok)
        return false;
    for (int p = 0; p < mine.n_peers; p++) {
        out->data_segs += mine.peers[p].data_segs_out;
        out->conns += mine.peers[p].conns;
    }
    out->lost = unproven(&mine);
    out->peers = mine.n_peers;
    return true;
}

/* mine's peers from a later read. */
static void take_peers(struct summary_rank *mine, const struct summary_rank *later)
{
    memcpy(mine->peers, later->peers, sizeof mine->peers);
    mine->n_peers = later->n_peers;
}

/* Whether some segment mine->peers sent is not acknowledged yet. */
static bool unsettled(const struct summary_rank *mine)
{
    for (int p = 0; p < mine->n_peers; p++)
        if (mine->peers[p].unacked > 0.0)
            return true;
    return false;
}

bool train_net_settle(train_net_reader read, void *ctx, double bound_s, double step_s,
                      struct summary_rank *mine)
{
    mine->n_peers = 0;
    if (!read(ctx, mine))
        return false;
    const double first = unproven(mine);
    double waited = 0.0;
    struct summary_rank again;
    while ((unproven(mine) > 0.0 || unsettled(mine)) && waited + step_s <= bound_s + 1e-9) {
        rz_sleep(step_s);
        waited += step_s;
        again.n_peers = 0;
        if (!read(ctx, &again))
            break; /* the first read stands */
        take_peers(mine, &again);
    }
    mine->net_settle_s = waited;
    mine->net_late_dsacks = fmax(0.0, first - unproven(mine));
    return true;
}

static bool several_nodes(const char (*hosts)[64], int world)
{
    for (int r = 1; r < world; r++)
        if (strcmp(hosts[r], hosts[0]) != 0)
            return true;
    return false;
}

/* The node's sockets are listed once (its ranks' /proc/PID/fd): every read after it, the
 * settle's and the last, sums the same sockets' counters. */
struct node_read {
    const struct train_net *n;
    const char (*hosts)[64];
    const char *me;
    struct job_socks js;
};

static bool read_node(void *ctx, struct summary_rank *mine)
{
    const struct node_read *r = ctx;
    return node_peers(r->n, r->hosts, r->me, &r->js, false, mine);
}

enum rz_status train_net_summary(const struct train_net *n, struct comm *c,
                                 const char (*hosts)[64], struct summary_rank *mine,
                                 struct rz_err *err)
{
    /* Every rank's last all-reduce has arrived once the first barrier is passed: a resend still
     * in flight then is a duplicate.  Each node then waits until what it sent is acknowledged
     * and its resends' D-SACKs are in; after the second, every node has, so what one end sent
     * the other has received, duplicates all but in flight, and the counts are read. */
    enum rz_status st = comm_barrier(c, err);
    if (st != RZ_OK)
        return st;
    mine->has_net = train_net_since(n, &mine->net, &mine->net_seconds);
    mine->n_peers = 0;
    struct node_read r = {.n = n, .hosts = hosts, .me = hosts[comm_rank(c)]};
    unsigned long *buf = NULL;
    if (mine->has_net)
        node_socks(n, hosts, r.me, &r.js, &buf);
    bool read = mine->has_net &&
                train_net_settle(read_node, &r, TRAIN_NET_SETTLE_S, TRAIN_NET_SETTLE_STEP_S, mine);
    st = comm_barrier(c, err);
    if (st != RZ_OK || !several_nodes(hosts, comm_size(c))) {
        free(buf);
        return st; /* one node: no link, nothing to read twice */
    }
    /* A quiet window: no rank sends for TRAIN_NET_QUIET_S on either side of the reads, so every
     * node reads after the barrier's last message and before anyone's next one (the gather of
     * the summary) as long as the ranks left the barrier within TRAIN_NET_QUIET_S of each
     * other.  Read without it, the two ends of a link differed by -11 to +3 segments (MPI's own
     * messages around the reads). */
    rz_sleep(TRAIN_NET_QUIET_S);
    if (read) {
        struct summary_rank last = {.n_peers = 0};
        if (read_node(&r, &last))
            take_peers(mine, &last);
    }
    free(buf);
    rz_sleep(TRAIN_NET_QUIET_S);
    return RZ_OK;
}
