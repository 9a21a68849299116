/* lost.c: the nodes the attempt before this one lost.  When a node stops answering Slurm (a cut
 * link, a partition, or a host that died: from the outside the two look the same), Slurm marks
 * it NOT_RESPONDING, then DOWN, and requeues the job (NODE_FAIL); the attempt that ran there ends
 * without a word from its ranks, and its ryzen-step may be killed before it can say why.  So the
 * next attempt asks: which nodes of the attempt before are unreachable now?  It names them in a
 * nodes_lost event, a network fault (the node became unreachable), not a crash of the trainer.
 * Slurm places no job on a DOWN node, so this attempt already runs without them; the event
 * records them as excluded. */
#include "config.h"

#include <string.h>

#include "core/util.h"
#include "step/step_internal.h"

enum { MAX_NODES = 64 };

void step_lost_nodes(struct wrapper *w)
{
    static struct slurm_node nodes[MAX_NODES];
    struct rz_err err;
    int n = 0;
    const struct step_history *h = &w->hist;
    if (w->env->restart_count == 0 || h->prev_nodes[0] == '\0' ||
        slurm_nodes_query(w->r, h->prev_nodes, nodes, MAX_NODES, &n, &err) != RZ_OK)
        return;
    char lost[512] = "", states[1024] = "", msg[2048];
    for (int i = 0; i < n; i++) {
        if (!slurm_node_unreachable(&nodes[i]))
            continue;
        size_t a = strlen(lost), b = strlen(states);
        rz_fmt(lost + a, sizeof lost - a, "%s%s", a ? "," : "", nodes[i].name);
        rz_fmt(states + b, sizeof states - b, "%s%s %s%s%s%s", b ? "; " : "", nodes[i].name,
               nodes[i].state, nodes[i].reason[0] ? " (" : "", nodes[i].reason,
               nodes[i].reason[0] ? ")" : "");
    }
    if (lost[0] == '\0')
        return;
    rz_fmt(msg, sizeof msg, "the attempt before (restart %ld, on %s) lost %s: Slurm cannot reach "
           "it (%s), a network fault: a cut link or a dead host; this attempt runs without it",
           h->prev_restart, h->prev_nodes, lost, states);
    struct step_kv kv[] = {{"nodes", lost, 0}, {"cause", "unreachable", 0},
                           {"excluded_nodes", lost, 0}, {"states", states, 0}};
    step_event(&w->ev, "nodes_lost", msg, kv, 4);
}
