/* owner.c: a phase's run directory belongs to one live job at a time (see step_internal.h).
 *
 * RUN_DIR/owner holds the owning job's id, created with O_CREAT|O_EXCL (core/durable.h), which
 * works on NFS and on Lustre mounted without flock.  The owner is alive while Slurm still lists
 * the job as pending, running or being requeued; a dead owner's file is replaced (the events
 * record the take-over).  A requeued job keeps its id, so it re-enters its own directory.
 * Outside Slurm the id is "local:HOST:PID", alive while that process runs on this host. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/durable.h"
#include "core/util.h"
#include "step/step_internal.h"

static bool local_alive(const char *job)
{
    char host[256], mine[256];
    long pid = 0;
    if (sscanf(job, "local:%255[^:]:%ld", host, &pid) != 2 || pid <= 0)
        return false;
    if (gethostname(mine, sizeof mine) != 0 || strcmp(host, mine) != 0)
        return true; /* another host's process: we cannot tell, so it stays the owner */
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

bool step_job_alive(const struct step_runner *r, const char *job)
{
    if (strncmp(job, "local:", 6) == 0)
        return local_alive(job);
    static const char *const live[] = {"PENDING", "RUNNING", "SUSPENDED", "REQUEUED",
                                       "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "CONFIGURING",
                                       "COMPLETING", "SIGNALING", "STAGE_OUT", "STOPPED"};
    struct slurm_job j;
    struct rz_err ignored;
    if (slurm_job_query(r, job, &j, &ignored) != RZ_OK || !j.found)
        return false; /* Slurm no longer knows the job */
    for (size_t i = 0; i < RZ_ARRAY_LEN(live); i++)
        if (strcmp(j.state, live[i]) == 0)
            return true;
    return false;
}

static void owner_path(char *out, size_t len, const char *run_dir)
{
    rz_fmt(out, len, "%s/owner", run_dir);
}

/* The job id in an owner file ("" if unreadable). */
static void read_owner(const char *path, char *out, size_t len)
{
    char *text = NULL;
    out[0] = '\0';
    if (rz_read_file(path, &text, NULL, NULL) == RZ_OK)
        rz_fmt(out, len, "%.*s", (int)strcspn(text, " \n"), text);
    free(text);
}

/* Remove the owner file if it still names `dead`, holding OWNER.takeover meanwhile.  A takeover
 * file older than a minute was left by a crash and is removed. */
static enum rz_status take_over(const char *path, const char *dead, struct rz_err *err)
{
    char lock[STEP_PATH_MAX + 500], now_owner[128];
    struct stat sb;
    bool existed = false;
    rz_fmt(lock, sizeof lock, "%s.takeover", path);
    if (stat(lock, &sb) == 0 && time(NULL) - sb.st_mtime > 60)
        unlink(lock);
    enum rz_status st = rz_durable_create_excl(lock, dead, &existed, err);
    if (st != RZ_OK || existed)
        return st; /* someone else is taking over: look again */
    read_owner(path, now_owner, sizeof now_owner);
    if (strcmp(now_owner, dead) == 0 && unlink(path) != 0 && errno != ENOENT)
        st = rz_fail(err, RZ_EIO, "take over '%s' from dead job %s: %s", path, dead,
                     strerror(errno));
    unlink(lock);
    return st;
}

enum rz_status step_owner_claim(const struct step_runner *r, const char *run_dir, const char *job,
                                enum step_owner *how, char *other, size_t len, struct rz_err *err)
{
    char path[STEP_PATH_MAX + 400], text[256];
    owner_path(path, sizeof path, run_dir);
    rz_fmt(text, sizeof text, "%s\n", job);
    other[0] = '\0';
    for (int attempt = 0; attempt < 10; attempt++) {
        bool existed = false;
        if (attempt > 0)
            r->sleep(r, 0.2); /* let a take-over in progress finish */
        enum rz_status st = rz_durable_create_excl(path, text, &existed, err);
        if (st != RZ_OK)
            return st;
        if (!existed) {
            *how = other[0] != '\0' ? OWNER_TAKEN_OVER : OWNER_TAKEN;
            return RZ_OK;
        }
        char owner[128];
        read_owner(path, owner, sizeof owner);
        if (strcmp(owner, job) == 0) {
            *how = OWNER_REENTERED;
            return RZ_OK;
        }
        if (owner[0] != '\0' && step_job_alive(r, owner)) {
            rz_fmt(other, len, "%s", owner);
            *how = OWNER_BUSY;
            return RZ_OK;
        }
        /* A dead owner (or a file cut short by a crash) is replaced under a second O_EXCL
         * file, so that of two jobs taking over at once only one removes the dead owner's
         * file; the other sees the winner as the live owner on its next pass. */
        rz_fmt(other, len, "%s", owner[0] != '\0' ? owner : "(unreadable owner file)");
        st = take_over(path, owner, err);
        if (st != RZ_OK)
            return st;
    }
    return rz_fail(err, RZ_EIO, "claim '%s': it keeps changing owner (last: %s)", path, other);
}

void step_owner_release(const char *run_dir, const char *job)
{
    char path[STEP_PATH_MAX + 400], owner[128];
    owner_path(path, sizeof path, run_dir);
    read_owner(path, owner, sizeof owner);
    if (strcmp(owner, job) == 0)
        unlink(path);
}
