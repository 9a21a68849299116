/* startup.c: the training step's start-up (wrapper.c launches the step).  A training step is
 * up once every rank has started its watchdog, which writes the rank's heartbeat file
 * (health/rank-R.hb) as its first act, after MPI_Init.  Until then nothing watches it: a hung
 * MPI start-up would hold the allocation until its time limit.  So the files of earlier steps
 * are removed before the launch, and the step has health.start_timeout_s for all of them to
 * appear again (the runner's wait asks step_ranks_started at each poll). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "step/step_internal.h"

bool step_ranks_started(void *ctx)
{
    struct step_start_watch *s = ctx;
    char path[STEP_PATH_MAX + 500];
    struct stat sb;
    for (; s->next < s->ranks; s->next++) {
        rz_fmt(path, sizeof path, "%s/rank-%05ld.hb", s->dir, s->next);
        if (stat(path, &sb) != 0)
            return false;
    }
    return true;
}

/* Remove the heartbeat files that earlier steps left (a missing directory has none). */
void step_start_watch_init(struct wrapper *w, struct step_start_watch *s)
{
    rz_fmt(s->dir, sizeof s->dir, "%s/health", w->run_dir);
    s->ranks = w->place.ranks;
    s->next = 0;
    DIR *d = opendir(s->dir);
    if (d == NULL)
        return;
    char path[STEP_PATH_MAX + 500], msg[STEP_PATH_MAX + 700];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "rank-", 5) != 0 || len < 8 || strcmp(e->d_name + len - 3, ".hb"))
            continue;
        rz_fmt(path, sizeof path, "%s/%s", s->dir, e->d_name);
        if (unlink(path) != 0 && errno != ENOENT) {
            rz_fmt(msg, sizeof msg, "cannot remove an earlier step's heartbeat file %s: %s (the "
                   "start-up bound may take it for this step's)", path, strerror(errno));
            step_event(&w->ev, "start_watch", msg, NULL, 0);
        }
    }
    closedir(d);
}

/* The training step was ended at health.start_timeout_s: its start-up hung.  Names the ranks
 * that were not up (the first 8); the status it counts as: the watchdog's. */
int step_start_overdue(struct wrapper *w, const struct step_start_watch *s, char *who,
                       size_t len)
{
    char msg[1600], path[STEP_PATH_MAX + 500];
    struct stat sb;
    long down = 0;
    rz_fmt(who, len, "not started:");
    for (long r = 0; r < s->ranks; r++) {
        rz_fmt(path, sizeof path, "%s/rank-%05ld.hb", s->dir, r);
        if (stat(path, &sb) == 0)
            continue;
        size_t at = strlen(who);
        if (++down <= 8)
            rz_fmt(who + at, len - at, " rank %ld", r);
    }
    if (down > 8)
        rz_fmt(who + strlen(who), len - strlen(who), " and %ld more", down - 8);
    double limit = w->cfg.health.start_timeout_s;
    rz_fmt(msg, sizeof msg, "the training step's start-up ran past health.start_timeout_s = %.0f "
           "s and was ended: %ld of %ld rank(s) never started their watchdog (%s); MPI's "
           "start-up hung", limit, down, s->ranks, who);
    struct event_kv kv[] = {{"limit_s", NULL, limit}, {"ranks_down", NULL, (double)down}};
    step_event(&w->ev, "start_timeout", msg, kv, 2);
    return RZ_EXIT_WATCHDOG;
}
