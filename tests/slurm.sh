#!/bin/sh
# slurm.sh: the Slurm suite end to end on the real dev cluster (tools/devcluster: slurmctld and
# four slurmd on this machine).  It submits the real sbatch templates; nothing is stubbed.
#   phase1 (4 ranks, 1 node) completes; phase2a (8 ranks) ran on two nodes;
#   scontrol requeue mid-run resumes and ends with the same parameters as an uninterrupted run;
#   a warning signal (scancel --signal=USR2 --batch) checkpoints, requeues and finishes, losing
#   at most one step; kill -9 of a rank fails the step fast, is requeued and finishes;
#   a bad config ends at once with 64, not requeued; a wrong launch (--mpi=none) is caught by the
#   preflight (70).
# Needs root (slurmd); leaves the cluster up for the next test (tools/devcluster down stops it).
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
case $src in /*) ;; *) src=$(cd "$src" && pwd) ;; esac
case $build in /*) ;; *) build=$(cd "$build" && pwd) ;; esac
tmp=$(mktemp -d /tmp/rz-slurm-XXXXXX)
trap 'if [ "$fail" -eq 0 ]; then rm -rf "$tmp"; else echo "kept $tmp for inspection"; fi' EXIT
. "$src/tests/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the dev cluster's slurmd must run as root"
  exit 77
fi
if ! "$src/tools/devcluster" up >"$tmp/up.log" 2>&1; then
  cat "$tmp/up.log"
  echo "FAIL: tools/devcluster up"
  exit 1
fi
eval "$("$src/tools/devcluster" env)"
PATH=$build:$PATH
export PATH

# The submit directory: what a user's checkout looks like.
sub=$tmp/sub
mkdir -p "$sub"
ln -s "$src/configs" "$sub/configs"
ln -s "$src/sbatch" "$sub/sbatch"
cd "$sub" || exit 1

# Gates that pass and no promotion: these tests are about the job step, not the verdict (the
# chain test is).  Two cores cannot reach the roadmap's throughput, and short runs are mostly
# start-up, so the performance and stability gates are opened here.
lenient="--set phase.on_go=stop --set phase.on_hold=stop --set phase.on_no_go=stop
  --set phase.previous=\"\" --set gates.throughput_go=0 --set gates.throughput_no_go=0
  --set gates.comm_go=1 --set gates.comm_no_go=1 --set gates.allreduce_p99_ms_go=1e9
  --set gates.allreduce_p99_ms_no_go=1e9 --set gates.memory_go=1 --set gates.memory_no_go=1
  --set gates.uptime_go=0 --set gates.uptime_no_go=0 --set gates.failures_go=10
  --set gates.failures_no_go=10 --set gates.entropy_gap_go=100 --set gates.entropy_gap_no_go=100
  --set gates.min_duration_h=0 --set health.sync_check_interval=5"
# Control-flow runs: a small model on Markov data with frequent checkpoints.
small="$lenient --set model.vocab_size=128 --set model.d_model=64 --set model.n_heads=2
  --set model.d_ff=128 --set model.seq_len=32 --set training.batch_size=4
  --set data.kind=markov --set data.markov_branching=4 --set optimizer.lr=2e-3
  --set checkpoint.interval=5"

submit() { sbatch --parsable "$@" | cut -d';' -f1; }

# job_field ID FIELD: a field of `scontrol show job` (empty once the job is gone).
job_field() { scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }

# ended NAME ID STATE [EXIT]: the job ended in STATE (with exit code EXIT); else show its output.
ended() {
  want_exit=${4:-}
  got_exit=$(job_field "$2" ExitCode)
  if [ "$3" = "$st" ] && { [ -z "$want_exit" ] || [ "$got_exit" = "$want_exit" ]; }; then
    ok "$1 (job $2: $st, exit $got_exit)"
  else
    bad "$1 (job $2: $st, exit $got_exit)"
    for f in *-"$2".out; do [ -f "$f" ] && grep -v '^step ' "$f" | tail -n 25 | sed 's/^/     | /'; done
  fi
}

# wait_done ID SECONDS: wait until the job has ended for good; prints its state.
wait_done() {
  i=0
  while [ $i -lt $(($2 * 2)) ]; do
    st=$(job_field "$1" JobState)
    case $st in
      COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) echo "$st"; return 0 ;;
    esac
    sleep 0.5
    i=$((i + 1))
  done
  echo "TIMEOUT_WAITING($(job_field "$1" JobState))"
  return 1
}

# wait_step RUN JOB N: wait (120 s at most) until rank 0's metrics of the job reach step N.
wait_step() {
  i=0
  while [ $i -lt 1200 ]; do
    last=$(tail -n 1 "$1/metrics/$2/rank-00000.jsonl" 2>/dev/null | sed -n 's/^{"step":\([0-9]*\),.*/\1/p')
    [ -n "$last" ] && [ "$last" -ge "$3" ] && return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}

events() { grep "\"job\":\"$2\"" "$1/events.jsonl" 2>/dev/null; }
has_event() { events "$1" "$2" | grep -q "\"event\":\"$3\""; }
info() { ryzen-ckpt info "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"]*\).*/\1/p"; }
newest_ckpt() { ls "$1"/checkpoints/step-*.h5 2>/dev/null | sort | tail -n 1; }

# run NAME TEMPLATE ARGS...: submit with its own run root $tmp/NAME; prints the job id.
run() {
  name=$1
  shift
  mkdir -p "$tmp/$name"
  RYZEN_RUN_ROOT=$tmp/$name submit "$@"
}

echo "# phase1: 1 node x 4 ranks, the seed workload"
id=$(run p1 sbatch/phase1_4proc.sh $lenient --set training.steps=12 --set checkpoint.interval=6)
st=$(wait_done "$id" 300)
r=$tmp/p1/phase1_4proc
ended "phase1 completes" "$id" COMPLETED 0:0
check "... metrics from all 4 ranks" test -s "$r/metrics/$id/rank-00003.jsonl"
check "... summary.json with 4 processes" grep -q '"num_processes":4,' "$r/summary.json"
check "... events: start, preflight, resume, train_exit 0, finished, verdict" \
  sh -c "for e in start preflight resume train_exit finished verdict; do grep -q \"\\\"event\\\":\\\"\$e\\\"\" '$r/events.jsonl' || exit 1; done"
check "... final checkpoint step 12 verifies" ryzen-ckpt verify "$r/checkpoints/step-00000012.h5"
check "... health.json from the preflight" grep -q '^{"ok":true' "$r/health.json"
check "... the report" test -s "$r/reports/$id/report.md"
check "... job output names the run" grep -q "ryzen-step: start: job $id" "ryzen-phase1_4proc-$id.out"

echo "# phase2a: 2 nodes x 4 ranks"
id=$(run p2a sbatch/phase2a_8proc.sh $small --set training.steps=10)
st=$(wait_done "$id" 300)
r=$tmp/p2a/phase2a_8proc
ended "phase2a completes" "$id" COMPLETED 0:0
check "... 8 ranks" grep -q '"num_processes":8,' "$r/summary.json"
nodes=$(grep -o '"host":"[^"]*"' "$r/summary.json" | sort -u | tr '\n' ' ')
check "... on two nodes: $nodes" test "$(grep -o '"host":"[^"]*"' "$r/summary.json" | sort -u | wc -l)" -eq 2
check "... the preflight saw both nodes too" \
  sh -c "grep -q '\"host\":\"n1\"' '$r/health.json' && grep -q '\"host\":\"n2\"' '$r/health.json'"

echo "# scontrol requeue mid-run: resumes, same final parameters as an uninterrupted run"
ref=$(run ref sbatch/phase1_4proc.sh $small --set training.steps=40)
id=$(run rq sbatch/phase1_4proc.sh $small --set training.steps=40)
r=$tmp/rq/phase1_4proc
wait_step "$r" "$id" 17
scontrol requeue "$id"
st=$(wait_done "$id" 300)
ended "the requeued job completes" "$id" COMPLETED 0:0
check "... after $(job_field "$id" Restarts) restart(s)" test "$(job_field "$id" Restarts)" -ge 1
check "... it resumed from a checkpoint" \
  sh -c "grep '\"job\":\"$id\"' '$r/events.jsonl' | grep '\"event\":\"resume\"' | grep -q 'resuming from'"
st=$(wait_done "$ref" 300)
ended "the uninterrupted reference completes" "$ref" COMPLETED 0:0
a=$(info "$r/checkpoints/step-00000040.h5" params_sha256)
b=$(info "$tmp/ref/phase1_4proc/checkpoints/step-00000040.h5" params_sha256)
check "... final params_sha256 identical: $a" test -n "$a" -a "$a" = "$b"

echo "# warning signal (scancel --signal=USR2 --batch): checkpoint, requeue, resume, finish"
id=$(run sig sbatch/phase1_4proc.sh $small --set training.steps=60)
r=$tmp/sig/phase1_4proc
wait_step "$r" "$id" 22
scancel --signal=USR2 --batch "$id"
st=$(wait_done "$id" 300)
ended "the signalled job completes" "$id" COMPLETED 0:0
check "... it requeued itself after a signal checkpoint" \
  sh -c "grep '\"event\":\"requeue\"' '$r/events.jsonl' | grep -q '\"reason\":\"signal\"'"
redone=$(sed -n 's/^{"step":\([0-9]*\),.*/\1/p' "$r/metrics/$id/rank-00000.jsonl" | sort -n | uniq -d | wc -l)
check "... losing at most one step of work ($redone step(s) redone)" test "$redone" -le 1
check "... all 60 steps done" test -f "$r/checkpoints/step-00000060.h5"

echo "# kill -9 of one rank: the step fails fast, the wrapper requeues, the job finishes"
id=$(run k9 sbatch/phase1_4proc.sh $small --set training.steps=60)
r=$tmp/k9/phase1_4proc
wait_step "$r" "$id" 22
victim=$(sed -n 's/.* pid \([0-9]*\) .*/\1/p' "$r/health/rank-00002.hb")
t0=$(date +%s)
kill -9 "$victim"
i=0
until grep -q '"event":"train_exit"' "$r/events.jsonl" 2>/dev/null || [ $i -ge 600 ]; do
  sleep 0.1; i=$((i + 1))
done
down=$(($(date +%s) - t0))
check "... the step went down ${down} s after the kill (< 30 s)" test "$down" -lt 30
st=$(wait_done "$id" 300)
ended "the job with a killed rank completes" "$id" COMPLETED 0:0
check "... after a failure requeue" \
  sh -c "grep '\"event\":\"requeue\"' '$r/events.jsonl' | grep -q '\"reason\":\"failure\"'"
check "... resumed from a checkpoint" \
  sh -c "grep '\"event\":\"resume\"' '$r/events.jsonl' | grep -q 'resuming from'"

echo "# a bad config ends at once with 64 and is not requeued"
id=$(run bad sbatch/phase1_4proc.sh --set model.d_model=250)
st=$(wait_done "$id" 120)
ended "bad config" "$id" FAILED 64:0
check "... not requeued" test "$(job_field "$id" Restarts)" -eq 0
check "... the message is in the job output" \
  grep -q "model.d_model = 250" "ryzen-phase1_4proc-$id.out"

echo "# a wrong launch (srun --mpi=none) is caught by the preflight (70)"
id=$(RYZEN_SRUN_MPI=none run wrong sbatch/phase1_4proc.sh $small --set training.steps=5)
st=$(wait_done "$id" 120)
r=$tmp/wrong/phase1_4proc
ended "wrong launch" "$id" FAILED 70:0
check "... a NO-GO (health) report" grep -q '"verdict":"NO-GO","reason":"health"' "$r/reports/$id/report.json"
check "... health.json says srun started it with --mpi=none" \
  grep -q '"name":"launch","ok":false,"detail":"launch check on task 0 of step [0-9]*: srun started it with --mpi=none' \
  "$r/health.json"
check "... not requeued" test "$(job_field "$id" Restarts)" -eq 0

finish
