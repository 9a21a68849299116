/* train_log.c: what the trainer prints, rank 0 only (see train_internal.h): its decisions on
 * `events` (even with --quiet), the banner and the progress lines on `log`, the job's nodes
 * (gathered from every rank), the matmul peak the banner and MFU are measured against, and
 * --profile: the wall time per op class over the steady steps, summed as the run goes, and its
 * table with the GEMM-only bound. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "data/data.h"
#include "kernels/kernels.h"
#include "metrics/metrics.h"
#include "model/model.h"
#include "optim/optim.h"
#include "train/train_internal.h"

static void vsay(const struct trainer *t, FILE *f, const char *fmt, va_list ap)
{
    if (t->rank != 0 || f == NULL)
        return;
    fputs("ryzen-train: ", f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    fflush(f);
}

/* A decision (resume, quarantine, checkpoint, stop): printed even with --quiet. */
void tr_say(const struct trainer *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(t, t->opts->events, fmt, ap);
    va_end(ap);
}

/* Banner information: quiet with --quiet. */
static void inform(const struct trainer *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void inform(const struct trainer *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(t, t->opts->log, fmt, ap);
    va_end(ap);
}

/* "2 node(s): n1, n2" from every rank's host name. */
enum rz_status tr_describe_hosts(struct trainer *t, char *out, size_t len, struct rz_err *err)
{
    enum { HOST = 64 };
    char mine[HOST];
    snprintf(mine, sizeof mine, "%s", comm_host(t->comm));
    char *all = calloc((size_t)t->world, HOST);
    if (all == NULL)
        return rz_fail(err, RZ_ENOMEM, "trainer: out of memory");
    enum rz_status st = comm_allgather_bytes(t->comm, mine, HOST, all, err);
    int distinct = 0;
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; st == RZ_OK && r < t->world; r++) {
        const char *h = all + (size_t)r * HOST;
        bool seen = false;
        for (int q = 0; q < r && !seen; q++)
            seen = strcmp(h, all + (size_t)q * HOST) == 0;
        if (seen)
            continue;
        distinct++;
        if (used < len)
            used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ", " : "", h);
    }
    char list[512];
    snprintf(list, sizeof list, "%s", out);
    if (snprintf(out, len, "%d node(s): %s", distinct, list) >= (int)len)
        out[len - 1] = '\0'; /* a long host list is cut; the summary has every rank's host */
    free(all);
    return st;
}

void tr_print_banner(const struct trainer *t, double peak, double latency, const char *hosts)
{
    const struct model_dims *d = &t->dims;
    inform(t, "model %zu parameters (V=%lld C=%lld H=%lld L=%lld F=%lld T=%lld)",
        model_num_params(t->model), (long long)d->vocab, (long long)d->d_model,
        (long long)d->n_heads, (long long)d->n_layers, (long long)d->d_ff, (long long)d->seq_len);
    inform(t, "batch %lld x accum %lld x %d rank(s) = %lld samples/step, %lld steps; kernels %s "
        "(%s), row kernels %s, optimizer %s; %s; matmul peak %.1f GFLOP/s (measured)",
        (long long)d->batch, (long long)t->accum, t->world, (long long)t->global_batch,
        (long long)t->cfg->training.steps, t->cfg->kernels.backend, kern_ctx_isa(t->kern),
        kern_rows_isa(), optim_isa(), t->cfg->training.precision, peak);
    if (t->world > 1)
        inform(t, "ranks: %d on %s; allreduce latency %.1f us (median, 8 bytes)", t->world,
               hosts, latency * 1e6);
    if (t->zero > 0)
        inform(t, "ZeRO-%d: rank 0 holds floats [%zu, %zu) of %zu: Adam moments and gradient shard "
               "%.1f MB (RSS measured)%s", t->zero, t->shard_lo, t->shard_hi,
               model_num_params(t->model), (double)t->optim_rss / 1e6,
               t->zero == 2 ? "; gradients live per segment" : "");
    /* the tokenizer by its first 12 hex digits (its full hash is in summary.json and every
     * checkpoint); text's reference line, the loss of token frequencies alone */
    const char *tok = data_tokenizer_sha256(t->data);
    double uni = data_unigram_entropy(t->data);
    char extra[96] = "";
    if (tok[0] != '\0')
        rz_fmt(extra, sizeof extra, "; tokenizer %.12s", tok);
    if (uni > 0.0)
        rz_fmt(extra + strlen(extra), sizeof extra - strlen(extra),
               "; unigram entropy %.4f nats/token", uni);
    inform(t, "data %s%s", data_describe(t->data), extra);
    inform(t, "run dir %s (metrics/%s/, checkpoints/)", t->opts->run_dir, t->opts->run_id);
}

void tr_print_progress(const struct trainer *t, const struct rank_step *s, double eta_s,
                       double comm_share)
{
    if (t->rank != 0 || t->opts->log == NULL)
        return;
    char eta[32], comm[32] = "", val[32] = "";
    metrics_format_eta(eta, sizeof eta, eta_s);
    if (t->world > 1)
        snprintf(comm, sizeof comm, " | comm %.1f%%", 100.0 * comm_share);
    if (s->has_val)
        snprintf(val, sizeof val, " | val %.4f", s->val_loss);
    fprintf(t->opts->log, "step %6lld/%lld | loss %.4f%s | lr %.3e | gnorm %.3f | %.1f samples/s%s"
            " | mfu %.2f | ETA %s\n", (long long)s->step, (long long)t->cfg->training.steps,
            s->loss, val, s->lr, s->grad_norm, s->samples_per_sec, comm, s->mfu, eta);
    fflush(t->opts->log);
}

double tr_measure_peak(struct trainer *t, double seconds)
{
    double gflops = 0.0;
    struct rz_err ignored;
    if (seconds <= 0.0)
        return 0.0;
    /* The model's most common matmul shape: (B*T, C) x (C, 3C). */
    int64_t m = t->dims.batch * t->dims.seq_len, k = t->dims.d_model, n = 3 * t->dims.d_model;
    if (kern_measure_peak(t->kern, m, n, k, t->dims.bf16, seconds, &gflops, &ignored) != RZ_OK)
        return 0.0;
    return gflops;
}

void tr_profile_start(struct trainer *t)
{
    memset(&t->prof, 0, sizeof t->prof);
    if (t->opts->profile)
        kern_ctx_profile(t->kern, &t->prof.k);
}

void tr_profile_add(struct trainer *t, const struct step_out *o, double dt)
{
    t->prof.optimizer_s += o->optim_s;
    t->prof.comm_s += o->comm_s + o->allreduce_s;
    t->prof.step_s += dt;
    t->prof.steps++;
}

static int shape_slower_first(const void *a, const void *b)
{
    double sa = (*(const struct kern_profile_shape *const *)a)->seconds;
    double sb = (*(const struct kern_profile_shape *const *)b)->seconds;
    return (sa < sb) - (sa > sb);
}

/* --profile's matmuls per shape and form, the most time first, each with its own in-context
 * rate: the numbers to hold against tools/bench-gemm's standalone rates at the same shapes. */
static void print_profile_shapes(const struct trainer *t, const struct profile *p)
{
    const struct kern_profile_shape *rows[KERN_PROFILE_SHAPES];
    int n = p->k.nshapes;
    for (int i = 0; i < n; i++)
        rows[i] = &p->k.shapes[i];
    qsort(rows, (size_t)n, sizeof rows[0], shape_slower_first);
    double per = 1e3 / (double)p->steps;
    tr_say(t, "profile: matmuls by shape (form NT: x w^T, a forward; NN: dy w, an input gradient; "
        "TN: dy^T x, a weight gradient):");
    tr_say(t, "  %-22s %-9s %9s %9s %10s", "m x n x k", "form", "ms/step", "GFLOP/s", "calls/step");
    for (int i = 0; i < n; i++) {
        const struct kern_profile_shape *r = rows[i];
        char shape[96], form[16];
        int at = r->batch > 1 ? snprintf(shape, sizeof shape, "%" PRId64 " x ", r->batch) : 0;
        snprintf(shape + at, sizeof shape - (size_t)at, "%" PRId64 " x %" PRId64 " x %" PRId64,
                 r->m, r->n, r->k);
        snprintf(form, sizeof form, "%c%c%s", r->trans_a ? 'T' : 'N', r->trans_b ? 'T' : 'N',
                 r->bf16 ? " bf16" : "");
        tr_say(t, "  %-22s %-9s %9.2f %9.1f %10.1f", shape, form, r->seconds * per,
            r->seconds > 0.0 ? r->flops / r->seconds * 1e-9 : 0.0,
            (double)r->calls / (double)p->steps);
    }
    if (p->k.unlisted_calls > 0)
        tr_say(t, "  and %.1f calls/step of further shapes (the first %d shapes are listed)",
            (double)p->k.unlisted_calls / (double)p->steps, KERN_PROFILE_SHAPES);
}

/* The table of --profile, and how close the step came to the GEMM-only bound: the samples/s
 * of a step that did nothing but its matmul flops (model_flops_per_sample) at the matmul peak
 * measured at start. */
void tr_print_profile(const struct trainer *t, const struct train_result *r)
{
    const struct profile *p = &t->prof;
    if (p->steps == 0 || p->step_s <= 0.0) {
        tr_say(t, "profile: no steady steps to report (training.warmup_bench >= the steps run)");
        return;
    }
    static const char *const names[] = {"matmul", "attention", "norm", "loss"};
    double per = 1e3 / (double)p->steps, known = 0.0;
    tr_say(t, "profile: %lld steady steps, rank %d of %d, %s, ms per step; ISA: matmuls %s, row "
        "kernels %s, optimizer %s:", (long long)p->steps, t->rank, t->world,
        t->cfg->training.precision, kern_ctx_isa(t->kern), kern_rows_isa(), optim_isa());
    tr_say(t, "  %-14s %9s %7s %10s", "class", "ms/step", "share", "calls/step");
    for (int c = 0; c < KERN_OTHER; c++) {
        tr_say(t, "  %-14s %9.2f %6.1f%% %10.1f", names[c], p->k.seconds[c] * per,
            100.0 * p->k.seconds[c] / p->step_s, (double)p->k.calls[c] / (double)p->steps);
        known += p->k.seconds[c];
    }
    tr_say(t, "  %-14s %9.2f %6.1f%%", "optimizer", p->optimizer_s * per,
        100.0 * p->optimizer_s / p->step_s);
    tr_say(t, "  %-14s %9.2f %6.1f%%", "communication", p->comm_s * per,
        100.0 * p->comm_s / p->step_s);
    double other = p->step_s - known - p->optimizer_s - p->comm_s;
    tr_say(t, "  %-14s %9.2f %6.1f%%   (GELU %.2f ms: the rest is embeddings, residual adds, bias "
        "gradients, bf16 rounding, data)", "other", other * per, 100.0 * other / p->step_s,
        p->k.seconds[KERN_OTHER] * per);
    tr_say(t, "  %-14s %9.2f %6.1f%%", "step", p->step_s * per, 100.0);
    print_profile_shapes(t, p);
    double in_context = p->k.seconds[KERN_MATMUL] > 0 ? p->k.matmul_flops /
                                                            p->k.seconds[KERN_MATMUL] * 1e-9 : 0;
    if (r->peak_gflops <= 0.0) {
        tr_say(t, "profile: matmuls at %.1f GFLOP/s in context; no measured peak, no bound",
            in_context);
        return;
    }
    /* The start-up peak is one shape on oneDNN; where BLIS takes the weight gradients (oneDNN
     * at AVX2) the matmuls can run faster in context than that, and a "bound" below what ran is
     * none: the bound then uses the in-context rate, and says so. */
    double peak = r->peak_gflops > in_context ? r->peak_gflops : in_context;
    double bound = peak * 1e9 / model_flops_per_sample(&t->dims);
    double reached = r->samples_per_sec / (double)t->world;
    tr_say(t, "profile: matmuls at %.1f GFLOP/s in context (peak measured at start %.1f); "
        "GEMM-only bound %.1f samples/s per rank (%.3f GFLOP/sample); reached %.1f = %.1f%%",
        in_context, r->peak_gflops, bound, model_flops_per_sample(&t->dims) * 1e-9, reached,
        100.0 * reached / bound);
    if (peak > r->peak_gflops)
        tr_say(t, "profile: the matmuls ran faster in context than the peak measured at start: the "
            "bound uses their in-context rate, %.1f GFLOP/s", peak);
}
