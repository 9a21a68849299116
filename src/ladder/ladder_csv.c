#include "config.h"

/* ladder_csv.c: ladder.csv (ryzen-gate --ladder RUN_ROOT --csv; docs/ladder.md "ladder.csv"):
 * one row per phase attempt that ladder_read found, in its order, with the figures ladder.json
 * has of it.  It only formats the document: no reading, no fitting; the quoting is
 * record/csv.h's.  The predictions and the hindcast stay in ladder.json. */

#include "ladder/ladder.h"

#include "core/durable.h"
#include "core/util.h"
#include "record/csv.h"

#define LADDER_CSV_HEADER                                                                         \
    "phase,lineage,job,world_size,nodes,verdict,ended,planned_action,time,throughput,"           \
    "throughput_p10,model_throughput,efficiency,efficiency_vs_previous,comm,allreduce_p50_ms,"    \
    "allreduce_p99_ms,straggler_ratio,compute_s,per_rank_batch,cores_per_rank,steps,"             \
    "skipped_steps,goodput,from_checkpoint"

static void ladder_csv_row(struct rz_csv *c, const struct ladder_attempt *a)
{
    rz_csv_str(c, a->phase);
    rz_csv_str(c, a->lineage);
    rz_csv_str(c, a->job);
    rz_csv_int(c, a->world);
    rz_csv_int(c, a->nodes);
    rz_csv_str(c, a->verdict);
    rz_csv_str(c, a->ended);
    rz_csv_str(c, a->action);
    rz_csv_str(c, a->time);
    rz_csv_num(c, a->throughput);
    rz_csv_num(c, a->throughput_p10);
    rz_csv_num(c, a->model);
    rz_csv_num(c, a->efficiency);
    rz_csv_num(c, a->efficiency_prev);
    rz_csv_num(c, a->comm);
    rz_csv_num(c, a->p50_ms);
    rz_csv_num(c, a->p99_ms);
    rz_csv_num(c, a->straggler);
    rz_csv_num(c, a->compute_s);
    rz_csv_num(c, a->per_rank_batch);
    rz_csv_num(c, a->cores_per_rank);
    rz_csv_int(c, a->steps);
    rz_csv_int(c, a->skipped);
    rz_csv_num(c, a->goodput);
    rz_csv_str(c, a->from_ckpt);
    rz_csv_end_row(c);
}

void ladder_write_csv(FILE *f, const struct ladder *l)
{
    struct rz_csv c = {f, 0};
    rz_csv_header(&c, LADDER_CSV_HEADER);
    for (size_t i = 0; i < l->n_att; i++)
        ladder_csv_row(&c, &l->att[i]);
}

static void ladder_csv_cb(FILE *f, const void *l) { ladder_write_csv(f, l); }

enum rz_status ladder_write_csv_file(const struct ladder *l, struct rz_err *err)
{
    char path[4400];
    rz_fmt(path, sizeof path, "%s/ladder.csv", l->root);
    return rz_durable_write(path, "report", ladder_csv_cb, l, err);
}
