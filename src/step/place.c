/* place.c: which nodes an attempt's job steps run on, and which nodes failed under it.
 *
 * Under --no-kill (the submitter's choice: `sbatch -N 3 --no-kill phase2a_8proc.sh`, one node
 * more than the template asks for), a node of the job that goes down or is cut off leaves the
 * allocation instead of ending the job, and the job step on it fails.  Before each launch
 * ryzen-step looks at the allocation as it is now: the nodes Slurm cannot reach and the nodes
 * excluded for the rest of the ladder are left out, and the step runs on the nodes the phase
 * needs (its template's --nodes, with --ntasks-per-node ranks each) among the rest.  With the
 * spare the phase keeps its ranks after a loss, and promotion asks the next phase for a spare
 * and --no-kill too; without one the job is requeued without the node, the only way to get
 * another.  Without --no-kill Slurm ends the job on a node loss and requeues it (NODE_FAIL);
 * the next attempt names the node (step_lost_nodes, below) and places itself the same way.
 *
 * A node fails when Slurm cannot reach it after an attempt, when it left the allocation, or
 * when it failed the preflight: each is a node_failed event.  Counted over the whole run root
 * (every phase's events.jsonl), a node that failed twice is excluded for the rest of the ladder:
 * named in a node_excluded event, left out of every step and added to the job's exclusions,
 * which promotion and rollback pass on.  So one bad node cannot use up the restart budget. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "step/step_internal.h"

enum { MAX_NODES = 64, LADDER_FAILURES = 2 };

/* With the template known (the steps are placed), the ranks are the nodes needed times the
 * ranks per node when the job said how many (SLURM_NTASKS_PER_NODE, the templates'
 * --ntasks-per-node).  Not SLURM_NTASKS: a job submitted with a spare (-N 3, 12 tasks) and
 * requeued asking for one node fewer (spare_shrunk) started again with SLURM_NTASKS=12 on its
 * 2 nodes, and srun --ntasks=12 failed with "More processors requested than permitted"
 * (measured: a chaos soak, seed 2, job 2049).  Without the template srun runs with Slurm's own
 * counts, SLURM_NTASKS ranks. */
void step_place_size(const struct step_env *e, long template_nodes, struct step_place *p)
{
    p->needed = e->nnodes;
    p->ranks = e->ntasks;
    p->spare = 0;
    if (template_nodes <= 0)
        return;
    if (template_nodes < e->nnodes) {
        p->needed = template_nodes;
        p->spare = e->nnodes - template_nodes;
    }
    p->ranks = e->ntasks_per_node > 0 ? p->needed * e->ntasks_per_node
               : e->nnodes > 0        ? e->ntasks * p->needed / e->nnodes
                                      : e->ntasks;
}

/* The running template: Slurm's Command (its first word), else the template directory's file
 * of that name. */
static long running_template_nodes(const struct wrapper *w)
{
    char script[STEP_PATH_MAX], path[STEP_PATH_MAX * 2];
    rz_fmt(script, sizeof script, "%.*s", (int)strcspn(w->job.command, " "), w->job.command);
    long nodes = script[0] == '/' ? slurm_template_nodes(script) : 0;
    if (nodes > 0)
        return nodes;
    const char *base = strrchr(script, '/');
    rz_fmt(path, sizeof path, "%s/%s", w->sbatch_dir, base != NULL ? base + 1 : script);
    return script[0] != '\0' ? slurm_template_nodes(path) : 0;
}

/* Nodes with LADDER_FAILURES or more failures in the run root, added to w->ladder_bad; each
 * newly found one named in a node_excluded event. */
static void find_ladder_bad(struct wrapper *w)
{
    static struct step_node_tally t;
    char msg[600], count[32];
    step_node_tally(w->run_root, &t);
    for (int i = 0; i < t.n; i++) {
        if (t.node[i].failures < LADDER_FAILURES || rz_list_has(w->ladder_bad, t.node[i].name))
            continue;
        rz_list_add(w->ladder_bad, sizeof w->ladder_bad, t.node[i].name);
        rz_list_add(w->job.exc_nodes, sizeof w->job.exc_nodes, t.node[i].name);
        rz_fmt(count, sizeof count, "%d", t.node[i].failures);
        rz_fmt(msg, sizeof msg, "node %s has failed %d times in this run root (%s): excluded "
               "for the rest of the ladder (this job's steps, and the exclusions of the jobs it "
               "submits)", t.node[i].name, t.node[i].failures, w->run_root);
        struct event_kv kv[] = {{"nodes", t.node[i].name, 0},
                               {"failures", NULL, (double)t.node[i].failures}};
        step_event(&w->ev, "node_excluded", msg, kv, 2);
    }
}

void step_node_failed(struct wrapper *w, const char *nodes, const char *cause, const char *why)
{
    if (nodes[0] == '\0')
        return;
    struct event_kv kv[] = {{"nodes", nodes, 0}, {"cause", cause, 0}};
    step_event(&w->ev, "node_failed", why, kv, 2);
    find_ladder_bad(w);
}

void step_nodes_check(struct wrapper *w)
{
    static struct slurm_node nodes[MAX_NODES];
    struct slurm_job now;
    struct rz_err err;
    int n = 0;
    w->attempt_lost[0] = '\0';
    if (!step_env_in_slurm(w->env) || w->place.nodes[0] == '\0' ||
        slurm_nodes_query(w->r, w->place.nodes, nodes, MAX_NODES, &n, &err) != RZ_OK)
        return;
    /* "out of the allocation" only while the allocation lives: a job Slurm is requeueing has
     * none (measured: a requeue by Slurm named every node of it lost) */
    bool alloc_known = slurm_job_query(w->r, w->env->display_id, &now, &err) == RZ_OK &&
                       now.node_list[0] != '\0' && strcmp(now.state, "RUNNING") == 0 &&
                       now.restarts == w->env->restart_count;
    static struct slurm_node in_alloc[MAX_NODES];
    int m = 0;
    if (alloc_known &&
        slurm_nodes_query(w->r, now.node_list, in_alloc, MAX_NODES, &m, &err) != RZ_OK)
        alloc_known = false;
    char failed[512] = "", states[1024] = "", msg[1800];
    for (int i = 0; i < n; i++) {
        bool gone = alloc_known;
        for (int k = 0; gone && k < m; k++)
            gone = strcmp(in_alloc[k].name, nodes[i].name) != 0;
        if (!slurm_node_unreachable(&nodes[i]) && !gone)
            continue;
        rz_list_add(failed, sizeof failed, nodes[i].name);
        size_t b = strlen(states);
        rz_fmt(states + b, sizeof states - b, "%s%s %s%s", b ? "; " : "", nodes[i].name,
               nodes[i].state, gone ? ", out of the allocation" : "");
    }
    rz_fmt(w->attempt_lost, sizeof w->attempt_lost, "%s", failed);
    rz_list_add(w->job_lost, sizeof w->job_lost, failed);
    if (failed[0] == '\0')
        return;
    rz_fmt(msg, sizeof msg, "the attempt lost %s (%s): Slurm cannot reach it or took it out of "
           "the allocation; the next launch runs without it", failed, states);
    step_node_failed(w, failed, "unreachable", msg);
}

bool step_place(struct wrapper *w)
{
    static struct slurm_node nodes[MAX_NODES];
    struct step_place *p = &w->place;
    struct slurm_job now;
    struct rz_err err;
    int n = 0;
    memset(p, 0, sizeof *p);
    step_place_size(w->env, step_env_in_slurm(w->env) ? running_template_nodes(w) : 0, p);
    if (!step_env_in_slurm(w->env))
        return true;
    find_ladder_bad(w);
    if (slurm_job_query(w->r, w->env->display_id, &now, &err) != RZ_OK ||
        now.node_list[0] == '\0' ||
        slurm_nodes_query(w->r, now.node_list, nodes, MAX_NODES, &n, &err) != RZ_OK || n == 0)
        return true; /* as Slurm placed the job: srun finds out */
    rz_fmt(p->nodes, sizeof p->nodes, "%s", now.node_list);
    for (int i = 0; i < n; i++) {
        bool lost = slurm_node_unreachable(&nodes[i]);
        if (!lost && !rz_list_has(w->ladder_bad, nodes[i].name) &&
            !rz_list_has(w->net_out, nodes[i].name)) {
            p->usable++;
            continue;
        }
        if (lost)
            rz_list_add(p->lost, sizeof p->lost, nodes[i].name);
        rz_list_add(p->exclude, sizeof p->exclude, nodes[i].name);
    }
    /* Always said: after a node left the allocation (--no-kill) the job's environment still
     * has the old counts (SLURM_JOB_NUM_NODES, SLURM_NTASKS), and srun would ask for them
     * (measured: "More processors requested than permitted"). */
    p->shaped = true;
    if (p->usable >= p->needed && (p->usable > p->needed || p->exclude[0] != '\0' ||
                                   (long)p->usable != w->env->nnodes)) {
        char msg[1400];
        rz_fmt(msg, sizeof msg, "the job steps run on %ld of the allocation's %d usable node(s) "
               "(%s)%s%s", p->needed, p->usable, p->nodes, p->exclude[0] ? ", without " : "",
               p->exclude);
        struct event_kv kv[] = {{"nodes", NULL, (double)p->needed},
                               {"usable", NULL, (double)p->usable},
                               {"excluded_nodes", p->exclude, 0}};
        step_event(&w->ev, "placement", msg, kv, 3);
    }
    return p->usable >= p->needed;
}

enum rz_status step_place_args(const struct wrapper *w, struct step_argv *v, struct rz_err *err)
{
    const struct step_place *p = &w->place;
    char nodes[48], tasks[48], exclude[600];
    if (!p->shaped)
        return RZ_OK;
    rz_fmt(nodes, sizeof nodes, "--nodes=%ld", p->needed);
    rz_fmt(tasks, sizeof tasks, "--ntasks=%ld", p->ranks);
    const char *args[] = {nodes, tasks, NULL};
    enum rz_status st = step_argv_addv(v, args, err);
    /* After this job lost a node, the step that ran on it stays "completing" until slurmctld
     * marks the node down (SlurmdTimeout), and holds its CPUs on the nodes that live; srun
     * would wait for them ("Requested nodes are busy", measured: 14 s of a 33 s recovery from
     * a cut link).  Those ranks have ended (srun reported them), and ryzen-step runs one step
     * at a time, so the next one may share what the old step still holds.  So after a broken
     * link (probe.c): the old step's ranks at the far end of it may be reported late. */
    if (st == RZ_OK && (w->job_lost[0] != '\0' || w->net_out[0] != '\0'))
        st = step_argv_add(v, "--overlap", err);
    if (st == RZ_OK && p->exclude[0] != '\0') {
        rz_fmt(exclude, sizeof exclude, "--exclude=%s", p->exclude);
        st = step_argv_add(v, exclude, err);
    }
    return st;
}

long step_spare_ask(struct wrapper *w, const char *excluded)
{
    const struct step_place *p = &w->place;
    struct rz_err err;
    long usable = 0;
    if (p->spare <= 0 || w->job.partition[0] == '\0')
        return 0;
    if (slurm_partition_usable(w->r, w->job.partition, excluded, &usable, &err) != RZ_OK)
        return 0; /* unknown: as asked */
    if (usable >= w->env->nnodes)
        return 0;
    return usable > p->needed ? usable : p->needed;
}

/* ---- the nodes the attempt before lost ---------------------------------------------------- */

/* The nodes the attempt before this one lost.  When a node stops answering Slurm (a cut
 * link, a partition, or a host that died: from the outside the two look the same), Slurm marks
 * it NOT_RESPONDING, then DOWN, and requeues the job (NODE_FAIL); the attempt that ran there ends
 * without a word from its ranks, and its ryzen-step may be killed before it can say why.  So the
 * next attempt asks: which nodes of the attempt before are unreachable now?  It names them in a
 * nodes_lost event, a network fault (the node became unreachable), not a crash of the trainer.
 * Slurm places no job on a DOWN node, so this attempt already runs without them; the event
 * records them as excluded. */
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
    struct event_kv kv[] = {{"nodes", lost, 0}, {"cause", "unreachable", 0},
                           {"excluded_nodes", lost, 0}, {"states", states, 0}};
    step_event(&w->ev, "nodes_lost", msg, kv, 4);
    /* a failure of each node, unless the attempt before named it already */
    char fresh[512] = "";
    for (char *save = NULL, *name = strtok_r(lost, ",", &save); name != NULL;
         name = strtok_r(NULL, ",", &save))
        if (!rz_list_has(h->prev_failed, name))
            rz_list_add(fresh, sizeof fresh, name);
    step_node_failed(w, fresh, "unreachable", msg);
}
