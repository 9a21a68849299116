/* keys.c: the one table of configuration keys, and scalar parsing, bounds checks, formatting and
 * did-you-mean suggestions driven by it.
 *
 * It does not read YAML (config.c does) and knows nothing of positions: every failure here is only
 * a cause, which the caller prefixes with "FILE:LINE:COLUMN: KEY: " or "--set KEY: ".
 * The defaults below ARE the reference workload (configs/seed_benchmark.yaml). */
#include "config.h"

#include "config/keys.h"
#include "core/util.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Size of a field of struct cfg, checked at compile time to have the type the row claims:
 * _Generic with no matching association (and no default) does not compile. */
#define CFG_FIELD(f) (((struct cfg *)0)->f)
#define CFG_SIZE_I64(f) _Generic(CFG_FIELD(f), int64_t: sizeof(int64_t))
#define CFG_SIZE_F64(f) _Generic(CFG_FIELD(f), double: sizeof(double))
#define CFG_SIZE_STR(f) (sizeof(CFG_FIELD(f)) + 0 * _Generic(CFG_FIELD(f), char *: 0u))

#define KEY_INT(n, f, lo, hi, d, doc_)                                                            \
    { .name = n, .type = CFG_INT, .offset = offsetof(struct cfg, f), .size = CFG_SIZE_I64(f),     \
      .imin = (lo), .imax = (hi), .def = d, .doc = doc_ }
#define KEY_FLOAT(n, f, lo, hi, op, d, doc_)                                                      \
    { .name = n, .type = CFG_FLOAT, .offset = offsetof(struct cfg, f), .size = CFG_SIZE_F64(f),   \
      .fmin = (lo), .fmax = (hi), .open = (op), .def = d, .doc = doc_ }
#define KEY_STRING(n, f, d, doc_)                                                                 \
    { .name = n, .type = CFG_STRING, .offset = offsetof(struct cfg, f), .size = CFG_SIZE_STR(f),  \
      .def = d, .doc = doc_ }
#define KEY_ENUM(n, f, ch, d, doc_)                                                               \
    { .name = n, .type = CFG_ENUM, .offset = offsetof(struct cfg, f), .size = CFG_SIZE_STR(f),    \
      .choices = ch, .def = d, .doc = doc_ }

/* A gate: GATE(x, ...) is the two keys gates.x_go and gates.x_no_go (config.h: cfg_gates). */
#define GATE(m, go, nogo, doc_)                                                                   \
    KEY_FLOAT("gates." #m "_go", gates.m##_go, -1e30, 1e30, 0u, #go, "GO threshold: " doc_),   \
    KEY_FLOAT("gates." #m "_no_go", gates.m##_no_go, -1e30, 1e30, 0u, #nogo, "NO-GO threshold.")

#define BIG INT64_C(1000000000000) /* 1e12: "effectively unbounded" step counts */

const struct cfg_key cfg_keys[] = {
    KEY_INT("model.vocab_size", model.vocab_size, 2, 16777216, "2048",
            "Vocabulary size V (token ids are 0..V-1)."),
    KEY_INT("model.d_model", model.d_model, 1, 65536, "256",
            "Embedding width C; must be divisible by model.n_heads."),
    KEY_INT("model.n_heads", model.n_heads, 1, 1024, "4", "Attention heads H; head size is C/H."),
    KEY_INT("model.n_layers", model.n_layers, 1, 1024, "2", "Transformer blocks L."),
    KEY_INT("model.d_ff", model.d_ff, 1, 262144, "512", "Hidden width F of the MLP."),
    KEY_INT("model.seq_len", model.seq_len, 1, 1048576, "128",
            "Context length T (tokens per sequence)."),
    KEY_FLOAT("model.ln_eps", model.ln_eps, 0.0, 1.0, CFG_OPEN_MIN, "1e-5",
              "Epsilon added to the variance in LayerNorm."),
    KEY_FLOAT("model.init_std", model.init_std, 0.0, 10.0, CFG_OPEN_MIN, "0.02",
              "Standard deviation of the normal weight initialisation."),
    KEY_FLOAT("model.dropout", model.dropout, 0.0, 1.0, CFG_OPEN_MAX, "0",
              "Dropout probability on the embeddings and each block's attention and MLP outputs; "
              "masks keyed by (seed, step, global sample, layer, site): 0 disables."),
    KEY_ENUM("model.tie_embeddings", model.tie_embeddings, "false|true", "false",
             "true: the output head's weight is the token embedding wte (GPT-2); false: an "
             "untied head.weight."),
    KEY_ENUM("model.head_bias", model.head_bias, "false|true", "true",
             "true: the output head adds a trained bias of V values (head.bias); false: no bias, "
             "a GPT-2-shaped head (export needs no --head-bias; a checkpoint of it has no "
             "head.bias)."),

    KEY_INT("training.batch_size", training.batch_size, 1, 1048576, "16",
            "Sequences per rank per micro-step (B)."),
    KEY_INT("training.grad_accum", training.grad_accum, 1, 65536, "1",
            "Micro-steps accumulated per optimizer step."),
    KEY_INT("training.steps", training.steps, 1, BIG, "100", "Optimizer steps in the whole run."),
    KEY_INT("training.seed", training.seed, 0, INT64_MAX, "1234", "Seed of parameter init."),
    KEY_INT("training.log_interval", training.log_interval, 1, BIG, "10",
            "Print a progress line every N steps."),
    KEY_INT("training.warmup_bench", training.warmup_bench, 0, BIG, "5",
            "First N steps excluded from throughput figures."),
    KEY_ENUM("training.recompute", training.recompute, "none|block", "none",
             "block: keep only each block's input and recompute the block in backward (about a "
             "third more compute, bit-identical gradients)."),
    KEY_INT("training.zero_stage", training.zero_stage, 0, 2, "0",
            "ZeRO: 1 shards the Adam moments over the ranks, 2 also the gradients; the "
            "parameters are all-gathered after each update (0: every rank holds everything)."),
    KEY_INT("training.eval_interval", training.eval_interval, 0, BIG, "100",
            "Validation loss every N steps and at the end of a run, when data holds out a "
            "split (0: only at the end)."),
    KEY_INT("training.eval_samples", training.eval_samples, 1, 1048576, "64",
            "Size of the fixed validation set: held-out samples 0..N-1, the same at any world "
            "size."),
    KEY_INT("training.max_skipped_steps", training.max_skipped_steps, 1, 64, "5",
            "Loss guard: this many skipped steps within training.skip_window stop the run "
            "(exit 70, end reason diverged)."),
    KEY_INT("training.skip_window", training.skip_window, 1, BIG, "100",
            "Loss guard: the window, in steps, in which skipped steps are counted."),
    KEY_FLOAT("training.spike_threshold", training.spike_threshold, 0.0, 1e6, 0u, "6",
              "Loss guard: skip a step whose loss or gradient norm exceeds its running mean by "
              "this many standard deviations (and by 10%); 0: skip non-finite steps only."),
    KEY_ENUM("training.precision", training.precision, "fp32|bf16", "fp32",
             "bf16: matmul operands rounded to bfloat16, with fp32 sums, fp32 master weights, "
             "Adam state, reductions and loss; needs a CPU with avx512_bf16 or amx_bf16 for "
             "kernels.backend dnnl (else exit 64). Checkpoints are fp32 either way."),

    KEY_ENUM("optimizer.name", optimizer.name, "adam|adamw", "adam",
             "adam: L2 weight decay in the gradient; adamw: decoupled weight decay."),
    KEY_FLOAT("optimizer.lr", optimizer.lr, 0.0, 10.0, CFG_OPEN_MIN, "5e-4",
              "Peak learning rate."),
    KEY_FLOAT("optimizer.beta1", optimizer.beta1, 0.0, 1.0, CFG_OPEN_MAX, "0.9",
              "Adam first-moment decay."),
    KEY_FLOAT("optimizer.beta2", optimizer.beta2, 0.0, 1.0, CFG_OPEN_MAX, "0.999",
              "Adam second-moment decay."),
    KEY_FLOAT("optimizer.eps", optimizer.eps, 0.0, 1.0, CFG_OPEN_MIN, "1e-8",
              "Adam denominator epsilon."),
    KEY_FLOAT("optimizer.weight_decay", optimizer.weight_decay, 0.0, 10.0, 0u, "0",
              "Weight decay coefficient (0 disables)."),
    KEY_FLOAT("optimizer.grad_clip", optimizer.grad_clip, 0.0, 1e6, 0u, "0",
              "Clip the global L2 gradient norm to this (0 disables)."),
    KEY_ENUM("optimizer.schedule", optimizer.schedule, "cosine|constant|linear", "cosine",
             "Learning-rate decay after warmup, down to min_lr_ratio * lr."),
    KEY_INT("optimizer.warmup_steps", optimizer.warmup_steps, 0, BIG, "0",
            "Linear warmup steps from 0 to lr; at most training.steps."),
    KEY_FLOAT("optimizer.min_lr_ratio", optimizer.min_lr_ratio, 0.0, 1.0, 0u, "0",
              "Final learning rate as a fraction of lr."),

    KEY_ENUM("data.kind", data.kind, "random|markov|text|tokens", "random",
             "random: uniform tokens; markov: synthetic chain; text: bytes of data.path; "
             "tokens: token file or data manifest data.path (ryzen-data)."),
    KEY_INT("data.seed", data.seed, 0, INT64_MAX, "1234", "Seed of synthetic data and sampling."),
    KEY_STRING("data.path", data.path, "",
               "Input file, or for kind tokens a manifest of shards (ryzen-data manifest); "
               "required for kind text and tokens."),
    KEY_FLOAT("data.val_fraction", data.val_fraction, 0.0, 1.0, CFG_OPEN_MAX, "0",
              "Held out for validation: this share of the end of a text or tokens file; for "
              "random and markov data any value > 0 holds out a sample stream (0: none)."),
    KEY_STRING("data.val_path", data.val_path, "",
               "Validation file of the same kind as data.path (instead of data.val_fraction)."),
    KEY_ENUM("data.token_dtype", data.token_dtype, "auto|uint16|uint32", "auto",
             "Ids of a tokens file, little-endian; auto: the width in the file's header (a "
             "headerless file needs uint16 or uint32)."),
    KEY_INT("data.markov_branching", data.markov_branching, 1, 65536, "8",
            "Successors per state of the markov chain; at most model.vocab_size."),

    KEY_ENUM("kernels.backend", kernels.backend, "dnnl|ref", "dnnl",
             "dnnl: oneDNN kernels; ref: plain C reference kernels."),

    KEY_INT("checkpoint.interval", checkpoint.interval, 0, BIG, "100",
            "Checkpoint every N steps (0: only at the end and on a stop signal)."),
    KEY_INT("checkpoint.keep", checkpoint.keep, 1, 1000, "3", "Checkpoints kept on disk."),
    KEY_INT("checkpoint.failures_tolerated", checkpoint.failures_tolerated, 0, 1000, "2",
            "Periodic checkpoints in a row that may fail to be written (a full disk, a quota, "
            "an I/O error) while training goes on from the last good one, which stays; one "
            "more ends the run (exit 74).  The checkpoints at a stop signal and at the end "
            "must be written.  0: the first failure ends the run."),
    KEY_ENUM("checkpoint.policy", checkpoint.policy, "fixed|young_daly", "fixed",
             "fixed: every checkpoint.interval steps; young_daly: every sqrt(2 x C x MTBF) "
             "seconds of training (Young 1974, Daly 2006), C the stall a checkpoint costs "
             "this run (measured at each one), MTBF checkpoint.mtbf_s, rounded to steps; "
             "checkpoint.interval until both are known (the log and summary.json say which "
             "interval ran and why)."),
    KEY_FLOAT("checkpoint.mtbf_s", checkpoint.mtbf_s, 0.0, 1e9, 0u, "0",
              "young_daly's mean time between failures, in seconds; 0: what ryzen-step "
              "observed in the run directory's history (training time over the crashes, "
              "hangs and lost nodes of this job's earlier attempts), none before the first."),
    KEY_ENUM("checkpoint.mode", checkpoint.mode, "sync|async", "sync",
             "sync: training waits while a periodic checkpoint is written, fsynced and committed; "
             "async: rank 0 copies the state to a snapshot on a writer thread and training goes "
             "on while it is written (one write in flight; the snapshot is 3 x the parameters "
             "on rank 0, counted by --plan).  The checkpoints at a stop signal and at the end are "
             "written in line either way."),

    KEY_INT("restart.max_restarts", restart.max_restarts, 0, 1000, "3",
            "Restarts after a failure (a crash, a hang, a failed launch) before giving up: "
            "relaunches or requeues, as restart.failures says."),
    KEY_INT("restart.max_signal_requeues", restart.max_signal_requeues, 0, 100000, "20",
            "Requeues after a stop signal, a preemption or a time limit before the job gives "
            "up (two attempts in a row without a new checkpoint give up sooner): see "
            "restart.when_stuck."),
    KEY_ENUM("restart.failures", restart.failures, "relaunch|requeue", "relaunch",
             "How a phase job restarts after a crash or a hang (within restart.max_restarts): "
             "relaunch: ryzen-step runs the preflight and the training again as new job steps "
             "of the same allocation, without the failed node and without a trip through the "
             "queue (the job is requeued when the allocation cannot hold the phase); requeue: "
             "scontrol requeue, the next attempt waits for the scheduler.  Slurm's own requeues "
             "(a node that went down) and stop signals are requeues either way."),
    KEY_ENUM("restart.when_stuck", restart.when_stuck, "fail|hold", "fail",
             "What a phase job does when its restarts run out without progress (two attempts "
             "in a row without a new checkpoint, or restart.max_signal_requeues spent): fail: "
             "it ends FAILED (exit 1) with its NO-GO report, so sacct and Slurm's mail show it; "
             "hold: it is requeued held (scontrol requeuehold) until someone releases it."),

    KEY_INT("health.sync_check_interval", health.sync_check_interval, 0, BIG, "50",
            "Check that ranks agree on parameters every N steps (0 disables)."),
    KEY_ENUM("health.stop_signal", health.stop_signal, "USR2|USR1|TERM", "USR2",
             "Signal that asks for checkpoint-and-exit 75 (SIGTERM always does too)."),
    KEY_FLOAT("health.watchdog_floor_s", health.watchdog_floor_s, 0.0, 1e7, CFG_OPEN_MIN, "300",
              "A step may always run this long before the watchdog fires (exit 76)."),
    KEY_FLOAT("health.watchdog_factor", health.watchdog_factor, 1.0, 1e6, 0u, "10",
              "... or this many times the median step time, whichever is longer."),
    KEY_FLOAT("health.watchdog_checkpoint_s", health.watchdog_checkpoint_s, 0.0, 1e7,
              CFG_OPEN_MIN, "1800",
              "The start (choosing and loading the checkpoint, the ranks' first agreements, "
              "before step 1), a checkpoint commit (the write and the ranks' agreement on it), "
              "or the other work between two steps (metrics, agreement, validation), may run "
              "this long before the watchdog fires (exit 76).  Size it for the checkpoint: 12 "
              "bytes per parameter, written and read at the run directory's slowest rate "
              "(docs/operations.md, \"Sizing\")."),
    KEY_FLOAT("health.preflight_timeout_s", health.preflight_timeout_s, 0.0, 1e7, 0u, "120",
              "ryzen-step ends a preflight step (MPI start-up and the rank checks) still running "
              "after this long, and launches it again (3 tries in all): a hung MPI start-up "
              "costs this, not Slurm's PMIx timeout.  It takes seconds at the ladder's sizes; "
              "raise it for allocations whose MPI start-up is slower.  0: no limit."),
    KEY_FLOAT("health.start_timeout_s", health.start_timeout_s, 0.0, 1e7, 0u, "120",
              "ryzen-step ends a training step whose ranks have not all started their watchdog "
              "(each writes its heartbeat file once MPI is up) this long after its launch: a "
              "hung MPI start-up, which no watchdog sees.  The attempt counts as a hang (76) and "
              "restarts per restart.failures.  Like the preflight, it takes seconds at the "
              "ladder's sizes.  0: no limit."),
    KEY_ENUM("health.start_rendezvous", health.start_rendezvous, "true|false", "true",
             "Every rank of a multi-rank srun step waits, right after MPI_Init, until every "
             "rank has left a file in RUN_DIR/.startup/ before any rank sends an MPI message: "
             "Open MPI 4.1.4 under PMIx can let a peer's first message reach a rank still in "
             "MPI_Init, which then dies on SIGSEGV (docs/reliability.md, \"Start-up "
             "rendezvous\").  Bounded by health.start_timeout_s (120 s when 0); exit 70 naming "
             "the ranks that never arrived (a preflight waits 10 s at most, then goes on with a "
             "warning).  Needs the run directory on a filesystem every node mounts (as the "
             "preflight checks).  false: no rendezvous."),

    KEY_FLOAT("comm.bucket_mb", comm.bucket_mb, 0.0, 4096.0, CFG_OPEN_MIN, "4",
              "Gradient allreduce bucket size in MiB (buckets start as backward finishes them)."),
    KEY_ENUM("comm.allreduce", comm.allreduce, "ring|auto", "ring",
             "The gradient allreduce's algorithm (Open MPI's non-blocking one): ring, where each "
             "node sends 2(P-1)/P of the gradient per step, or auto, Open MPI's own choice, "
             "which sent 4 to 8 gradients a step from rank 0's node on 8 to 16 ranks "
             "(docs/operations.md).  An operator's OMPI_MCA_coll_libnbc_iallreduce_algorithm "
             "wins."),

    KEY_FLOAT("network.min_link_gbps", network.min_link_gbps, 0.0, 1e6, 0u, "0.1",
              "The preflight of a job on several nodes measures every pair of nodes with MPI; "
              "a link slower than this (Gbit/s, either way) fails it (exit 70).  The default "
              "catches a broken or mis-negotiated link (a port at 100 Mbit/s or less measures "
              "under it), not a slow fabric: whether scaling out pays is the ladder's measured "
              "efficiency.  0: never."),
    KEY_FLOAT("network.max_link_latency_us", network.max_link_latency_us, 0.0, 1e9, CFG_OPEN_MIN,
              "2000", "... and a link whose latency (half the least of 21 round trips of 8 bytes) is "
              "above this fails it."),
    KEY_FLOAT("network.probe_mb", network.probe_mb, 0.0, 1024.0, CFG_OPEN_MIN, "1",
              "The size of each measured send of the link probe, in MiB (5 each way per pair)."),

    KEY_INT("metrics.prom_interval", metrics.prom_interval, 0, BIG, "20",
            "Write the live Prometheus textfile every N steps and at each checkpoint (0: off)."),
    KEY_STRING("metrics.prom_dir", metrics.prom_dir, "",
               "Directory of the live textfiles ryzen-<job>-<node>.prom, e.g. node_exporter's "
               "textfile directory (\"\" = RUN_DIR/prom)."),

    KEY_STRING("phase.previous", phase.previous, "",
               "Phase whose latest report is this phase's baseline (\"\" = none)."),
    KEY_STRING("phase.next", phase.next, "", "Phase submitted on GO (\"\" = none)."),
    KEY_ENUM("phase.on_go", phase.on_go, "promote|stop", "promote",
             "On GO: submit phase.next, or stop."),
    KEY_ENUM("phase.on_no_go", phase.on_no_go, "rollback|stop", "rollback",
             "On NO-GO: resubmit phase.previous from this phase's last good checkpoint, or stop."),
    KEY_ENUM("phase.on_hold", phase.on_hold, "stop|promote|rollback", "stop",
             "On HOLD (between the GO and NO-GO thresholds)."),

#define RZ_GATE_KEYS(ID, name, unit, higher, go, no_go, doc, family, help, scale)                  \
    GATE(name, go, no_go, doc),
    RZ_GATES(RZ_GATE_KEYS) /* config/gate_list.h */
#undef RZ_GATE_KEYS
    KEY_FLOAT("gates.min_duration_h", gates.min_duration_h, 0.0, 1e6, 0u, "72",
              "Training hours required for GO (shorter runs are HOLD, never NO-GO)."),
    KEY_INT("gates.min_steps", gates.min_steps, 0, BIG, "0",
            "Optimizer steps required for GO (shorter runs are HOLD)."),
    KEY_STRING("gates.prom_dir", gates.prom_dir, "",
               "Also copy gate.prom into this node_exporter textfile directory (\"\" = off)."),
};
const size_t cfg_n_keys = RZ_ARRAY_LEN(cfg_keys);

_Static_assert(RZ_ARRAY_LEN(cfg_keys) <= CFG_MAX_KEYS, "raise CFG_MAX_KEYS in config.h");

const struct cfg_section cfg_sections[] = {
    {"model", "Shape of the decoder-only transformer."},
    {"training", "Batching, run length, seeds and logging."},
    {"optimizer", "Adam/AdamW and the learning-rate schedule."},
    {"data", "Where training tokens come from."},
    {"kernels", "Which implementation of the layer kernels runs."},
    {"checkpoint", "Periodic checkpoints."},
    {"restart", "Automatic restart after failures."},
    {"health", "Cross-rank consistency checks, stop signals and the hang watchdog."},
    {"comm", "Gradient communication between ranks."},
    {"network", "The links between the nodes of a multi-node phase, measured by its preflight."},
    {"metrics", "Live Prometheus metrics while training (docs/monitoring.md)."},
    {"phase", "Where this phase sits in the scaling chain, and what its verdict triggers."},
    {"gates", "Go/no-go thresholds of the phase report (docs/gates.md)."},
};
const size_t cfg_n_sections = RZ_ARRAY_LEN(cfg_sections);

/* ---- table lookups ---------------------------------------------------------------------- */

int cfg_key_index(const char *name)
{
    for (size_t i = 0; i < cfg_n_keys; i++)
        if (strcmp(cfg_keys[i].name, name) == 0)
            return (int)i;
    return -1;
}

const char *cfg_key_leaf(const struct cfg_key *k)
{
    const char *dot = strchr(k->name, '.');
    assert(dot != NULL && "key names are section.leaf");
    return dot + 1;
}

size_t cfg_key_section_len(const struct cfg_key *k)
{
    return (size_t)(cfg_key_leaf(k) - 1 - k->name);
}

bool cfg_section_exists(const char *name, size_t len)
{
    for (size_t i = 0; i < cfg_n_keys; i++)
        if (cfg_key_section_len(&cfg_keys[i]) == len && memcmp(cfg_keys[i].name, name, len) == 0)
            return true;
    return false;
}

const char *cfg_type_name(enum cfg_type type)
{
    switch (type) {
    case CFG_INT: return "integer";
    case CFG_FLOAT: return "float";
    case CFG_STRING: return "string";
    case CFG_ENUM: return "enum";
    }
    return "?";
}

void cfg_show(const char *s, size_t len, char *buf, size_t cap)
{
    static const size_t max_shown = 60;
    size_t o = 0;
    assert(cap >= 8);
    for (size_t i = 0; i < len && i < max_shown; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (o + 5 >= cap - 4)
            break;
        if (ch >= 0x20 && ch < 0x7f)
            buf[o++] = (char)ch;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
    }
    if (len > max_shown || o + 5 >= cap - 4)
        o += (size_t)snprintf(buf + o, cap - o, "...");
    buf[o] = '\0';
}

/* ---- field access ----------------------------------------------------------------------- */

static int64_t get_int(const struct cfg_key *k, const struct cfg *c)
{
    int64_t v;
    memcpy(&v, (const char *)c + k->offset, sizeof v);
    return v;
}

static double get_float(const struct cfg_key *k, const struct cfg *c)
{
    double v;
    memcpy(&v, (const char *)c + k->offset, sizeof v);
    return v;
}

static const char *get_string(const struct cfg_key *k, const struct cfg *c)
{
    return (const char *)c + k->offset;
}

/* ---- scalar parsing --------------------------------------------------------------------- */

/* YAML's plain-scalar spellings of null; an empty value is never a valid setting. */
static bool is_null(const char *s, size_t len)
{
    static const char *const nulls[] = {"~", "null", "Null", "NULL"};
    if (len == 0)
        return true;
    for (size_t i = 0; i < RZ_ARRAY_LEN(nulls); i++)
        if (strlen(nulls[i]) == len && memcmp(nulls[i], s, len) == 0)
            return true;
    return false;
}

/* Decimal digits with an optional sign; overflow is detected, not wrapped. */
static enum rz_status parse_int(const char *s, size_t len, int64_t *out, struct rz_err *cause)
{
    char shown[96];
    cfg_show(s, len, shown, sizeof shown);
    bool neg = len > 0 && s[0] == '-';
    size_t i = (len > 0 && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
    if (i == len)
        return rz_fail(cause, RZ_ECONFIG, "expected an integer, got '%s'", shown);
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX, mag = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return rz_fail(cause, RZ_ECONFIG, "expected an integer, got '%s'", shown);
        uint64_t d = (uint64_t)(s[i] - '0');
        if (mag > (limit - d) / 10)
            return rz_fail(cause, RZ_ECONFIG,
                           "expected an integer, got '%s' (does not fit in 64 bits)", shown);
        mag = mag * 10 + d;
    }
    if (!neg)
        *out = (int64_t)mag;
    else
        *out = mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)mag;
    return RZ_OK;
}

/* Decimal or exponent notation only (no hex, inf or nan); strtod must consume all of it. */
static enum rz_status parse_float(const char *s, size_t len, double *out, struct rz_err *cause)
{
    char shown[96], buf[128];
    cfg_show(s, len, shown, sizeof shown);
    bool ok = len > 0 && len < sizeof buf;
    for (size_t i = 0; ok && i < len; i++)
        ok = strchr("0123456789+-.eE", s[i]) != NULL && s[i] != '\0';
    if (!ok)
        return rz_fail(cause, RZ_ECONFIG, "expected a number, got '%s'", shown);
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + len)
        return rz_fail(cause, RZ_ECONFIG, "expected a number, got '%s'", shown);
    if (errno == ERANGE || !isfinite(v))
        return rz_fail(cause, RZ_ECONFIG,
                       "expected a finite number, got '%s' (outside the normal range of a double)",
                       shown);
    *out = v;
    return RZ_OK;
}

static bool enum_has(const char *choices, const char *s, size_t len)
{
    for (const char *p = choices;;) {
        const char *bar = strchr(p, '|');
        size_t n = bar != NULL ? (size_t)(bar - p) : strlen(p);
        if (n == len && memcmp(p, s, len) == 0)
            return true;
        if (bar == NULL)
            return false;
        p = bar + 1;
    }
}

/* Shortest text that strtod reads back to exactly v; whole numbers without an exponent. */
static void format_double(double v, char *buf, size_t len)
{
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, len, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static enum rz_status check_int(const struct cfg_key *k, int64_t v, struct rz_err *cause)
{
    char bounds[96];
    if (v >= k->imin && v <= k->imax)
        return RZ_OK;
    cfg_key_format_bounds(k, bounds, sizeof bounds);
    return rz_fail(cause, RZ_ECONFIG, "expected an integer in %s, got %" PRId64, bounds, v);
}

static enum rz_status check_float(const struct cfg_key *k, double v, struct rz_err *cause)
{
    char bounds[96], shown[40];
    bool lo = (k->open & CFG_OPEN_MIN) ? v > k->fmin : v >= k->fmin;
    bool hi = (k->open & CFG_OPEN_MAX) ? v < k->fmax : v <= k->fmax;
    if (isfinite(v) && lo && hi)
        return RZ_OK;
    cfg_key_format_bounds(k, bounds, sizeof bounds);
    format_double(v, shown, sizeof shown);
    return rz_fail(cause, RZ_ECONFIG, "expected a number in %s, got %s", bounds, shown);
}

static enum rz_status check_enum(const struct cfg_key *k, const char *s, size_t len,
                                 struct rz_err *cause)
{
    char shown[96], near[CFG_KEY_NAME_MAX];
    if (enum_has(k->choices, s, len))
        return RZ_OK;
    cfg_show(s, len, shown, sizeof shown);
    if (cfg_enum_suggest(k, s, len, near, sizeof near))
        return rz_fail(cause, RZ_ECONFIG, "expected one of %s, got '%s'; did you mean '%s'?",
                       k->choices, shown, near);
    return rz_fail(cause, RZ_ECONFIG, "expected one of %s, got '%s'", k->choices, shown);
}

/* Well-formed UTF-8 without control characters (C0, DEL, C1, U+FFFE/U+FFFF): exactly what
 * libyaml's reader accepts inside a scalar, so cfg_write_yaml's output can always be read back. */
static bool printable_utf8(const unsigned char *s, size_t len)
{
    static const uint32_t min_cp[] = {0, 0x80, 0x800, 0x10000};
    for (size_t i = 0; i < len;) {
        unsigned char b = s[i];
        size_t n;
        uint32_t cp;
        if (b < 0x80) {
            n = 0;
            cp = b;
        } else if ((b & 0xe0) == 0xc0) {
            n = 1;
            cp = b & 0x1fu;
        } else if ((b & 0xf0) == 0xe0) {
            n = 2;
            cp = b & 0x0fu;
        } else if ((b & 0xf8) == 0xf0) {
            n = 3;
            cp = b & 0x07u;
        } else {
            return false;
        }
        if (len - i <= n)
            return false;
        for (size_t j = 1; j <= n; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + j] & 0x3fu);
        }
        if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0xfffe || cp == 0xffff)
            return false;
        i += n + 1;
    }
    return true;
}

static enum rz_status check_string(const struct cfg_key *k, const char *s, size_t len,
                                   struct rz_err *cause)
{
    if (memchr(s, '\0', len) != NULL)
        return rz_fail(cause, RZ_ECONFIG, "string contains a NUL byte");
    if (!printable_utf8((const unsigned char *)s, len))
        return rz_fail(cause, RZ_ECONFIG, "string is not valid UTF-8 or has control characters");
    if (len >= k->size)
        return rz_fail(cause, RZ_ECONFIG, "string of %zu bytes is too long (at most %zu)", len,
                       k->size - 1);
    if (k->type == CFG_ENUM)
        return check_enum(k, s, len, cause);
    return RZ_OK;
}

static const char *expected(enum cfg_type type)
{
    switch (type) {
    case CFG_INT: return "an integer";
    case CFG_FLOAT: return "a number";
    case CFG_STRING: return "a string; write \"\" for an empty one";
    case CFG_ENUM: return "one of the choices";
    }
    return "?";
}

/* Numbers must be plain scalars: a quoted "256" is a string and would hide a typo'd type. */
static enum rz_status reject_quoted(const char *s, size_t len, enum cfg_type type,
                                    struct rz_err *cause)
{
    char shown[96];
    cfg_show(s, len, shown, sizeof shown);
    return rz_fail(cause, RZ_ECONFIG, "expected %s, got the quoted string \"%s\" (remove the quotes)",
                   expected(type), shown);
}

enum rz_status cfg_key_assign(const struct cfg_key *k, struct cfg *c, const char *text, size_t len,
                              bool quoted, struct rz_err *cause)
{
    char *dst = (char *)c + k->offset;
    if (!quoted && is_null(text, len))
        return rz_fail(cause, RZ_ECONFIG, "empty value (expected %s)", expected(k->type));
    if (quoted && (k->type == CFG_INT || k->type == CFG_FLOAT))
        return reject_quoted(text, len, k->type, cause);
    switch (k->type) {
    case CFG_INT: {
        int64_t v = 0;
        if (parse_int(text, len, &v, cause) != RZ_OK || check_int(k, v, cause) != RZ_OK)
            return RZ_ECONFIG;
        memcpy(dst, &v, sizeof v);
        return RZ_OK;
    }
    case CFG_FLOAT: {
        double v = 0.0;
        if (parse_float(text, len, &v, cause) != RZ_OK || check_float(k, v, cause) != RZ_OK)
            return RZ_ECONFIG;
        memcpy(dst, &v, sizeof v);
        return RZ_OK;
    }
    case CFG_STRING:
    case CFG_ENUM:
        if (check_string(k, text, len, cause) != RZ_OK)
            return RZ_ECONFIG;
        memset(dst, 0, k->size);
        memcpy(dst, text, len);
        return RZ_OK;
    }
    return rz_fail(cause, RZ_ECONFIG, "key has no type");
}

enum rz_status cfg_key_check(const struct cfg_key *k, const struct cfg *c, struct rz_err *cause)
{
    switch (k->type) {
    case CFG_INT: return check_int(k, get_int(k, c), cause);
    case CFG_FLOAT: return check_float(k, get_float(k, c), cause);
    case CFG_STRING:
    case CFG_ENUM: {
        const char *s = get_string(k, c);
        size_t n = strnlen(s, k->size);
        if (n == k->size)
            return rz_fail(cause, RZ_ECONFIG, "string is not NUL-terminated");
        return check_string(k, s, n, cause);
    }
    }
    return rz_fail(cause, RZ_ECONFIG, "key has no type");
}

/* ---- formatting ------------------------------------------------------------------------- */

void cfg_key_format(const struct cfg_key *k, const struct cfg *c, char *buf, size_t len)
{
    switch (k->type) {
    case CFG_INT: snprintf(buf, len, "%" PRId64, get_int(k, c)); return;
    case CFG_FLOAT: format_double(get_float(k, c), buf, len); return;
    case CFG_STRING:
    case CFG_ENUM: snprintf(buf, len, "%s", get_string(k, c)); return;
    }
}

void cfg_key_format_bounds(const struct cfg_key *k, char *buf, size_t len)
{
    char lo[40], hi[40];
    switch (k->type) {
    case CFG_INT:
        snprintf(buf, len, "[%" PRId64 ", %" PRId64 "]", k->imin, k->imax);
        return;
    case CFG_FLOAT:
        format_double(k->fmin, lo, sizeof lo);
        format_double(k->fmax, hi, sizeof hi);
        snprintf(buf, len, "%c%s, %s%c", (k->open & CFG_OPEN_MIN) ? '(' : '[', lo, hi,
                 (k->open & CFG_OPEN_MAX) ? ')' : ']');
        return;
    case CFG_STRING: snprintf(buf, len, "at most %zu bytes", k->size - 1); return;
    case CFG_ENUM: snprintf(buf, len, "%s", k->choices); return;
    }
}

bool cfg_key_equal(const struct cfg_key *k, const struct cfg *a, const struct cfg *b)
{
    if (k->type == CFG_STRING || k->type == CFG_ENUM)
        return strcmp(get_string(k, a), get_string(k, b)) == 0;
    return memcmp((const char *)a + k->offset, (const char *)b + k->offset, k->size) == 0;
}

/* ---- did you mean ----------------------------------------------------------------------- */

#define EDIT_MAX 64

size_t cfg_edit_distance(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t rows[3][EDIT_MAX + 1];
    size_t *pp = rows[0], *prev = rows[1], *cur = rows[2];
    if (alen > EDIT_MAX || blen > EDIT_MAX)
        return SIZE_MAX / 2;
    for (size_t j = 0; j <= blen; j++)
        prev[j] = j;
    for (size_t i = 1; i <= alen; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= blen; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = prev[j - 1] + cost;
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1; /* transposition */
            cur[j] = best;
        }
        size_t *t = pp;
        pp = prev;
        prev = cur;
        cur = t;
    }
    return prev[blen];
}

/* Close enough to be worth suggesting: about one edit per three characters. */
static bool close_enough(size_t dist, size_t len)
{
    size_t limit = len / 3 > 1 ? len / 3 : 1;
    return dist <= limit;
}

/* Distance between a typed leaf name and a candidate leaf; a prefix of at least half the
 * candidate counts as one edit ("vocab" -> "vocab_size"). */
static size_t leaf_distance(const char *s, size_t len, const char *cand)
{
    size_t clen = strlen(cand);
    if (len >= 4 && len < clen && 2 * len >= clen && memcmp(s, cand, len) == 0)
        return 1;
    return cfg_edit_distance(s, len, cand, clen);
}

struct suggestion {
    const char *best;
    size_t score;
};

static void consider(struct suggestion *sg, const char *cand, size_t dist, size_t len, bool same)
{
    size_t score = 2 * dist + (same ? 0 : 1);
    if (close_enough(dist, len) && score < sg->score) {
        sg->best = cand;
        sg->score = score;
    }
}

const char *cfg_key_suggest(const char *name, size_t len)
{
    struct suggestion sg = {NULL, SIZE_MAX};
    const char *dot = memchr(name, '.', len);
    const char *leaf = dot != NULL ? dot + 1 : name;
    size_t leaf_len = len - (size_t)(leaf - name), sec_len = dot != NULL ? (size_t)(dot - name) : 0;
    for (size_t i = 0; i < cfg_n_keys; i++) {
        const struct cfg_key *k = &cfg_keys[i];
        bool same = sec_len == cfg_key_section_len(k) && memcmp(name, k->name, sec_len) == 0;
        consider(&sg, k->name, cfg_edit_distance(name, len, k->name, strlen(k->name)), len, same);
        consider(&sg, k->name, leaf_distance(leaf, leaf_len, cfg_key_leaf(k)), leaf_len, same);
    }
    for (size_t i = 0; dot == NULL && i < cfg_n_sections; i++) {
        const char *sec = cfg_sections[i].name;
        consider(&sg, sec, cfg_edit_distance(name, len, sec, strlen(sec)), len, true);
    }
    return sg.best;
}

bool cfg_enum_suggest(const struct cfg_key *k, const char *text, size_t len, char *buf,
                      size_t buflen)
{
    struct suggestion sg = {NULL, SIZE_MAX};
    size_t best_len = 0;
    for (const char *p = k->choices;;) {
        const char *bar = strchr(p, '|');
        size_t n = bar != NULL ? (size_t)(bar - p) : strlen(p);
        size_t before = sg.score;
        consider(&sg, p, cfg_edit_distance(text, len, p, n), len, true);
        if (sg.score != before)
            best_len = n;
        if (bar == NULL)
            break;
        p = bar + 1;
    }
    if (sg.best == NULL || best_len >= buflen)
        return false;
    memcpy(buf, sg.best, best_len);
    buf[best_len] = '\0';
    return true;
}
