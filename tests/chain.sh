#!/bin/sh
# chain.sh: the scaling chain end to end on the dev cluster, every job submitted by the previous
# one's ryzen-step:
#   baseline_1proc (GO) -> phase1_4proc (GO) -> phase2a_8proc, forced to NO-GO by an unreachable
#   throughput gate -> automatic rollback to 4 ranks resuming from phase2a's last good
#   checkpoint -> finishes with a report.
# The chain is checked from events.jsonl and the reports, then `ryzen-gate --ladder` reports the
# whole run root (ladder.{json,md,html}).  Needs root (tools/devcluster).
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
case $src in /*) ;; *) src=$(cd "$src" && pwd) ;; esac
case $build in /*) ;; *) build=$(cd "$build" && pwd) ;; esac
tmp=$(mktemp -d /tmp/rz-chain-XXXXXX)
fail=0
trap 'if [ "$fail" -eq 0 ]; then rm -rf "$tmp"; else echo "kept $tmp for inspection"; fi' EXIT
. "$src/tests/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the dev cluster's slurmd must run as root"
  exit 77
fi
"$src/tools/devcluster" up >"$tmp/up.log" 2>&1 || { cat "$tmp/up.log"; exit 1; }
eval "$("$src/tools/devcluster" env)"
PATH=$build:$PATH
RYZEN_RUN_ROOT=$tmp/runs
export PATH RYZEN_RUN_ROOT
sub=$tmp/sub
mkdir -p "$sub" "$RYZEN_RUN_ROOT"
ln -s "$src/configs" "$sub/configs"
ln -s "$src/sbatch" "$sub/sbatch"
cd "$sub" || exit 1

# A small model; gates a 2-core machine can pass, except phase2a's throughput gate, which no
# machine can (1e12 samples/s): its NO-GO must roll the chain back.  phase2a trains 20 of the
# 40 steps, so the rollback has steps left to train from its checkpoint; the baseline runs long
# enough (300 x 4 samples) that every later phase's samples overlap its loss curve.
sets="--set model.vocab_size=128 --set model.d_model=64 --set model.n_heads=2 --set model.d_ff=128
  --set model.seq_len=32 --set training.batch_size=4 --set data.kind=markov
  --set data.markov_branching=4 --set optimizer.lr=2e-3 --set checkpoint.interval=5
  --set health.sync_check_interval=5 --set training.steps=40
  --set gates.throughput_go=0 --set gates.throughput_no_go=0 --set gates.efficiency_go=0
  --set gates.efficiency_no_go=0 --set gates.comm_go=1 --set gates.comm_no_go=1
  --set gates.allreduce_p99_ms_go=1e9 --set gates.allreduce_p99_ms_no_go=1e9
  --set gates.loss_vs_baseline_pct_go=1e9 --set gates.loss_vs_baseline_pct_no_go=1e9
  --set gates.entropy_gap_go=100 --set gates.entropy_gap_no_go=100 --set gates.memory_go=1
  --set gates.memory_no_go=1 --set gates.uptime_go=0 --set gates.uptime_no_go=0
  --set gates.min_duration_h=0 --set gates.straggler_ratio_go=1e9 --set gates.straggler_ratio_no_go=1e9
  --set phase2a_8proc:training.steps=20 --set baseline_1proc:training.steps=300
  --set phase2a_8proc:gates.throughput_go=1e12 --set phase2a_8proc:gates.throughput_no_go=1e12"

job_field() { scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }
wait_done() {
  i=0
  while [ $i -lt $(($2 * 2)) ]; do
    case $(job_field "$1" JobState) in
      COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) return 0 ;;
    esac
    sleep 0.5
    i=$((i + 1))
  done
  return 1
}
# field FILE EVENT KEY: KEY of the last EVENT line in FILE.
field() { grep "\"event\":\"$2\"" "$1" 2>/dev/null | tail -n 1 | sed -n "s/.*\"$3\":\"\([^\"]*\)\".*/\1/p"; }
# wait_event FILE EVENT SECONDS
wait_event() {
  i=0
  until grep -q "\"event\":\"$2\"" "$1" 2>/dev/null || [ $i -ge $(($3 * 2)) ]; do
    sleep 0.5; i=$((i + 1))
  done
  grep -q "\"event\":\"$2\"" "$1" 2>/dev/null
}
show_out() { for f in *-"$1".out; do [ -f "$f" ] && grep -v '^step ' "$f" | tail -n 20 | sed 's/^/     | /'; done; }
verdict() { sed -n 's/.*"verdict":"\([^"]*\)".*/\1/p' "$1" | head -n 1; }

R=$RYZEN_RUN_ROOT
b=$(sbatch --parsable sbatch/baseline_1proc.sh $sets | cut -d';' -f1)
echo "# baseline_1proc: job $b"
wait_event "$R/baseline_1proc/events.jsonl" promote 300 || show_out "$b"
check "baseline GO" test "$(field "$R/baseline_1proc/events.jsonl" verdict verdict)" = GO
p=$(field "$R/baseline_1proc/events.jsonl" promote next_job)
check "... promoted phase1_4proc as job '$p'" test -n "$p"

echo "# phase1_4proc: job $p"
wait_event "$R/phase1_4proc/events.jsonl" promote 300 || show_out "$p"
check "phase1 GO" test "$(field "$R/phase1_4proc/events.jsonl" verdict verdict)" = GO
a=$(field "$R/phase1_4proc/events.jsonl" promote next_job)
check "... promoted phase2a_8proc as job '$a'" test -n "$a"
check "... its efficiency was judged against the baseline's report" \
  grep -q '"name":"efficiency","measured":[0-9]' "$R/phase1_4proc/reports/$p/report.json"

echo "# phase2a_8proc: job $a, NO-GO by design"
wait_event "$R/phase2a_8proc/events.jsonl" rollback 300 || show_out "$a"
wait_done "$a" 120
check "phase2a NO-GO" test "$(field "$R/phase2a_8proc/events.jsonl" verdict verdict)" = NO-GO
check "... the job exited 1" test "$(job_field "$a" ExitCode)" = 1:0
check "... report.json says NO-GO with throughput as the cause" \
  sh -c "grep -q '\"verdict\":\"NO-GO\"' '$R/phase2a_8proc/reports/$a/report.json' &&
         grep -q '\"name\":\"throughput\",[^}]*\"status\":\"no_go\"' '$R/phase2a_8proc/reports/$a/report.json'"
rb=$(field "$R/phase2a_8proc/events.jsonl" rollback new_job)
ck=$(field "$R/phase2a_8proc/events.jsonl" rollback checkpoint)
check "... rolled back to phase1_4proc as job '$rb'" test -n "$rb" -a \
  "$(field "$R/phase2a_8proc/events.jsonl" rollback to_phase)" = phase1_4proc
check "... from its last good checkpoint $(basename "$ck")" test "$(basename "$ck")" = step-00000020.h5
check "... the chain is in phase2a's report.md" grep -q "rollback" "$R/phase2a_8proc/reports/$a/report.md"
check "... and in its report.json, with the new job" \
  grep -q "\"new_job\":\"$rb\"" "$R/phase2a_8proc/reports/$a/report.json"

echo "# rollback: job $rb, phase1_4proc on 4 ranks from phase2a's checkpoint"
wait_done "$rb" 300
rdir=$R/phase1_4proc/rollback-$a
check "the rollback job completed (exit $(job_field "$rb" ExitCode))" test "$(job_field "$rb" ExitCode)" = 0:0 || show_out "$rb"
check "... it started from phase2a's checkpoint" \
  test "$(field "$rdir/events.jsonl" rollback_start checkpoint)" = "$ck"
first=$(head -n 1 "$rdir/metrics/$rb/rank-00000.jsonl" | sed -n 's/^{"step":\([0-9]*\),"samples_seen":\([0-9]*\),.*/\1 \2/p')
check "... and continued at step 21 with phase2a's global batch (sample 672): $first" \
  test "$first" = "21 672"
check "... on 4 ranks" grep -q '"num_processes":4,' "$rdir/summary.json"
check "... finished with a report: $(verdict "$rdir/reports/$rb/report.json")" \
  test -s "$rdir/reports/$rb/report.md" -a -s "$rdir/reports/$rb/report.html"
check "... which shows where it came from" grep -q "rollback_start" "$rdir/reports/$rb/report.json"
check "... and it did not promote again by itself" grep -q '"event":"promote_skipped"' "$rdir/events.jsonl"
check "... the first phase1 run's checkpoints are untouched" \
  "$build/ryzen-ckpt" verify "$R/phase1_4proc/checkpoints/step-00000040.h5"

echo "# the ladder report of the whole run root"
expect "ryzen-gate --ladder \$RYZEN_RUN_ROOT" 0 "ladder: model error" -- "$build/ryzen-gate" --ladder "$R"
L=$R/ladder.json
worlds=$(grep -o '"world_size":[0-9]*,"verdict"' "$L" | sed 's/[^0-9]//g' | tr '\n' ' ')
check "... its attempts by ranks: $worlds" test "$worlds" = "1 4 4 8 "
check "... the rollback lineage is one of them" grep -q "\"lineage\":\"phase1_4proc/rollback-$a\"" "$L"
check "... which started from phase2a's checkpoint, handed to job $rb" \
  sh -c "grep -q '\"from_checkpoint\":\"$ck\"' '$L' && grep -q '\"handed_to\":\"job $rb (phase1_4proc)\"' '$L'"
check "... predictions for 12, 16, 32 and 64 ranks (8 was measured)" \
  test "$(grep -o '{"world_size":[0-9]*,"throughput":[0-9.e+]*,"throughput_lo"' "$L" | sed 's/{"world_size":\([0-9]*\),.*/\1/' | tr '\n' ' ')" = "12 16 32 64 "
check "... the verdict timeline: two promotions and the rollback" \
  sh -c "test \$(grep -o '\"event\":\"promote\"' '$L' | wc -l) -eq 2 && grep -q '\"event\":\"rollback\",' '$L'"
check "... ladder.html with its four charts, self-contained" \
  sh -c "test \$(grep -c '<svg id=\"chart-ladder-' '$R/ladder.html') -eq 4 && ! grep -qiE '<script|src=' '$R/ladder.html'"
check "... phase2a's report was predicted from the phases below it" \
  grep -q '"prediction":{"throughput":' "$R/phase2a_8proc/reports/$a/report.json"

finish
