#include "config.h"

/* gate_csv.c: steps.csv of one phase job (ryzen-gate --csv; docs/gates.md "steps.csv"): one row
 * per optimizer step present on every rank, from the merged steps (struct gate_step) and rank 0's
 * row of that step (record/rank_log.h).  It only formats what gate_read read: no judgement, no
 * reading, and the quoting is record/csv.h's. */

#include "gate/gate.h"

#include <math.h>

#include "core/durable.h"
#include "core/util.h"
#include "record/csv.h"

#define GATE_CSV_HEADER                                                                           \
    "step,run_step,samples_seen,loss,val_loss,lr,grad_norm,skipped,step_time_s,samples_per_sec,"  \
    "comm_time_s,compute_time_s,allreduce_s,grad_allreduce_s,rss_bytes,t,world_size,sync_ranks,"  \
    "sync_ok_ranks"

/* Rank 0's row of STEP, walking *i forward (both lists ascend); NULL when rank 0 has none. */
static const struct rank_row *gate_csv_rank0(const struct gate_input *in, int64_t step,
                                             size_t *i)
{
    if (in->ranks == NULL || in->world_size < 1)
        return NULL;
    const struct gate_rank *r = &in->ranks[0];
    while (*i < r->n_rows && r->rows[*i].step < step)
        (*i)++;
    return *i < r->n_rows && r->rows[*i].step == step ? &r->rows[*i] : NULL;
}

static void gate_csv_row(struct rz_csv *c, const struct gate_input *in,
                         const struct gate_step *s, const struct rank_row *r0)
{
    rz_csv_int(c, s->step);
    rz_csv_int(c, s->run_step);
    rz_csv_int(c, s->samples_seen);
    rz_csv_num(c, s->loss);
    rz_csv_num(c, s->val_loss);
    /* the step's learning rate and global gradient norm, the same on every rank: rank 0's */
    rz_csv_num(c, r0 != NULL ? r0->lr : (double)NAN);
    rz_csv_num(c, r0 != NULL ? r0->grad_norm : (double)NAN);
    rz_csv_int(c, s->skipped ? 1 : 0);
    rz_csv_num(c, s->step_time_s);
    rz_csv_num(c, s->step_time_s > 0 ? s->global_batch / s->step_time_s : (double)NAN);
    /* rank 0's figures of the step, empty where rank 0 has no row of it */
    double r[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    if (r0 != NULL) {
        r[0] = r0->comm_time_s;
        r[1] = r0->compute_time_s;
        r[2] = r0->allreduce_s;
        r[3] = r0->grad_allreduce_s;
        r[4] = (double)r0->rss_bytes;
        r[5] = r0->time;
    }
    for (size_t k = 0; k < RZ_ARRAY_LEN(r); k++)
        rz_csv_num(c, r[k]);
    rz_csv_int(c, in->world_size);
    rz_csv_int(c, s->sync_ranks);
    rz_csv_int(c, s->sync_ok_ranks);
    rz_csv_end_row(c);
}

void gate_write_csv(FILE *f, const struct gate_doc *d)
{
    const struct gate_input *in = d->in;
    struct rz_csv c = {f, 0};
    rz_csv_header(&c, GATE_CSV_HEADER);
    size_t i = 0;
    for (size_t k = 0; k < in->n_steps; k++)
        gate_csv_row(&c, in, &in->steps[k], gate_csv_rank0(in, in->steps[k].step, &i));
}

static void gate_csv_cb(FILE *f, const void *d) { gate_write_csv(f, d); }

enum rz_status gate_write_csv_file(const struct gate_doc *d, struct rz_err *err)
{
    char path[4400];
    rz_fmt(path, sizeof path, "%s/reports/%s/steps.csv", d->in->run_dir, d->in->job);
    return rz_durable_write(path, "report", gate_csv_cb, d, err);
}
