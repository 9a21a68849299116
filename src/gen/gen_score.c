/* gen_score.c: --perplexity (gen.h): the trainer's validation (train_step.c's tr_validate) on a
 * token file given as the validation file: the same windows (data_val_sample, the config's
 * data.seed), the same batches (the checkpoint's per-rank batch, the last one padded with copies
 * of the last window whose losses are dropped), the same forward (model_forward on the
 * checkpoint's shape and precision, the config's kernel backend) and the same averages (each
 * window's mean token loss, then the mean over windows in index order, in double).  One rank's
 * figure: the trainer's is the same at any world size.
 * Deliberately not here: the KV-cache decoder (scoring runs whole windows), encoding text
 * (gen_cli.c writes a text's ids to a token file first). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "data/data.h"
#include "gen/gen_internal.h"
#include "plan/plan.h"

/* The training forward's model: the checkpoint's shape, batch and precision, its parameters. */
static enum rz_status scoring_model(const struct gen *g, struct model **out, struct rz_err *err)
{
    struct plan_settings s = {.batch = g->meta.dims.batch, .accum = 1};
    struct model_dims d = plan_model_dims(g->cfg, &s);
    d.ln_eps = g->meta.dims.ln_eps;
    d.init_std = g->meta.dims.init_std;
    d.recompute = MODEL_RECOMPUTE_BLOCK; /* forward only: the same values, less memory */
    d.segment_grads = 1;                 /* no full gradient buffer: backward never runs */
    if (d.bf16) {
        enum rz_status st = kern_check_bf16(g->kern, err);
        if (st != RZ_OK)
            return st;
    }
    enum rz_status st = model_create(out, &d, g->kern, err);
    if (st != RZ_OK)
        return st;
    memcpy(model_params(*out), gen_params(g), model_num_params(*out) * sizeof(float));
    model_set_dropout(*out, false, 0, 0, 0);
    return RZ_OK;
}

/* Windows first .. first + valid - 1 into rows of inputs and targets (B, T); rows from valid on
 * repeat the last window. */
static void load_windows(const struct data *data, int32_t *sample, int32_t *in, int32_t *tg,
                         int64_t B, int64_t T, int64_t first, int64_t valid)
{
    for (int64_t b = 0; b < B; b++) {
        data_val_sample(data, (uint64_t)(first + (b < valid ? b : valid - 1)), sample);
        memcpy(in + b * T, sample, (size_t)T * sizeof *in);
        memcpy(tg + b * T, sample + 1, (size_t)T * sizeof *tg);
    }
}

static enum rz_status score(struct model *m, const struct data *data, int64_t E,
                            struct gen_score *out, struct rz_err *err)
{
    const struct model_dims *d = model_get_dims(m);
    int64_t B = d->batch, T = d->seq_len;
    int32_t *sample = calloc((size_t)T + 1, sizeof *sample);
    int32_t *in = calloc((size_t)(B * T), sizeof *in), *tg = calloc((size_t)(B * T), sizeof *tg);
    double *per = calloc((size_t)E, sizeof *per);
    if (sample == NULL || in == NULL || tg == NULL || per == NULL) {
        free(sample), free(in), free(tg), free(per);
        return rz_fail(err, RZ_ENOMEM, "perplexity: out of memory");
    }
    for (int64_t first = 0; first < E; first += B) {
        int64_t valid = E - first < B ? E - first : B;
        load_windows(data, sample, in, tg, B, T, first, valid);
        model_forward(m, in, tg);
        const float *loss = model_token_losses(m); /* (B, T) */
        for (int64_t b = 0; b < valid; b++) {
            double sum = 0.0;
            for (int64_t i = 0; i < T; i++)
                sum += (double)loss[b * T + i];
            per[first + b] = sum / (double)T;
        }
    }
    double sum = 0.0;
    for (int64_t j = 0; j < E; j++)
        sum += per[j];
    *out = (struct gen_score){.loss = sum / (double)E, .windows = E, .tokens = E * T, .batch = B};
    free(sample), free(in), free(tg), free(per);
    return RZ_OK;
}

enum rz_status gen_perplexity(const struct gen *g, const char *tokfile, struct gen_score *out,
                              struct rz_err *err)
{
    const struct cfg *c = g->cfg;
    struct data_opts o = {.kind = DATA_TOKENS, .vocab_size = g->dims.vocab,
                          .seq_len = g->dims.seq_len, .seed = (uint64_t)c->data.seed,
                          .path = tokfile, .val_path = tokfile,
                          .token_bytes = data_token_bytes(c->data.token_dtype)};
    struct data *data = NULL;
    struct model *m = NULL;
    enum rz_status st = data_create(&data, &o, err);
    if (st == RZ_OK)
        st = scoring_model(g, &m, err);
    if (st == RZ_OK)
        st = score(m, data, c->training.eval_samples, out, err);
    model_destroy(m);
    data_destroy(data);
    return st;
}
