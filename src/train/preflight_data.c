/* preflight_data.c: the preflight's data check (preflight_internal.h): the training data opens
 * as the trainer would open it, and a sharded corpus (data.path naming a manifest,
 * record/manifest.h) has every shard present, of its size and its SHA-256 (data_verify), so a
 * missing or changed shard is refused with its name before any training.  Rank 0 reads the
 * files (they are one shared copy; every rank reading them would only multiply the I/O) and
 * broadcasts the verdict, so all ranks judge alike.
 * Deliberately not here: the other checks (preflight.c), what a shard or a manifest is
 * (record/), how the data is sampled (data/).  Random and markov data have no files: the check
 * does not apply to them and is neither shown nor written (their output stays as it was). */
#include "config.h"

#include <string.h>

#include "core/util.h"
#include "data/data.h"
#include "train/preflight_internal.h"
#include "train/train.h"

/* What rank 0 found, as the other ranks receive it. */
struct pf_data_result {
    int ok;
    int status;                 /* enum rz_status of the failure */
    char detail[768];
};

/* Rank 0: open the data and verify it. */
static void pf_data_probe(const struct cfg *c, struct pf_data_result *out)
{
    struct data_opts dopts;
    struct data *d = NULL;
    struct rz_err e;
    rz_err_clear(&e);
    enum rz_status st = train_data_opts(&dopts, c, &e);
    if (st == RZ_OK)
        st = data_create(&d, &dopts, &e);
    if (st == RZ_OK)
        st = data_verify(d, &e);
    out->ok = st == RZ_OK;
    out->status = (int)st;
    if (st == RZ_OK)
        rz_fmt(out->detail, sizeof out->detail, "%s", data_describe(d));
    else
        rz_fmt(out->detail, sizeof out->detail, "%s", e.msg);
    data_destroy(d);
}

bool pf_data_applies(const struct cfg *c)
{
    return strcmp(c->data.kind, "random") != 0 && strcmp(c->data.kind, "markov") != 0;
}

enum rz_status pf_check_data(const struct cfg *c, struct comm *comm, struct verdict *v,
                             enum rz_status *data_st, struct rz_err *err)
{
    *data_st = RZ_OK;
    if (!pf_data_applies(c)) {
        v->ok[CHECK_DATA] = true;
        v->skipped[CHECK_DATA] = true;
        return RZ_OK;
    }
    struct pf_data_result r;
    memset(&r, 0, sizeof r);
    if (comm_rank(comm) == 0)
        pf_data_probe(c, &r);
    enum rz_status st = comm_bcast_bytes(comm, &r, sizeof r, err);
    if (st != RZ_OK)
        return st;
    r.detail[sizeof r.detail - 1] = '\0';
    v->ok[CHECK_DATA] = r.ok != 0;
    /* the data's fault, whatever the call said (a missing shard may be an open's RZ_EIO): exit
     * 64, an input to fix, not a node to exclude */
    *data_st = r.ok ? RZ_OK : r.status == RZ_ECONFIG || r.status == RZ_ENOMEM
                                  ? (enum rz_status)r.status : RZ_EDATA;
    rz_fmt(v->detail[CHECK_DATA], sizeof v->detail[0], "%s", r.detail);
    return RZ_OK;
}
