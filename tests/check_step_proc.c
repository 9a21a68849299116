/* check_step_proc: the posix runner (proc.c) with real child processes, in check_step's "core"
 * test case (check_step.c builds the suite): a status passed back with and without a time limit,
 * a stop signal sent on while the runner polls, and a child past its limit ended and reaped.
 * Nothing here times anything: a limit is either far above what the child needs or the child
 * never ends by itself. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <sys/types.h>

#include "core/util.h"
#include "step/step_internal.h"
#include "testutil.h"

#include "step_cases.h"

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
    ck_assert_int_eq(r->wait(r, start(exit3), SIGCONT, 0.0, NULL), 3);
    ck_assert_int_eq(r->wait(r, start(exit3), SIGCONT, 3600.0, NULL), 3);
    const char *killed[] = {"sh", "-c", "kill -KILL $$", NULL};
    ck_assert_int_eq(r->wait(r, start(killed), SIGCONT, 3600.0, NULL), 128 + SIGKILL);
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
    ck_assert_int_eq(r->wait(r, h, SIGTERM, 60.0, NULL), 128 + SIGTERM);
}
END_TEST

/* A child past its limit is ended (SIGINT, as srun is) and reaped: the wait says so, and no
 * process is left. */
START_TEST(a_child_past_its_limit_is_ended_and_reaped)
{
    const struct step_runner *r = step_runner_posix();
    const char *sleeper[] = {"sleep", "3600", NULL};
    long h = start(sleeper);
    ck_assert_int_eq(r->wait(r, h, SIGCONT, 0.2, NULL), STEP_WAIT_TIMED_OUT);
    ck_assert_int_eq(kill((pid_t)h, 0), -1);
    ck_assert_int_eq(errno, ESRCH);
}
END_TEST

void step_proc_tests(TCase *tc)
{
    tcase_add_test(tc, a_status_comes_back_with_or_without_a_limit);
    tcase_add_test(tc, a_stop_signal_is_sent_on_while_polling);
    tcase_add_test(tc, a_child_past_its_limit_is_ended_and_reaped);
}
