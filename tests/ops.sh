#!/bin/sh
# ops.sh: operating a run live, under a real launcher (Open MPI's mpirun, oversubscribed on 2
# cores):
#   live metrics   the node textfile of a 3-rank run: its series and values against the metrics
#                  JSONL, and `promtool check metrics` on it and on the gate's gate.prom
#   straggler      one rank slowed by a test hook (RYZEN_TEST_SLOW_RANK/_FACTOR: its steps take F
#                  times its own compute on any CPU): the gate report and the live textfile name
#                  that rank, its ratio above F/4, the NO-GO threshold the test sets from F
#   loss guard     a non-finite gradient and a gradient-norm spike injected by a test hook
#                  (RYZEN_TEST_BAD_GRAD) are skipped on every rank; a resume after them is
#                  bit-exact; max_skipped_steps skips stop the run (exit 70) and the ended report
#                  rolls back to the last good checkpoint
#   monitoring/    promtool check rules and test rules (which alerts fire and which do not), the
#                  dashboard's queries through promtool's parser, and every ryzen_* name the
#                  rules and the dashboard use written by the real run above
# Needs promtool (Debian package prometheus, tools/install-deps).
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
bin=$build/ryzen-train
gate=$build/ryzen-gate
tmp=$(mktemp -d /tmp/rz-ops-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/lib.sh"

mpi_setup
# Every launch runs in a session of its own and is waited for $bound s at most: a guard against a
# hang, not a speed check (the longest job here takes about 3 s on this project's 2-core machine;
# 300 s leaves a CPU 10x slower or a loaded machine its time).  Past it the whole session (mpirun
# and its ranks, which Open MPI puts in process groups of their own) is killed, and the run's
# checks fail on its missing output.
bound=${RYZEN_TEST_BOUND_S:-300}
session_kill() { for p in $(ps -o pid= -s "$1" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done; }
# bounded CMD...: CMD in a session of its own; its exit status, or 124 with a line saying so
bounded() {
  setsid -w "$@" &
  bpid=$! end=$(($(date +%s) + bound))
  while kill -0 "$bpid" 2>/dev/null && [ "$(date +%s)" -lt $end ]; do sleep 0.1; done
  if kill -0 "$bpid" 2>/dev/null; then
    session_kill "$bpid"
    wait "$bpid" 2>/dev/null
    echo "bounded: killed after $bound s: $*"
    return 124
  fi
  wait "$bpid"
}
promtool=${PROMTOOL:-promtool}
if ! command -v "$promtool" >/dev/null 2>&1; then
  echo "FAIL promtool not found: apt-get install prometheus (tools/install-deps)"
  exit 1
fi

cfg=$src/configs/phase1_4proc.yaml
small="--set model.vocab_size=128 --set model.d_model=64
  --set model.n_heads=2 --set model.d_ff=128 --set model.seq_len=32 --set training.batch_size=4
  --set data.kind=markov --set data.markov_branching=4 --set optimizer.lr=2e-3
  --set health.sync_check_interval=10 --set training.warmup_bench=2"
# gates a loaded 2-core machine passes, so that each test sees only what it provokes
loose="--set gates.throughput_go=0 --set gates.throughput_no_go=0 --set gates.comm_go=1
  --set gates.comm_no_go=1 --set gates.allreduce_p99_ms_go=1e9 --set gates.allreduce_p99_ms_no_go=1e9
  --set gates.memory_go=1 --set gates.memory_no_go=1 --set gates.min_duration_h=0
  --set gates.entropy_gap_go=100 --set gates.entropy_gap_no_go=100
  --set gates.packet_loss_go=1 --set gates.packet_loss_no_go=1"

# crit FILE NAME FIELD: FIELD of the criterion NAME in report.json
crit() { jq -r --arg n "$2" --arg f "$3" '.criteria[] | select(.name == $n) | .[$f]' "$1"; }
# sample FILE SERIES-PREFIX: the value of the first sample line starting with it
sample() { grep -F "$2" "$1" | head -n 1 | sed 's/.* //'; }

# The slowdown is F times rank 2's own measured compute, so its ratio to the median rank is
# about F on any CPU (seen: 0.6 F to 0.8 F with 3 ranks sharing 2 busy cores, whose compute
# times include waiting for a core).  The gate's straggler thresholds are set from F, NO-GO at
# F/4, and the measured ratios are checked against F/4: a margin of 2.5 or more for that noise.
F=8
lim=$((F / 4))
strag="--set gates.straggler_ratio_go=$((F / 8)) --set gates.straggler_ratio_no_go=$lim"
echo "# straggler and live metrics: 3 ranks, rank 2's steps take $F times its own compute"
run=$tmp/runs/phase1_4proc
bounded env RYZEN_RUN_ID=301 RYZEN_TEST_SLOW_RANK=2 RYZEN_TEST_SLOW_FACTOR=$F "$mpirun" -np 3 "$bin" \
  --config "$cfg" --quiet $small \
  --set training.steps=30 --set checkpoint.interval=10 --set metrics.prom_interval=5 \
  --run-dir "$run" >"$tmp/train.out" 2>&1
check "the 3-rank run finished" test -s "$run/summary.json" || show "$tmp/train.out"
prom=$(ls "$run"/prom/ryzen-301-*.prom 2>/dev/null | head -n 1)
check "one live textfile for the node: $(basename "${prom:-none}")" \
  test "$(ls "$run"/prom/*.prom 2>/dev/null | wc -l)" -eq 1
expect "promtool check metrics accepts the live textfile" 0 "" -- sh -c "'$promtool' check metrics <'$prom'"
check "... it has all three ranks" test "$(grep -c '^ryzen_train_step{' "$prom")" -eq 3
check "... at the last step (30), no longer running" \
  sh -c "grep -q '^ryzen_train_step{slurm_job_id=\"301\",phase=\"phase1_4proc\",rank=\"2\",node=\"[^\"]*\"} 30$' '$prom' &&
         grep -q '^ryzen_train_running{.*} 0$' '$prom'"
want=$(jsonl "$run/metrics/301/rank-00000.jsonl" '.loss // empty' | tail -n 1)
check "... its loss is the metrics' last loss ($want)" \
  test -n "$want" -a "$(sample "$prom" 'ryzen_train_loss{slurm_job_id="301",phase="phase1_4proc",rank="0"')" = "$want"
check "... the straggler ratio names rank 2" \
  grep -q '^ryzen_train_straggler_ratio{slurm_job_id="301",phase="phase1_4proc",rank="2",' "$prom"
r2=$(sample "$prom" 'ryzen_train_compute_slowdown_ratio{slurm_job_id="301",phase="phase1_4proc",rank="2"')
check "... rank 2's compute slowdown is above F/4 = $lim ($r2)" \
  awk -v r="$r2" -v h="$lim" 'BEGIN { exit !(r > h) }'
check "... the node's network counters since training started, one sample each" \
  sh -c "test \$(grep -c '^ryzen_train_net_tcp_segments_sent_total{slurm_job_id=\"301\",phase=\"phase1_4proc\",node=\"[^\"]*\"} [0-9]*\$' '$prom') -eq 1 &&
         grep -q '^ryzen_train_net_tcp_retransmit_ratio{.*} [0-9.e-]*\$' '$prom'"
check "... and the summary has them for the node's lowest rank alone" \
  json_ok "$run/summary.json" '[.. | objects | .network? | objects |
    select((.seconds | type == "number") and (.tcp_segments_sent | type == "number"))] | length == 1'
compute_times() {
  for r in 0 1 2; do
    jsonl_ok "$run/metrics/301/rank-0000$r.jsonl" 'any(.[]; .compute_time_s | type == "number")' || return 1
  done
}
check "... every rank's metrics carry compute_time_s" compute_times

expect "the gate judges the straggler NO-GO" 1 "straggler_ratio +no_go .*slowest rank 2 " -- \
  "$gate" --config "$cfg" $small $loose $strag --run-dir "$run" --job 301
names_rank2() {
  json_ok "$run/reports/301/report.json" \
    'any(.criteria[]; .name == "straggler_ratio" and (.note | test("slowest rank 2 \\(.*x the median rank")))'
}
check "... report.json names rank 2 and its slowdown against the median rank" names_rank2
check "... and so does report.md" grep -q "straggler_ratio.*no_go.*slowest rank 2 " "$run/reports/301/report.md"
expect "promtool check metrics accepts gate.prom" 0 "" -- \
  sh -c "'$promtool' check metrics <'$run/reports/301/gate.prom'"
g=$(sample "$run/reports/301/gate.prom" 'ryzen_gate_straggler_ratio{slurm_job_id="301",phase="phase1_4proc"}')
j=$(crit "$run/reports/301/report.json" straggler_ratio measured)
check "... whose straggler series is the report's ($g = $j, above F/4 = $lim)" \
  awk -v g="$g" -v j="$j" -v h="$lim" 'BEGIN { exit !(g != "" && g == j && g + 0 > h) }'

echo "# the loss guard: a non-finite gradient at step 15, a gradient-norm spike at step 32 (2 ranks)"
guard="--set training.steps=40 --set checkpoint.interval=0"
export RYZEN_TEST_BAD_GRAD=15,32:1000
bounded env RYZEN_RUN_ID=g1 "$mpirun" -np 2 "$bin" --config "$cfg" --quiet $small $guard \
  --run-dir "$tmp/g-full" >"$tmp/g-full.out" 2>&1
rc=$?
check "the run went through both bad steps (exit $rc)" test "$rc" -eq 0 -a -s "$tmp/g-full/summary.json"
m=$tmp/g-full/metrics/g1/rank-00000.jsonl
check "... step 15 skipped: non-finite gradient norm" jsonl_ok "$m" 'any(.[]; .step == 15 and
  .skipped == true and .skip_reason == "non-finite gradient norm (nan)" and .skipped_total == 1)'
check "... step 32 skipped: a gradient-norm outlier" jsonl_ok "$m" 'any(.[]; .step == 32 and
  .skipped == true and .skipped_total == 2 and (.skip_reason |
  test("^gradient norm [0-9.e+]* is [0-9.]* standard deviations above its running mean [0-9.]*$")))'
check "... and no other step" jsonl_ok "$m" '[.[] | select(.skipped == true) | .step] == [15, 32]'
check "... rank 1 skipped the same steps" jsonl_ok "$tmp/g-full/metrics/g1/rank-00001.jsonl" \
  '[.[] | select(.skipped == true) | .step] == [15, 32]'
check "... the job output says so" grep -q "loss guard: skipped step 32: gradient norm" "$tmp/g-full.out"
bounded env RYZEN_RUN_ID=g2 "$mpirun" -np 2 "$bin" --config "$cfg" --quiet $small $guard \
  --run-dir "$tmp/g-seg" --stop-at-step 20 >/dev/null 2>&1
bounded env RYZEN_RUN_ID=g2 "$mpirun" -np 2 "$bin" --config "$cfg" --quiet $small $guard \
  --run-dir "$tmp/g-seg" >"$tmp/g-seg.out" 2>&1
hexes() { jsonl "$1" 'select(.step > 20 and has("loss_hex")) | "\(.step) \(.loss_hex)"'; }
hexes "$m" >"$tmp/a.txt"
hexes "$tmp/g-seg/metrics/g2/rank-00000.jsonl" >"$tmp/b.txt"
check "resumed at 20 after a skip: losses of steps 21..40 identical to the bit" \
  sh -c "test \$(wc -l <'$tmp/a.txt') -eq 20 && cmp -s '$tmp/a.txt' '$tmp/b.txt'"
check "... the spike at 32 was skipped after the resume too (the guard's state was saved)" \
  jsonl_ok "$tmp/g-seg/metrics/g2/rank-00000.jsonl" 'any(.[]; .step == 32 and .skipped == true)'
info() { "$build/ryzen-ckpt" info "$1" | jq -r --arg k "$2" 'select(has($k)) | .[$k]'; }
a=$(info "$tmp/g-full/checkpoints/step-00000040.h5" params_sha256)
b=$(info "$tmp/g-seg/checkpoints/step-00000040.h5" params_sha256)
check "... final parameters identical: $a" test -n "$a" -a "$a" = "$b"
a=$(info "$tmp/g-full/checkpoints/step-00000040.h5" adam_sha256)
b=$(info "$tmp/g-seg/checkpoints/step-00000040.h5" adam_sha256)
check "... and the Adam state" test -n "$a" -a "$a" = "$b"
"$gate" --config "$cfg" $small $loose --run-dir "$tmp/g-full" --job g1 >/dev/null 2>&1
check "the gate report counts the skipped steps" \
  json_ok "$tmp/g-full/reports/g1/report.json" '.skipped_steps == 2 and .skipped == [15, 32]'

echo "# the loss guard stops the run: non-finite gradients from step 15 on"
export RYZEN_TEST_BAD_GRAD=15-30
expect "5 skips within 100 steps: exit 70, 'loss guard:'" 70 \
  "loss guard: 5 steps skipped within 100 steps \(steps 15, 16, 17, 18, 19; the last: non-finite gradient norm" -- \
  bounded env RYZEN_RUN_ID=g3 "$mpirun" -np 2 "$bin" --config "$cfg" --quiet $small \
  --set training.steps=40 --set checkpoint.interval=10 --set metrics.prom_interval=5 \
  --run-dir "$tmp/g-stop"
unset RYZEN_TEST_BAD_GRAD
check "... without a checkpoint after the last good one (step 10)" \
  test "$(ls "$tmp/g-stop/checkpoints" | grep '^step-' | tr '\n' ' ')" = "step-00000010.h5 "
gp=$(ls "$tmp"/g-stop/prom/*.prom)
check "... the live file counts 5 skipped steps and says the run stopped" \
  sh -c "grep -q '^ryzen_train_skipped_steps_total{.*rank=\"1\".*} 5$' '$gp' && grep -q '^ryzen_train_running{.*} 0$' '$gp'"
expect "... ryzen-gate --ended diverged: NO-GO" 1 "verdict NO-GO for phase1_4proc job g3; planned action: rollback baseline_1proc" -- \
  "$gate" --config "$cfg" $small $loose --run-dir "$tmp/g-stop" --job g3 --ended diverged \
  --why "loss guard" --status 70
check "... rolling back from step 10, the last good checkpoint" \
  json_ok "$tmp/g-stop/reports/g3/report.json" '.skipped_steps == 5 and
    .skipped == [15, 16, 17, 18, 19] and .ended == "diverged" and
    (.last_good_checkpoint | .step == 10 and (.path | endswith("step-00000010.h5")))'

echo "# monitoring/: alert rules, their unit tests, and the dashboard against real files"
mon=$src/monitoring
expect "promtool check rules" 0 "SUCCESS: 9 rules found" -- "$promtool" check rules "$mon/ryzen-alerts.yml"
expect "promtool test rules: which alerts fire and which do not" 0 "SUCCESS" -- \
  sh -c "cd '$mon/tests' && '$promtool' test rules ryzen-alerts.test.yml"
# the dashboard's PromQL, as recording rules, goes through promtool's parser too
{
  echo "groups:"
  echo "  - name: dashboard"
  echo "    rules:"
  jq -r '.. | objects | .expr? | strings' "$mon/ryzen-dashboard.json" |
    sed 's/\$phase/.*/g; s/\$job/.*/g; s/'"'"'/'"''"'/g' |
    awk '{ printf "      - record: dashboard:expr%d\n        expr: '"'"'%s'"'"'\n", NR, $0 }'
} >"$tmp/dashboard-rules.yml"
n=$(jq '[.. | objects | select(has("expr"))] | length' "$mon/ryzen-dashboard.json")
check "the dashboard has queries ($n)" test "$n" -gt 0
expect "promtool parses all $n dashboard queries" 0 "SUCCESS: $n rules found" -- \
  "$promtool" check rules "$tmp/dashboard-rules.yml"
# every ryzen_* name the rules and the dashboard use is one a real run wrote (the live file,
# gate.prom of an ordinary and of an ended report)
"$gate" --config "$cfg" $small --run-dir "$run" --job 301 --ended diverged --why test \
  >/dev/null 2>&1
cp "$run/reports/301/gate.prom" "$tmp/ended.prom"
cat "$prom" "$tmp/ended.prom" | sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' | sort -u >"$tmp/exported"
{ grep -v '^ *#' "$mon/ryzen-alerts.yml"
  jq -r '.. | objects | (.expr?, .query?, .definition?) | strings' "$mon/ryzen-dashboard.json"; } |
  grep -o 'ryzen_[a-z0-9_]*' | sort -u >"$tmp/used"
missing=$(comm -23 "$tmp/used" "$tmp/exported" | tr '\n' ' ')
check "the rules and the dashboard use $(wc -l <"$tmp/used") ryzen_* names, all exported ($(wc -l <"$tmp/exported") written): ${missing:-none missing}" \
  test -z "$missing" -a -s "$tmp/used"
check "... among them the ended report's ryzen_gate_ended" grep -q '^ryzen_gate_ended{.*reason="diverged"} 1$' "$tmp/ended.prom"

finish
