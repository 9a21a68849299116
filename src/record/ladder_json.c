/* ladder_json.c: ladder.json from a struct ladder (see ladder_json.h).  Deliberately not here:
 * reading the run root, fitting the model, Markdown and HTML (ladder/). */
#include "config.h"

#include "record/ladder_json.h"

#include "core/json.h"

bool ladder_over_100(double efficiency)
{
    return efficiency > 1.0;
}

static void ladder_json_lost(struct rz_json *j, const struct ladder_attempt *a)
{
    rz_json_key(j, "time_lost_by_kind");
    rz_json_array_begin(j);
    for (int i = 0; i < a->n_lost; i++) {
        rz_json_object_begin(j);
        rz_json_kv_string(j, "kind", a->lost[i].kind);
        rz_json_kv_double(j, "seconds", a->lost[i].seconds);
        rz_json_kv_int(j, "stops", a->lost[i].stops);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
}

static void ladder_json_attempt(struct rz_json *j, const struct ladder *l,
                                const struct ladder_attempt *a)
{
    rz_json_object_begin(j);
    rz_json_kv_string(j, "phase", a->phase);
    rz_json_kv_string(j, "job", a->job);
    rz_json_kv_string(j, "lineage", a->lineage);
    rz_json_kv_string(j, "report", a->report);
    rz_json_kv_string(j, "time", a->time);
    rz_json_kv_int(j, "world_size", a->world);
    rz_json_kv_string(j, "verdict", a->verdict);
    rz_json_kv_string(j, "ended", a->ended);
    rz_json_kv_double(j, "throughput", a->throughput);
    rz_json_kv_double(j, "model_throughput", a->model);
    rz_json_kv_double(j, "efficiency", a->efficiency);
    rz_json_kv_bool(j, "efficiency_above_100", ladder_over_100(a->efficiency));
    rz_json_kv_double(j, "efficiency_vs_previous", a->efficiency_prev);
    rz_json_kv_double(j, "comm", a->comm);
    rz_json_kv_double(j, "allreduce_p50_ms", a->p50_ms);
    rz_json_kv_double(j, "allreduce_p99_ms", a->p99_ms);
    rz_json_kv_double(j, "ring_hop_us", 1e6 * a->ring_hop_s);
    rz_json_kv_double(j, "straggler_ratio", a->straggler);
    rz_json_kv_double(j, "per_rank_batch", a->per_rank_batch);
    rz_json_kv_int(j, "steps", a->steps);
    rz_json_kv_int(j, "skipped_steps", a->skipped);
    rz_json_key(j, "requeues");
    rz_json_object_begin(j);
    for (int r = 0; r < l->n_rq; r++)
        rz_json_kv_int(j, l->rq_names[r], a->requeues[r]);
    rz_json_object_end(j);
    rz_json_kv_string(j, "from_checkpoint", a->from_ckpt);
    rz_json_kv_string(j, "rollback_checkpoint", a->rollback_ckpt);
    rz_json_kv_string(j, "handed_to", a->handed_to);
    rz_json_kv_string(j, "planned_action", a->action);
    rz_json_kv_string(j, "planned_phase", a->action_phase);
    rz_json_kv_double(j, "goodput", a->goodput);
    ladder_json_lost(j, a);
    rz_json_kv_string(j, "nodes_lost", a->nodes_lost);
    rz_json_kv_string(j, "nodes_excluded", a->nodes_excluded);
    rz_json_object_end(j);
}

static void ladder_json_hindcast(struct rz_json *j, const struct ladder *l)
{
    rz_json_key(j, "hindcast");
    rz_json_object_begin(j);
    rz_json_kv_int(j, "fitted_to_ranks_at_most", LADDER_EARLY_RANKS);
    rz_json_kv_bool(j, "ok", l->early.ok);
    rz_json_kv_double(j, "error_rel", l->early.err_rel);
    rz_json_kv_string(j, "note", l->early.note);
    rz_json_key(j, "rows");
    rz_json_array_begin(j);
    for (size_t i = 0; i < l->n_hindcast; i++) {
        const struct ladder_hindcast_row *h = &l->hindcast[i];
        rz_json_object_begin(j);
        rz_json_kv_string(j, "phase", h->phase);
        rz_json_kv_string(j, "job", h->job);
        rz_json_kv_int(j, "world_size", h->world);
        rz_json_kv_double(j, "predicted", h->predicted);
        rz_json_kv_double(j, "predicted_lo", h->lo);
        rz_json_kv_double(j, "predicted_hi", h->hi);
        rz_json_kv_double(j, "measured", h->measured);
        rz_json_kv_double(j, "measured_vs_predicted", h->ratio);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
    rz_json_object_end(j);
}

static void ladder_json_fit(struct rz_json *j, const struct ladder_fit *f)
{
    rz_json_key(j, "model");
    rz_json_object_begin(j);
    rz_json_kv_string(j, "formula", LADDER_MODEL_FORMULA);
    rz_json_kv_bool(j, "ok", f->ok);
    rz_json_kv_double(j, "c_s_per_sample", f->c_s);
    rz_json_kv_double(j, "k_local_s_per_byte", f->k_local);
    rz_json_kv_double(j, "k_net", f->k_net);
    rz_json_kv_double(j, "hop_s_per_rank_sharing", f->hop_s);
    rz_json_kv_double(j, "node_cpu_quota", f->node_quota);
    rz_json_kv_double(j, "gradient_bytes", f->bytes);
    rz_json_kv_double(j, "ranks_per_node", f->ranks_per_node);
    rz_json_kv_double(j, "machine_cpus", f->machine_cpus);
    rz_json_kv_bool(j, "shared_machine", f->shared_machine);
    rz_json_kv_double(j, "link_bytes_per_s", f->link_Bps);
    rz_json_kv_double(j, "link_latency_s", f->link_lat_s);
    rz_json_kv_int(j, "points", f->points);
    rz_json_kv_double(j, "error_rel", f->err_rel);
    rz_json_kv_string(j, "note", f->note);
    rz_json_object_end(j);
}

static void ladder_json_predictions(struct rz_json *j, const struct ladder *l)
{
    rz_json_key(j, "predictions");
    rz_json_array_begin(j);
    for (int i = 0; i < l->n_pred; i++) {
        const struct ladder_prediction *p = &l->pred[i];
        rz_json_object_begin(j);
        rz_json_kv_int(j, "world_size", p->world);
        rz_json_kv_double(j, "throughput", p->throughput);
        rz_json_kv_double(j, "throughput_lo", p->lo);
        rz_json_kv_double(j, "throughput_hi", p->hi);
        rz_json_kv_double(j, "efficiency", p->efficiency);
        rz_json_kv_bool(j, "efficiency_above_100", ladder_over_100(p->efficiency));
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
}

static void ladder_json_timeline(struct rz_json *j, const struct ladder *l)
{
    rz_json_key(j, "timeline");
    rz_json_array_begin(j);
    for (size_t k = 0; k < l->n_timeline; k++) {
        const struct ladder_event *e = &l->timeline[k];
        rz_json_object_begin(j);
        rz_json_kv_string(j, "time", e->when);
        rz_json_kv_fixed(j, "t", e->t, 3);
        rz_json_kv_string(j, "lineage", e->lineage);
        rz_json_kv_string(j, "job", e->job);
        rz_json_kv_string(j, "event", e->event);
        rz_json_kv_string(j, "summary", e->summary);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
}

void ladder_json_write(FILE *f, const struct ladder *l)
{
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "root", l->root);
    rz_json_kv_string(&j, "time", l->time);
    rz_json_key(&j, "base");
    if (l->base < 0) {
        rz_json_null(&j);
    } else {
        rz_json_object_begin(&j);
        rz_json_kv_string(&j, "phase", l->att[l->base].phase);
        rz_json_kv_string(&j, "job", l->att[l->base].job);
        rz_json_kv_int(&j, "world_size", l->att[l->base].world);
        rz_json_object_end(&j);
    }
    rz_json_key(&j, "attempts");
    rz_json_array_begin(&j);
    for (size_t i = 0; i < l->n_att; i++)
        ladder_json_attempt(&j, l, &l->att[i]);
    rz_json_array_end(&j);
    ladder_json_hindcast(&j, l);
    ladder_json_fit(&j, &l->fit);
    ladder_json_predictions(&j, l);
    ladder_json_timeline(&j, l);
    rz_json_object_end(&j);
    fputc('\n', f);
}
