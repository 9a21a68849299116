/* probe.c: a network fault that Slurm cannot see.  When two compute nodes lose each other (a
 * switch port, a route) while both still reach the head, slurmctld and every slurmd keep talking
 * and Slurm sees each node up; the job's ranks hang in the all-reduce, and srun cannot launch a
 * step from one of them on the other ("Communication connection failure").  After such a failed
 * attempt ryzen-step probes the links between the job's nodes without MPI: a non-blocking TCP
 * connect, bounded in time, from each node to each other node's slurmd (the one port every node
 * is known to listen on: Slurm's NodeAddr and Port).  An answer of any kind (a refusal too) means
 * the packets went through; silence or "no route" means they did not.  The batch host's row comes
 * from ryzen-step itself (it runs there); the other nodes' rows from one srun step of one task
 * per node, on the nodes the batch host reaches, with --overlap.  A pair is broken when either
 * end failed; the nodes to leave out cover every broken pair (step_links_cover).
 *
 * Not here: what to do about it (policy.c: CAUSE_NETWORK; ends.c: relaunch or requeue), or
 * links that are slow but up (the preflight's links check, over MPI). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/util.h"
#include "step/step_internal.h"

enum { MAX_PEERS = STEP_LINK_NODES, SLURMD_PORT = 6818 };
#define PROBE_TIMEOUT_S 3.0     /* per connect: a LAN answers in well under a millisecond */
#define PROBE_SRUN_LIMIT "30"   /* the srun of the other nodes' rows, launch included */

/* ---- the probe itself: one node's row ---------------------------------------------------------- */

struct peer {
    char name[64], host[128], port[16];
    int fd;
    bool done;
    char verdict[8], detail[96];
};

/* The connect's outcome: an answer of any kind is a link that works. */
static void settle(struct peer *p, int error, double ms)
{
    p->done = true;
    bool reached = error == 0 || error == ECONNREFUSED || error == ECONNRESET;
    rz_fmt(p->verdict, sizeof p->verdict, "%s", reached ? "ok" : "fail");
    if (reached)
        rz_fmt(p->detail, sizeof p->detail, "%s in %.1f ms (%s:%s)",
               error ? "refused" : "connected", ms, p->host, p->port);
    else
        rz_fmt(p->detail, sizeof p->detail, "%s (%s:%s)", strerror(error), p->host, p->port);
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

static void start_connect(struct peer *p)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV}, *ai = NULL;
    p->fd = -1;
    int rc = getaddrinfo(p->host, p->port, &hints, &ai);
    if (rc != 0) {
        p->done = true;
        rz_fmt(p->verdict, sizeof p->verdict, "unknown");
        rz_fmt(p->detail, sizeof p->detail, "address %s: %s", p->host, gai_strerror(rc));
        return;
    }
    p->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->fd < 0) {
        settle(p, errno, 0.0);
        rz_fmt(p->verdict, sizeof p->verdict, "unknown");
    } else if (connect(p->fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        settle(p, 0, 0.0);
    } else if (errno != EINPROGRESS) {
        settle(p, errno, 0.0);
    }
    freeaddrinfo(ai);
}

/* Wait for every connect under way, until the deadline. */
static void await_connects(struct peer *peers, int n, double t0, double timeout_s)
{
    struct pollfd pfd[MAX_PEERS];
    int idx[MAX_PEERS];
    for (;;) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (!peers[i].done) {
                pfd[k] = (struct pollfd){.fd = peers[i].fd, .events = POLLOUT};
                idx[k++] = i;
            }
        double left = t0 + timeout_s - rz_now();
        if (k == 0 || left <= 0.0)
            break;
        if (poll(pfd, (nfds_t)k, (int)(left * 1000.0) + 1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < k; i++) {
            if (pfd[i].revents == 0)
                continue;
            int error = 0;
            socklen_t len = sizeof error;
            getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &error, &len);
            settle(&peers[idx[i]], error, (rz_now() - t0) * 1000.0);
        }
    }
    for (int i = 0; i < n; i++)
        if (!peers[i].done) {
            settle(&peers[i], ETIMEDOUT, 0.0);
            rz_fmt(peers[i].detail, sizeof peers[i].detail, "no answer in %.0f s (%s:%s)",
                   timeout_s, peers[i].host, peers[i].port);
        }
}

/* "NAME=ADDR:PORT" (":PORT" may be left out: slurmd's default). */
static bool peer_parse(const char *arg, struct peer *p)
{
    const char *eq = strchr(arg, '='), *colon = strrchr(arg, ':');
    memset(p, 0, sizeof *p);
    p->fd = -1;
    if (eq == NULL || eq == arg || eq[1] == '\0' || (colon != NULL && colon < eq))
        return false;
    rz_fmt(p->name, sizeof p->name, "%.*s", (int)(eq - arg), arg);
    if (colon == NULL) {
        rz_fmt(p->host, sizeof p->host, "%s", eq + 1);
        rz_fmt(p->port, sizeof p->port, "%d", SLURMD_PORT);
        return true;
    }
    rz_fmt(p->host, sizeof p->host, "%.*s", (int)(colon - eq - 1), eq + 1);
    rz_fmt(p->port, sizeof p->port, "%s", colon + 1);
    return p->host[0] != '\0' && strtol(p->port, NULL, 10) > 0;
}

int step_probe_peers(const char *from, double timeout_s, const char *const *args, int n,
                     FILE *out)
{
    static struct peer peers[MAX_PEERS];
    int k = 0;
    for (int i = 0; i < n && k < MAX_PEERS; i++)
        if (peer_parse(args[i], &peers[k]) && strcmp(peers[k].name, from) != 0)
            k++;
    double t0 = rz_now();
    for (int i = 0; i < k; i++)
        start_connect(&peers[i]);
    await_connects(peers, k, t0, timeout_s);
    for (int i = 0; i < k; i++)
        fprintf(out, "link %s %s %s %s\n", from, peers[i].name, peers[i].verdict,
                peers[i].detail);
    fflush(out);
    return k;
}

int step_probe_main(int argc, const char *const *argv, const char *from, FILE *out,
                    FILE *err)
{
    char host[64] = "";
    char *end = NULL;
    double timeout_s = argc > 0 ? strtod(argv[0], &end) : 0.0;
    if (argc < 2 || end == argv[0] || *end != '\0' || !(timeout_s > 0.0 && timeout_s <= 60.0)) {
        fputs("usage: ryzen-step --probe-peers TIMEOUT_S NAME=ADDR[:PORT]...  (TIMEOUT_S 0 to "
              "60)\n", err);
        return RZ_EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        struct peer p;
        if (!peer_parse(argv[i], &p)) {
            fprintf(err, "ryzen-step --probe-peers: '%s' is not NAME=ADDR[:PORT]\n", argv[i]);
            return RZ_EXIT_USAGE;
        }
    }
    if (from == NULL || from[0] == '\0') {
        gethostname(host, sizeof host - 1);
        from = host;
    }
    step_probe_peers(from, timeout_s, argv + 1, argc - 1, out);
    return 0;
}

/* ---- the matrix ------------------------------------------------------------------------------------ */

static int node_index(const struct step_links *l, const char *name)
{
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->node[i], name) == 0)
            return i;
    return -1;
}

void step_links_init(struct step_links *l, const char *nodes)
{
    char copy[2048], *save = NULL;
    memset(l, 0, sizeof *l);
    memset(l->reach, -1, sizeof l->reach);
    rz_fmt(copy, sizeof copy, "%s", nodes);
    for (char *t = strtok_r(copy, ",", &save); t != NULL && l->n < STEP_LINK_NODES;
         t = strtok_r(NULL, ",", &save))
        if (node_index(l, t) < 0)
            rz_fmt(l->node[l->n++], sizeof l->node[0], "%s", t);
}

void step_links_parse(struct step_links *l, const char *text)
{
    char *copy = strdup(text), *save = NULL;
    for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char from[64], to[64], verdict[16];
        int used = 0;
        if (sscanf(line, "link %63s %63s %15s %n", from, to, verdict, &used) != 3)
            continue;
        int i = node_index(l, from), j = node_index(l, to);
        if (i < 0 || j < 0 || i == j || strcmp(verdict, "unknown") == 0)
            continue;
        l->reach[i][j] = strcmp(verdict, "ok") == 0;
        rz_fmt(l->detail[i][j], sizeof l->detail[0][0], "%s", line + used);
    }
    free(copy);
}

static bool pair_broken(const struct step_links *l, int i, int j)
{
    return l->reach[i][j] == 0 || l->reach[j][i] == 0;
}

int step_links_broken(const struct step_links *l, char *out, size_t len, char *ends,
                      size_t ends_len)
{
    int n = 0;
    out[0] = '\0';
    if (ends != NULL)
        ends[0] = '\0';
    for (int i = 0; i < l->n; i++)
        for (int j = i + 1; j < l->n; j++) {
            if (!pair_broken(l, i, j))
                continue;
            char pair[140];
            rz_fmt(pair, sizeof pair, "%s-%s", l->node[i], l->node[j]);
            rz_list_add(out, len, pair);
            if (ends != NULL) {
                rz_list_add(ends, ends_len, l->node[i]);
                rz_list_add(ends, ends_len, l->node[j]);
            }
            n++;
        }
    return n;
}

void step_links_cover(const struct step_links *l, const char *batch_host, bool suspect,
                      char *out, size_t len)
{
    bool gone[STEP_LINK_NODES] = {false};
    out[0] = '\0';
    for (;;) {
        int best = -1, best_n = 0;
        for (int h = 0; h < l->n; h++) {
            int mine = 0;
            for (int o = 0; o < l->n && !gone[h]; o++)
                mine += o != h && !gone[o] && pair_broken(l, h, o);
            bool batch = strcmp(l->node[h], batch_host) == 0;
            int score = 4 * mine + (batch ? (suspect ? 2 : 0) : 1);
            if (mine > 0 && score >= best_n) {
                best = h;
                best_n = score;
            }
        }
        if (best < 0)
            return;
        gone[best] = true;
        rz_list_add(out, len, l->node[best]);
    }
}

/* ---- after a failed attempt: probe, name the broken links, choose the nodes to leave out --------- */

/* "n1 and n2 cannot reach each other", "n1 and n2, n2 and n3 cannot reach each other" */
static void fault_text(const char *pairs, char *out, size_t len)
{
    char copy[1024], *save = NULL;
    int k = 0;
    out[0] = '\0';
    rz_fmt(copy, sizeof copy, "%s", pairs);
    for (char *p = strtok_r(copy, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save)) {
        size_t used = strlen(out);
        char *dash = strchr(p, '-');
        if (dash != NULL)
            *dash = '\0';
        rz_fmt(out + used, len - used, "%s%s and %s", k++ ? ", " : "", p,
               dash != NULL ? dash + 1 : "?");
    }
    size_t used = strlen(out);
    rz_fmt(out + used, len - used, " cannot reach each other");
}

/* The probe from each node that has a row to run: the batch host's from here; the others' in
 * one srun step on the nodes the batch host reached (two or more: one alone has no one to
 * reach but the batch host, whose row says it). */
static void probe_rows(struct wrapper *w, struct step_links *l, const char *const *peers, int n,
                       const char *batch)
{
    static char text[65536];
    char prog[STEP_PATH_MAX], timeout[32], count[32], list[1024] = "";
    struct rz_err err;
    struct step_argv v = {0};
    step_find_program(prog, sizeof prog, NULL, w->env->self_dir, "ryzen-step");
    rz_fmt(timeout, sizeof timeout, "%.0f", PROBE_TIMEOUT_S);
    const char *local[] = {prog, "--probe-peers", timeout, NULL};
    int b = node_index(l, batch);
    if (step_argv_addv(&v, local, &err) == RZ_OK)
        for (int i = 0; i < n; i++)
            step_argv_add(&v, peers[i], &err);
    if (step_run(w->r, &v, text, sizeof text, &err) == 0)
        step_links_parse(l, text);
    step_argv_free(&v);
    int k = 0;
    for (int j = 0; b >= 0 && j < l->n; j++)
        if (j != b && l->reach[b][j] == 1) {
            rz_list_add(list, sizeof list, l->node[j]);
            k++;
        }
    if (k < 2)
        return;
    char nodelist[1100];
    rz_fmt(count, sizeof count, "%d", k);
    rz_fmt(nodelist, sizeof nodelist, "--nodelist=%s", list);
    const char *remote[] = {"timeout", "-k", "5", PROBE_SRUN_LIMIT, "srun", "--overlap",
                            "--mpi=none", "--kill-on-bad-exit=0", "-N", count, "-n", count,
                            "--ntasks-per-node=1", nodelist, prog, "--probe-peers", timeout,
                            NULL};
    memset(&v, 0, sizeof v);
    text[0] = '\0';
    if (step_argv_addv(&v, remote, &err) == RZ_OK)
        for (int i = 0; i < n; i++)
            step_argv_add(&v, peers[i], &err);
    step_run(w->r, &v, text, sizeof text, &err); /* a row from each node that ran */
    step_links_parse(l, text);
    step_argv_free(&v);
}

/* The probe's failed lines, "FROM -> TO: DETAIL; ...", and how many links answered. */
static void evidence(const struct step_links *l, char *out, size_t len)
{
    int ok = 0;
    out[0] = '\0';
    for (int i = 0; i < l->n; i++)
        for (int j = 0; j < l->n; j++) {
            ok += l->reach[i][j] == 1;
            if (l->reach[i][j] != 0)
                continue;
            size_t used = strlen(out);
            rz_fmt(out + used, len - used, "%s%s -> %s: %s", used ? "; " : "", l->node[i],
                   l->node[j], l->detail[i][j]);
        }
    size_t used = strlen(out);
    rz_fmt(out + used, len - used, "; %d link(s) answered", ok);
}

/* Leave out `out` (with this attempt's allocation): whether the allocation still holds the phase
 * without them, the batch host kept. */
static bool fits_without(const struct wrapper *w, const struct step_links *l, const char *out,
                         const char *batch)
{
    int left = 0;
    for (int i = 0; i < l->n; i++)
        left += !rz_list_has(out, l->node[i]);
    return !rz_list_has(out, batch) && left >= w->place.needed;
}

bool step_links_check(struct wrapper *w)
{
    static struct slurm_node nodes[STEP_LINK_NODES];
    static struct step_links l;
    static const char *peers[STEP_LINK_NODES];
    static char peer_buf[STEP_LINK_NODES][220];
    struct rz_err err;
    int n = 0, k = 0;
    w->net_fault[0] = '\0';
    if (!step_env_in_slurm(w->env) || w->place.nodes[0] == '\0' ||
        slurm_nodes_query(w->r, w->place.nodes, nodes, STEP_LINK_NODES, &n, &err) != RZ_OK)
        return false;
    char names[2048] = "", states[1024] = "";
    for (int i = 0; i < n; i++) {
        if (rz_list_has(w->place.exclude, nodes[i].name) || rz_list_has(w->net_out, nodes[i].name))
            continue;
        if (slurm_node_unreachable(&nodes[i]))
            return false; /* Slurm sees this one: step_nodes_check's */
        rz_list_add(names, sizeof names, nodes[i].name);
        size_t used = strlen(states);
        rz_fmt(states + used, sizeof states - used, "%s%s %s", used ? ", " : "", nodes[i].name,
               nodes[i].state);
        rz_fmt(peer_buf[k], sizeof peer_buf[0], "%s=%s:%ld", nodes[i].name, nodes[i].addr,
               nodes[i].port > 0 ? nodes[i].port : (long)SLURMD_PORT);
        peers[k] = peer_buf[k];
        k++;
    }
    const char *batch = w->job.batch_host;
    if (k < 2 || batch[0] == '\0')
        return false;
    step_links_init(&l, names);
    probe_rows(w, &l, peers, k, batch);
    char pairs[1024], ends[512], out[512], why[1200], proof[4096], msg[6000];
    if (step_links_broken(&l, pairs, sizeof pairs, ends, sizeof ends) == 0)
        return false;
    bool suspect = rz_list_has(w->hist.net_ends, batch);
    step_links_cover(&l, batch, suspect, out, sizeof out);
    fault_text(pairs, why, sizeof why);
    bool two = strchr(ends, ',') != NULL && strchr(strchr(ends, ',') + 1, ',') == NULL;
    rz_fmt(w->net_fault, sizeof w->net_fault, "%s (Slurm sees %s up)", why,
           two ? "both" : "them all");
    rz_list_add(w->net_out, sizeof w->net_out, out);
    w->net_fits = fits_without(w, &l, w->net_out, batch);
    evidence(&l, proof, sizeof proof);
    rz_fmt(msg, sizeof msg, "network fault: %s; Slurm: %s; probe: %s; left out: %s%s", w->net_fault,
           states, proof, out,
           rz_list_has(out, batch) ? (suspect ? " (the batch host, an end of a broken link in "
                                               "the pairing before too: through a requeue)"
                                              : " (the batch host: through a requeue)")
           : w->net_fits ? " (the allocation holds the phase without it: relaunched in it)"
                         : " (through a requeue)");
    struct event_kv kv[] = {{"links", pairs, 0}, {"nodes", ends, 0}, {"excluded_nodes", out, 0},
                           {"batch_host", batch, 0}, {"slurm_states", states, 0},
                           {"evidence", proof, 0}};
    step_event(&w->ev, "network_partition", msg, kv, 6);
    return true;
}
