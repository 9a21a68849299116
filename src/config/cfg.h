/* cfg.h: the typed run configuration, loaded from YAML (libyaml) and `--set` overrides.
 *
 * One key table (config/keys.c) lists every key: dotted name, type, bounds, default and a one-line
 * doc.  That table drives parsing, validation, `--set`, defaults and the generated reference
 * docs/config.md.  Only this module includes yaml.h.
 *
 * Errors: cfg_load/cfg_set/cfg_validate collect *every* problem before failing; each line of the
 * message reads "FILE:LINE:COLUMN: KEY: cause" (overrides: "--set KEY: cause"), unknown keys get a
 * "did you mean 'x'?" suggestion.  They return RZ_ECONFIG (exit 64).
 * Ownership: struct cfg is a plain value with fixed-size strings; nothing to free. */
#ifndef RZ_CONFIG_CFG_H
#define RZ_CONFIG_CFG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config/gate_list.h"
#include "core/status.h"

#define CFG_STR_MAX 256
#define CFG_PATH_MAX 1024
#define CFG_MAX_KEYS 128        /* capacity of cfg.origin; the key table may grow up to this */

/* Where a key's value came from, for cross-key messages ("f.yaml:3:12", "--set", "(default)"). */
enum cfg_origin_kind {
    CFG_ORIGIN_DEFAULT = 0,
    CFG_ORIGIN_FILE,            /* line/column of the value node in cfg.source (1-based) */
    CFG_ORIGIN_SET,             /* a --set override */
};

struct cfg_origin {
    enum cfg_origin_kind kind;
    int line, column;
};

struct cfg_model {
    int64_t vocab_size;   /* V */
    int64_t d_model;      /* C */
    int64_t n_heads;      /* H; C % H == 0 */
    int64_t n_layers;     /* L */
    int64_t d_ff;         /* F */
    int64_t seq_len;      /* T */
    double ln_eps;
    double init_std;
    double dropout;       /* p on the embeddings and each block's two residual branches */
    char tie_embeddings[CFG_STR_MAX]; /* "false" | "true" */
    char head_bias[CFG_STR_MAX];      /* "true" | "false": head.bias (false: GPT-2's lm_head) */
};

struct cfg_training {
    int64_t batch_size;   /* per rank, per micro-step */
    int64_t grad_accum;   /* micro-steps per optimizer step */
    int64_t steps;        /* optimizer steps in the whole run */
    int64_t seed;         /* parameter init seed */
    int64_t log_interval; /* human progress line every N steps */
    int64_t warmup_bench; /* steps excluded from throughput figures */
    char recompute[CFG_STR_MAX]; /* "none" | "block" */
    int64_t zero_stage;   /* 0 | 1 (shard Adam moments) | 2 (and gradients) */
    int64_t eval_interval;/* validation loss every N steps (0: only at the end) */
    int64_t eval_samples; /* size of the fixed validation set */
    int64_t max_skipped_steps; /* loss guard: skips within skip_window that stop the run */
    int64_t skip_window;  /* loss guard: steps */
    double spike_threshold; /* loss guard: standard deviations; 0 = non-finite steps only */
    char precision[CFG_STR_MAX]; /* "fp32" | "bf16": the matmuls' operands */
};

struct cfg_optimizer {
    char name[CFG_STR_MAX];     /* "adam" | "adamw" */
    double lr;
    double beta1, beta2, eps;
    double weight_decay;
    double grad_clip;           /* global L2 norm; 0 disables */
    char schedule[CFG_STR_MAX]; /* "cosine" | "constant" | "linear" */
    int64_t warmup_steps;
    double min_lr_ratio;        /* floor of the decay, as a fraction of lr */
};

struct cfg_data {
    char kind[CFG_STR_MAX];     /* "random" | "markov" | "text" | "tokens" */
    int64_t seed;
    char path[CFG_PATH_MAX];    /* for text and tokens */
    double val_fraction;        /* held-out share (file end, or a stream of its own) */
    char val_path[CFG_PATH_MAX];/* validation file instead ("" = none) */
    char token_dtype[CFG_STR_MAX]; /* "auto" | "uint16" | "uint32" (tokens files) */
    int64_t markov_branching;   /* successors per state of the markov chain */
};

struct cfg_kernels {
    char backend[CFG_STR_MAX];  /* "dnnl" | "ref" */
};

struct cfg_checkpoint {
    int64_t interval;           /* steps; 0 disables periodic checkpoints */
    int64_t keep;
    char mode[CFG_STR_MAX];     /* "sync" | "async": periodic checkpoints written behind training */
    char policy[CFG_STR_MAX];   /* "fixed" | "young_daly": how the interval is chosen */
    double mtbf_s;              /* young_daly: the mean time between failures; 0: observed */
    int64_t failures_tolerated; /* periodic checkpoints in a row that may fail to write */
};

struct cfg_restart {
    int64_t max_restarts;        /* failure requeues */
    int64_t max_signal_requeues; /* signal, preemption and time-limit requeues */
    char when_stuck[CFG_STR_MAX]; /* "fail" | "hold": restarts that ran out without progress */
    char failures[CFG_STR_MAX];   /* "relaunch" | "requeue": how a crash or hang restarts */
};

struct cfg_health {
    int64_t sync_check_interval;
    char stop_signal[CFG_STR_MAX];  /* "USR2" | "USR1" | "TERM" */
    double watchdog_floor_s;
    double watchdog_factor;
    double watchdog_checkpoint_s;
    double preflight_timeout_s; /* ryzen-step ends a preflight step that runs longer (0: never) */
    double start_timeout_s;     /* ... and a training step whose ranks are not all up by then */
    char start_rendezvous[CFG_STR_MAX]; /* "true" | "false": the file rendezvous after MPI_Init */
};

struct cfg_comm {
    double bucket_mb;
    char allreduce[CFG_STR_MAX]; /* "ring" | "auto": the gradient iallreduce's algorithm */
};

/* The network between the job's nodes, measured by the preflight of a multi-node phase. */
struct cfg_network {
    double min_link_gbps;        /* every link's rate, each way, at least this */
    double max_link_latency_us;  /* every link's latency at most this */
    double probe_mb;             /* each measured send */
};

/* Live metrics while training (docs/monitoring.md). */
struct cfg_metrics {
    int64_t prom_interval;      /* steps between textfile writes; 0 = off */
    char prom_dir[CFG_PATH_MAX];/* textfile directory ("" = RUN_DIR/prom) */
};

/* The scaling phase this config is, and what follows its verdict (ryzen-step, ryzen-gate). */
struct cfg_phase {
    char previous[CFG_STR_MAX];  /* phase whose latest report is the baseline ("" = none) */
    char next[CFG_STR_MAX];      /* phase submitted on GO ("" = none) */
    char on_go[CFG_STR_MAX];     /* "promote" | "stop" */
    char on_no_go[CFG_STR_MAX];  /* "rollback" | "stop" */
    char on_hold[CFG_STR_MAX];   /* "stop" | "promote" | "rollback" */
};

/* Go/no-go thresholds (docs/gates.md).  For "higher is better" metrics GO needs value >= go and
 * NO-GO trips at value < no_go; for "lower is better" ones GO needs value <= go and NO-GO trips
 * at value > no_go.  Between the two: HOLD. */
struct cfg_gates {
#define RZ_GATE_FIELDS(ID, name, unit, higher, go, no_go, doc, family, help, scale)                \
    double name##_go, name##_no_go;
    RZ_GATES(RZ_GATE_FIELDS) /* config/gate_list.h */
#undef RZ_GATE_FIELDS
    double min_duration_h;                             /* shorter runs are HOLD, never GO */
    int64_t min_steps;
    char prom_dir[CFG_PATH_MAX];                       /* node_exporter textfile dir ("" = off) */
};

struct cfg {
    char source[CFG_PATH_MAX];  /* file the config came from ("" if none) */
    struct cfg_model model;
    struct cfg_training training;
    struct cfg_optimizer optimizer;
    struct cfg_data data;
    struct cfg_kernels kernels;
    struct cfg_checkpoint checkpoint;
    struct cfg_restart restart;
    struct cfg_health health;
    struct cfg_comm comm;
    struct cfg_network network;
    struct cfg_metrics metrics;
    struct cfg_phase phase;
    struct cfg_gates gates;
    struct cfg_origin origin[CFG_MAX_KEYS]; /* indexed like the key table (config/keys.h) */
};

/* Fill every key with its table default. */
void cfg_defaults(struct cfg *c);

/* Load YAML file `path` on top of the defaults (calls cfg_defaults first).  Structural problems
 * (syntax, unknown keys, wrong types, out-of-range values) are all collected. Does not run the
 * cross-key checks: call cfg_validate after applying overrides. */
enum rz_status cfg_load(struct cfg *c, const char *path, struct rz_err *err);

/* Load from an in-memory YAML document; `name` is used as the file name in messages. */
enum rz_status cfg_load_string(struct cfg *c, const char *name, const char *yaml, struct rz_err *err);

/* Apply one "dotted.key=value" override, parsed with the same rules as the YAML scalar. */
enum rz_status cfg_set(struct cfg *c, const char *assignment, struct rz_err *err);

/* What every program does: cfg_load(path), then cfg_set for each of the n overrides, then
 * cfg_validate; stops at the first stage that fails. */
enum rz_status cfg_load_with_overrides(struct cfg *c, const char *path, const char *const *sets,
                                       int n, struct rz_err *err);

/* Cross-key consistency (d_model % n_heads, data.path required for text/tokens, ...). */
enum rz_status cfg_validate(const struct cfg *c, struct rz_err *err);

/* The phase name of a config file: its base name without .yaml/.yml ("configs/phase1_4proc.yaml"
 * -> "phase1_4proc"), which names the run directory and the reports.  False if it does not fit. */
bool cfg_phase_name(const char *path, char *out, size_t len);

/* Write the resolved config as YAML (used in checkpoints and run directories). */
void cfg_write_yaml(const struct cfg *c, FILE *out);

/* Write the Markdown key reference (docs/config.md) generated from the key table. */
void cfg_write_reference(FILE *out);

#endif
