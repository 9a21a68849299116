/* wrapper.c: one attempt of a phase job, start to end (step_main; the sequence is in step.h and
 * docs/operations.md).  Every decision is one line in RUN_DIR/events.jsonl and one readable line
 * in the job output.  Commands go through the runner as argv arrays. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "core/util.h"
#include "record/health_json.h"
#include "record/layout.h"
#include "step/step_internal.h"

#ifndef RZ_PKGDATADIR
#define RZ_PKGDATADIR "/usr/local/share/ryzen-llm"
#endif

#define PREFLIGHT_TRIES 3
#define PREFLIGHT_BACKOFF_S 5.0
#define MAX_RECORDS 4096

/* ---- where things are ------------------------------------------------------------------------------ */

static bool readable_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, R_OK) == 0;
}

/* NAME as given when it names a file; else NAME or NAME.yaml in RYZEN_CONFIG_DIR, the template's
 * ../configs (resolved, so reports name the directory itself), SUBMIT_DIR/configs and the
 * installed configs, in that order. */
bool step_find_config(char *out, size_t len, const char *name, const struct step_env *e,
                      const char *template_dir)
{
    if (strchr(name, '/') != NULL || readable_file(name)) {
        rz_fmt(out, len, "%s", name);
        return readable_file(name);
    }
    char dirs[4][STEP_PATH_MAX + 16];
    rz_fmt(dirs[0], sizeof dirs[0], "%s", e->config_dir);
    rz_fmt(dirs[1], sizeof dirs[1], "%s%s", template_dir, template_dir[0] ? "/../configs" : "");
    char canon[PATH_MAX]; /* shown in every report: .../configs, not .../sbatch/../configs */
    if (dirs[1][0] != '\0' && realpath(dirs[1], canon) != NULL)
        rz_fmt(dirs[1], sizeof dirs[1], "%s", canon);
    rz_fmt(dirs[2], sizeof dirs[2], "%s/configs", e->submit_dir);
    rz_fmt(dirs[3], sizeof dirs[3], "%s/configs", RZ_PKGDATADIR);
    size_t n = strlen(name);
    bool has_ext = n > 5 && strcmp(name + n - 5, ".yaml") == 0;
    for (size_t i = 0; i < RZ_ARRAY_LEN(dirs); i++) {
        if (dirs[i][0] == '\0')
            continue;
        rz_fmt(out, len, "%s/%s%s", dirs[i], name, has_ext ? "" : ".yaml");
        if (readable_file(out))
            return true;
    }
    rz_fmt(out, len, "%s", name);
    return false;
}

/* The directory of the running template: the first word of Slurm's Command (the script; its
 * arguments follow), relative to the submit directory. */
static void template_dir(const struct wrapper *w, char *out, size_t len)
{
    char cmd[STEP_PATH_MAX];
    out[0] = '\0';
    if (w->env->sbatch_dir[0] != '\0') {
        rz_fmt(out, len, "%s", w->env->sbatch_dir);
        return;
    }
    rz_fmt(cmd, sizeof cmd, "%.*s", (int)strcspn(w->job.command, " "), w->job.command);
    const char *slash = strrchr(cmd, '/');
    if (cmd[0] == '\0' || slash == NULL) {
        if (cmd[0] != '\0')
            rz_fmt(out, len, "%s", w->env->submit_dir);
        return;
    }
    if (cmd[0] == '/')
        rz_fmt(out, len, "%.*s", (int)(slash - cmd), cmd);
    else
        rz_fmt(out, len, "%s/%.*s", w->env->submit_dir, (int)(slash - cmd), cmd);
}

/* ---- small helpers ----------------------------------------------------------------------------------- */

static void on_quarantine(void *user, const char *path, const char *reason)
{
    struct wrapper *w = user;
    char msg[STEP_PATH_MAX + 600];
    rz_fmt(msg, sizeof msg, "damaged checkpoint %s skipped and quarantined: %s", path, reason);
    struct event_kv kv[] = {{"checkpoint", path, 0}, {"reason", reason, 0}};
    step_event(&w->ev, "checkpoint_quarantined", msg, kv, 2);
}

/* RUN_DIR/checkpoints */
static void checkpoint_dir(const struct wrapper *w, char *out, size_t len)
{
    rz_fmt(out, len, "%s/checkpoints", w->run_dir);
}

/* Newest checkpoint step that verifies (damaged ones are quarantined on the way); -1: none. */
static int64_t newest_checkpoint(struct wrapper *w, char *path, size_t len)
{
    char dir[STEP_PATH_MAX + 400];
    struct rz_err err;
    struct ckpt_meta meta;
    checkpoint_dir(w, dir, sizeof dir);
    int64_t step = -1;
    path[0] = '\0';
    if (ckpt_find_latest(dir, path, len, on_quarantine, w, &err) == RZ_OK && path[0] != '\0' &&
        ckpt_read_meta(path, &meta, &err) == RZ_OK) {
        step = meta.step;
        ckpt_meta_free(&meta);
    }
    return step;
}

/* ---- stages ------------------------------------------------------------------------------------------ */

/* Every input that can be checked before srun: 64 (or 65 for a damaged checkpoint) and no
 * requeue, with the path and the cause. */
static int check_inputs(struct wrapper *w)
{
    char msg[STEP_PATH_MAX * 2];
    const struct cfg *c = &w->cfg;
    bool needs_file = strcmp(c->data.kind, "text") == 0 || strcmp(c->data.kind, "tokens") == 0;
    if (needs_file && access(c->data.path, R_OK) != 0) {
        rz_fmt(msg, sizeof msg, "data.path '%s' (data.kind %s): %s", c->data.path, c->data.kind,
               strerror(errno));
        step_event(&w->ev, "input_error", msg, NULL, 0);
        return RZ_EXIT_USAGE;
    }
    if (needs_file && !readable_file(c->data.path)) {
        rz_fmt(msg, sizeof msg, "data.path '%s' is not a regular file", c->data.path);
        step_event(&w->ev, "input_error", msg, NULL, 0);
        return RZ_EXIT_USAGE;
    }
    const char *from = w->args->resume_from;
    if (from == NULL)
        return 0;
    struct rz_err err;
    if (access(from, R_OK) != 0) {
        rz_fmt(msg, sizeof msg, "--resume-from '%s': %s; a rollback never starts fresh "
               "silently", from, strerror(errno));
        step_event(&w->ev, "input_error", msg, NULL, 0);
        return RZ_EXIT_USAGE;
    }
    if (ckpt_verify(from, &err) != RZ_OK) {
        rz_fmt(msg, sizeof msg, "--resume-from: %s", err.msg);
        step_event(&w->ev, "input_error", msg, NULL, 0);
        return RZ_EXIT_NOCKPT;
    }
    return 0;
}

static int claim_run_dir(struct wrapper *w)
{
    char owner[128], msg[1024], host[256] = "";
    struct rz_err err;
    enum step_owner how;
    if (step_env_in_slurm(w->env))
        rz_fmt(w->owner_id, sizeof w->owner_id, "%s", w->env->job_id);
    else {
        gethostname(host, sizeof host);
        rz_fmt(w->owner_id, sizeof w->owner_id, "local:%s:%ld", host, (long)getpid());
    }
    if (step_owner_claim(w->r, w->run_dir, w->owner_id, &how, owner, sizeof owner, &err) !=
        RZ_OK) {
        w->owner_id[0] = '\0';
        step_event(&w->ev, "input_error", err.msg, NULL, 0);
        return RZ_EXIT_USAGE;
    }
    if (how == OWNER_BUSY) {
        rz_fmt(msg, sizeof msg, "%s belongs to job %s, which is still alive: two jobs must not "
               "train into one run directory.  Wait for it, scancel it, or submit with another "
               "RYZEN_RUN_ROOT.  Not requeued.", w->run_dir, owner);
        struct event_kv kv[] = {{"owner", owner, 0}};
        step_event(&w->ev, "run_dir_busy", msg, kv, 1);
        w->owner_id[0] = '\0';
        return RZ_EXIT_USAGE;
    }
    if (how == OWNER_TAKEN_OVER) {
        rz_fmt(msg, sizeof msg, "took over %s from job %s, which Slurm no longer runs",
               w->run_dir, owner);
        struct event_kv kv[] = {{"previous_owner", owner, 0}};
        step_event(&w->ev, "owner_takeover", msg, kv, 1);
    }
    return 0;
}

/* The job's --signal against health.stop_signal and --time (see docs/operations.md). */
static int check_signal(struct wrapper *w)
{
    char msg[1024];
    const struct slurm_signal *s = &w->signal;
    if (!step_env_in_slurm(w->env))
        return 0;
    if (!s->found) {
        rz_fmt(msg, sizeof msg, "the job has no usable --signal%s%s: at the time limit Slurm "
               "kills it without a checkpoint (submit with --signal=B:%s@<seconds>)",
               s->source[0] ? ": " : "", s->source, w->cfg.health.stop_signal);
        step_event(&w->ev, "signal_warning", msg, NULL, 0);
        return 0;
    }
    if (s->signo != w->stop_signo) {
        rz_fmt(msg, sizeof msg, "the job's --signal=%s (%s) sends SIG%s, but health.stop_signal "
               "is %s: the trainer would not checkpoint on it.  Submit with --signal=B:%s@%ld, "
               "or set health.stop_signal to match.  Not requeued.", s->text, s->source,
               slurm_signal_name(s->signo), w->cfg.health.stop_signal, w->cfg.health.stop_signal,
               s->lead_s);
        step_event(&w->ev, "signal_mismatch", msg, NULL, 0);
        return RZ_EXIT_USAGE;
    }
    if (strcmp(s->source, "batch script") != 0)
        rz_fmt(w->signal_flag, sizeof w->signal_flag, "--signal=%s", s->text);
    if (w->job.time_limit_s > 0 && s->lead_s >= w->job.time_limit_s) {
        rz_fmt(msg, sizeof msg, "the time limit (%s) is not longer than the --signal lead "
               "(%ld s): Slurm sends the stop signal at once, so each attempt stops before it "
               "can train; after two attempts without a checkpoint the job is held.  Submit "
               "with a longer --time or a shorter lead (--signal=%s%s@<seconds>).",
               w->job.time_limit, s->lead_s, s->batch ? "B:" : "", slurm_signal_name(s->signo));
        step_event(&w->ev, "signal_lead", msg, NULL, 0);
    }
    return 0;
}

/* srun --mpi=X -K1 [--cpus-per-task=C --cpu-bind=B] TRAINER --config F [--set]... --run-dir D */
static enum rz_status trainer_argv(const struct wrapper *w, struct step_argv *v,
                                   const char *const *extra, struct rz_err *err)
{
    char mpi[96], cpus[64], bind[96];
    rz_fmt(mpi, sizeof mpi, "--mpi=%s", w->srun_mpi);
    const char *head[] = {"srun", mpi, "--kill-on-bad-exit=1", NULL};
    enum rz_status st = step_argv_addv(v, head, err);
    /* srun does not inherit sbatch's -c (Slurm >= 22.05): without it every rank's threads
     * would share one CPU. */
    if (st == RZ_OK && w->env->cpus_per_task > 0) {
        rz_fmt(cpus, sizeof cpus, "--cpus-per-task=%ld", w->env->cpus_per_task);
        rz_fmt(bind, sizeof bind, "--cpu-bind=%s", w->env->cpu_bind);
        const char *flags[] = {cpus, bind, NULL};
        st = step_argv_addv(v, flags, err);
    }
    if (st == RZ_OK)
        st = step_place_args(w, v, err);
    const char *train[] = {w->train, "--config", w->config, NULL};
    if (st == RZ_OK)
        st = step_argv_addv(v, train, err);
    for (int i = 0; st == RZ_OK && i < w->n_sets; i++) {
        st = step_argv_add(v, "--set", err);
        if (st == RZ_OK)
            st = step_argv_add(v, w->sets[i], err);
    }
    /* checkpoint.policy young_daly without an MTBF of its own: what this job's history shows
     * (the trainer keeps checkpoint.interval while there is none) */
    char mtbf[96];
    double seen = step_observed_mtbf(&w->hist);
    if (st == RZ_OK && strcmp(w->cfg.checkpoint.policy, "young_daly") == 0 &&
        w->cfg.checkpoint.mtbf_s <= 0.0 && seen > 0.0) {
        rz_fmt(mtbf, sizeof mtbf, "checkpoint.mtbf_s=%.1f", seen);
        const char *set[] = {"--set", mtbf, NULL};
        st = step_argv_addv(v, set, err);
    }
    const char *dir[] = {"--run-dir", w->run_dir, NULL};
    if (st == RZ_OK)
        st = step_argv_addv(v, dir, err);
    if (st == RZ_OK)
        st = step_argv_addv(v, extra, err);
    return st;
}

/* A fresh directory for this attempt's exit records; the env entry that tells the ranks. */
static void attempt_dir(struct wrapper *w, const char *what, char *dir, size_t len, char *env,
                        size_t env_len)
{
    static int n;
    struct rz_err err;
    rz_fmt(dir, len, "%s/health/exits/%s-r%ld-%s-%d", w->run_dir, w->env->job_id,
           w->env->restart_count, what, ++n);
    if (rz_mkdirs(dir, &err) != RZ_OK)
        step_event(&w->ev, "exit_records", err.msg, NULL, 0);
    rz_fmt(env, env_len, "RYZEN_ATTEMPT_DIR=%s", dir);
}

/* Run srun ... with exit records, under `bound`; the status; *cls and who from the records. */
static int run_step(struct wrapper *w, const char *what, const char *const *extra, bool forward,
                    const struct step_bound *bound, enum step_class *cls, char *who,
                    size_t who_len)
{
    static struct exit_record rec[MAX_RECORDS];
    struct step_argv v = {0};
    struct rz_err err;
    char cmd[8192], msg[8400], dir[STEP_PATH_MAX + 500], env[STEP_PATH_MAX + 600];
    long handle;
    int n = 0, rc;
    attempt_dir(w, what, dir, sizeof dir, env, sizeof env);
    const char *fence = step_env_pmix_fence(w->env, w->srun_mpi);
    const char *envs[] = {env, fence, NULL};
    if (trainer_argv(w, &v, extra, &err) != RZ_OK) {
        step_event(&w->ev, what, err.msg, NULL, 0);
        return -1;
    }
    step_argv_format(&v, cmd, sizeof cmd);
    rz_fmt(msg, sizeof msg, "launching: %s%s%s", fence ? fence : "", fence ? " " : "", cmd);
    step_event(&w->ev, forward ? "train_start" : "preflight_start", msg, NULL, 0);
    if (w->r->start(w->r, (const char *const *)v.argv, envs, &handle, &err) != RZ_OK) {
        step_argv_free(&v);
        step_event(&w->ev, "launch_failed", err.msg, NULL, 0);
        return -1;
    }
    step_argv_free(&v);
    rc = w->r->wait(w->r, handle, forward ? w->stop_signo : SIGCONT, bound, w->out);
    exit_records_read(dir, rec, MAX_RECORDS, &n);
    *cls = step_classify(rc, rec, n, w->place.ranks, who, who_len);
    return rc;
}

/* What Slurm says stopped the job (it may have changed since the start). */
static enum step_cause stop_cause(struct wrapper *w, bool signalled)
{
    struct slurm_job now;
    struct rz_err err;
    if (!step_env_in_slurm(w->env))
        return signalled ? CAUSE_USER_SIGNAL : CAUSE_NONE;
    if (slurm_job_query(w->r, w->env->display_id, &now, &err) != RZ_OK)
        now = w->job;
    return step_stop_cause(&now, w->env->restart_count, signalled, w->r->now(w->r),
                           w->signal.found ? w->signal.lead_s : 0);
}

/* Did Slurm, or a signal, stop the job before training began?  The template ignores the stop
 * signals until ryzen-step's handlers are in place, so one that came meanwhile is recovered from
 * Slurm's view: a preemption under way, a cancellation, or a start inside the time-limit warning
 * window (the warning was sent, or will be at once). */
static bool stop_requested(const struct wrapper *w)
{
    const struct slurm_job *j = &w->job;
    bool in_warning = w->signal.found && j->end_epoch > 0.0 &&
                      j->end_epoch - w->r->now(w->r) <= (double)w->signal.lead_s;
    return step_signals_count() > 0 || j->preempt_time[0] != '\0' ||
           strcmp(j->state, "CANCELLED") == 0 || in_warning;
}

/* A stop before the step ran: nothing to checkpoint; requeue cleanly (or not, per Slurm). */
static int stop_before_training(struct wrapper *w, const char *stage)
{
    char msg[512];
    enum step_cause cause = stop_cause(w, true);
    if (cause == CAUSE_NONE)
        cause = CAUSE_USER_SIGNAL;
    rz_fmt(msg, sizeof msg, "a stop (%s) came %s: no training in this attempt",
           step_cause_name(cause), stage);
    step_event(&w->ev, "stop_before_training", msg, NULL, 0);
    return step_conclude(w, CLASS_SIGNAL, cause, RZ_EXIT_REQUEUE, false, "");
}

/* health.json's hosts that failed for a reason of their own (another node may pass). */
static void preflight_hosts(const struct wrapper *w, char *failed, size_t len)
{
    char path[STEP_PATH_MAX + 400];
    static struct health_doc h;
    failed[0] = '\0';
    rz_fmt(path, sizeof path, "%s/health.json", w->run_dir);
    if (health_read(path, &h, NULL) != RZ_OK)
        return;
    for (int i = 0; i < h.n_failed; i++) {
        size_t used = strlen(failed);
        rz_fmt(failed + used, len - used, "%s%s", used ? "," : "", h.failed_hosts[i]);
    }
    health_free(&h);
}

/* The preflight's NO-GO: nodes that failed for a reason of their own are excluded and the job
 * requeued (two such attempts in a row: held); a failure the job's own settings cause is a NO-GO
 * (health) report and exit 70; refused input (exit 64: a data shard missing or changed) is an
 * ended (config) report and exit 64, with no node excluded: another node reads the same files. */
static int preflight_failed(struct wrapper *w, int rc, const char *who)
{
    char failed[512], msg[1400];
    bool input = rc == RZ_EXIT_USAGE;
    preflight_hosts(w, failed, sizeof failed);
    if (input)
        failed[0] = '\0';
    struct step_decision d = {.action = ACT_END, .ended = input ? "config" : "health",
                              .exit_status = input ? RZ_EXIT_USAGE : RZ_EXIT_HEALTH};
    rz_fmt(d.why, sizeof d.why, "the preflight %s (status %d)%s%s; details in health.json",
           input ? "refused the job's input" : "failed", rc, who[0] ? ": " : "", who);
    rz_fmt(msg, sizeof msg, "FAILED with status %d%s%s", rc, failed[0] ? " on " : "", failed);
    struct event_kv kv[] = {{"status", NULL, rc}, {"failed_hosts", failed, 0},
                           {"excluded_nodes", failed, 0}};
    step_event(&w->ev, "preflight_failed", msg, kv, 3);
    step_attempt_end(w, CLASS_HEALTH, CAUSE_NONE, rc, false, who);
    if (failed[0] == '\0' || !step_env_in_slurm(w->env))
        return step_apply(w, &d, rc);
    if (w->hist.no_progress_run >= 1 || w->hist.exclusion_run >= 1) {
        struct step_budget b = step_budget_of(&w->cfg);
        step_stuck(&d, "no_progress", &b);
        rz_fmt(d.why, sizeof d.why, "the preflight failed on %s after an attempt that %s",
               failed, w->hist.exclusion_run >= 1 ? "excluded nodes already"
                                                  : "committed no checkpoint either");
        return step_apply(w, &d, rc);
    }
    step_node_failed(w, failed, "preflight", msg);
    return step_requeue_excluding(w, EVENT_RQ_PREFLIGHT_NODE, failed,
                                  "the preflight failed on some nodes");
}

static bool health_written_since(const struct wrapper *w, double since)
{
    char path[STEP_PATH_MAX + 400];
    struct stat sb;
    rz_fmt(path, sizeof path, "%s/health.json", w->run_dir);
    return stat(path, &sb) == 0 && (double)sb.st_mtime >= since;
}

/* The preflight ran past health.preflight_timeout_s and was ended: a hang in the launch (an
 * MPI start-up that never completes), not an answer.  The status it counts as: the watchdog's. */
static int preflight_overdue(struct wrapper *w, int attempt)
{
    char msg[512];
    double limit = w->cfg.health.preflight_timeout_s;
    rz_fmt(msg, sizeof msg, "the preflight ran past health.preflight_timeout_s = %.0f s (attempt "
           "%d of %d) and was ended: the launch or MPI start-up hung", limit, attempt,
           PREFLIGHT_TRIES);
    struct event_kv kv[] = {{"limit_s", NULL, limit}, {"attempt", NULL, attempt}};
    step_event(&w->ev, "preflight_timeout", msg, kv, 2);
    return RZ_EXIT_WATCHDOG;
}

/* 0 when training may start; else the job's exit status.  A launch that failed before the
 * trainer could answer (no new health.json, not one of its statuses) says nothing about the
 * ranks: it is tried PREFLIGHT_TRIES times, then handled as a failed attempt. */
static int preflight(struct wrapper *w, bool *passed)
{
    const char *extra[] = {"--preflight", NULL};
    char who[1024], msg[512];
    enum step_class cls;
    *passed = false;
    /* The preflight starts MPI before any watchdog exists: the whole step has this limit. */
    const struct step_bound bound = {.timeout_s = w->cfg.health.preflight_timeout_s};
    for (int attempt = 1;; attempt++) {
        double since = w->r->now(w->r) - 1.0;
        int rc = run_step(w, "preflight", extra, false, &bound, &cls, who, sizeof who);
        if (rc == 0) {
            step_event(&w->ev, "preflight", "all checks passed (health.json)", NULL, 0);
            *passed = true;
            return 0;
        }
        if (rc == RZ_EXIT_REQUEUE || step_signals_count() > 0)
            return stop_before_training(w, "during the preflight");
        bool overdue = rc == STEP_WAIT_TIMED_OUT;
        if (overdue)
            rc = preflight_overdue(w, attempt);
        bool answered = health_written_since(w, since);
        if (answered || rc == RZ_EXIT_USAGE || rc == RZ_EXIT_NOCKPT || rc == RZ_EXIT_HEALTH)
            return preflight_failed(w, rc, who);
        if (attempt < PREFLIGHT_TRIES) {
            rz_fmt(msg, sizeof msg, "the launch %s with status %d before the trainer "
                   "answered (attempt %d of %d): trying again in %.0f s",
                   overdue ? "hung and was ended" : "failed", rc, attempt, PREFLIGHT_TRIES,
                   PREFLIGHT_BACKOFF_S * attempt);
            struct event_kv kv[] = {{"status", NULL, rc}, {"attempt", NULL, attempt}};
            step_event(&w->ev, "preflight_retry", msg, kv, 2);
            w->r->sleep(w->r, PREFLIGHT_BACKOFF_S * attempt);
            continue;
        }
        return step_conclude(w, CLASS_CRASH, stop_cause(w, false), rc, false, who);
    }
}

/* "auto", or the rollback checkpoint when this run directory has nothing newer; its step. */
static int64_t choose_resume(struct wrapper *w, char *resume, size_t len)
{
    char own_path[STEP_PATH_MAX + 400], msg[STEP_PATH_MAX * 2];
    struct ckpt_meta from;
    struct rz_err err;
    int64_t own = newest_checkpoint(w, own_path, sizeof own_path);
    rz_fmt(resume, len, "auto");
    const char *rb = w->args->resume_from;
    if (rb != NULL && ckpt_read_meta(rb, &from, &err) == RZ_OK) {
        int64_t step = from.step;
        bool newer = step > own;
        if (newer) {
            rz_fmt(resume, len, "%s", rb);
            rz_fmt(msg, sizeof msg, "rollback: resuming from %s (step %lld, written by %lld "
                   "ranks)", rb, (long long)step, (long long)from.world_size);
            struct event_kv kv[] = {{"checkpoint", rb, 0}, {"step", NULL, (double)step},
                                   {"rollback_of", w->args->rollback_of ? w->args->rollback_of
                                                                        : "", 0}};
            step_event(&w->ev, "rollback_start", msg, kv, 3);
        }
        ckpt_meta_free(&from);
        if (newer)
            return step;
    }
    if (own < 0) {
        step_event(&w->ev, "resume", "no checkpoint yet: starting fresh", NULL, 0);
        return 0;
    }
    rz_fmt(msg, sizeof msg, "resuming from %s (step %lld, the newest that verifies)", own_path,
           (long long)own);
    struct event_kv kv[] = {{"checkpoint", own_path, 0}, {"step", NULL, (double)own}};
    step_event(&w->ev, "resume", msg, kv, 2);
    return own;
}

/* Whether the attempt committed a checkpoint: its name is enough (commits are atomic). */
static int64_t committed(const struct wrapper *w)
{
    char dir[STEP_PATH_MAX + 400];
    checkpoint_dir(w, dir, sizeof dir);
    return ckpt_newest_committed(dir);
}

static int train(struct wrapper *w)
{
    char resume[STEP_PATH_MAX], who[1024];
    int64_t start = choose_resume(w, resume, sizeof resume);
    if (start == w->cfg.training.steps && (w->env->restart_count > 0 || w->hist.attempts > 0)) {
        /* An earlier attempt of this job trained to the last step and was stopped before it
         * could say so (measured: a partitioned node that came back took the new attempt's
         * step down, Slurm reusing the step's id after the requeue; or a crash after the last
         * checkpoint, relaunched in the allocation): the phase is done. */
        char msg[STEP_PATH_MAX + 200];
        rz_fmt(msg, sizeof msg, "training finished in an earlier attempt of this job: %s is "
               "at step %lld, the last, and verifies", resume, (long long)start);
        step_event(&w->ev, "finished", msg, NULL, 0);
        return chain_finish_phase(w);
    }
    if (start >= w->cfg.training.steps) {
        struct step_decision d = {.action = ACT_END, .ended = "nothing_to_train", .exit_status = 2};
        rz_fmt(d.why, sizeof d.why, "the checkpoint to resume from is at step %lld and "
               "training.steps is %lld: nothing left to train (raise training.steps to go on)",
               (long long)start, (long long)w->cfg.training.steps);
        return step_end_with_report(w, &d, 0);
    }
    int64_t before = committed(w);
    step_live_write(w); /* restarts and down time so far, live */
    const char *extra[] = {"--resume", resume, NULL};
    enum step_class cls;
    struct step_start_watch watch;
    step_start_watch_init(w, &watch);
    const struct step_bound bound = {.timeout_s = w->cfg.health.start_timeout_s,
                                     .started = step_ranks_started, .ctx = &watch};
    int rc = run_step(w, "train", extra, true, &bound, &cls, who, sizeof who);
    if (rc == STEP_WAIT_TIMED_OUT) {
        rc = step_start_overdue(w, &watch, who, sizeof who);
        cls = CLASS_HANG;
    }
    bool progress = committed(w) > before;
    bool signalled = step_signals_count() > 0 || cls == CLASS_SIGNAL;
    return step_conclude(w, cls, stop_cause(w, signalled), rc, progress, who);
}

/* ---- the sequence --------------------------------------------------------------------------------------- */

/* The preflight, then the training; again, in this allocation, while the policy relaunches. */
static int attempts(struct wrapper *w)
{
    for (;;) {
        bool passed = false;
        int rc;
        if (stop_requested(w))
            return stop_before_training(w, "before the preflight");
        if (!step_place(w))
            return step_cannot_place(w);
        rc = preflight(w, &passed);
        if (passed)
            rc = step_signals_count() > 0 ? stop_before_training(w, "after the preflight")
                                          : train(w);
        if (rc != STEP_RELAUNCH)
            return rc;
        step_history_read(w->ev.log.path, w->env->job_id, &w->hist); /* the relaunch counted */
    }
}

/* Where the config, the run directory and the programs are; false (after saying why) if not. */
static bool locate(struct wrapper *w)
{
    const struct step_env *e = w->env;
    char tdir[STEP_PATH_MAX];
    struct rz_err err;
    if (step_env_in_slurm(w->env) && strcmp(e->slurm_json, "0") == 0)
        slurm_reader_set(SLURM_READER_TEXT, "RYZEN_SLURM_JSON=0");
    if (step_env_in_slurm(w->env) &&
        slurm_job_query_whole(w->r, e->display_id, &w->job, &err) != RZ_OK)
        fprintf(w->out, "ryzen-step: warning: %s (the job's flags and state are unknown)\n",
                err.msg);
    if (step_env_in_slurm(w->env))
        fprintf(w->out, "ryzen-step: reading Slurm: %s\n", slurm_reader_describe());
    template_dir(w, tdir, sizeof tdir);
    rz_fmt(w->sbatch_dir, sizeof w->sbatch_dir, "%s", tdir[0] ? tdir : RZ_PKGDATADIR "/sbatch");
    if (!step_find_config(w->config, sizeof w->config, w->args->config, e, tdir)) {
        fprintf(w->out, "ryzen-step: config '%s' not found (looked in RYZEN_CONFIG_DIR, %s/../"
                "configs, %s/configs and %s/configs)\n", w->args->config, tdir, e->submit_dir,
                RZ_PKGDATADIR);
        return false;
    }
    if (!cfg_phase_name(w->config, w->phase, sizeof w->phase)) {
        fprintf(w->out, "ryzen-step: cannot name the phase of config '%s'\n", w->config);
        return false;
    }
    w->n_sets = step_select_sets(w->args->sets, w->args->n_sets, w->phase, w->sets);
    if (e->run_root[0] != '\0')
        rz_fmt(w->run_root, sizeof w->run_root, "%s", e->run_root);
    else
        rz_fmt(w->run_root, sizeof w->run_root, "%s/runs", e->submit_dir);
    const char *lineage = w->args->lineage != NULL ? w->args->lineage
                          : e->array_job_id[0] != '\0' ? e->display_id : e->job_id;
    rz_fmt(w->lineage, sizeof w->lineage, "%s", lineage);
    if (!layout_run_dir(w->run_dir, sizeof w->run_dir, w->run_root, w->phase, w->args->rollback_of,
                      e->array_task_id)) {
        fprintf(w->out, "ryzen-step: run directory path too long (root %s)\n", w->run_root);
        return false;
    }
    step_find_program(w->train, sizeof w->train, e->train, e->self_dir, "ryzen-train");
    step_find_program(w->gate, sizeof w->gate, e->gate, e->self_dir, "ryzen-gate");
    return true;
}

static void say_start(struct wrapper *w)
{
    char msg[STEP_PATH_MAX * 3];
    const struct step_env *e = w->env;
    rz_fmt(msg, sizeof msg, "job %s (restart %ld) on %ld node(s) x %ld task(s)%s%s: config %s, "
           "run dir %s, lineage %s%s%s", e->display_id, e->restart_count, e->nnodes,
           e->ntasks, w->job.node_list[0] ? " " : "", w->job.node_list, w->config, w->run_dir,
           w->lineage, w->args->rollback_of ? ", rollback of job " : "",
           w->args->rollback_of ? w->args->rollback_of : "");
    struct event_kv kv[] = {{"nodes", NULL, (double)e->nnodes}, {"ntasks", NULL, (double)e->ntasks},
                           {"config", w->config, 0}, {"run_dir", w->run_dir, 0},
                           {"node_list", w->job.node_list, 0},
                           {"partition", w->job.partition, 0}, {"account", w->job.account, 0}};
    step_event(&w->ev, "start", msg, kv, 7);
}

static int stop_signal_number(const char *name)
{
    struct slurm_signal s;
    return slurm_signal_parse(name, &s) ? s.signo : SIGUSR2;
}

/* Everything up to the preflight; 0 to go on, else the exit status. */
static int prepare(struct wrapper *w)
{
    struct rz_err err;
    char msg[256];
    if (cfg_load_with_overrides(&w->cfg, w->config, w->sets, w->n_sets, &err) != RZ_OK) {
        fprintf(w->out, "ryzen-step: invalid configuration:\n%s\n", err.msg);
        step_event(&w->ev, "config_error", err.msg, NULL, 0);
        step_event(&w->ev, "no_requeue", "bad config: exit 64, not requeued", NULL, 0);
        return RZ_EXIT_USAGE;
    }
    w->stop_signo = stop_signal_number(w->cfg.health.stop_signal);
    int rc = check_inputs(w);
    if (rc == 0)
        rc = claim_run_dir(w);
    if (rc != 0)
        return rc;
    step_history_read(w->ev.log.path, w->env->job_id, &w->hist);
    if (step_env_in_slurm(w->env))
        step_lost_nodes(w);
    if (step_env_in_slurm(w->env))
        slurm_job_signal(w->r, w->env->display_id, &w->job, w->env->sbatch_signal, &w->signal);
    rc = check_signal(w);
    if (rc != 0)
        return rc;
    step_mpi_resolve(w);
    rz_fmt(msg, sizeof msg, "%s: running (attempt %ld)", w->phase, w->hist.attempts + 1);
    chain_comment(w, msg);
    return 0;
}

int step_main(const struct step_args *args, const struct step_env *env,
              const struct step_runner *runner, FILE *out)
{
    static struct wrapper w;
    struct rz_err err;
    memset(&w, 0, sizeof w);
    w.args = args;
    w.env = env;
    w.r = runner;
    w.out = out;
    if (!locate(&w))
        return RZ_EXIT_USAGE;
    if (step_events_open(&w.ev, w.run_dir, env->job_id, w.lineage, env->restart_count, w.phase,
                         out, runner, &err) != RZ_OK) {
        fprintf(out, "ryzen-step: the run directory cannot be written (RYZEN_RUN_ROOT=%s): %s; "
                "not requeued\n", w.run_root, err.msg);
        return RZ_EXIT_USAGE;
    }
    say_start(&w);
    int rc = prepare(&w);
    if (rc == 0)
        rc = attempts(&w);
    if (rc != RZ_EXIT_REQUEUE && w.owner_id[0] != '\0') /* a requeued job re-enters it */
        step_owner_release(w.run_dir, w.owner_id);
    step_events_close(&w.ev);
    return rc;
}
