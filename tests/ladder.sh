#!/bin/sh
# ladder.sh: `ryzen-gate --ladder RUN_ROOT` on a run root built from real ryzen-train runs under
# mpirun (1, 2 and 4 ranks) and events in ryzen-step's format, shaped like the chain of
# tests/chain.sh on the dev cluster:
#   baseline_1proc (1 rank) -> phase1_4proc (2 ranks here; preempted at step 20, requeued,
#   resumed) -> phase2a_8proc (4 ranks; NO-GO by an unreachable throughput gate) -> rollback
#   to phase1_4proc/rollback-<job> (2 ranks, from phase2a's checkpoint).  Every other gate is
#   opened, so no verdict depends on the machine's speed: the runs have no preflight, so memory
#   is not judged and their verdict is HOLD (the events promote them as a GO would).
# Checks ladder.{json,md,html}: every attempt, the verdict timeline (promotions, the rollback,
# the preemption requeue), the checkpoint lineage, the model's predictions for 8..64 ranks with
# their error, self-contained HTML with four charts and round axis ticks; and the phase report's
# prediction once a predecessor exists; --csv's ladder.csv, read back with Python's csv module.
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
bin=$build/ryzen-train
gate=$build/ryzen-gate
tmp=$(mktemp -d /tmp/rz-ladder-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/lib.sh"

mpi_setup
R=$tmp/runs
small="--set model.vocab_size=128 --set model.d_model=64 --set model.n_heads=2
  --set model.d_ff=128 --set model.seq_len=32 --set training.batch_size=4 --set data.kind=markov
  --set data.markov_branching=4 --set optimizer.lr=2e-3 --set checkpoint.interval=10
  --set health.sync_check_interval=10 --set training.warmup_bench=2 --set training.steps=40"
loose="--set gates.throughput_go=0 --set gates.throughput_no_go=0 --set gates.efficiency_go=0
  --set gates.efficiency_no_go=0 --set gates.comm_go=1 --set gates.comm_no_go=1
  --set gates.allreduce_p99_ms_go=1e9 --set gates.allreduce_p99_ms_no_go=1e9
  --set gates.loss_vs_baseline_pct_go=1e9 --set gates.loss_vs_baseline_pct_no_go=1e9
  --set gates.entropy_gap_go=100 --set gates.entropy_gap_no_go=100 --set gates.memory_go=1
  --set gates.memory_no_go=1 --set gates.uptime_go=0 --set gates.uptime_no_go=0
  --set gates.failures_go=0 --set gates.min_duration_h=0 --set gates.straggler_ratio_go=1e9
  --set gates.straggler_ratio_no_go=1e9 --set gates.packet_loss_go=1 --set gates.packet_loss_no_go=1"

t=$(date +%s)
# ev DIR JOB RESTART PHASE EVENT MESSAGE [,"key":value...]: one event in ryzen-step's format
ev() {
  t=$((t + 1))
  printf '{"time":"%s","t":%d,"job":"%s","restart":%d,"phase":"%s","event":"%s","message":"%s"%s}\n' \
    "$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ)" "$t" "$2" "$3" "$4" "$5" "$6" "${7:-}" >>"$1/events.jsonl"
}
# train PHASE DIR JOB NP [args...]: a run that must end 0 (--stop-at-step too)
train() {
  ph=$1 dir=$2 job=$3 np=$4
  shift 4
  mkdir -p "$dir"
  RYZEN_RUN_ID=$job "$mpirun" -np "$np" "$bin" --config "$src/configs/$ph.yaml" --quiet $small \
    --run-dir "$dir" "$@" >"$tmp/train-$job.out" 2>&1
  rc=$?
  cat "$tmp/train-$job.out" >>"$tmp/train.out"
  if [ "$rc" -eq 0 ]; then ok "$ph job $job trains on $np rank(s) $*"
  else bad "$ph job $job on $np rank(s) $*: exit $rc"; show "$tmp/train-$job.out"; fi
}
# judge PHASE DIR JOB VERDICT [args...]: the gate gives VERDICT (exit and report), then its
# verdict event
judge() {
  ph=$1 dir=$2 job=$3 want=$4
  shift 4
  "$gate" --config "$src/configs/$ph.yaml" $small $loose --run-dir "$dir" --job "$job" "$@" \
    >"$tmp/gate-$job.out" 2>&1
  rc=$?
  v=$(jq -r '.verdict // empty' "$dir/reports/$job/report.json" 2>/dev/null)
  case $want in GO) w=0 ;; NO-GO) w=1 ;; *) w=2 ;; esac
  if [ "$v" = "$want" ] && [ "$rc" -eq "$w" ]; then ok "$ph job $job: $v (exit $rc)"
  else bad "$ph job $job: verdict '$v', exit $rc; expected $want, exit $w"; show "$tmp/gate-$job.out"; fi
  ev "$dir" "$job" 0 "$ph" verdict "$v" ",\"verdict\":\"$v\""
}

echo "# building the run root (runs of 1, 2, 4 and 2 ranks)"
b=$R/baseline_1proc
mkdir -p "$b"
ev "$b" 1001 0 baseline_1proc start "job step wrapper started"
ev "$b" 1001 0 baseline_1proc resume "no checkpoint yet: starting fresh"
train baseline_1proc "$b" 1001 1
ev "$b" 1001 0 baseline_1proc attempt_end "step ended" ',"status":0,"class":"done"'
ev "$b" 1001 0 baseline_1proc finished "training done"
judge baseline_1proc "$b" 1001 HOLD
ev "$b" 1001 0 baseline_1proc promote "submitted phase1_4proc" ',"next_phase":"phase1_4proc","next_job":"1002"'

p=$R/phase1_4proc
mkdir -p "$p"
ev "$p" 1002 0 phase1_4proc start "job step wrapper started"
ev "$p" 1002 0 phase1_4proc resume "no checkpoint yet: starting fresh"
train phase1_4proc "$p" 1002 2 --stop-at-step 20
ev "$p" 1002 0 phase1_4proc attempt_end "step ended" ',"status":75,"class":"signal"'
ev "$p" 1002 0 phase1_4proc requeue "preempted by a higher-priority job: requeued" ',"reason":"preemption","status":75,"failures":0'
ev "$p" 1002 1 phase1_4proc start "job step wrapper started"
ev "$p" 1002 1 phase1_4proc resume "resuming" ",\"checkpoint\":\"$p/checkpoints/step-00000020.h5\",\"step\":20"
train phase1_4proc "$p" 1002 2
ev "$p" 1002 1 phase1_4proc attempt_end "step ended" ',"status":0,"class":"done"'
ev "$p" 1002 1 phase1_4proc finished "training done"
judge phase1_4proc "$p" 1002 HOLD
ev "$p" 1002 1 phase1_4proc promote "submitted phase2a_8proc" ',"next_phase":"phase2a_8proc","next_job":"1003"'

a=$R/phase2a_8proc
mkdir -p "$a"
ev "$a" 1003 0 phase2a_8proc start "job step wrapper started"
ev "$a" 1003 0 phase2a_8proc resume "no checkpoint yet: starting fresh"
train phase2a_8proc "$a" 1003 4 --set training.steps=20
ev "$a" 1003 0 phase2a_8proc attempt_end "step ended" ',"status":0,"class":"done"'
ev "$a" 1003 0 phase2a_8proc finished "training done"
judge phase2a_8proc "$a" 1003 NO-GO --set training.steps=20 --set gates.throughput_go=1e12 \
  --set gates.throughput_no_go=1e12
ck=$a/checkpoints/step-00000020.h5
ev "$a" 1003 0 phase2a_8proc rollback "NO-GO: rolled back" ",\"to_phase\":\"phase1_4proc\",\"new_job\":\"1004\",\"checkpoint\":\"$ck\",\"reason\":\"NO-GO\""

rb=$p/rollback-1003
mkdir -p "$rb"
ev "$rb" 1004 0 phase1_4proc start "job step wrapper started"
ev "$rb" 1004 0 phase1_4proc rollback_start "rollback of phase2a_8proc job 1003" ",\"checkpoint\":\"$ck\",\"step\":20"
train phase1_4proc "$rb" 1004 2 --resume "$ck"
ev "$rb" 1004 0 phase1_4proc attempt_end "step ended" ',"status":0,"class":"done"'
judge phase1_4proc "$rb" 1004 HOLD
ev "$rb" 1004 0 phase1_4proc promote_skipped "a rollback job does not promote"
check "all four attempts reported" test -s "$b/reports/1001/report.json" -a -s "$p/reports/1002/report.json" \
  -a -s "$a/reports/1003/report.json" -a -s "$rb/reports/1004/report.json"

echo "# the phase reports' predictions"
check "the baseline has no predecessor: no prediction" \
  json_ok "$b/reports/1001/report.json" 'has("prediction") and .prediction == null'
check "phase2a (4 ranks) is predicted from the 1- and 2-rank phases (an exact fit: its band is the measurements' spread)" \
  json_ok "$a/reports/1003/report.json" '.prediction | (.throughput | type == "number") and
    (.throughput_lo | type == "number" or type == "null") and
    (.throughput_hi | type == "number" or type == "null") and
    (.measured_vs_predicted | type == "number") and .points == 2 and
    (.note | test("the fit is exact, the band is the measurements"))'
check "... and report.md says so" grep -q "^Predicted by the ladder model from the phases with fewer ranks: " "$a/reports/1003/report.md"

echo "# ryzen-gate --ladder"
expect "ryzen-gate --ladder writes ladder.{json,md,html}" 0 "ladder: 64  rank\(s\) predicted" -- "$gate" --ladder "$R"
L=$R/ladder.json
check "... all files" test -s "$L" -a -s "$R/ladder.md" -a -s "$R/ladder.html"
check "... and no ladder.csv without --csv" test ! -e "$R/ladder.csv"
expect "ryzen-gate --ladder --csv also writes ladder.csv" 0 "ladder.\{json,md,html,csv\}" -- \
  "$gate" --ladder "$R" --csv
# ladder.csv as Python's csv module reads it: the header of docs/ladder.md, one row per attempt
# of ladder.json (four, by ranks), the rollback its own lineage and from phase2a's checkpoint.
check "... which Python's csv module reads: the header, the four attempts" /usr/bin/python3 -c '
import csv, sys
with open(sys.argv[1], newline="") as f:
    rows = list(csv.reader(f))
head = ("phase,lineage,job,world_size,nodes,verdict,ended,planned_action,time,throughput,"
        "throughput_p10,model_throughput,efficiency,efficiency_vs_previous,comm,"
        "allreduce_p50_ms,allreduce_p99_ms,straggler_ratio,compute_s,per_rank_batch,"
        "cores_per_rank,steps,skipped_steps,goodput,from_checkpoint").split(",")
assert rows[0] == head, rows[0]
body = [dict(zip(head, r)) for r in rows[1:]]
assert len(body) == 4 and all(len(r) == len(head) for r in rows), len(body)
assert [int(r["world_size"]) for r in body] == [1, 2, 2, 4], body
assert sorted(r["job"] for r in body) == ["1001", "1002", "1003", "1004"]
rb = [r for r in body if r["lineage"] == "phase1_4proc/rollback-1003"]
assert len(rb) == 1 and rb[0]["job"] == "1004" and rb[0]["from_checkpoint"] == sys.argv[2], rb
assert all(float(r["throughput"]) > 0 and r["verdict"] in ("GO", "NO-GO", "HOLD") for r in body)
' "$R/ladder.csv" "$ck"
worlds=$(jq -r '[.attempts[].world_size] | map(tostring) | join(" ")' "$L")
check "four attempts by ranks: $worlds" test "$worlds" = "1 2 2 4"
check "... the rollback is its own lineage" json_ok "$L" \
  'any(.attempts[]; .phase == "phase1_4proc" and .job == "1004" and .lineage == "phase1_4proc/rollback-1003")'
check "... efficiency against the 1-rank base" \
  json_ok "$L" '.base == {phase: "baseline_1proc", job: "1001", world_size: 1}'
for w in 8 12 16 32 64; do
  line=$(jq -c --argjson w "$w" '.predictions[] | select(.world_size == $w)' "$L")
  check "prediction for $w ranks with its range: ${line:-none}" json_ok "$L" \
    '[.predictions[] | select(.world_size == $w)] | length == 1 and
     (.[0] | .throughput > 0 and .throughput_lo <= .throughput and .throughput <= .throughput_hi)' \
    --argjson w "$w"
done
check "the model states its fit: 4 points and a finite error" json_ok "$L" '.model |
  .formula == "T(P, b) = c*b/s + H + k_net*(2(P-1)/P*M/B + 2(P-1)*lat) on several nodes, c*b/s + H + k_local*2(P-1)/P*M/s on one, H = 2(P-1)*q/s while s is under 1; throughput = P*b/T" and
  .ok == true and (.hop_s_per_rank_sharing | type == "number") and .points == 4 and
  (.error_rel | type == "number")'
check "the verdict timeline has the promotions" \
  json_ok "$L" '[.timeline[] | select(.event == "promote")] | length == 2'
check "... the preemption requeue" json_ok "$L" 'any(.timeline[]; .event == "requeue" and
  (.summary | startswith("preempted by a higher-priority job: requeued (reason preemption")))'
check "... the rollback and its start" json_ok "$L" 'any(.timeline[]; .event == "rollback") and
  any(.timeline[]; .lineage == "phase1_4proc/rollback-1003" and .job == "1004" and .event == "rollback_start")'
check "checkpoint lineage: the rollback started from phase2a's checkpoint" json_ok "$L" \
  'any(.attempts[]; .lineage == "phase1_4proc/rollback-1003" and .from_checkpoint == $ck)' --arg ck "$ck"
check "... which phase2a handed to job 1004" \
  json_ok "$L" 'any(.attempts[]; .handed_to == "job 1004 (phase1_4proc)")'
check "... and phase1 resumed its own step 20 after the preemption" json_ok "$L" \
  'any(.attempts[]; .job == "1002" and (.requeues | .failure == 0 and .signal == 0 and
    .preemption == 1) and .from_checkpoint == $ck)' --arg ck "$p/checkpoints/step-00000020.h5"

H=$R/ladder.html
check "ladder.html is self-contained (no script, no external resource)" \
  sh -c "grep -q '<svg ' '$H' && ! grep -qiE '<script|src=|href=\"?http|@import|url\\(' '$H'"
for id in chart-ladder-throughput chart-ladder-efficiency chart-ladder-comm chart-ladder-p99; do
  check "chart $id" grep -q "<svg id=\"$id\"" "$H"
done
# chart FILE ID: the text of <svg id="ID" ...> ... </svg> in FILE
chart() { sed -n "/<svg id=\"$2\"/,/<\/svg>/p" "$1"; }
check "throughput chart: 4 measured points, 5 predictions with error bars" \
  test "$(chart "$H" chart-ladder-throughput | grep -c '<circle class="pt"')" -eq 4 -a \
       "$(chart "$H" chart-ladder-throughput | grep -c '<circle class="pred"')" -eq 5 -a \
       "$(chart "$H" chart-ladder-throughput | grep -c '<line class="err"')" -eq 5
# round ticks: on each axis the ticks step evenly by 1, 2 or 5 times a power of ten (x: powers
# of two, 1 .. 64)
# round_ticks FILE ID AXIS
round_ticks() {
  chart "$1" "$2" | sed -n "s/.*data-axis=\"$3\" data-tick=\"\([^\"]*\)\".*/\1/p" | awk -v axis="$3" '
    { v[NR] = $1 }
    END {
      if (NR < 2) exit 1
      if (axis == "x") { for (i = 1; i <= NR; i++) if (v[i] != 2 ^ (i - 1)) exit 1; exit 0 }
      # the power of ten of the step; a log10 a hair off an integer (log 100 / log 10) snaps to it
      step = v[2] - v[1]; e = log(step) / log(10)
      n = e >= 0 ? int(e + 1e-6) : -int(-e + 1 - 1e-6); p = 10 ^ n; m = step / p
      if (!((m > 0.999 && m < 1.001) || (m > 1.999 && m < 2.001) || (m > 4.999 && m < 5.001))) exit 1
      for (i = 2; i <= NR; i++) { d = v[i] - v[i - 1] - step; if (d > step * 1e-6 || d < -step * 1e-6) exit 1 }
      r = v[1] / step; if (r - int(r) > 1e-6 && int(r) + 1 - r > 1e-6) exit 1
    }'
}
both_round() { round_ticks "$1" "$2" y && round_ticks "$1" "$2" x; }
for id in chart-ladder-throughput chart-ladder-efficiency chart-ladder-comm chart-ladder-p99; do
  ticks=$(chart "$H" $id | sed -n 's/.*data-axis="y" data-tick="\([^"]*\)".*/\1/p' | tr '\n' ' ')
  check "$id: round ticks on both axes (y: $ticks)" both_round "$H" $id
done
HP=$a/reports/1003/report.html
for id in chart-loss chart-throughput chart-steptime chart-comm; do
  ticks=$(chart "$HP" $id | sed -n 's/.*data-axis="y" data-tick="\([^"]*\)".*/\1/p' | tr '\n' ' ')
  check "phase report $id: round y ticks ($ticks)" round_ticks "$HP" $id y
done
check "ladder.md: attempts, model, timeline, lineage" \
  sh -c "grep -q '^## Phases and attempts' '$R/ladder.md' && grep -q '^## Model and predictions' '$R/ladder.md' &&
         grep -q '^## Verdict timeline' '$R/ladder.md' && grep -q '^## Checkpoint lineage' '$R/ladder.md'"
# A phase that ended before training (no rank wrote a metric: world_size 0) is listed, and the
# rest of the run root is still read: it used to refuse the whole root.
E=$tmp/ended
mkdir -p "$E/p4/reports/9"
cp -r "$R/baseline_1proc" "$E/"
printf '%s\n' '{"verdict":"NO-GO","phase":"p4","job":"9","time":"2026-11-22T10:00:09Z",
 "world_size":0,"throughput":null,"ended":"health","criteria":[],"per_rank":[]}' \
  >"$E/p4/reports/9/report.json"
: >"$E/p4/events.jsonl"
check "--ladder lists a phase that ended before training and reads the rest" \
  sh -c "'$gate' --ladder '$E' >'$tmp/ended.out' 2>&1 &&
         grep -q 'job 9 .*ended before training (health)' '$tmp/ended.out' &&
         grep -q '| 0 | p4 | 9 | NO-GO, ended: health |' '$E/ladder.md'"
expect "--ladder of a directory without reports exits 64" 64 "no phase report under" -- \
  "$gate" --ladder "$tmp"
expect "--ladder with --config is a usage error" 64 "--ladder RUN_ROOT stands alone" -- \
  "$gate" --ladder "$R" --config "$src/configs/phase1_4proc.yaml"

finish
