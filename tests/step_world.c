/* step_world.c: what check_step and check_place share: a scripted command runner (rules for
 * commands, job steps that leave exit records, checkpoints and health.json), `scontrol show job`
 * lines, and a world of three phases p0 -> p1 -> p2 that runs step_main against it. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ckpt/ckpt.h"
#include "core/util.h"
#include "step/step_internal.h"
#include "step_world.h"

char dir[64];


bool has(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

void write_file(const char *path, const char *text)
{
    char parent[1024];
    snprintf(parent, sizeof parent, "%s", path);
    *strrchr(parent, '/') = '\0';
    struct rz_err err;
    ck_assert_int_eq(rz_mkdirs(parent, &err), RZ_OK);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

char *slurp(const char *path)
{
    char *text = NULL;
    return rz_read_file(path, &text, NULL, NULL) == RZ_OK ? text : NULL;
}

/* ---- a scripted runner ------------------------------------------------------------------------- */




static void join(char *out, size_t len, const char *const *argv)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; argv[i] != NULL && used + 1 < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", i ? " " : "", argv[i]);
}

static struct fake *self_of(const struct step_runner *r) { return r->self; }

static void record(struct fake *f, const char *line)
{
    if (f->n_calls < 160)
        snprintf(f->calls[f->n_calls++], sizeof f->calls[0], "%s", line);
}

static int fake_run(const struct step_runner *r, const char *const *argv, char *out, size_t len,
                    struct rz_err *err)
{
    (void)err;
    struct fake *f = self_of(r);
    char line[2048];
    join(line, sizeof line, argv);
    record(f, line);
    if (out != NULL)
        out[0] = '\0';
    for (int i = 0; i < f->n_rules; i++) {
        struct rule *u = &f->rules[i];
        if (u->times < 0 || strncmp(line, u->match, strlen(u->match)) != 0)
            continue;
        if (u->times > 0 && --u->times == 0)
            u->times = -1; /* used up */
        if (out != NULL && u->out != NULL)
            snprintf(out, len, "%s", u->out);
        return u->status;
    }
    return 0;
}

void save_checkpoint(const char *run_dir, int64_t step)
{
    static struct model_tensor table[1] = {{"wte", 2, 2, 0, MODEL_INIT_NORMAL}};
    float params[4] = {1, 2, 3, 4}, m[4] = {0}, v[4] = {0};
    char yaml[] = "x: 1\n";
    struct ckpt_tensors t = {.table = table, .count = 1, .n_floats = 4, .params = params,
                             .adam_m = m, .adam_v = v};
    struct ckpt_meta meta = {.step = step, .samples_seen = step * 4, .global_batch = 4,
                             .world_size = 1, .dims = {.vocab = 16, .d_model = 2, .n_heads = 1,
                                                       .n_layers = 1, .d_ff = 4, .seq_len = 2,
                                                       .batch = 4, .ln_eps = 1e-5f,
                                                       .init_std = 0.02f},
                             .config_yaml = yaml};
    char ckdir[1100];
    struct rz_err err;
    snprintf(ckdir, sizeof ckdir, "%s/checkpoints", run_dir);
    ck_assert_msg(ckpt_save(ckdir, &meta, &t, NULL, 0, &err) == RZ_OK, "%s", err.msg);
}

static enum rz_status fake_start(const struct step_runner *r, const char *const *argv,
                                 const char *const *env, long *handle, struct rz_err *err)
{
    (void)err;
    struct fake *f = self_of(r);
    char line[2048];
    join(line, sizeof line, argv);
    record(f, line);
    ck_assert_int_lt(f->next_step, f->n_steps);
    const struct fake_step *s = &f->steps[f->next_step];
    const char *attempt = NULL;
    char *added = f->launch_env[f->next_step];
    added[0] = '\0';
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
        if (strncmp(env[i], "RYZEN_ATTEMPT_DIR=", 18) == 0)
            attempt = env[i] + 18;
        else
            snprintf(added + strlen(added), sizeof f->launch_env[0] - strlen(added), "%s%s",
                     added[0] ? " " : "", env[i]);
    }
    ck_assert_ptr_nonnull(attempt);
    for (int k = 0; k < s->ranks_recorded; k++) {
        char path[1400], text[1024];
        snprintf(path, sizeof path, "%s/rank-%05d.json", attempt, k);
        snprintf(text, sizeof text, "{\"rank\":%d,\"host\":\"n%d\",\"status\":%d,"
                 "\"end_reason\":\"%s\",\"message\":\"%s\"}\n", k, 1 + k / 4, s->record_status,
                 s->end_reason ? s->end_reason : "", s->message ? s->message : "");
        write_file(path, text);
    }
    if (s->health != NULL) {
        char path[1200];
        snprintf(path, sizeof path, "%s/health.json", f->run_dir);
        write_file(path, s->health);
    }
    if (s->ckpt_step > 0)
        save_checkpoint(f->run_dir, s->ckpt_step);
    for (int k = 0; k < s->up; k++) {
        char path[1400];
        snprintf(path, sizeof path, "%s/health", f->run_dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/health/rank-%05d.hb", f->run_dir, k);
        write_file(path, "step -1 sync -1 pid 1 wall 0\n");
    }
    if (s->signal != 0)
        step_signals_note(s->signal);
    *handle = f->next_step++;
    return RZ_OK;
}

/* Records "wait H forward S timeout T", with " until up" when the limit holds only until the
 * step's ranks are up, and ": up" when they are.  A step that hangs is ended by a limit that
 * still holds, and must not be waited for without one. */
static int fake_wait(const struct step_runner *r, long handle, int forward_signo,
                     const struct step_bound *bound, FILE *log)
{
    (void)log;
    struct fake *f = self_of(r);
    char line[96];
    double limit = bound != NULL ? bound->timeout_s : 0.0;
    bool watched = bound != NULL && bound->started != NULL;
    bool up = watched && bound->started(bound->ctx);
    snprintf(line, sizeof line, "wait %ld forward %d timeout %.0f%s", handle, forward_signo,
             limit, watched ? (up ? " until up: up" : " until up") : "");
    record(f, line);
    if (f->steps[handle].hangs && limit > 0.0 && !up)
        return STEP_WAIT_TIMED_OUT;
    ck_assert_msg(!f->steps[handle].hangs, "step %ld hangs and its wait has no limit", handle);
    return f->steps[handle].status;
}

static void fake_sleep(const struct step_runner *r, double s) { (void)r; (void)s; }
static double fake_now(const struct step_runner *r) { (void)r; return NOW; }

void fake_init(struct fake *f)
{
    memset(f, 0, sizeof *f);
    f->r = (struct step_runner){fake_run, fake_start, fake_wait, fake_sleep, fake_now, f};
    slurm_reader_set(SLURM_READER_UNKNOWN, NULL); /* each world asks which reader afresh */
}

void rule(struct fake *f, const char *match, int status, const char *out, int times)
{
    ck_assert_int_lt(f->n_rules, 48);
    f->rules[f->n_rules++] = (struct rule){match, status, out, times};
}

/* The first call that starts with prefix, or NULL. */
const char *call(const struct fake *f, const char *prefix)
{
    for (int i = 0; i < f->n_calls; i++)
        if (strncmp(f->calls[i], prefix, strlen(prefix)) == 0)
            return f->calls[i];
    return NULL;
}

/* The wrapper ran ryzen-gate, and its command line contains `args`. */
void assert_gate_ran_with(const struct fake *f, const char *args)
{
    const char *g = call(f, "ryzen-gate");
    ck_assert_msg(g != NULL, "ryzen-gate was not run");
    ck_assert_msg(has(g, args), "%s", g);
}

int count_calls(const struct fake *f, const char *prefix)
{
    int n = 0;
    for (int i = 0; i < f->n_calls; i++)
        n += strncmp(f->calls[i], prefix, strlen(prefix)) == 0;
    return n;
}

/* ---- what Slurm says ---------------------------------------------------------------------------- */

/* A `scontrol show job -o` line of job 100 in `state`, ending at `end` (Unix seconds; the clock
 * of the fake runner is 1.8e9), with `extra` fields. */
const char *job_line(const char *state, double end, const char *extra)
{
    static char buf[4][4096];
    static int k;
    char stamp[32];
    time_t t = (time_t)end;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    char *out = buf[k++ % 4];
    snprintf(out, sizeof buf[0],
             "JobId=100 JobName=ryzen-p1 UserId=rzuser(1001) GroupId=rzuser(1001) MCS_label=N/A "
             "Priority=1 Nice=0 Account=ml QOS=normal JobState=%s Reason=None "
             "Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 "
             "RunTime=00:00:05 TimeLimit=00:30:00 TimeMin=N/A SubmitTime=2026-11-22T10:00:00 "
             "StartTime=2026-11-22T10:00:01 EndTime=%s Deadline=N/A "
             "PreemptEligibleTime=2026-11-22T10:00:01 PreemptTime=None Partition=batch "
             "ReqNodeList=(null) ExcNodeList=n4 NodeList=n1 BatchHost=n1 NumNodes=1 NumCPUs=8 "
             "NumTasks=4 CPUs/Task=2 ReqB:S:C:T=0:0:*:* TRES=cpu=8,mem=512M,node=1 "
             "MinCPUsNode=2 MinMemoryNode=512M MinTmpDiskNode=0 Features=avx512 "
             "DelayBoot=00:00:00 Reservation=train Command=/site/share/ryzen-llm/sbatch/p1.sh "
             "--set data.path=/data/x.bin "
             "WorkDir=/home/rzuser/exp Comment=p1: running (attempt 1) "
             "StdOut=/home/rzuser/exp/ryzen-p1-100.out MailUser=rz@example.org "
             "MailType=END,FAIL %s\n", state, stamp, extra);
    return out;
}



/* Configs p0 -> p1 -> p2 in DIR/site/configs, templates in DIR/site/sbatch; job 100 runs p1 with
 * 4 tasks in partition batch of account ml. */
void world_init(struct world *w, const char *state)
{
    char path[512];
    memset(w, 0, sizeof *w);
    fake_init(&w->f);
    snprintf(path, sizeof path, "%s/site/configs/p0.yaml", dir);
    write_file(path, "training:\n  steps: 40\nphase:\n  next: \"p1\"\n");
    p1_restart("");
    snprintf(path, sizeof path, "%s/site/configs/p2.yaml", dir);
    write_file(path, "training:\n  steps: 20\nphase:\n  previous: \"p1\"\n");
    snprintf(w->env.job_id, sizeof w->env.job_id, "100");
    snprintf(w->env.display_id, sizeof w->env.display_id, "100");
    w->env.ntasks = 4;
    w->env.nnodes = 1;
    w->env.cpus_per_task = 2;
    snprintf(w->env.submit_dir, sizeof w->env.submit_dir, "%s/exp,1", dir);
    snprintf(w->env.run_root, sizeof w->env.run_root, "%s/runs,a", dir);
    snprintf(w->env.sbatch_dir, sizeof w->env.sbatch_dir, "%s/site/sbatch", dir);
    snprintf(w->env.srun_mpi, sizeof w->env.srun_mpi, "pmix");
    snprintf(w->env.cpu_bind, sizeof w->env.cpu_bind, "cores");
    snprintf(w->env.train, sizeof w->env.train, "ryzen-train");
    snprintf(w->env.gate, sizeof w->env.gate, "ryzen-gate");
    w->args.config = "p1";
    snprintf(w->env.config_dir, sizeof w->env.config_dir, "%s/site/configs", dir);
    snprintf(w->rd, sizeof w->rd, "%s/runs,a/p1", dir);
    snprintf(w->f.run_dir, sizeof w->f.run_dir, "%s", w->rd);
    rule(&w->f, "scontrol show job -o 100", 0, JOB_LINE(state, ""), 0);
    rule(&w->f, "sacct", 0, "sbatch -A ml p1.sh\n", 0);
    rule(&w->f, "scontrol write batch_script", 0, "#SBATCH --signal=B:USR2@120\n", 0);
    w->out = open_memstream(&w->log, &w->log_len);
}

void step(struct world *w, struct fake_step s)
{
    w->f.steps[w->f.n_steps++] = s;
}

/* Four ranks each leave `status`; with a new checkpoint at ckpt_step when > 0. */
struct fake_step ranks(int srun_status, int status, int64_t ckpt_step)
{
    return (struct fake_step){.status = srun_status, .ranks_recorded = 4, .record_status = status,
                              .ckpt_step = ckpt_step};
}

const struct fake_step preflight_ok = {.status = 0, .ranks_recorded = 4,
                                       .health = "{\"ok\":true}\n"};

int run(struct world *w)
{
    int rc = step_main(&w->args, &w->env, &w->f.r, w->out);
    fflush(w->out);
    return rc;
}

char *events_of(const struct world *w)
{
    char path[600];
    snprintf(path, sizeof path, "%s/events.jsonl", w->rd);
    char *text = slurp(path);
    ck_assert_ptr_nonnull(text);
    return text;
}

void world_free(struct world *w)
{
    fclose(w->out);
    free(w->log);
}

/* Phase p1's config with a restart section added (e.g. "  when_stuck: hold\n").  The scripted
 * world's cases restart a crash through the queue (restart.failures requeue) unless the section
 * says otherwise; relaunch, the default, has cases that set it, and one with no restart section
 * at all (p1_defaults). */
void p1_restart(const char *restart)
{
    char path[512], text[512];
    snprintf(path, sizeof path, "%s/site/configs/p1.yaml", dir);
    snprintf(text, sizeof text, "training:\n  steps: 20\nphase:\n  previous: \"p0\"\n  next: "
             "\"p2\"\nrestart:\n%s%s", strstr(restart, "failures:") ? "" : "  failures: requeue\n",
             restart);
    write_file(path, text);
}

/* Phase p1's config with no restart section: every restart key at its default. */
void p1_defaults(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/site/configs/p1.yaml", dir);
    write_file(path, "training:\n  steps: 20\nphase:\n  previous: \"p0\"\n  next: \"p2\"\n");
}

/* Phase p1's config with these restart and health sections. */
void p1_sections(const char *restart, const char *health)
{
    char path[512], text[512];
    snprintf(path, sizeof path, "%s/site/configs/p1.yaml", dir);
    snprintf(text, sizeof text, "training:\n  steps: 20\nphase:\n  previous: \"p0\"\n  next: "
             "\"p2\"\nrestart:\n%shealth:\n%s", restart, health);
    write_file(path, text);
}

/* Phase p1's config with this health section (its restarts as the world's: requeue). */
void p1_health(const char *health)
{
    p1_sections("  failures: requeue\n", health);
}

void p1_holds_when_stuck(void)
{
    p1_restart("  when_stuck: hold\n");
}


void rule_first(struct fake *f, const char *match, int status, const char *out, int times)
{
    ck_assert_int_lt(f->n_rules, 48);
    memmove(&f->rules[1], &f->rules[0], (size_t)f->n_rules * sizeof f->rules[0]);
    f->rules[0] = (struct rule){match, status, out, times};
    f->n_rules++;
}
