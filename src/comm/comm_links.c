/* comm_links.c: the network between the job's nodes, measured over MPI (see comm.h, "link
 * probes").  One rank per node, its lowest, measures for the node; the pairs of nodes take turns,
 * one at a time.  Every other rank waits for its turn asleep, in a barrier it polls every 200 us:
 * ranks spinning in MPI's own waits took the CPUs from the two that measure whenever ranks
 * outnumber cores, and each round trip of 8 bytes then measured the scheduler (6 ms between
 * dev-cluster nodes on 2 cores, against tens of us).
 * The ring's hop (comm_hop_probe) is the opposite: every rank takes part, as in a training step,
 * since what it measures is the wait for the peer's turn on a shared core.  It times the
 * trainer's own reduction (MPI_Iallreduce, waited for, over the ring comm_init chose) in blocks
 * of many passes: a single exchange of a few bytes between ranks that are all polling is shorter
 * than the scheduler's turns it is meant to see (a median of 21 single passes measured 2.9 us on
 * 4 ranks of 2 CPUs, where the gradient's ring took 90 us a hop). */
#include "config.h"

#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm.h"
#include "comm/comm_internal.h"
#include "core/util.h"

enum { TAG_LAT = 81, TAG_BW = 82, TAG_ACK = 83, TAG_HOP = 84 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double least(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = fmin(m, v[i]);
    return m;
}

/* A barrier that sleeps while it waits (see the top). */
static enum rz_status quiet_barrier(struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    MPI_Request req;
    int done = 0;
    const struct timespec nap = {0, 200000};
    MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    while (!done) {
        MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
        if (!done)
            nanosleep(&nap, NULL);
    }
cleanup:
    return st;
}

/* The job's hosts in rank order, each rank's host index and each host's lowest rank. */
static enum rz_status find_hosts(struct comm *c, struct comm_links *l, int *host_of,
                                 struct rz_err *err)
{
    int n = comm_size(c);
    char(*names)[COMM_HOST_LEN] = calloc((size_t)n, sizeof *names);
    char mine[COMM_HOST_LEN] = "";
    if (names == NULL)
        return rz_fail(err, RZ_ENOMEM, "comm: out of memory for the host list");
    rz_fmt(mine, sizeof mine, "%s", comm_host(c));
    enum rz_status st = comm_allgather_bytes(c, mine, sizeof mine, names, err);
    for (int r = 0; st == RZ_OK && r < n; r++) {
        int h = 0;
        while (h < l->n_hosts && strcmp(l->hosts[h], names[r]) != 0)
            h++;
        if (h == l->n_hosts) {
            if (h == COMM_MAX_HOSTS) {
                st = rz_fail(err, RZ_EHEALTH, "comm: the job spans more than %d nodes, the most "
                             "the link probe measures", COMM_MAX_HOSTS);
                break;
            }
            rz_fmt(l->hosts[h], sizeof l->hosts[h], "%s", names[r]);
            l->leader[h] = r;
            l->n_hosts++;
        }
        host_of[r] = h;
    }
    free(names);
    return st;
}

/* One pair, from both ends: `me` is the leader of host a or of host b.  The latency is half the
 * least round trip of 8 bytes (a link's floor: a rank that waits for a core, as on a node whose
 * cores other jobs share, adds to a round trip and never takes from one; under three jobs and a
 * busy loop on 2 cores the median gave 2.0 to 3.0 ms on healthy links); each direction's rate the median over `reps` sends of `bytes`
 * bytes, each answered by 1 byte, less that latency.  A first exchange of each kind is not
 * timed: it opens the connection (Open MPI's TCP transport connects on first use). */
static enum rz_status measure_pair(struct comm_links *l, int a, int b, int me, char *buf,
                                   double *t, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    bool first = me == l->leader[a];
    int peer = first ? l->leader[b] : l->leader[a];
    double small[8] = {0}, lat_s = 0.0;
    for (int i = 0; i <= COMM_LINK_LAT_REPS; i++) {
        double t0 = MPI_Wtime();
        if (first) {
            MPI_CHECK(MPI_Send(small, 1, MPI_DOUBLE, peer, TAG_LAT, MPI_COMM_WORLD));
            MPI_CHECK(MPI_Recv(small, 1, MPI_DOUBLE, peer, TAG_LAT, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        } else {
            MPI_CHECK(MPI_Recv(small, 1, MPI_DOUBLE, peer, TAG_LAT, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
            MPI_CHECK(MPI_Send(small, 1, MPI_DOUBLE, peer, TAG_LAT, MPI_COMM_WORLD));
        }
        if (i > 0)
            t[i - 1] = MPI_Wtime() - t0;
    }
    lat_s = 0.5 * least(t, COMM_LINK_LAT_REPS);
    for (int dir = 0; dir < 2; dir++) {
        bool sender = (dir == 0) == first;
        for (int i = 0; i <= l->reps; i++) {
            double t0 = MPI_Wtime();
            char ack = 0;
            if (sender) {
                MPI_CHECK(MPI_Send(buf, (int)l->bytes, MPI_BYTE, peer, TAG_BW, MPI_COMM_WORLD));
                MPI_CHECK(MPI_Recv(&ack, 1, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
            } else {
                MPI_CHECK(MPI_Recv(buf, (int)l->bytes, MPI_BYTE, peer, TAG_BW, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
                MPI_CHECK(MPI_Send(&ack, 1, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD));
            }
            if (i > 0)
                t[i - 1] = MPI_Wtime() - t0;
        }
        if (sender) {
            /* less the two latencies of the send's first byte and of the answer, but never
             * more than half of the time: a noisy latency must not inflate the rate */
            double whole = median(t, l->reps), s = fmax(whole - 2.0 * lat_s, 0.5 * whole);
            int from = dir == 0 ? a : b, to = dir == 0 ? b : a;
            l->gbps[from][to] = s > 0.0 ? 8.0 * (double)l->bytes / s / 1e9 : 0.0;
        }
    }
    l->latency_us[a][b] = l->latency_us[b][a] = 1e6 * lat_s;
cleanup:
    return st;
}

enum rz_status comm_link_probe(struct comm *c, size_t bytes, int reps, struct comm_links *l,
                               struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    int n = comm_size(c);
    memset(l, 0, sizeof *l);
    l->bytes = bytes;
    l->reps = reps;
    if (bytes == 0 || bytes > (size_t)1 << 30 || reps < 1 || reps > 1000)
        return rz_fail(err, RZ_ECONFIG, "comm: link probe of %zu bytes x %d: out of range", bytes,
                       reps);
    int *host_of = calloc((size_t)n, sizeof *host_of);
    char *buf = calloc(bytes, 1);
    double *t = calloc((size_t)(reps > COMM_LINK_LAT_REPS ? reps : COMM_LINK_LAT_REPS),
                       sizeof *t);
    if (host_of == NULL || buf == NULL || t == NULL) {
        st = rz_fail(err, RZ_ENOMEM, "comm: out of memory for the link probe (%zu bytes)", bytes);
        goto cleanup;
    }
    st = find_hosts(c, l, host_of, err);
    if (st != RZ_OK)
        goto cleanup;
    int me = comm_rank(c), h = host_of[me];
    for (int a = 0; a < l->n_hosts && st == RZ_OK; a++)
        for (int b = a + 1; b < l->n_hosts && st == RZ_OK; b++) {
            st = quiet_barrier(err); /* everyone: the pair before is done */
            if (st == RZ_OK && l->leader[h] == me && (h == a || h == b))
                st = measure_pair(l, a, b, me, buf, t, err);
        }
    if (st == RZ_OK && l->n_hosts > 1)
        st = quiet_barrier(err);
    if (st != RZ_OK)
        goto cleanup;
    /* Each cell was measured by one leader: the others hold 0 there. */
    if (n > 1) {
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, l->gbps, COMM_MAX_HOSTS * COMM_MAX_HOSTS,
                                MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, l->latency_us, COMM_MAX_HOSTS * COMM_MAX_HOSTS,
                                MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    }
cleanup:
    free(host_of);
    free(buf);
    free(t);
    return st;
}

/* One block of `passes` all-reduces of `n` floats as the trainer starts its gradient buckets
 * (MPI_Iallreduce, the ring that comm_init chose: 2(P-1) rounds), each waited for; the time per
 * round. */
static enum rz_status hop_block(float *buf, int n, int passes, int rounds, double *per_hop,
                                struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    double t0 = MPI_Wtime();
    for (int k = 0; k < passes; k++) {
        MPI_Request req;
        MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req));
        MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }
    *per_hop = (MPI_Wtime() - t0) / ((double)passes * rounds);
cleanup:
    return st;
}

enum rz_status comm_hop_probe(struct comm *c, int reps, double *hop_s, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    int n = comm_size(c);
    *hop_s = NAN;
    if (reps < 1 || reps > 1000)
        return rz_fail(err, RZ_ECONFIG, "comm: ring hop probe of %d blocks: out of range", reps);
    if (n < 2)
        return RZ_OK;
    int count = COMM_HOP_FLOATS_PER_RANK * n;
    double *t = calloc((size_t)reps + 1, sizeof *t), mine = 0.0;
    float *buf = calloc((size_t)count, sizeof *buf);
    if (t == NULL || buf == NULL) {
        st = rz_fail(err, RZ_ENOMEM, "comm: out of memory for the ring hop probe");
        goto cleanup;
    }
    for (int i = 0; i <= reps && st == RZ_OK; i++) /* block 0 untimed: it opens connections */
        st = hop_block(buf, count, COMM_HOP_PASSES, 2 * (n - 1), &t[i], err);
    if (st != RZ_OK)
        goto cleanup;
    mine = median(t + 1, reps) / n;
    MPI_CHECK(MPI_Allreduce(&mine, hop_s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
cleanup:
    free(t);
    free(buf);
    return st;
}
