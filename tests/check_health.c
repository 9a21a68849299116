/* check_health: stop-signal flags and parsing, heartbeat files, and the watchdog: it fires with
 * exit 76 naming the rank that is behind, and stays quiet for healthy or paused steps. */
#include "config.h"

#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "health/watchdog.h"
#include "testutil.h"

static char dir[64];

static void setup(void)
{
    rz_test_tmpdir(dir, sizeof dir, "health");
}

static void teardown(void)
{
    rz_test_rmtree(dir);
}

START_TEST(signal_names_parse)
{
    int s = 0;
    ck_assert_int_eq(health_signal_parse("USR2", &s, NULL), RZ_OK);
    ck_assert_int_eq(s, SIGUSR2);
    ck_assert_int_eq(health_signal_parse("sigusr1", &s, NULL), RZ_OK);
    ck_assert_int_eq(s, SIGUSR1);
    ck_assert_int_eq(health_signal_parse("TERM", &s, NULL), RZ_OK);
    ck_assert_int_eq(s, SIGTERM);
}
END_TEST

START_TEST(signal_only_sets_the_flag)
{
    ck_assert_int_eq(health_signals_install(SIGUSR2, NULL), RZ_OK);
    ck_assert_int_eq(health_stop_signal(), 0);
    raise(SIGUSR2); /* would kill the process without the handler */
    ck_assert_int_eq(health_stop_signal(), SIGUSR2);
    raise(SIGTERM); /* the first signal is kept */
    ck_assert_int_eq(health_stop_signal(), SIGUSR2);
}
END_TEST

START_TEST(sigterm_sets_the_flag_too)
{
    ck_assert_int_eq(health_signals_install(SIGUSR1, NULL), RZ_OK);
    raise(SIGTERM);
    ck_assert_int_eq(health_stop_signal(), SIGTERM);
}
END_TEST

/* Rank `rank`'s heartbeat file holds `line`. */
static void write_hb_line(int rank, const char *line)
{
    char path[256];
    snprintf(path, sizeof path, "%s/health/rank-%05d.hb", dir, rank);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(line, f);
    fclose(f);
}

/* Rank `rank` at `step` (and at its sync), pid `pid`, last rewritten `age` s ago (negative: in
 * the future, fresh for the whole test). */
static void write_hb_aged(int rank, int step, long pid, long age)
{
    char line[96];
    snprintf(line, sizeof line, "step %d sync %d pid %ld wall %ld\n", step, step, pid,
             (long)time(NULL) - age);
    write_hb_line(rank, line);
}

static void write_hb(int rank, int step, int sync)
{
    char line[96];
    snprintf(line, sizeof line, "step %d sync %d wall 0\n", step, sync);
    write_hb_line(rank, line);
}

/* Where the child hangs: in step 5's allreduce, in the checkpoint commit after it, in the
 * other work after it (a validation pass's or the agreement's collective), or at the start,
 * before any step (loading the checkpoint, the first agreements). */
enum hang_at { HANG_IN_STEP, HANG_IN_COMMIT, HANG_AFTER_STEP, HANG_AT_START };

/* Forks a child that starts the watchdog as rank 0 of 3, lets `peers` write the other ranks'
 * heartbeats, begins step 5 (unless it hangs at the start), arrives at its sync and hangs where
 * `at` says.  Asserts that the
 * watchdog ended the child with 76; returns the child's stderr (the caller frees it).  No
 * wall-clock bound: a watchdog that never fires leaves the child to end itself with 97 after
 * 30 s (30 times the longest limit here), and a slow or loaded machine only makes it fire
 * later. */
static char *hung_rank0_stderr(void (*peers)(void), enum hang_at at)
{
    char log[128];
    snprintf(log, sizeof log, "%s/stderr.txt", dir);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (freopen(log, "w", stderr) == NULL)
            _exit(99);
        struct health_watchdog *w;
        struct health_watchdog_opts o = {.run_dir = dir, .rank = 0, .world = 3, .floor_s = 0.5,
                                         .factor = 3, .checkpoint_s = 1.0};
        if (health_watchdog_start(&w, &o, NULL) != RZ_OK)
            _exit(98);
        peers();
        if (at == HANG_AT_START) {
            sleep(30); /* "stuck in the first agreement, waiting for a rank loading a checkpoint" */
            _exit(97);
        }
        health_step_begin(w, 5);
        health_sync_arrived(w, 5);
        if (at != HANG_IN_STEP)
            health_step_end(w, 5, 0.01);
        if (at == HANG_IN_COMMIT)
            health_watchdog_pause(w, 1);
        sleep(30);      /* "stuck in the allreduce", in the commit's agreement, or after both */
        _exit(97);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 76);
    char *text = NULL;
    ck_assert_int_eq(rz_read_file(log, &text, NULL, NULL), RZ_OK);
    return text;
}

/* Rank 1 never arrived at step 5's sync; rank 2 did. */
static void peers_one_behind(void)
{
    write_hb(1, 4, 4);
    write_hb(2, 4, 5);
}

START_TEST(watchdog_fires_and_names_the_rank_behind)
{
    char *text = hung_rank0_stderr(peers_one_behind, HANG_IN_STEP);
    ck_assert_msg(strstr(text, "held up by: rank 1 (last at the sync of step 4)") != NULL, "%s",
                  text);
    ck_assert_ptr_null(strstr(text, "rank 2 (last"));
    ck_assert_ptr_nonnull(strstr(text, "step 5 has run"));
    free(text);
    char path[256];
    snprintf(path, sizeof path, "%s/health/rank-00000.hb", dir);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_msg(strncmp(text, "step 5 sync 5 ", 14) == 0, "%s", text);
    free(text);
}
END_TEST

/* The message names rank 2 (pid 4242) as not responding for N s, N at least the 10 s its
 * heartbeat had aged when written (more when the watchdog fired later: never a fixed figure). */
static void assert_rank2_not_responding(const char *text)
{
    static const char needle[] = "held up by: rank 2 (pid 4242) not responding for ";
    const char *at = strstr(text, needle);
    long secs = -1;
    ck_assert_msg(at != NULL, "%s", text);
    ck_assert_int_eq(sscanf(at + sizeof needle - 1, "%ld s", &secs), 1);
    ck_assert_msg(secs >= 10, "not responding for %ld s, expected >= 10: %s", secs, text);
}

/* Both peers arrived at the sync, but rank 2's heartbeat was last rewritten 10 s ago (its whole
 * process is stopped: SIGSTOP inside the allreduce); rank 1's is fresh. */
static void peers_one_stopped(void)
{
    write_hb_aged(2, 5, 4242, 10);
    write_hb_aged(1, 5, 4241, -60);
}

/* A rank whose heartbeat stopped being rewritten is named as not responding, although it had
 * arrived at the sync. */
START_TEST(watchdog_names_a_rank_that_stopped_responding)
{
    char *text = hung_rank0_stderr(peers_one_stopped, HANG_IN_STEP);
    assert_rank2_not_responding(text);
    ck_assert_ptr_null(strstr(text, "rank 1"));
    free(text);
}
END_TEST

/* Rank 0 hangs out of a step, `at` the start, the commit or after a step, while rank 2 has
 * stopped (`peers`): the out-of-step limit (checkpoint_s, 1 s here) ends rank 0 with `what` in
 * its message, naming rank 2. */
static void assert_between_steps_limit(void (*peers)(void), enum hang_at at, const char *what)
{
    char *text = hung_rank0_stderr(peers, at);
    ck_assert_msg(strstr(text, what) != NULL, "%s", text);
    ck_assert_msg(strstr(text, "over the limit 1 s (health.watchdog_checkpoint_s)") != NULL, "%s",
                  text);
    assert_rank2_not_responding(text);
    free(text);
}

/* A rank that stops during a checkpoint commit leaves the others in the commit's agreement,
 * between steps: the commit's own limit ends them, naming the rank.  Before that limit existed
 * the commit was unwatched, and the job hung to its time limit (seen in tests/slurm.sh when its
 * SIGSTOP landed during a checkpoint). */
START_TEST(watchdog_fires_in_a_checkpoint_commit_that_hangs)
{
    assert_between_steps_limit(peers_one_stopped, HANG_IN_COMMIT,
                               "the checkpoint commit after step 5 has run");
}
END_TEST

/* The same limit covers the rest of the time between steps: a rank that stops in a validation
 * pass (or the per-step agreement) leaves the others in its collective.  Before, nothing watched
 * that time. */
START_TEST(watchdog_fires_in_the_work_after_a_step_that_hangs)
{
    assert_between_steps_limit(peers_one_stopped, HANG_AFTER_STEP,
                               "the work after step 5 (its metrics, the ranks' agreement, a "
                               "validation pass) has run");
}
END_TEST

/* Before step 1 every heartbeat says step -1; rank 2's stopped being rewritten 10 s ago. */
static void peers_one_stopped_at_start(void)
{
    write_hb_aged(2, -1, 4242, 10);
    write_hb_aged(1, -1, 4241, -60);
}

/* A rank that stops at the start (loading the checkpoint on a stalled file system) leaves the
 * others in the first agreement: the same limit ends them, naming it.  Before, the watchdog
 * watched nothing until step 1 began, and such a job waited for its time limit. */
START_TEST(watchdog_fires_at_a_start_that_hangs)
{
    assert_between_steps_limit(peers_one_stopped_at_start, HANG_AT_START,
                               "the start (choosing and loading the checkpoint, the ranks' first "
                               "agreements, the matmul peak, before step 1) has run");
}
END_TEST

/* At the start, with every rank responding, the diagnosis says no step's sync was reached
 * rather than naming step -1. */
static void peers_responding_at_start(void)
{
    write_hb_aged(1, -1, 4241, -60);
    write_hb_aged(2, -1, 4242, -60);
}

START_TEST(watchdog_at_the_start_names_no_step)
{
    char *text = hung_rank0_stderr(peers_responding_at_start, HANG_AT_START);
    ck_assert_msg(strstr(text, "held up by: none (every rank is responding; none has reached a "
                               "step's sync)") != NULL, "%s", text);
    ck_assert_ptr_null(strstr(text, "step -1"));
    free(text);
}
END_TEST

/* The quiet cases run on a clock the test moves by hand (opts.clock) and ask the watchdog
 * (health_watchdog_poll) instead of a thread racing real sleeps: a step "takes" exactly what the
 * test says, so a loaded or slow machine cannot make a healthy step look hung. */
static double fake_clock(void *ctx)
{
    return *(const double *)ctx;
}

static struct health_watchdog *manual_watchdog(double *clock, double floor_s, double factor,
                                               double checkpoint_s)
{
    struct health_watchdog *w = NULL;
    struct health_watchdog_opts o = {.run_dir = dir, .rank = 0, .world = 1, .floor_s = floor_s,
                                     .factor = factor, .checkpoint_s = checkpoint_s,
                                     .clock = fake_clock, .clock_ctx = clock, .no_thread = true};
    ck_assert_int_eq(health_watchdog_start(&w, &o, NULL), RZ_OK);
    return w;
}

static void assert_quiet(struct health_watchdog *w, const char *when)
{
    char msg[1600] = "";
    ck_assert_msg(!health_watchdog_poll(w, msg, sizeof msg), "%s: %s", when, msg);
}

static void assert_fires(struct health_watchdog *w, const char *needle)
{
    char msg[1600] = "";
    ck_assert_msg(health_watchdog_poll(w, msg, sizeof msg), "quiet, expected '%s'", needle);
    ck_assert_msg(strstr(msg, needle) != NULL, "'%s' lacks '%s'", msg, needle);
}

START_TEST(watchdog_quiet_for_healthy_and_paused_steps)
{
    double now = 1000.0;
    struct health_watchdog *w = manual_watchdog(&now, 0.4, 2, 5);
    for (int s = 1; s <= 5; s++) {
        health_step_begin(w, s);
        now += 0.05;
        health_sync_arrived(w, s);
        assert_quiet(w, "a 0.05 s step");
        health_step_end(w, s, 0.05);
    }
    /* a checkpoint commit longer than a step's limit (0.4 s), but within its own (5 s), does
     * not count */
    health_watchdog_pause(w, 1);
    now += 4.9;
    assert_quiet(w, "a 4.9 s commit");
    health_watchdog_pause(w, 0);
    /* nor does idle time between steps, up to the same limit */
    now += 4.9;
    assert_quiet(w, "4.9 s between steps");
    char path[256], *text = NULL;
    snprintf(path, sizeof path, "%s/health/rank-00000.hb", dir);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_msg(strncmp(text, "step 5 sync 5 ", 14) == 0, "%s", text);
    free(text);
    /* and each limit, once passed, fires: the same watchdog is not simply deaf */
    now += 0.2;
    assert_fires(w, "the work after step 5 (its metrics, the ranks' agreement, a validation "
                    "pass) has run 5.1 s, over the limit 5 s");
    health_step_begin(w, 6);
    now += 0.39;
    assert_quiet(w, "0.39 s into step 6");
    now += 0.02;
    assert_fires(w, "step 6 has run 0.4 s, over the limit 0.4 s = max(2 x median step 0.050 s");
    health_watchdog_pause(w, 1);
    now += 5.1;
    assert_fires(w, "the checkpoint commit after step 6 has run 5.1 s, over the limit 5 s");
    health_watchdog_stop(w);
}
END_TEST

/* Work between steps that keeps moving (validation chunks, each marked) may run past the limit
 * in all: the limit counts from the last mark. */
START_TEST(watchdog_quiet_while_the_work_after_a_step_moves)
{
    double now = 1000.0;
    struct health_watchdog *w = manual_watchdog(&now, 0.4, 2, 0.6);
    health_step_begin(w, 1);
    now += 0.01;
    health_step_end(w, 1, 0.01);
    for (int chunk = 0; chunk < 8; chunk++) { /* 2 s in all, over three times the limit */
        now += 0.25;
        assert_quiet(w, "a chunk of 0.25 s");
        health_progress(w);
    }
    /* work that stops moving is caught, counted from the last mark */
    now += 0.59;
    assert_quiet(w, "0.59 s after the last mark");
    now += 0.02;
    assert_fires(w, "the work after step 1 (its metrics, the ranks' agreement, a validation "
                    "pass) has run 0.6 s, over the limit 0.6 s");
    health_watchdog_stop(w);
}
END_TEST

START_TEST(watchdog_needs_a_writable_run_dir)
{
    struct health_watchdog *w = NULL;
    struct health_watchdog_opts o = {.run_dir = "/proc/self/rz-no", .rank = 0, .world = 1,
                                     .floor_s = 1, .factor = 2};
    struct rz_err e;
    ck_assert_int_eq(health_watchdog_start(&w, &o, &e), RZ_EIO);
    ck_assert_ptr_null(w);
    ck_assert_ptr_nonnull(strstr(e.msg, "/proc/self/rz-no"));
}
END_TEST

START_TEST(unknown_signal_is_a_config_error)
{
    int s = 0;
    struct rz_err e;
    ck_assert_int_eq(health_signal_parse("HUP", &s, &e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "'HUP'"));
    ck_assert_ptr_nonnull(strstr(e.msg, "USR2"));
}
END_TEST

static Suite *health_suite(void)
{
    Suite *s = suite_create("health");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, signal_names_parse);
    tcase_add_test(core, signal_only_sets_the_flag);
    tcase_add_test(core, sigterm_sets_the_flag_too);
    tcase_add_test(core, watchdog_fires_and_names_the_rank_behind);
    tcase_add_test(core, watchdog_quiet_for_healthy_and_paused_steps);
    tcase_add_test(core, watchdog_names_a_rank_that_stopped_responding);
    tcase_add_test(core, watchdog_fires_in_a_checkpoint_commit_that_hangs);
    tcase_add_test(core, watchdog_fires_in_the_work_after_a_step_that_hangs);
    tcase_add_test(core, watchdog_quiet_while_the_work_after_a_step_moves);
    tcase_add_test(core, watchdog_fires_at_a_start_that_hangs);
    tcase_add_test(core, watchdog_at_the_start_names_no_step);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, watchdog_needs_a_writable_run_dir);
    tcase_add_test(errors, unknown_signal_is_a_config_error);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(health_suite());
}
