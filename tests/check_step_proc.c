/* check_step_proc: the posix runner (proc.c) with real child processes, in check_step's "core"
 * test case (check_step.c builds the suite): a status passed back with and without a time limit,
 * a stop signal sent on while the runner polls, a child past its limit ended and reaped, and a
 * limit that holds only until the step says it is up.
 * Nothing here times anything: a limit is either far above what the child needs or the child
 * never ends by itself. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"
#include "step/step_internal.h"
#include "testutil.h"

#include "step_cases.h"

static const struct step_bound no_limit = {.timeout_s = 0.0};
static const struct step_bound an_hour = {.timeout_s = 3600.0};

static long start(const char *const *argv)
{
    const struct step_runner *r = step_runner_posix();
    struct rz_err err;
    long handle = -1;
    ck_assert_msg(r->start(r, argv, NULL, &handle, &err) == RZ_OK, "%s", err.msg);
    return handle;
}

/* The child's own status comes back, whether or not the wait has a limit. */
START_TEST(a_status_comes_back_with_or_without_a_limit)
{
    const struct step_runner *r = step_runner_posix();
    const char *exit3[] = {"sh", "-c", "exit 3", NULL};
    ck_assert_int_eq(r->wait(r, start(exit3), SIGCONT, NULL, NULL), 3);
    ck_assert_int_eq(r->wait(r, start(exit3), SIGCONT, &no_limit, NULL), 3);
    ck_assert_int_eq(r->wait(r, start(exit3), SIGCONT, &an_hour, NULL), 3);
    const char *killed[] = {"sh", "-c", "kill -KILL $$", NULL};
    ck_assert_int_eq(r->wait(r, start(killed), SIGCONT, &an_hour, NULL), 128 + SIGKILL);
}
END_TEST

/* A stop signal recorded before the wait goes on to the child while the runner polls. */
START_TEST(a_stop_signal_is_sent_on_while_polling)
{
    const struct step_runner *r = step_runner_posix();
    const char *sleeper[] = {"sleep", "3600", NULL};
    long h = start(sleeper);
    step_signals_note(SIGTERM);
    /* were it not sent on, the limit would end the child and the wait say so */
    const struct step_bound minute = {.timeout_s = 60.0};
    ck_assert_int_eq(r->wait(r, h, SIGTERM, &minute, NULL), 128 + SIGTERM);
}
END_TEST

/* A child past its limit is ended (SIGINT, as srun is) and reaped: the wait says so, and no
 * process is left. */
START_TEST(a_child_past_its_limit_is_ended_and_reaped)
{
    const struct step_runner *r = step_runner_posix();
    const char *sleeper[] = {"sleep", "3600", NULL};
    long h = start(sleeper);
    const struct step_bound short_limit = {.timeout_s = 0.2};
    ck_assert_int_eq(r->wait(r, h, SIGCONT, &short_limit, NULL), STEP_WAIT_TIMED_OUT);
    ck_assert_int_eq(kill((pid_t)h, 0), -1);
    ck_assert_int_eq(errno, ESRCH);
}
END_TEST

/* A child that ignores the abort (SIGINT) is killed once the bound's grace has passed, and
 * reaped: the wait still returns, says the step was ended, and the log says it was killed.  The
 * wait begins only once the child ignores SIGINT (it says so with a file), however slowly it
 * starts. */
START_TEST(a_child_that_ignores_the_abort_is_killed_after_the_grace)
{
    const struct step_runner *r = step_runner_posix();
    char ready[] = "/tmp/rz-proc-XXXXXX", script[256];
    int fd = mkstemp(ready);
    ck_assert_int_ge(fd, 0);
    close(fd);
    unlink(ready);
    snprintf(script, sizeof script, "trap '' INT; : >%s; while :; do sleep 1; done", ready);
    const char *deaf[] = {"sh", "-c", script, NULL};
    const struct step_bound b = {.timeout_s = 0.2, .kill_grace_s = 0.5};
    long h = start(deaf);
    while (access(ready, F_OK) != 0)
        usleep(10000);
    FILE *log = tmpfile();
    ck_assert_ptr_nonnull(log);
    ck_assert_int_eq(r->wait(r, h, SIGCONT, &b, log), STEP_WAIT_TIMED_OUT);
    ck_assert_int_eq(kill((pid_t)h, 0), -1);
    ck_assert_int_eq(errno, ESRCH);
    char text[512] = "";
    rewind(log);
    size_t n = fread(text, 1, sizeof text - 1, log);
    text[n] = '\0';
    fclose(log);
    unlink(ready);
    ck_assert_msg(strstr(text, "did not end 0.5 s after its abort: killing it") != NULL, "%s",
                  text);
}
END_TEST

/* `started`, asked at each poll, counts its calls and says yes from the n-th on. */
struct up_after {
    int n, calls;
};

static bool up_after_n(void *ctx)
{
    struct up_after *u = ctx;
    return ++u->calls >= u->n;
}

/* A limit until the step is up: a step that never comes up is ended at it; one that is up at the
 * first poll (asked before the limit is) has no limit from then on, and the child's own end comes
 * back although it ends after the limit would have: it waits for a file that is written a second
 * later.  Nothing here depends on how fast anything runs. */
START_TEST(a_limit_until_up_ends_only_a_step_that_never_comes_up)
{
    const struct step_runner *r = step_runner_posix();
    const char *sleeper[] = {"sleep", "3600", NULL};
    struct up_after never = {1000000, 0};
    struct step_bound b = {.timeout_s = 0.2, .started = up_after_n, .ctx = &never};
    long h = start(sleeper);
    ck_assert_int_eq(r->wait(r, h, SIGCONT, &b, NULL), STEP_WAIT_TIMED_OUT);
    ck_assert_int_ge(never.calls, 1);
    ck_assert_int_eq(kill((pid_t)h, 0), -1);

    /* up at once; the child ends once told to, a second after the 0.2 s limit */
    char flag[] = "/tmp/rz-proc-XXXXXX";
    int fd = mkstemp(flag);
    ck_assert_int_ge(fd, 0);
    close(fd);
    unlink(flag);
    char script[256];
    snprintf(script, sizeof script, "while [ ! -e %s ]; do sleep 0.05; done; exit 7", flag);
    const char *waiter[] = {"sh", "-c", script, NULL};
    struct up_after first = {1, 0};
    b.ctx = &first;
    h = start(waiter);
    pid_t teller = fork();
    ck_assert_int_ge(teller, 0);
    if (teller == 0) { /* writes the flag after the limit has long passed */
        sleep(1);
        int f = open(flag, O_WRONLY | O_CREAT, 0600);
        _exit(f >= 0 ? 0 : 1);
    }
    ck_assert_int_eq(r->wait(r, h, SIGCONT, &b, NULL), 7);
    ck_assert_int_eq(first.calls, 1); /* not asked again once up */
    int st;
    ck_assert_int_eq(waitpid(teller, &st, 0), teller);
    unlink(flag);
}
END_TEST

void step_proc_tests(TCase *tc)
{
    tcase_add_test(tc, a_status_comes_back_with_or_without_a_limit);
    tcase_add_test(tc, a_stop_signal_is_sent_on_while_polling);
    tcase_add_test(tc, a_child_past_its_limit_is_ended_and_reaped);
    tcase_add_test(tc, a_child_that_ignores_the_abort_is_killed_after_the_grace);
    tcase_add_test(tc, a_limit_until_up_ends_only_a_step_that_never_comes_up);
}
