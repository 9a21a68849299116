/* preflight_root.c: the run_root check of the preflight (see preflight_internal.h): the run
 * directory must be one filesystem for every rank of the job, as a resume on other nodes needs. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/durable.h"
#include "core/util.h"
#include "train/preflight_internal.h"

#define ROOT_TOKEN ".preflight-shared"

static void root_token_path(const char *run_dir, char *path, size_t len)
{
    snprintf(path, len, "%s/" ROOT_TOKEN, run_dir);
}

/* Rank 0 writes a token no earlier run wrote (its host, pid and time) to RUN_DIR/.preflight-shared,
 * durably, and broadcasts it; token[0] == '\0' when rank 0 could not write it.  The broadcast
 * also orders every rank's read after the write. */
enum rz_status pf_root_token_share(const struct preflight_opts *o, char *token,
                                       struct rz_err *err)
{
    memset(token, 0, PF_ROOT_TOKEN_LEN);
    if (comm_rank(o->comm) == 0) {
        char path[4200], stamp[32], text[PF_ROOT_TOKEN_LEN + 1];
        struct rz_err e;
        rz_utc_iso8601(stamp, sizeof stamp);
        snprintf(token, PF_ROOT_TOKEN_LEN, "%s %ld %s", comm_host(o->comm), (long)getpid(), stamp);
        snprintf(text, sizeof text, "%s\n", token);
        root_token_path(o->run_dir, path, sizeof path);
        if (rz_durable_write_text(path, "preflight", text, &e) != RZ_OK)
            memset(token, 0, PF_ROOT_TOKEN_LEN);
    }
    return comm_bcast_bytes(o->comm, token, PF_ROOT_TOKEN_LEN, err);
}

/* Read the token back.  A file that is not there yet is looked for again for up to 2 s: an NFS
 * client may cache the directory's old listing for a moment (a hang guard, not a speed). */
void pf_probe_run_root(const char *run_dir, const char *token, struct probe *p)
{
    char path[4200], got[PF_ROOT_TOKEN_LEN + 2] = "";
    root_token_path(run_dir, path, sizeof path);
    if (token[0] == '\0') {
        rz_fmt(p->root_err, sizeof p->root_err, "rank 0 could not write %s", path);
        return;
    }
    FILE *f = NULL;
    for (int tries = 0; f == NULL && tries < 20; tries++) {
        f = fopen(path, "r");
        if (f == NULL && errno != ENOENT)
            break;
        if (f == NULL)
            usleep(100000);
    }
    if (f == NULL) {
        rz_fmt(p->root_err, sizeof p->root_err, "%s: %s", path, strerror(errno));
        return;
    }
    if (fgets(got, sizeof got, f) == NULL)
        got[0] = '\0';
    fclose(f);
    got[strcspn(got, "\n")] = '\0';
    p->root_seen = strcmp(got, token) == 0;
    if (!p->root_seen)
        rz_fmt(p->root_err, sizeof p->root_err, "%s holds another run's token ('%.60s')", path,
               got);
}

void pf_root_token_remove(const char *run_dir, const char *token)
{
    char path[4200];
    if (token[0] == '\0')
        return;
    root_token_path(run_dir, path, sizeof path);
    unlink(path);
}

/* Every rank read rank 0's token: the run root is one filesystem for the whole job, as a resume on
 * other nodes needs.  When no rank off rank 0's host saw it, the job's run root is node-local (its
 * setting, which would follow it to any node: no host is blamed); when some did, the hosts that
 * did not lack the shared mount. */
void pf_judge_run_root(const struct probe *all, int n, const char *run_dir, struct verdict *v)
{
    int blind = 0, remote_seen = 0;
    for (int r = 0; r < n; r++) {
        if (!all[r].root_seen)
            blind++;
        else if (strcmp(all[r].host, all[0].host) != 0)
            remote_seen++;
    }
    v->ok[CHECK_RUN_ROOT] = blind == 0;
    if (blind == 0) {
        pf_add_detail(v, CHECK_RUN_ROOT, "every rank reads what rank 0 wrote in %s", run_dir);
        return;
    }
    pf_add_detail(v, CHECK_RUN_ROOT, "not shared: ");
    for (int r = 0; r < n; r++) {
        if (all[r].root_seen || !pf_first_on_host(all, r))
            continue;
        pf_add_detail(v, CHECK_RUN_ROOT, "rank %d (%s): %s; ", r, all[r].host, all[r].root_err);
        if (remote_seen > 0)
            pf_fail_host(v, all[r].host);
    }
    if (remote_seen == 0)
        pf_add_detail(v, CHECK_RUN_ROOT, "the run root is local to each node: a resume on other "
                   "nodes would find no checkpoint.  Set RYZEN_RUN_ROOT (or submit from) a "
                   "filesystem every node mounts; /tmp is each node's own");
    else
        pf_add_detail(v, CHECK_RUN_ROOT, "these hosts do not mount the run root's filesystem");
}
