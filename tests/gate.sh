#!/bin/sh
# gate.sh: ryzen-gate as ryzen-step and an operator run it, on the run directory of a real
# (short, one-rank) ryzen-train run: usage and options (getopt_long: --config FILE and
# --config=FILE, --help, --version), an ordinary report, and the report of a phase that ended
# without finishing training (--ended REASON --why TEXT [--status N]): NO-GO with exit 1, HOLD
# with exit 2 for nothing_to_train, from partial metrics or none at all; the preflight's link
# matrix in all three reports; --csv's steps.csv, read back with Python's csv module.
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
gate=$build/ryzen-gate
tmp=$(mktemp -d /tmp/rz-gate-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/lib.sh"

cfg=$src/configs/phase1_4proc.yaml
# The throughput gate is opened: the verdicts below are about how a phase ended and what the
# report holds, and phase1's 200 samples/s NO-GO floor would judge the machine (a 12-step run
# of this model makes about 650 samples/s on a loaded 2-core VM: 4x slower would be NO-GO).
small="--set model.vocab_size=128 --set model.d_model=64 --set model.n_heads=2
  --set model.d_ff=128 --set model.seq_len=32 --set training.batch_size=4
  --set training.steps=12 --set checkpoint.interval=4 --set training.warmup_bench=2
  --set gates.throughput_go=0 --set gates.throughput_no_go=0"
run=$tmp/runs/phase1_4proc

expect "--help" 0 "--ended REASON --why TEXT \\[--status N\\]" -- "$gate" --help
expect "--version" 0 "^ryzen-gate \(ryzen-llm\) [0-9.]+" -- "$gate" --version
expect "no arguments" 64 "--config and --run-dir are required" -- "$gate"
expect "an unknown option" 64 "unknown option '--bogus'" -- "$gate" --bogus
expect "an option without its value" 64 "option '--run-dir' needs a value" -- \
  "$gate" --config "$cfg" --run-dir
expect "an unknown end reason" 64 "--ended 'crash': one of health, give_up" -- \
  "$gate" --config "$cfg" --run-dir "$run" --job 5 --ended crash --why x
expect "--ended without --why" 64 "--ended needs --job ID and --why TEXT" -- \
  "$gate" --config "$cfg" --run-dir "$run" --job 5 --ended health
expect "--why without --ended" 64 "--why and --status go with --ended" -- \
  "$gate" --config "$cfg" --run-dir "$run" --why x
expect "a bad --status" 64 "--status needs an exit status 0..255, got '7x'" -- \
  "$gate" --config "$cfg" --run-dir "$run" --job 5 --ended io --why x --status 7x

# a phase that failed its preflight: no metrics, no checkpoints, only health.json
mkdir -p "$run"
printf '%s\n' '{"ok":false,"world_size":2,"checks":[{"name":"ring","ok":true,"detail":"2 ranks"},{"name":"memory","ok":false,"detail":"n2: 1 GiB free"}],"ranks":[]}' >"$run/health.json"
expect "--ended health with no metrics at all: NO-GO, exit 1" 1 \
  "ended without finishing training: health: preflight failed on n2" -- \
  "$gate" --config="$cfg" --run-dir="$run" --job=501 --ended=health \
  --why="preflight failed on n2" --status=70 $small
r=$run/reports/501
check "... report.json says how it ended" \
  json_ok "$r/report.json" '.verdict == "NO-GO" and .ended == "health" and
    .why == "preflight failed on n2" and .status == 70 and .last_good_checkpoint == null'
check "... with the preflight's checks" \
  json_ok "$r/report.json" '.health.checks[:2] ==
    [{name: "ring", ok: true, detail: "2 ranks"}, {name: "memory", ok: false, detail: "n2: 1 GiB free"}]'
check "... and all four files" test -s "$r/report.md" -a -s "$r/report.html" -a -s "$r/gate.prom"
check "... report.md names the failed check" grep -q "preflight check memory: FAILED" "$r/report.md"
expect "--ended io: NO-GO" 1 "verdict NO-GO" -- env SLURM_CPUS_PER_TASK=3 "$gate" --config "$cfg" \
  --run-dir "$run" --job 502 --ended io --why x $small
check "... CPUs per rank from SLURM_CPUS_PER_TASK as main read it" \
  json_ok "$run/reports/502/report.json" '.environment.cpus_per_rank == "3"'

# a preflight that measured the links between three nodes, n3's at a tenth of the rate
printf '%s\n' '{"ok":false,"world_size":3,"checks":[{"name":"links","ok":false,"detail":"n3 slow"}],"failed_hosts":["n3"],"ranks":[],"links":{"hosts":["n1","n2","n3"],"probe_bytes":1048576,"gbps":[[0,0.25,0.025],[0.25,0,0.025],[0.025,0.025,0]],"latency_us":[[0,80,90],[80,0,90],[90,90,0]]}}' >"$run/health.json"
expect "--ended health after the links check: NO-GO" 1 "verdict NO-GO" -- \
  "$gate" --config "$cfg" --run-dir "$run" --job 503 --ended health --why "links" $small
r=$run/reports/503
check "... report.json holds the link matrix and names the slowest link" \
  json_ok "$r/report.json" '.links | .hosts == ["n1", "n2", "n3"] and .probe_bytes == 1048576 and
    .gbps[0] == [0, 0.25, 0.025] and .slowest == {from: "n1", to: "n3", gbps: 0.025}'
check "... report.md a table of it" grep -q '^| n3 | 0.025 / 90 us | 0.025 / 90 us | - |$' "$r/report.md"
check "... report.html a picture: six coloured cells, the slowest red" \
  sh -c "[ \$(grep -o '<rect class=\"link\"' '$r/report.html' | wc -l) -eq 6 ] &&
    grep -q 'data-from=\"0\" data-to=\"2\" data-gbps=\"0.025\".*fill=\"hsl(12,' '$r/report.html'"
rm -f "$run/health.json"

# a real run: 12 steps, checkpoints at 4, 8, 12
export OMP_NUM_THREADS=1
expect "a short run trains" 0 "step 12 committed" -- env RYZEN_RUN_ID=600 "$build/ryzen-train" \
  --config "$cfg" $small --run-dir "$run" --quiet
check "... 12 metrics lines" test "$(wc -l <"$run/metrics/600/rank-00000.jsonl" 2>/dev/null)" = 12
expect "an ordinary report of it (no events, no baseline: HOLD)" 2 "verdict HOLD for phase1_4proc job 600" -- \
  "$gate" --config "$cfg" --run-dir "$run" --job 600 $small
check "... without --csv, no steps.csv" test ! -e "$run/reports/600/steps.csv"
expect "--csv: the same report and steps.csv" 2 "verdict HOLD for phase1_4proc job 600" -- \
  "$gate" --config "$cfg" --run-dir "$run" --job 600 --csv $small
# steps.csv as pandas or a spreadsheet reads it: Python's csv module, the documented header
# (docs/gates.md), one row per metrics line (12 steps, in order), every row as wide as the header,
# one rank, and no validation loss (this run has none: empty cells, not "nan" or "null"); each
# step's loss, lr and grad_norm those of its metrics line (a cosine schedule: the lr moves).
check "... which Python's csv module reads: the header, 12 rows, steps 1..12, the metrics' lr and grad_norm" \
  /usr/bin/python3 -c '
import csv, json, sys
with open(sys.argv[1], newline="") as f:
    rows = list(csv.reader(f))
with open(sys.argv[2]) as f:
    metrics = {m["step"]: m for m in map(json.loads, f)}
head = ("step,run_step,samples_seen,loss,val_loss,lr,grad_norm,skipped,step_time_s,"
        "samples_per_sec,comm_time_s,compute_time_s,allreduce_s,grad_allreduce_s,rss_bytes,t,"
        "world_size,sync_ranks,sync_ok_ranks").split(",")
assert rows[0] == head, rows[0]
body = [dict(zip(head, r)) for r in rows[1:]]
assert len(body) == 12 and all(len(r) == len(head) for r in rows), len(body)
assert [int(r["step"]) for r in body] == list(range(1, 13))
assert all(r["world_size"] == "1" and r["val_loss"] == "" for r in body)
assert all(float(r["loss"]) > 0 and float(r["samples_per_sec"]) > 0 for r in body)
for r in body:
    m = metrics[int(r["step"])]
    for k in ("loss", "lr", "grad_norm"):
        assert abs(float(r[k]) - m[k]) <= 1e-8 * abs(m[k]), (r["step"], k, r[k], m[k])
assert len({r["lr"] for r in body}) > 1 and all(float(r["grad_norm"]) > 0 for r in body)
' "$run/reports/600/steps.csv" "$run/metrics/600/rank-00000.jsonl"
expect "--ended diverged on its metrics: NO-GO" 1 "verdict NO-GO for phase1_4proc job 600" -- \
  "$gate" --config "$cfg" --run-dir "$run" --job 600 --ended diverged \
  --why "loss guard: 5 steps skipped in 100" --status 70 $small
check "... the last good checkpoints are the newest two that verify" \
  json_ok "$run/reports/600/report.json" '
    (.last_good_checkpoint | .step == 12 and (.path | endswith("/step-00000012.h5"))) and
    (.previous_good_checkpoint | .step == 8 and (.path | endswith("/step-00000008.h5")))'
check "... and its partial metrics were judged" \
  json_ok "$run/reports/600/report.json" 'any(.criteria[]; .name == "throughput" and (.measured | type == "number"))'
expect "--ended nothing_to_train: HOLD, exit 2" 2 "verdict HOLD" -- \
  "$gate" --config "$cfg" --run-dir "$run" --job 600 --ended nothing_to_train \
  --why "checkpoint at training.steps" $small
printf '{"step":13,"samples_seen":' >>"$run/metrics/600/rank-00000.jsonl"
expect "a truncated metrics line is an error in an ordinary report" 64 "rank-00000.jsonl:13: truncated" -- \
  "$gate" --config "$cfg" --run-dir "$run" --job 600 $small
expect "... and a warning in an ended one" 1 "verdict NO-GO" -- \
  "$gate" --config "$cfg" --run-dir "$run" --job 600 --ended give_up --why "3 failures" $small
check "... which lists it" grep -q 'rank-00000.jsonl:13: truncated' "$run/reports/600/report.md" # json-grep-ok: report.md

finish
