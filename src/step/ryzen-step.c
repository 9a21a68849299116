/* ryzen-step: the job-step wrapper that every sbatch template execs.  The batch shell's process,
 * never an MPI rank.  Sequence (docs/operations.md):
 *   1 config    load + validate the config and --set overrides; error -> exit 64, no requeue
 *   2 preflight srun --mpi=pmix -K1 ryzen-train --preflight; failure -> NO-GO (health) report
 *               stub, exit 70, no requeue
 *   3 resume    say which checkpoint will be used (damaged ones are quarantined on the way)
 *   4 train     srun --mpi=pmix -K1 ryzen-train ... in the background; USR2/TERM to this process
 *               are forwarded to the step as USR2 (checkpoint and exit 75)
 *   5 decide    0 -> done; 75 -> scontrol requeue; crash or 76 -> requeue while
 *               restart.max_restarts lasts; 64/65/70 -> no requeue
 * Every decision is one line in RUN_DIR/events.jsonl and one readable line in the job output.
 * Commands are argv arrays: no config value passes through a shell. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "config/config.h"
#include "core/hooks.h"
#include "core/json.h"
#include "core/util.h"
#include "step/step.h"
#include "step/wrapper.h"


static void usage(FILE *f)
{
    fputs("usage: ryzen-step --config FILE [--set [PHASE:]key=value]...\n"
          "The job-step wrapper run by the sbatch templates (sbatch/phase*.sh): validates the\n"
          "config, runs the preflight on every rank, launches ryzen-train with srun, forwards\n"
          "SIGUSR2/SIGTERM as SIGUSR2, and requeues the job on a signal checkpoint (75) or a\n"
          "failure while restart.max_restarts lasts.  At the end it runs ryzen-gate and, by\n"
          "the verdict and the config's phase section, submits the next phase (GO) or rolls back\n"
          "to the previous one from the last good checkpoint (NO-GO).  Overrides are passed on\n"
          "along the chain; PHASE:key=value applies only to that phase.\n"
          "Events: RUN_DIR/events.jsonl.\n"
          "Environment: RYZEN_RUN_ROOT (default $SLURM_SUBMIT_DIR/runs), RYZEN_TRAIN (the\n"
          "trainer; default: next to ryzen-step, else PATH), RYZEN_GATE (likewise), RYZEN_SRUN_MPI\n"
          "(srun --mpi plugin, default pmix), RYZEN_RESUME_FROM (set by a rollback: the checkpoint\n"
          "to resume from when this run directory has no newer one).\n", f);
}

static int parse_args(struct wrapper *w, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return -1;
        if (i + 1 < argc && strcmp(argv[i], "--config") == 0) {
            w->config = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--set") == 0 &&
                   w->n_raw < WRAPPER_MAX_SETS) {
            w->raw_sets[w->n_raw++] = argv[++i];
        } else {
            fprintf(stderr, "ryzen-step: unexpected argument '%s' (template arguments must be "
                    "--set key=value overrides)\n", argv[i]);
            return RZ_EXIT_USAGE;
        }
    }
    if (w->config == NULL) {
        fprintf(stderr, "ryzen-step: --config FILE is required\n");
        return RZ_EXIT_USAGE;
    }
    return 0;
}

/* Keep the overrides that apply to this phase: unqualified ones, and "PHASE:key=value" ones
 * whose PHASE is this one (prefix removed).  A ':' after the '=' belongs to the value. */
static void select_sets(struct wrapper *w)
{
    for (int i = 0; i < w->n_raw; i++) {
        const char *s = w->raw_sets[i], *colon = strchr(s, ':'), *eq = strchr(s, '=');
        if (colon == NULL || (eq != NULL && eq < colon))
            w->sets[w->n_sets++] = s;
        else if ((size_t)(colon - s) == strlen(w->phase) &&
                 strncmp(s, w->phase, strlen(w->phase)) == 0)
            w->sets[w->n_sets++] = colon + 1;
    }
}

void wrapper_find_program(char *out, size_t len, const char *var, const char *name)
{
    const char *env = getenv(var);
    if (env != NULL && env[0] != '\0') {
        snprintf(out, len, "%s", env);
        return;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            if (snprintf(out, len, "%s/%s", self, name) < (int)len && access(out, X_OK) == 0)
                return;
        }
    }
    snprintf(out, len, "%s", name);
}

enum rz_status wrapper_add_sets(const struct wrapper *w, struct step_argv *v, struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    for (int i = 0; st == RZ_OK && i < w->n_sets; i++) {
        st = step_argv_add(v, "--set", err);
        if (st == RZ_OK)
            st = step_argv_add(v, w->sets[i], err);
    }
    return st;
}

/* srun --mpi=X -K1 TRAINER --config F [--set k=v]... --run-dir D EXTRA */
static enum rz_status trainer_argv(const struct wrapper *c, struct step_argv *v, const char *extra1,
                                   const char *extra2, struct rz_err *err)
{
    char mpi[96];
    snprintf(mpi, sizeof mpi, "--mpi=%s", c->mpi);
    const char *head[] = {"srun", mpi, "--kill-on-bad-exit=1", c->train, "--config", c->config};
    enum rz_status st = RZ_OK;
    for (size_t i = 0; st == RZ_OK && i < RZ_ARRAY_LEN(head); i++)
        st = step_argv_add(v, head[i], err);
    if (st == RZ_OK)
        st = wrapper_add_sets(c, v, err);
    if (st == RZ_OK) st = step_argv_add(v, "--run-dir", err);
    if (st == RZ_OK) st = step_argv_add(v, c->run_dir, err);
    if (st == RZ_OK && extra1 != NULL) st = step_argv_add(v, extra1, err);
    if (st == RZ_OK && extra2 != NULL) st = step_argv_add(v, extra2, err);
    return st;
}

/* RUN_DIR/health.json, which ryzen-train --preflight writes (rank 0). */
static void health_path(const struct wrapper *c, char *out, size_t len)
{
    snprintf(out, len, "%s/health.json", c->run_dir);
}

/* NO-GO (health) report stub: the preflight failed, so there is nothing to measure. */
static void write_health_report(const struct wrapper *c, int status)
{
    char dir[2300], path[2400], health[2300];
    snprintf(dir, sizeof dir, "%s/reports/%s", c->run_dir, c->env.job_id);
    health_path(c, health, sizeof health);
    struct rz_err err;
    char *text = NULL;
    if (rz_mkdirs(dir, &err) != RZ_OK)
        return;
    if (rz_read_file(health, &text, NULL, &err) != RZ_OK)
        text = NULL;
    snprintf(path, sizeof path, "%s/report.json", dir);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        struct rz_json j;
        rz_json_init(&j, f);
        rz_json_object_begin(&j);
        rz_json_kv_string(&j, "verdict", "NO-GO");
        rz_json_kv_string(&j, "reason", "health");
        rz_json_kv_string(&j, "phase", c->phase);
        rz_json_kv_string(&j, "job", c->env.job_id);
        rz_json_kv_int(&j, "preflight_status", status);
        rz_json_key(&j, "health");
        if (text != NULL && text[0] == '{')
            rz_json_raw(&j, text);
        else
            rz_json_null(&j);
        rz_json_object_end(&j);
        fputc('\n', f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/report.md", dir);
    f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "# %s: NO-GO (health)\n\nThe preflight of job %s failed with status %d, so "
                "nothing was trained or measured.\n\nHealth checks (`%s`):\n\n```json\n%s```\n",
                c->phase, c->env.job_id, status, health, text != NULL ? text : "(none written)\n");
        fclose(f);
    }
    free(text);
}

static void on_quarantine(void *user, const char *path, const char *reason)
{
    struct wrapper *c = user;
    char msg[4600];
    snprintf(msg, sizeof msg, "damaged checkpoint %s skipped and quarantined: %s", path, reason);
    struct step_kv kv[] = {{"checkpoint", path, 0}, {"reason", reason, 0}};
    step_event(c->ev, "checkpoint_quarantined", msg, kv, 2);
}

/* Which checkpoint the trainer will use, said once here: "auto" (the newest valid one in this
 * run directory; damaged ones are quarantined on the way), or the rollback checkpoint named by
 * RYZEN_RESUME_FROM when this run directory has nothing newer. */
static void choose_resume(struct wrapper *c, char *resume, size_t len)
{
    char dir[2100], path[4096], msg[8400];
    struct rz_err err;
    struct ckpt_meta meta, from;
    int64_t own = -1;
    snprintf(resume, len, "auto");
    snprintf(dir, sizeof dir, "%s/checkpoints", c->run_dir);
    if (ckpt_find_latest(dir, path, sizeof path, on_quarantine, c, &err) != RZ_OK) {
        step_event(c->ev, "resume", err.msg, NULL, 0);
        return;
    }
    if (path[0] != '\0' && ckpt_read_meta(path, &meta, &err) == RZ_OK) {
        own = meta.step;
        ckpt_meta_free(&meta);
    }
    const char *rollback = getenv("RYZEN_RESUME_FROM");
    if (rollback != NULL && rollback[0] != '\0' && ckpt_read_meta(rollback, &from, &err) == RZ_OK) {
        bool newer = from.step > own;
        if (newer) {
            snprintf(resume, len, "%s", rollback);
            snprintf(msg, sizeof msg, "rollback: resuming from %s (step %lld, written by %lld "
                     "ranks)", rollback, (long long)from.step, (long long)from.world_size);
            const char *of = getenv("RYZEN_ROLLBACK_OF");
            struct step_kv kv[] = {{"checkpoint", rollback, 0}, {"step", NULL, (double)from.step},
                                   {"rollback_of", of != NULL ? of : "", 0}};
            step_event(c->ev, "rollback_start", msg, kv, 3);
        }
        ckpt_meta_free(&from);
        if (newer)
            return;
    }
    if (own < 0) {
        step_event(c->ev, "resume", "no checkpoint yet: starting fresh", NULL, 0);
        return;
    }
    snprintf(msg, sizeof msg, "resuming from %s (step %lld, the newest that verifies)", path,
             (long long)own);
    struct step_kv kv[] = {{"checkpoint", path, 0}, {"step", NULL, (double)own}};
    step_event(c->ev, "resume", msg, kv, 2);
}

/* Whether RUN_DIR/health.json was modified at `since` (time(2) seconds) or later. */
static bool health_written_since(const struct wrapper *c, time_t since)
{
    char path[2300];
    struct stat sb;
    health_path(c, path, sizeof path);
    return stat(path, &sb) == 0 && sb.st_mtime >= since;
}

static int decide(struct wrapper *c, int rc);

/* Runs the preflight; *passed tells whether training may start.  Otherwise the return value is
 * the exit status: a NO-GO (health) verdict, or, when srun could not launch it even after
 * retries, what decide() made of that status (a requeue counted as a failure). */
static int preflight(struct wrapper *c, bool *passed)
{
    struct step_argv v = {0};
    struct rz_err err;
    char cmd[8192], msg[8400];
    *passed = false;
    if (trainer_argv(c, &v, "--preflight", NULL, &err) != RZ_OK) {
        step_event(c->ev, "preflight", err.msg, NULL, 0);
        return RZ_EXIT_HEALTH;
    }
    step_argv_format(&v, cmd, sizeof cmd);
    snprintf(msg, sizeof msg, "checking every rank: %s", cmd);
    step_event(c->ev, "preflight_start", msg, NULL, 0);
    int rc = 0;
    for (int attempt = 1;; attempt++) {
        /* One second of slack for coarse file times; attempts are >= 5 s apart. */
        time_t since = time(NULL) - 1;
        rc = step_run(&v, &err);
        struct step_kv kv[] = {{"status", NULL, rc}, {"attempt", NULL, attempt}};
        switch (step_preflight_classify(rc, health_written_since(c, since), attempt)) {
        case STEP_PREFLIGHT_PASSED:
            step_argv_free(&v);
            step_event(c->ev, "preflight", "all checks passed (health.json)", kv, 2);
            *passed = true;
            return 0;
        case STEP_PREFLIGHT_NO_GO:
            step_argv_free(&v);
            snprintf(msg, sizeof msg, "FAILED with status %d: NO-GO (health) report in "
                     "reports/%s/; not requeued", rc, c->env.job_id);
            step_event(c->ev, "preflight_failed", msg, kv, 2);
            write_health_report(c, rc);
            return RZ_EXIT_HEALTH;
        case STEP_PREFLIGHT_RETRY:
            snprintf(msg, sizeof msg, "the launch failed with status %d before the trainer "
                     "answered (attempt %d of %d): trying again in %d s", rc, attempt,
                     STEP_PREFLIGHT_TRIES, STEP_PREFLIGHT_BACKOFF_S * attempt);
            step_event(c->ev, "preflight_retry", msg, kv, 2);
            sleep((unsigned)(STEP_PREFLIGHT_BACKOFF_S * attempt));
            continue;
        case STEP_PREFLIGHT_DECIDE:
            step_argv_free(&v);
            snprintf(msg, sizeof msg, "no answer from the trainer (status %d, attempt %d): "
                     "handled like a failed step", rc, attempt);
            step_event(c->ev, "preflight_launch_failed", msg, kv, 2);
            return decide(c, rc);
        }
    }
}

static int requeue(struct wrapper *c, const char *reason, int status, long failures)
{
    char msg[512];
    if (strcmp(c->env.job_id, "local") == 0) {
        step_event(c->ev, "requeue_skipped", "not a Slurm job: nothing to requeue", NULL, 0);
        return status;
    }
    struct step_argv v = {0};
    struct rz_err err;
    const char *args[] = {"scontrol", "requeue", c->env.job_id};
    for (size_t i = 0; i < RZ_ARRAY_LEN(args); i++)
        if (step_argv_add(&v, args[i], &err) != RZ_OK)
            break;
    bool failure = strcmp(reason, "failure") == 0;
    if (failure)
        snprintf(msg, sizeof msg, "step exited %d: scontrol requeue %s (failure requeue %ld of "
                 "%lld)", status, c->env.job_id, failures + 1,
                 (long long)c->cfg.restart.max_restarts);
    else
        snprintf(msg, sizeof msg, "step exited %d: scontrol requeue %s (checkpointed on a "
                 "signal)", status, c->env.job_id);
    struct step_kv kv[] = {{"reason", reason, 0}, {"status", NULL, status},
                           {"failures", NULL, (double)(failures + (failure ? 1 : 0))}};
    step_event(c->ev, "requeue", msg, kv, 3);
    int rc = step_run(&v, &err);
    step_argv_free(&v);
    if (rc != 0) {
        snprintf(msg, sizeof msg, "scontrol requeue %s failed (status %d); the job ends here "
                 "with status %d", c->env.job_id, rc, status);
        step_event(c->ev, "requeue_failed", msg, NULL, 0);
        return status;
    }
    return RZ_EXIT_REQUEUE;
}

static int train(struct wrapper *c, const char *resume)
{
    struct step_argv v = {0};
    struct rz_err err;
    char cmd[8192], msg[8400];
    if (trainer_argv(c, &v, "--resume", resume, &err) != RZ_OK) {
        step_event(c->ev, "train", err.msg, NULL, 0);
        return RZ_EXIT_HEALTH;
    }
    step_argv_format(&v, cmd, sizeof cmd);
    snprintf(msg, sizeof msg, "launching: %s", cmd);
    step_event(c->ev, "train_start", msg, NULL, 0);
    pid_t pid;
    if (step_spawn(&v, &pid, &err) != RZ_OK) {
        step_argv_free(&v);
        step_event(c->ev, "train_failed", err.msg, NULL, 0);
        return RZ_EXIT_HEALTH;
    }
    step_argv_free(&v);
    /* Only now: a signal before the step runs keeps its default action. */
    if (step_forward_signals(&err) != RZ_OK)
        step_event(c->ev, "signal", err.msg, NULL, 0);
    int rc = step_wait(pid, stdout);
    struct step_kv kv[] = {{"status", NULL, rc}, {"signals", NULL, step_signals_seen()}};
    snprintf(msg, sizeof msg, "job step exited with status %d", rc);
    step_event(c->ev, "train_exit", msg, kv, 2);
    return rc;
}

static int decide(struct wrapper *c, int rc)
{
    char msg[512];
    long failures = step_count_failures(step_events_path(c->ev), c->env.job_id);
    enum step_action act = step_decide(rc, failures, c->cfg.restart.max_restarts);
    struct step_kv kv[] = {{"status", NULL, rc}};
    switch (act) {
    case STEP_DONE:
        step_event(c->ev, "finished", "training finished", kv, 1);
        return chain_finish_phase(c);
    case STEP_REQUEUE_SIGNAL:
        return requeue(c, "signal", rc, failures);
    case STEP_REQUEUE_FAILURE:
        return requeue(c, "failure", rc, failures);
    case STEP_GIVE_UP:
        snprintf(msg, sizeof msg, "step failed with status %d and the restart budget is spent "
                 "(%ld of %lld failure requeues used): giving up", rc, failures,
                 (long long)c->cfg.restart.max_restarts);
        step_event(c->ev, "give_up", msg, kv, 1);
        return rc > 0 && rc < 128 && rc != RZ_EXIT_REQUEUE ? rc : 1;
    case STEP_NO_REQUEUE:
        snprintf(msg, sizeof msg, "step exited %d (%s): requeueing cannot help; not requeued",
                 rc, rc == RZ_EXIT_USAGE ? "bad config or usage" : rc == RZ_EXIT_NOCKPT ?
                 "no valid checkpoint" : "health check failed");
        step_event(c->ev, "no_requeue", msg, kv, 1);
        return rc;
    }
    return 1;
}

int main(int argc, char **argv)
{
    rz_hooks_load();
    static struct wrapper c;
    static struct rz_err err;
    int rc = parse_args(&c, argc, argv);
    if (rc != 0) {
        usage(rc < 0 ? stdout : stderr);
        return rc < 0 ? 0 : rc;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    step_env_read(&c.env);
    wrapper_find_program(c.train, sizeof c.train, "RYZEN_TRAIN", "ryzen-train");
    wrapper_find_program(c.gate, sizeof c.gate, "RYZEN_GATE", "ryzen-gate");
    const char *mpi = getenv("RYZEN_SRUN_MPI");
    snprintf(c.mpi, sizeof c.mpi, "%s", mpi != NULL && mpi[0] ? mpi : "pmix");
    if (!step_run_dir(c.run_dir, sizeof c.run_dir, &c.env, c.config, c.phase, sizeof c.phase)) {
        fprintf(stderr, "ryzen-step: run directory path too long\n");
        return RZ_EXIT_USAGE;
    }
    select_sets(&c);
    if (step_events_open(&c.ev, c.run_dir, &c.env, c.phase, stdout, &err) != RZ_OK) {
        fprintf(stderr, "ryzen-step: %s\n", err.msg);
        return RZ_EXIT_IO;
    }
    char msg[4600];
    snprintf(msg, sizeof msg, "job %s (restart %ld) on %ld node(s) x %ld task(s): config %s, "
             "run dir %s", c.env.job_id, c.env.restart_count, c.env.nnodes, c.env.ntasks,
             c.config, c.run_dir);
    struct step_kv kv[] = {{"nodes", NULL, (double)c.env.nnodes},
                           {"ntasks", NULL, (double)c.env.ntasks}, {"config", c.config, 0},
                           {"run_dir", c.run_dir, 0}};
    step_event(c.ev, "start", msg, kv, 4);
    if (cfg_load_with_overrides(&c.cfg, c.config, c.sets, c.n_sets, &err) != RZ_OK) {
        fprintf(stderr, "ryzen-step: invalid configuration:\n%s\n", err.msg);
        step_event(c.ev, "config_error", err.msg, NULL, 0);
        step_event(c.ev, "no_requeue", "bad config: exit 64, not requeued", NULL, 0);
        step_events_close(c.ev);
        return RZ_EXIT_USAGE;
    }
    bool passed;
    rc = preflight(&c, &passed);
    if (passed) {
        char resume[4096];
        choose_resume(&c, resume, sizeof resume);
        rc = decide(&c, train(&c, resume));
    }
    step_events_close(c.ev);
    return rc;
}
