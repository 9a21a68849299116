/* chain.c: the end of a phase (see step_internal.h): ryzen-gate's verdict, then promotion (GO:
 * submit phase.next after this job, --dependency=afterok) or rollback (NO-GO: cancel the pending
 * jobs this lineage submitted, submit phase.previous resuming from this phase's last good
 * checkpoint).  The next job gets this job's own sbatch flags (partition, account, QOS, time,
 * memory, CPUs per task, ...) read from Slurm, and the hand-over (lineage, rollback origin,
 * checkpoint path) as template arguments, never through --export, so paths arrive intact.
 * The report is rendered once, before the chain acts: the report on disk is the one acted on. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "core/util.h"
#include "record/report.h"
#include "step/step_internal.h"

enum { VERDICT_GO = 0, VERDICT_NO_GO = 1, VERDICT_HOLD = 2 };
static const char *const verdict_names[] = {"GO", "NO-GO", "HOLD"};

static enum rz_status add_sets(struct step_argv *v, const char *const *sets, int n,
                               struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    for (int i = 0; st == RZ_OK && i < n; i++) {
        st = step_argv_add(v, "--set", err);
        if (st == RZ_OK)
            st = step_argv_add(v, sets[i], err);
    }
    return st;
}

int chain_run_gate(struct wrapper *w, const char *ended, const char *why, int status)
{
    struct step_argv v = {0};
    struct rz_err err;
    char num[32];
    rz_fmt(num, sizeof num, "%d", status);
    const char *head[] = {w->gate, "--config", w->config, NULL};
    const char *tail[] = {"--run-dir", w->run_dir, "--job", w->env->job_id, NULL};
    const char *abort[] = {"--ended", ended, "--why", why, "--status", num, NULL};
    enum rz_status st = step_argv_addv(&v, head, &err);
    if (st == RZ_OK) st = add_sets(&v, w->sets, w->n_sets, &err);
    if (st == RZ_OK) st = step_argv_addv(&v, tail, &err);
    if (st == RZ_OK && ended != NULL) st = step_argv_addv(&v, abort, &err);
    int rc = st == RZ_OK ? step_run(w->r, &v, NULL, 0, &err) : -1;
    step_argv_free(&v);
    if (rc < 0)
        step_event(&w->ev, "gate_failed", err.msg, NULL, 0);
    return rc;
}

void chain_comment(struct wrapper *w, const char *text)
{
    char arg[512];
    struct rz_err err;
    if (strcmp(w->env->job_id, "local") == 0)
        return;
    rz_fmt(arg, sizeof arg, "Comment=%s", text);
    if (slurm_control(w->r, "update", w->env->display_id, arg, &err) != 0)
        step_event(&w->ev, "comment_failed", "scontrol update Comment failed: sacct will not "
                   "show the verdict", NULL, 0);
}

/* The rollback checkpoint ryzen-gate chose (report.json's rollback_checkpoint.path). */
static bool rollback_checkpoint(const struct wrapper *w, char *out, size_t len)
{
    char path[STEP_PATH_MAX + 400];
    struct report_rec report = {0};
    out[0] = '\0';
    if (report_path(path, sizeof path, w->run_dir, w->env->job_id) &&
        report_read(&report, path, NULL) == RZ_OK)
        rz_fmt(out, len, "%s", report.rollback_ckpt);
    report_free(&report);
    return out[0] != '\0';
}

/* sbatch --parsable FLAGS EXTRA DIR/PHASE.sh --lineage L ARGS --set ...; the new job id. */
static bool submit(struct wrapper *w, const char *phase, const char *const *extra,
                   const char *const *args, char *job, size_t len)
{
    struct step_argv v = {0};
    struct rz_err err;
    char script[STEP_PATH_MAX + 300], out[256], cmd[8192], msg[8600];
    rz_fmt(script, sizeof script, "%s/%s.sh", w->sbatch_dir, phase);
    const char *head[] = {"sbatch", "--parsable", NULL};
    const char *lineage[] = {script, "--lineage", w->lineage, NULL};
    /* a job with spare nodes asks the next phase for as many beyond its template's, and for
     * --no-kill, without which a spare is of no use (the job ends with its lost node) */
    char nodes[48] = "";
    long asks = w->place.spare > 0 ? slurm_template_nodes(script) : 0;
    if (asks > 0)
        rz_fmt(nodes, sizeof nodes, "--nodes=%ld", asks + w->place.spare);
    const char *spare[] = {nodes, "--no-kill", NULL};
    enum rz_status st = step_argv_addv(&v, head, &err);
    if (st == RZ_OK) st = slurm_job_flags(&w->job, w->signal_flag, &v, &err);
    if (st == RZ_OK && nodes[0] != '\0') st = step_argv_addv(&v, spare, &err);
    if (st == RZ_OK) st = step_argv_addv(&v, extra, &err);
    if (st == RZ_OK) st = step_argv_addv(&v, lineage, &err);
    if (st == RZ_OK) st = step_argv_addv(&v, args, &err);
    if (st == RZ_OK) st = add_sets(&v, w->args->sets, w->args->n_sets, &err);
    int rc = st == RZ_OK ? step_run(w->r, &v, out, sizeof out, &err) : -1;
    step_argv_format(&v, cmd, sizeof cmd);
    step_argv_free(&v);
    job[0] = '\0';
    if (rc == 0)
        rz_fmt(job, len, "%.*s", (int)strcspn(out, ";\n"), out);
    if (job[0] == '\0') {
        rz_fmt(msg, sizeof msg, "submission failed (status %d): %s%s%s", rc, cmd,
               rc < 0 ? ": " : "", rc < 0 ? err.msg : "");
        step_event(&w->ev, "submit_failed", msg, NULL, 0);
        return false;
    }
    struct event_kv kv[] = {{"command", cmd, 0}};
    step_event(&w->ev, "submitted", cmd, kv, 1);
    return true;
}

void chain_cancel_lineage(struct wrapper *w)
{
    char ids[2048], msg[512];
    struct rz_err err;
    if (step_lineage_jobs(w->run_root, w->lineage, ids, sizeof ids) == 0)
        return;
    for (char *save = NULL, *id = strtok_r(ids, ",", &save); id != NULL;
         id = strtok_r(NULL, ",", &save)) {
        if (!slurm_job_pending_ours(w->r, id))
            continue;
        const char *cancel[] = {"scancel", id, NULL};
        int rc = w->r->run(w->r, cancel, NULL, 0, &err);
        rz_fmt(msg, sizeof msg, "cancelled pending job %s, submitted earlier by this lineage "
               "(%s)%s", id, w->lineage, rc == 0 ? "" : ": scancel failed");
        struct event_kv kv[] = {{"cancelled_job", id, 0}};
        step_event(&w->ev, rc == 0 ? "scancel" : "scancel_failed", msg, kv, 1);
    }
}

static bool promote(struct wrapper *w)
{
    char dep[128], job[64], msg[1024];
    const char *next = w->cfg.phase.next;
    if (next[0] == '\0') {
        step_event(&w->ev, "promote_skipped", "GO, and this is the last phase of the chain",
                   NULL, 0);
        return true;
    }
    if (w->args->rollback_of != NULL) {
        rz_fmt(msg, sizeof msg, "GO, but this job is the rollback of job %s: promoting again "
               "needs a human decision (resubmit %s/%s.sh)", w->args->rollback_of,
               w->sbatch_dir, next);
        step_event(&w->ev, "promote_skipped", msg, NULL, 0);
        return true;
    }
    rz_fmt(dep, sizeof dep, "--dependency=afterok:%s", w->env->display_id);
    const char *extra[] = {dep, NULL}, *none[] = {NULL};
    if (!submit(w, next, extra, none, job, sizeof job))
        return false;
    rz_fmt(msg, sizeof msg, "GO: submitted %s as job %s (starts after job %s succeeds)", next,
           job, w->env->display_id);
    struct event_kv kv[] = {{"next_phase", next, 0}, {"next_job", job, 0}};
    step_event(&w->ev, "promote", msg, kv, 2);
    return true;
}

/* Steps the previous phase's schedule has left after `step`; -1 if its config cannot be read. */
static int64_t steps_left(const struct wrapper *w, const char *phase, int64_t step)
{
    static struct cfg prev;
    const char *sets[STEP_MAX_SETS];
    char path[STEP_PATH_MAX + 300];
    const char *dir = strrchr(w->config, '/');
    rz_fmt(path, sizeof path, "%.*s/%s.yaml", dir != NULL ? (int)(dir - w->config) : 1,
           dir != NULL ? w->config : ".", phase);
    int n = step_select_sets(w->args->sets, w->args->n_sets, phase, sets);
    if (cfg_load_with_overrides(&prev, path, sets, n, NULL) != RZ_OK)
        return -1;
    return prev.training.steps - step;
}

static bool rollback(struct wrapper *w, const char *why)
{
    char ckpt[STEP_PATH_MAX], job[64], msg[STEP_PATH_MAX + 600];
    const char *prev = w->cfg.phase.previous;
    if (prev[0] == '\0') {
        step_event(&w->ev, "rollback_skipped", "no previous phase to roll back to", NULL, 0);
        return true;
    }
    chain_cancel_lineage(w);
    if (!rollback_checkpoint(w, ckpt, sizeof ckpt)) {
        step_event(&w->ev, "rollback_skipped", "no checkpoint of this phase passed a sync check: "
                   "nothing to roll back from", NULL, 0);
        return true;
    }
    struct ckpt_meta meta;
    struct rz_err err;
    if (ckpt_read_meta(ckpt, &meta, &err) != RZ_OK) {
        rz_fmt(msg, sizeof msg, "the rollback checkpoint cannot be read: %s", err.msg);
        step_event(&w->ev, "rollback_skipped", msg, NULL, 0);
        return false;
    }
    int64_t step = meta.step, left = steps_left(w, prev, step);
    ckpt_meta_free(&meta);
    if (left == 0 || left < -1) {
        rz_fmt(msg, sizeof msg, "%s is at step %lld, the end of %s's schedule (training.steps): "
               "a rollback would train nothing; raise training.steps and submit %s/%s.sh "
               "--resume-from %s to continue", ckpt, (long long)step, prev, w->sbatch_dir, prev,
               ckpt);
        step_event(&w->ev, "rollback_skipped", msg, NULL, 0);
        return true;
    }
    const char *none[] = {NULL};
    const char *args[] = {"--rollback-of", w->env->job_id, "--resume-from", ckpt, NULL};
    if (!submit(w, prev, none, args, job, sizeof job))
        return false;
    rz_fmt(msg, sizeof msg, "%s: rolled back to %s as job %s, resuming from %s (step %lld)", why,
           prev, job, ckpt, (long long)step);
    struct event_kv kv[] = {{"to_phase", prev, 0}, {"new_job", job, 0}, {"checkpoint", ckpt, 0},
                           {"reason", why, 0}};
    step_event(&w->ev, "rollback", msg, kv, 4);
    return true;
}

/* Act on a verdict per the phase's policy; false when a submission failed. */
static bool act(struct wrapper *w, int v, bool *promoted)
{
    const struct cfg_phase *p = &w->cfg.phase;
    const char *action = v == VERDICT_GO ? p->on_go : v == VERDICT_NO_GO ? p->on_no_go
                                                                           : p->on_hold;
    *promoted = false;
    if (strcmp(action, "promote") == 0)
        return *promoted = promote(w);
    if (strcmp(action, "rollback") == 0)
        return rollback(w, verdict_names[v]);
    struct event_kv kv[] = {{"verdict", verdict_names[v], 0}};
    step_event(&w->ev, "stop", "the verdict's action is stop: nothing submitted", kv, 1);
    return true;
}

void chain_no_go(struct wrapper *w, const char *why)
{
    if (strcmp(w->cfg.phase.on_no_go, "rollback") == 0)
        rollback(w, why);
    else
        step_event(&w->ev, "stop", "the NO-GO action is stop: nothing submitted", NULL, 0);
}

int chain_finish_phase(struct wrapper *w)
{
    char msg[STEP_PATH_MAX + 600];
    int v = chain_run_gate(w, NULL, NULL, 0);
    if (v < 0 || v > VERDICT_HOLD) {
        rz_fmt(msg, sizeof msg, "ryzen-gate failed with status %d: no verdict, nothing "
               "submitted", v);
        step_event(&w->ev, "gate_failed", msg, NULL, 0);
        chain_comment(w, "ryzen: gate failed");
        return v > 0 ? v : 1;
    }
    rz_fmt(msg, sizeof msg, "%s (report: %s/reports/%s/report.md)", verdict_names[v], w->run_dir,
           w->env->job_id);
    struct event_kv kv[] = {{"verdict", verdict_names[v], 0}};
    step_event(&w->ev, "verdict", msg, kv, 1);
    bool promoted;
    bool ok = act(w, v, &promoted);
    rz_fmt(msg, sizeof msg, "%s: %s%s", w->phase, verdict_names[v],
           !ok ? " (submission failed)" : promoted ? " (promoted)" : "");
    chain_comment(w, msg);
    if (!ok)
        return 1;
    /* The next phase waits on --dependency=afterok: a promoting job must end with 0 (a HOLD
     * promoted by phase.on_hold included); otherwise the exit status is the verdict's. */
    return promoted ? 0 : v;
}
