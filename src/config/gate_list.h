/* gate_list.h: the phase report's criteria that have a GO and a NO-GO threshold, written once.
 * Each X(ID, name, unit, higher, go, no_go, doc, family, help, scale) is:
 *   ID      the criterion's enum name after GATE_ (gate/gate.h)
 *   name    its name in reports and in the keys gates.<name>_go and gates.<name>_no_go
 *   unit    the unit of its measured value in reports
 *   higher  whether a higher value is better (GO at >= go, NO-GO below no_go); else GO at
 *           <= go and NO-GO above no_go; between the two: HOLD
 *   go, no_go  the keys' defaults
 *   doc     the key's documentation (docs/config.md)
 *   family, help, scale  gate.prom's family for the measured value, its HELP, and the factor
 *           from the report's unit to the family's base unit (ms -> s, % -> ratio)
 * Read by config/cfg.h (struct cfg_gates), config/keys.c (the keys), gate/gate.h (enum
 * gate_crit), gate/gate_eval.c (the criteria's table) and gate/gate_prom.c (the families).  The
 * duration criterion is not here: its one threshold is gates.min_duration_h. */
#ifndef RZ_CONFIG_GATE_LIST_H
#define RZ_CONFIG_GATE_LIST_H

#define RZ_GATES(X)                                                                               \
    X(THROUGHPUT, throughput, "samples/s", 1, 250, 200,                                          \
      "Samples/s, median over windows (higher is better).",                                      \
      "ryzen_gate_throughput_samples_per_second",                                                \
      "Steady-state global throughput, median over windows.", 1)                                 \
    X(EFFICIENCY, efficiency, "ratio", 1, 0.90, 0.80,                                            \
      "Weak-scaling efficiency vs the baseline report (higher is better; >1.02 is suspect).",    \
      "ryzen_gate_efficiency_ratio", "Weak-scaling efficiency against the baseline.", 1)         \
    X(COMM, comm, "share", 0, 0.10, 0.20,                                                        \
      "Exposed communication / step time (lower is better).",                                    \
      "ryzen_gate_comm_exposed_ratio", "Exposed communication / step time, worst rank.", 1)      \
    X(ALLREDUCE_P99_MS, allreduce_p99_ms, "ms", 0, 3, 10,                                        \
      "Small-allreduce latency p99 in ms (lower is better).",                                    \
      "ryzen_gate_allreduce_p99_seconds",                                                        \
      "Small-collective latency, 99th percentile over steady steps.", 1e-3)                      \
    X(SYNC_AGREEMENT, sync_agreement, "share", 1, 1, 1,                                          \
      "Share of sync checks with identical parameter hashes (higher is better).",                \
      "ryzen_gate_sync_agreement_ratio", "Share of sync checks where every rank agreed.", 1)     \
    X(GRAD_NORM_SPREAD, grad_norm_spread, "relative", 0, 1e-5, 1e-3,                             \
      "Max relative spread of per-rank post-allreduce gradient norms (lower is better).",        \
      "ryzen_gate_grad_norm_spread_ratio",                                                       \
      "Max relative spread of post-allreduce gradient norms.", 1)                                \
    X(LOSS_VS_BASELINE_PCT, loss_vs_baseline_pct, "%", 0, 2, 10,                                 \
      "Loss above the baseline at matched samples seen, in percent (lower is better).",          \
      "ryzen_gate_loss_vs_baseline_ratio",                                                       \
      "(loss - baseline loss) / baseline loss at matched samples.", 1e-2)                        \
    X(ENTROPY_GAP, entropy_gap, "nats", 0, 0.15, 0.5,                                            \
      "Final loss minus the markov entropy floor, nats (lower is better; markov data only).",    \
      "ryzen_gate_entropy_gap_nats", "Final loss minus the markov entropy floor.", 1)            \
    X(UNIGRAM_MARGIN, unigram_margin, "nats", 1, 0.5, 0.1,                                      \
      "Corpus unigram entropy minus the final loss, nats (higher is better; text and tokens "     \
      "only).", "ryzen_gate_unigram_margin_nats",                                                \
      "Unigram entropy of the training tokens minus the final loss.", 1)                        \
    X(FAILURES, failures, "count", 0, 0, 3, "Failure restarts of the job (lower is better).",    \
      "ryzen_gate_failure_requeues",                                                             \
      "Requeues after a failure, plus give-ups, of the judged job.", 1)                          \
    X(MEMORY, memory, "share", 0, 0.80, 0.95,                                                    \
      "Peak RSS per node / node memory (lower is better).", "ryzen_gate_memory_peak_ratio",      \
      "Peak RSS / node memory, worst node.", 1)                                                  \
    X(UPTIME, uptime, "share", 1, 0.95, 0.80,                                                    \
      "Training time / wall time including restarts (higher is better).",                        \
      "ryzen_gate_uptime_ratio", "Training time / wall time including restarts.", 1)             \
    X(STRAGGLER_RATIO, straggler_ratio, "ratio", 0, 1.15, 1.5,                                   \
      "Slowest rank's mean compute time / the median rank's (lower is better).",                 \
      "ryzen_gate_straggler_ratio", "Slowest rank's mean compute time / the median rank's.", 1)  \
    X(PACKET_LOSS, packet_loss, "share", 0, 0, 0.001,                                            \
      "Data segments lost / sent by the MPI connections between nodes during training, worst "   \
      "node (lower is better; GO at none lost, NO-GO when the 95% lower bound is above 0.1%).",  \
      "ryzen_gate_packet_loss_ratio",                                                            \
      "Data segments lost / sent by the MPI connections between nodes, worst node.", 1)

#endif
