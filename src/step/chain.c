/* chain.c: the end of a phase (see wrapper.h): ryzen-gate's verdict, then promotion (GO: submit
 * phase.next after this job, --dependency=afterok) or rollback (NO-GO: cancel pending later
 * phases, submit phase.previous resuming from this phase's last checkpoint that passed its sync
 * checks), each through sbatch/scancel argv arrays and recorded as events.  The report is
 * rendered again afterwards so it shows the chain.  A failed submission is an event and a
 * non-zero exit; the report already written stays. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate/gate_json.h"
#include "core/util.h"
#include "step/wrapper.h"

enum { VERDICT_GO = 0, VERDICT_NO_GO = 1, VERDICT_HOLD = 2 };
#define MAX_LATER 16

/* Run ryzen-gate; with `quiet` its output is discarded (the re-render after the chain). */
static int run_gate(struct wrapper *w, bool quiet)
{
    struct step_argv v = {0};
    struct rz_err err;
    const char *head[] = {w->gate, "--config", w->config};
    enum rz_status st = RZ_OK;
    for (size_t i = 0; st == RZ_OK && i < RZ_ARRAY_LEN(head); i++)
        st = step_argv_add(&v, head[i], &err);
    if (st == RZ_OK) st = wrapper_add_sets(w, &v, &err);
    if (st == RZ_OK) st = step_argv_add(&v, "--run-dir", &err);
    if (st == RZ_OK) st = step_argv_add(&v, w->run_dir, &err);
    if (st == RZ_OK) st = step_argv_add(&v, "--job", &err);
    if (st == RZ_OK) st = step_argv_add(&v, w->env.job_id, &err);
    char discard[4096];
    int rc = st != RZ_OK ? -1 : quiet ? step_run_capture(&v, discard, sizeof discard, &err)
                                      : step_run(&v, &err);
    step_argv_free(&v);
    if (rc < 0)
        step_event(w->ev, "gate_failed", err.msg, NULL, 0);
    return rc;
}

/* The rollback checkpoint ryzen-gate chose for this job (report.json's rollback_checkpoint: the
 * newest valid checkpoint at or before the last sync check that passed on every rank).  One
 * definition, the gate's; false when it found none or the report cannot be read. */
static bool rollback_checkpoint(const struct wrapper *w, char *out, size_t len)
{
    char path[4300], *text = NULL;
    size_t n = 0;
    struct gj_value *report = NULL;
    rz_fmt(path, sizeof path, "%s/reports/%s/report.json", w->run_dir, w->env.job_id);
    out[0] = '\0';
    if (rz_read_file(path, &text, &n, NULL) == RZ_OK &&
        gj_parse(&report, text, n, path, 1, NULL) == RZ_OK) {
        const char *ckpt = gj_get_str(gj_get(report, "rollback_checkpoint"), "path");
        if (ckpt != NULL)
            rz_fmt(out, len, "%s", ckpt);
    }
    gj_free(report);
    free(text);
    return out[0] != '\0';
}

/* sbatch --parsable [extra...] SUBMIT_DIR/sbatch/PHASE.sh --set ... ; the new job id in job. */
static bool submit(struct wrapper *w, const char *phase, const char *const *extra, size_t n_extra,
                   char *job, size_t len)
{
    struct step_argv v = {0};
    struct rz_err err;
    char script[2400], out[256], cmd[8192], msg[8600];
    snprintf(script, sizeof script, "%s/sbatch/%s.sh", w->env.submit_dir, phase);
    enum rz_status st = step_argv_add(&v, "sbatch", &err);
    if (st == RZ_OK) st = step_argv_add(&v, "--parsable", &err);
    for (size_t i = 0; st == RZ_OK && i < n_extra; i++)
        st = step_argv_add(&v, extra[i], &err);
    if (st == RZ_OK) st = step_argv_add(&v, script, &err);
    for (int i = 0; st == RZ_OK && i < w->n_raw; i++) { /* every override travels the chain */
        st = step_argv_add(&v, "--set", &err);
        if (st == RZ_OK)
            st = step_argv_add(&v, w->raw_sets[i], &err);
    }
    int rc = st == RZ_OK ? step_run_capture(&v, out, sizeof out, &err) : -1;
    step_argv_format(&v, cmd, sizeof cmd);
    step_argv_free(&v);
    job[0] = '\0';
    if (rc == 0)
        snprintf(job, len, "%.*s", (int)strcspn(out, ";\n"), out);
    if (job[0] == '\0') {
        rz_fmt(msg, sizeof msg, "submission failed (status %d): %s%s%s", rc, cmd,
               rc < 0 ? ": " : "", rc < 0 ? err.msg : "");
        step_event(w->ev, "submit_failed", msg, NULL, 0);
        return false;
    }
    return true;
}

/* Later phases: phase.next, its phase.next, ... read from the configs beside ours. */
static int later_phases(const struct wrapper *w, char names[][256], int max)
{
    char dir[2048], path[2400];
    snprintf(dir, sizeof dir, "%s", w->config);
    char *slash = strrchr(dir, '/');
    if (slash != NULL)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    static struct cfg c;
    int n = 0;
    const char *next = w->cfg.phase.next;
    while (next[0] != '\0' && n < max) {
        snprintf(names[n], sizeof names[0], "%s", next);
        n++;
        rz_fmt(path, sizeof path, "%s/%s.yaml", dir, names[n - 1]);
        if (cfg_load(&c, path, NULL) != RZ_OK)
            break;
        next = c.phase.next;
    }
    return n;
}

/* scancel the pending jobs of later phases (named ryzen-<phase> by the templates). */
static void cancel_later(struct wrapper *w)
{
    char later[MAX_LATER][256], out[16384], msg[512];
    int n = later_phases(w, later, MAX_LATER);
    struct step_argv q = {0};
    struct rz_err err;
    const char *args[] = {"squeue", "--noheader", "--states=PENDING", "--format=%i %j"};
    for (size_t i = 0; i < RZ_ARRAY_LEN(args); i++)
        step_argv_add(&q, args[i], &err);
    int rc = step_run_capture(&q, out, sizeof out, &err);
    step_argv_free(&q);
    if (rc != 0) {
        step_event(w->ev, "scancel_failed", "squeue failed: pending later phases not checked",
                   NULL, 0);
        return;
    }
    for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char id[64], name[256];
        if (sscanf(line, "%63s %255s", id, name) != 2 || strncmp(name, "ryzen-", 6) != 0)
            continue;
        for (int k = 0; k < n; k++) {
            if (strcmp(name + 6, later[k]) != 0)
                continue;
            struct step_argv v = {0};
            step_argv_add(&v, "scancel", &err);
            step_argv_add(&v, id, &err);
            int r = step_run(&v, &err);
            step_argv_free(&v);
            rz_fmt(msg, sizeof msg, "cancelled pending job %s (%s), a later phase%s", id,
                   later[k], r == 0 ? "" : " (scancel failed)");
            struct step_kv kv[] = {{"cancelled_job", id, 0}, {"cancelled_phase", later[k], 0}};
            step_event(w->ev, r == 0 ? "scancel" : "scancel_failed", msg, kv, 2);
        }
    }
}

static bool promote(struct wrapper *w)
{
    char dep[128], job[64], msg[1024];
    const char *rollback_of = getenv("RYZEN_ROLLBACK_OF");
    if (w->cfg.phase.next[0] == '\0') {
        step_event(w->ev, "promote_skipped", "GO, and this is the last phase of the chain",
                   NULL, 0);
        return true;
    }
    if (rollback_of != NULL && rollback_of[0] != '\0') {
        snprintf(msg, sizeof msg, "GO, but this job is the rollback of job %s: promoting again "
                 "needs a human decision (resubmit sbatch/%s.sh)", rollback_of, w->cfg.phase.next);
        step_event(w->ev, "promote_skipped", msg, NULL, 0);
        return true;
    }
    snprintf(dep, sizeof dep, "--dependency=afterok:%s", w->env.job_id);
    /* The new job must not inherit a rollback's resume point or origin. */
    const char *extra[] = {dep, "--export=ALL,RYZEN_RESUME_FROM=,RYZEN_ROLLBACK_OF="};
    if (!submit(w, w->cfg.phase.next, extra, 2, job, sizeof job))
        return false;
    snprintf(msg, sizeof msg, "GO: submitted %s as job %s (starts after job %s succeeds)",
             w->cfg.phase.next, job, w->env.job_id);
    struct step_kv kv[] = {{"next_phase", w->cfg.phase.next, 0}, {"next_job", job, 0}};
    step_event(w->ev, "promote", msg, kv, 2);
    return true;
}

static bool rollback(struct wrapper *w, const char *why)
{
    char ckpt[4096], exp[4400], job[64], msg[5000];
    const char *prev = w->cfg.phase.previous;
    if (prev[0] == '\0') {
        step_event(w->ev, "rollback_skipped", "no previous phase to roll back to", NULL, 0);
        return true;
    }
    cancel_later(w);
    if (!rollback_checkpoint(w, ckpt, sizeof ckpt))
        step_event(w->ev, "rollback", "no checkpoint of this phase passed a sync check: the "
                   "previous phase resumes from its own checkpoints", NULL, 0);
    rz_fmt(exp, sizeof exp, "--export=ALL,RYZEN_RESUME_FROM=%s,RYZEN_ROLLBACK_OF=%s", ckpt,
           w->env.job_id);
    const char *extra[] = {exp};
    if (!submit(w, prev, extra, 1, job, sizeof job))
        return false;
    snprintf(msg, sizeof msg, "%s: rolled back to %s as job %s, resuming from %s", why, prev,
             job, ckpt[0] ? ckpt : "its own latest checkpoint");
    struct step_kv kv[] = {{"to_phase", prev, 0}, {"new_job", job, 0}, {"checkpoint", ckpt, 0},
                           {"reason", why, 0}};
    step_event(w->ev, "rollback", msg, kv, 4);
    return true;
}

int chain_finish_phase(struct wrapper *w)
{
    static const char *const names[] = {"GO", "NO-GO", "HOLD"};
    char msg[2600];
    int v = run_gate(w, false);
    if (v < 0 || v > VERDICT_HOLD) {
        snprintf(msg, sizeof msg, "ryzen-gate failed with status %d: no verdict, nothing "
                 "submitted", v);
        step_event(w->ev, "gate_failed", msg, NULL, 0);
        return v > 0 ? v : 1;
    }
    snprintf(msg, sizeof msg, "%s (report: %s/reports/%s/report.md)", names[v], w->run_dir,
             w->env.job_id);
    struct step_kv kv[] = {{"verdict", names[v], 0}};
    step_event(w->ev, "verdict", msg, kv, 1);
    const struct cfg_phase *p = &w->cfg.phase;
    const char *action = v == VERDICT_GO ? p->on_go : v == VERDICT_NO_GO ? p->on_no_go : p->on_hold;
    bool ok = true;
    bool promoted = false;
    if (strcmp(action, "promote") == 0)
        ok = promoted = promote(w);
    else if (strcmp(action, "rollback") == 0)
        ok = rollback(w, names[v]);
    else
        step_event(w->ev, "stop", "the verdict's action is stop: nothing submitted", kv, 1);
    run_gate(w, true); /* render again: the report now shows the chain events */
    if (!ok)
        return 1;
    /* The next phase waits on --dependency=afterok: a promoting job must end with 0 (a HOLD
     * promoted by phase.on_hold included); otherwise the exit status is the verdict's. */
    return promoted ? 0 : v;
}
