/* comm_start.c: the start-up rendezvous (see comm.h): after MPI_Init returns, each rank of a
 * multi-rank srun step leaves a file rank-<r> in RUN_DIR/.startup/<job>.<step>.<restart> and waits
 * until every rank's file is there; only then does any rank send its first MPI message.  Open MPI
 * 4.1.4 under Slurm's PMIx can let a rank out of MPI_Init while a peer on another node is still in
 * its first PMIx fence; a TCP message reaching that peer then calls a handler ob1 has not yet set
 * (a SIGSEGV at address 0: docs/devcluster.md, "A rank that dies on SIGSEGV as training starts").
 * A file on the shared run directory is a signal that travels outside MPI, so it cannot reach a
 * rank too early.
 *
 * Deliberately not here: resolving the run directory (main does, for the preflight and training
 * alike), judging whether it is shared (the preflight's run_root check), and any MPI call but the
 * one barrier after every file is seen (comm.c owns MPI). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm.h"
#include "core/util.h"

#define START_POLL_FIRST_S 0.002  /* the first wait between two looks ... */
#define START_POLL_MAX_S 0.050    /* ... doubling up to this */
#define START_NAMED_MAX 16        /* ranks named in a timeout's message */

bool comm_start_needed(const struct comm_launch *l, int size)
{
    if (l == NULL || l->step_id[0] == '\0' || size < 2)
        return false;
    /* A world that is not the step's (a wrong --mpi plugin) is the launch checks' to report; its
     * ranks' numbers would collide here. */
    return strtol(l->ntasks, NULL, 10) == size;
}

enum rz_status comm_start_dir(char *dir, size_t len, const char *run_dir,
                              const struct comm_launch *l, struct rz_err *err)
{
    int w = snprintf(dir, len, "%s/.startup/%s.%s.%s", run_dir,
                     l->job_id[0] ? l->job_id : "nojob", l->step_id[0] ? l->step_id : "nostep",
                     l->restart_count[0] ? l->restart_count : "0");
    if (w < 0 || (size_t)w >= len)
        return rz_fail(err, RZ_ECONFIG, "start-up rendezvous: directory name under '%s' is too "
                       "long (at most %zu bytes)", run_dir, len - 1);
    return RZ_OK;
}

static void rank_path(char *path, size_t len, const char *dir, int rank)
{
    snprintf(path, len, "%s/rank-%d", dir, rank);
}

/* This rank's file: created, not written (its existence is the message). */
static enum rz_status arrive(const char *dir, int rank, struct rz_err *err)
{
    char path[4200];
    struct rz_err e;
    if (rz_mkdirs(dir, &e) != RZ_OK)
        return rz_fail(err, e.status, "start-up rendezvous of rank %d: %s", rank, e.msg);
    rank_path(path, sizeof path, dir, rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return rz_fail(err, RZ_EIO, "start-up rendezvous of rank %d: create %s: %s", rank, path,
                       strerror(errno));
    close(fd);
    return RZ_OK;
}

/* Look again for every rank not seen yet; returns how many are still missing. */
static int look(const char *dir, int size, bool *seen)
{
    char path[4200];
    struct stat sb;
    int missing = 0;
    for (int r = 0; r < size; r++) {
        if (seen[r])
            continue;
        rank_path(path, sizeof path, dir, r);
        seen[r] = stat(path, &sb) == 0;
        missing += !seen[r];
    }
    return missing;
}

static void nap(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL); /* a signal ends it early: the loop looks again */
}

static enum rz_status timed_out(const char *dir, int rank, int size, int missing,
                                double timeout_s, const bool *seen, struct rz_err *err)
{
    char names[START_NAMED_MAX * 16 + 8] = "";
    size_t used = 0;
    for (int r = 0, named = 0; r < size && named < START_NAMED_MAX; r++) {
        if (seen[r])
            continue;
        int w = snprintf(names + used, sizeof names - used, "%srank %d", named ? " " : "", r);
        used += w > 0 ? (size_t)w : 0;
        named++;
    }
    return rz_fail(err, RZ_EHEALTH,
                   "start-up rendezvous of rank %d in %s: %d of %d rank(s) did not arrive within "
                   "%.0f s (not arrived: %s%s).  They did not return from MPI_Init, or they do not "
                   "see this directory: the run directory must be one filesystem for every node "
                   "(docs/reliability.md, \"Start-up rendezvous\")", rank, dir, missing, size,
                   timeout_s, names, missing > START_NAMED_MAX ? " ..." : "");
}

enum rz_status comm_start_arrive(const char *dir, int rank, int size, double timeout_s,
                                 struct rz_err *err)
{
    enum rz_status st = arrive(dir, rank, err);
    if (st != RZ_OK)
        return st;
    bool *seen = calloc((size_t)size, sizeof *seen);
    if (seen == NULL)
        return rz_fail(err, RZ_ENOMEM, "start-up rendezvous: out of memory for %d ranks", size);
    double end = rz_now() + timeout_s, wait = START_POLL_FIRST_S;
    int missing;
    while ((missing = look(dir, size, seen)) > 0 && rz_now() < end) {
        nap(wait);
        wait = wait * 2 < START_POLL_MAX_S ? wait * 2 : START_POLL_MAX_S;
    }
    if (missing > 0)
        st = timed_out(dir, rank, size, missing, timeout_s, seen, err);
    free(seen);
    return st;
}

void comm_start_cleanup(const char *dir, int size)
{
    char path[4200];
    for (int r = 0; r < size; r++) {
        rank_path(path, sizeof path, dir, r);
        unlink(path);
    }
    rmdir(dir); /* RUN_DIR/.startup itself stays: another step may be creating its own in it */
}

enum rz_status comm_start_rendezvous(struct comm *c, const char *run_dir,
                                     const struct comm_launch *l, double timeout_s,
                                     bool required, bool *complete, struct rz_err *err)
{
    char dir[4096];
    *complete = true;
    if (!comm_start_needed(l, comm_size(c)))
        return RZ_OK;
    enum rz_status st = comm_start_dir(dir, sizeof dir, run_dir, l, err);
    if (st == RZ_OK)
        st = comm_start_arrive(dir, comm_rank(c), comm_size(c), timeout_s, err);
    if (st == RZ_EHEALTH && !required) {
        *complete = false; /* err keeps the message; the barrier keeps the ranks in step */
        st = RZ_OK;
    }
    /* Every rank has returned from MPI_Init: the first message is safe now.  The barrier also
     * tells rank 0 that no rank still looks at the files. */
    if (st == RZ_OK)
        st = comm_barrier(c, err);
    if (st == RZ_OK && comm_rank(c) == 0)
        comm_start_cleanup(dir, comm_size(c));
    return st;
}
