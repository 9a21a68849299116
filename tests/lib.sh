# lib.sh: helpers shared by the shell tests (sourced, not run).
#   ok NAME / bad NAME          count a pass or a failure; the line ends with the seconds since
#                               the suite began ("@ 93 s"), so a log shows where a suite's time goes
#   expect NAME CODE PATTERN -- CMD...   run CMD; exit status CODE and PATTERN (grep -E) in its
#                                        output, which stays in $tmp/out
#   finish                      print "N passed, N failed" and exit accordingly
#   mpi_setup                   the build's MPI as the multi-rank suites run it (root allowed,
#                               one thread per rank, oversubscribed on 2 cores); sets $mpirun,
#                               $srun_mpi (the --mpi plugin the build names) and mpi_env
# Every test script sets up $tmp (a scratch directory it removes on exit) before sourcing.
pass=0
fail=0
lib_t0=$(date +%s)

lib_at() { echo "@ $(($(date +%s) - lib_t0)) s"; }
ok() { pass=$((pass + 1)); echo "ok   $1  $(lib_at)"; }
bad() { fail=$((fail + 1)); echo "FAIL $1  $(lib_at)"; }

show() { sed 's/^/     | /' "$1" | tail -n "${2:-20}"; }

expect() {
  name=$1 code=$2 pattern=$3
  shift 4
  "$@" >"$tmp/out" 2>&1
  got=$?
  if [ "$got" -ne "$code" ]; then
    bad "$name: exit $got, expected $code"; show "$tmp/out"
  elif [ -n "$pattern" ] && ! grep -Eq -- "$pattern" "$tmp/out"; then
    bad "$name: output lacks /$pattern/"; show "$tmp/out"
  else
    ok "$name"
  fi
}

# check NAME COMMAND...: a condition that must hold.
check() {
  name=$1
  shift
  if "$@"; then ok "$name"; else bad "$name"; fi
}

finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit $?
}

# The build's MPI for the multi-rank suites (mpi.sh, ops.sh, ladder.sh): Open MPI's mpirun, or
# under an MPICH build (RYZEN_MPI_KIND=mpich, from configure) its Hydra mpiexec, which runs as
# root and oversubscribes without being told.
mpi_setup() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none   # containers often forbid CMA
  export OMPI_MCA_rmaps_base_oversubscribe=1
  mpirun=${MPIRUN:-mpirun}
  case ${RYZEN_MPI_KIND:-openmpi} in
    mpich) srun_mpi=pmi2 ;;
    *) srun_mpi=pmix ;;
  esac
}

# mpi_env NAME=VALUE...: the launcher's flags that set each variable in every rank (Open MPI's
# -x NAME=VALUE, Hydra's -genv NAME VALUE).
mpi_env() {
  for kv in "$@"; do
    if [ "${RYZEN_MPI_KIND:-openmpi}" = mpich ]; then printf ' -genv %s %s' "${kv%%=*}" "${kv#*=}"
    else printf ' -x %s' "$kv"; fi
  done
}

# ---- the dev cluster (slurm.sh, faults.sh, chain.sh) ----------------------------------------
# cluster_lock: hold the dev cluster for this suite until it exits.  The suites share one
# cluster, and one's jobs would disturb another's (seen under `make -j2 check`: faults.sh's urgent
# job preempted slurm.sh's scancel job on n4), so under a parallel `make check` they take turns.
# The lock is fd 8 of this shell; tools/devcluster starts its daemons with no descriptor of ours
# (a daemon that inherited fd 8 held the lock for good: CI's next suite waited out its time).
# The wait is bounded well below CI's limit, and names the processes that hold the lock.
cluster_lock_file() { echo "${TMPDIR:-/tmp}/ryzen-llm-devcluster-tests.lock"; }

# lock_holders FILE: "pid comm" of every live process with FILE open, but this shell and its
# children (a command substitution that calls this holds the lock too, while it runs).
lock_holders() {
  local f p q comm
  for f in $(find /proc/[0-9]*/fd -lname "$1" 2>/dev/null); do
    p=${f#/proc/}
    p=${p%%/*}
    q=$p
    while [ -n "$q" ] && [ "$q" -gt 1 ] && [ "$q" != "$$" ]; do
      q=$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$q/status" 2>/dev/null)
    done
    comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue # gone: it held nothing for long
    [ "$q" = "$$" ] || echo "$p $comm"
  done | sort -u
}

cluster_lock() {
  local lock
  lock=$(cluster_lock_file)
  exec 8>>"$lock"
  if ! flock -n 8; then
    echo "# another suite holds the dev cluster ($lock): waiting for it;" \
      "held by: $(lock_holders "$lock" | paste -sd, -)"
    flock -w 1200 8 || {
      echo "FAIL: $lock still held after 20 minutes, by: $(lock_holders "$lock" | paste -sd, -)"
      exit 1
    }
  fi
}

# site_setup: start the site profile, install ryzen-llm into $tmp/prefix as a site would, and
# make $tmp/sub a submit directory owned by rzuser outside the source tree.  Sets prefix, T (the
# installed templates), sub, and exports the cluster's environment.  Needs $src, $build, $tmp.
site_setup() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: the dev cluster's slurmd must run as root"
    exit 77
  fi
  cluster_lock
  # A rank that dies on a signal leaves a core in its job's working directory (Slurm hands the
  # submitting shell's limits to the job): show_job prints its backtrace.
  ulimit -c unlimited 2>/dev/null || true
  if ! "$src/tools/devcluster" up >"$tmp/up.log" 2>&1; then
    cat "$tmp/up.log"
    echo "FAIL: tools/devcluster up"
    exit 1
  fi
  eval "$("$src/tools/devcluster" env)"
  chmod 755 "$tmp"
  prefix=$tmp/prefix
  make -C "$build" install prefix="$prefix" >"$tmp/install.log" 2>&1 ||
    { tail -n 20 "$tmp/install.log"; echo "FAIL: make install"; exit 1; }
  T=$prefix/share/ryzen-llm/sbatch
  sub=$tmp/sub
  mkdir -p "$sub"
  chown rzuser: "$sub"
  runuser -u rzuser -- mkdir -p "$sub/runs"
  cd "$sub" || exit 1
}

# as USER CMD...: run CMD as a non-root user of the site, with the cluster's environment and
# this shell's core-file limit.  runuser's PAM session (pam_limits) sets the soft core limit back
# to 0, so the user's shell raises it again: Slurm hands sbatch's limits to the job, and a rank
# that dies on a signal then leaves the core site_setup promises (show_job prints it).
as() {
  local u=$1 c
  c=$(ulimit -c)
  shift
  runuser -u "$u" -- sh -c 'ulimit -c "$1" 2>/dev/null; shift; exec "$@"' sh "$c" \
    env PATH="$PATH" SLURM_CONF="$SLURM_CONF" "$@"
}

# submit USER SBATCH-ARGS...: sbatch --parsable as USER; prints the job id.
submit_as() {
  local u=$1
  shift
  as "$u" sbatch --parsable "$@" | cut -d';' -f1 | tee -a "$tmp/submitted"
}

# cancel_submitted: scancel what this suite submitted and is still queued or running (for a
# suite's cleanup: a job one failed check left held must not wait in the next suite's queue).
cancel_submitted() {
  [ -s "$tmp/submitted" ] && scancel $(cat "$tmp/submitted") 2>/dev/null
  return 0
}

# ---- a chain's submissions (chain.sh, asan-ladder.sh, hindcast.sh) ----------------------------
# chain_model: a small model on Markov data.  open_gates: every gate opened but packet_loss
# (judged at its defaults: see site_flags), the chain's own promotion policy kept; each suite
# adds its steps, checkpoints and per-phase settings.
chain_model="--set model.vocab_size=128 --set model.d_model=64 --set model.n_heads=2
  --set model.d_ff=128 --set model.seq_len=32 --set training.batch_size=4 --set data.kind=markov
  --set data.markov_branching=4 --set optimizer.lr=2e-3"
# tiny_model: RZ_TEST_WORKLOAD=tiny's workload (tools/check --fast), set after chain_model or
# small: see site_flags.  hindcast.sh's ladders train it under --fast.
tiny_model="--set model.vocab_size=16 --set model.d_model=16 --set model.n_heads=2
  --set model.n_layers=1 --set model.d_ff=32 --set model.seq_len=2 --set training.batch_size=2
  --set kernels.backend=ref"
open_gates="--set gates.throughput_go=0 --set gates.throughput_no_go=0 --set gates.efficiency_go=0
  --set gates.efficiency_no_go=0 --set gates.comm_go=1 --set gates.comm_no_go=1
  --set gates.allreduce_p99_ms_go=1e9 --set gates.allreduce_p99_ms_no_go=1e9
  --set gates.loss_vs_baseline_pct_go=1e9 --set gates.loss_vs_baseline_pct_no_go=1e9
  --set gates.entropy_gap_go=100 --set gates.entropy_gap_no_go=100 --set gates.memory_go=1
  --set gates.memory_no_go=1 --set gates.uptime_go=0 --set gates.uptime_no_go=0
  --set gates.straggler_ratio_go=1e9 --set gates.straggler_ratio_no_go=1e9
  --set gates.min_duration_h=0"

# ---- the job-step suites' submissions (slurm.sh, faults.sh) ----------------------------------
# site_flags: sets site, lenient and small.
site_flags() {
  # What a user of account ml asks for.
  site="-A ml -p batch --time=00:15:00 --mem=2000M"
  # Gates that pass and no promotion: these tests are about the job step, not the verdict (the
  # chain test is).  Every gate that judges a speed (throughput, communication share, latency,
  # uptime, the straggler ratio) is opened, not set to a figure: on four ranks per node sharing
  # the machine's cores a rank's speed is the machine's and its load's, and short runs are
  # mostly start-up.  A test that judges one of them measures its own baseline (ops.sh).
  # packet_loss is opened too, like every gate these suites do not judge.  It judges the job's
  # own MPI connections between nodes, counted from both ends of each link (docs/gates.md), and
  # is GO only when none is lost.  The suites that judge it set its thresholds themselves:
  # net.sh's undisturbed reference (GO) and its loss scenarios (NO-GO naming the node).  Before
  # the count read both ends, a healthy multi-node phase under a loaded CI machine held at 1
  # segment in 1515, 1976 and 1646 in three fresh-clone runs (issue 37, item 3).
  lenient="--set phase.on_go=stop --set phase.on_hold=stop --set phase.on_no_go=stop
    --set phase.previous=\"\" --set gates.throughput_go=0 --set gates.throughput_no_go=0
    --set gates.comm_go=1 --set gates.comm_no_go=1 --set gates.allreduce_p99_ms_go=1e9
    --set gates.allreduce_p99_ms_no_go=1e9 --set gates.memory_go=1 --set gates.memory_no_go=1
    --set gates.uptime_go=0 --set gates.uptime_no_go=0 --set gates.failures_go=10
    --set gates.failures_no_go=10 --set gates.entropy_gap_go=100 --set gates.entropy_gap_no_go=100
    --set gates.straggler_ratio_go=1e9 --set gates.straggler_ratio_no_go=1e9
    --set gates.packet_loss_go=1 --set gates.packet_loss_no_go=1
    --set gates.min_duration_h=0 --set health.sync_check_interval=5"
  # Control-flow runs: a small model on Markov data with frequent checkpoints.
  small="$lenient --set model.vocab_size=128 --set model.d_model=64 --set model.n_heads=2
    --set model.d_ff=128 --set model.seq_len=32 --set training.batch_size=4
    --set data.kind=markov --set data.markov_branching=4 --set optimizer.lr=2e-3
    --set checkpoint.interval=5"
  # ---- RZ_TEST_WORKLOAD=tiny (tools/check --fast) ------------------------------------------
  # A step over ten times shorter than the small model's on the same CPU, so that the suites
  # run as on a CPU ten times faster: one layer, d_model 16, d_ff 32, seq_len 2, batch 2, vocab
  # 16, and the reference kernels (oneDNN's cost per call bounds the step at this size: 80 us).
  # Measured with ryzen-train alone, 1 rank, median step_time_s of 300 steps: small 642 us,
  # tiny 45 us (14x).  No loss-guard skip in 3 x 1000 steps.
  if [ "${RZ_TEST_WORKLOAD:-}" = tiny ]; then
    small="$small $tiny_model"
  fi
  # ---- end RZ_TEST_WORKLOAD --------------------------------------------------------------
}

# run NAME USER [SBATCH-FLAGS...] -- TEMPLATE [ARGS...]: submit with the run root runs/NAME under
# the submit directory; prints the job id.
run() {
  local name=$1 u=$2
  shift 2
  as "$u" mkdir -p "$sub/runs/$name"
  RYZEN_RUN_ROOT=$sub/runs/$name submit_as "$u" "$@"
}
R() { echo "$sub/runs/$1/$2"; } # R NAME PHASE: a scenario's run directory

# job_field ID FIELD: a field of `scontrol show job` (empty once the job is gone).
job_field() { scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s|^$2=||p" | head -n 1; }

# acct ID FIELD: a field of the job's allocation in accounting (sacct), newest record.
acct() { sacct -n -P -X -j "$1" -o "$2" 2>/dev/null | tail -n 1; }

# acct_settled ID: wait until accounting has the job's final state; slurmdbd learns it a moment
# after scontrol does.  60 s at most: a hang guard, not a speed (a second is usual here).
acct_settled() {
  local i=0
  while [ $i -lt 240 ]; do
    case $(acct "$1" State) in PENDING|RUNNING|REQUEUED|SUSPENDED|"") ;; *) return 0 ;; esac
    sleep 0.25
    i=$((i + 1))
  done
  return 1
}

# ended NAME ID STATE EXIT: the job ended in STATE with ExitCode EXIT (sacct); else its output.
ended() {
  acct_settled "$2"
  got=$(acct "$2" State)
  code=$(acct "$2" ExitCode)
  if [ "$got" = "$3" ] && [ "$code" = "$4" ]; then
    ok "$1 (job $2: $got $code)"
  else
    bad "$1 (job $2: $got $code, expected $3 $4)"
    show_job "$2"
  fi
}

# wait_done ID SECONDS: wait until the job has ended for good; prints its state.  A job that ended
# more than MinJobAge (300 s) ago is gone from slurmctld: accounting answers for it then.
# A job held for 30 s in a row is given up on: it will not run again by itself (ryzen-step
# holds a job only on purpose; its exclusion of a node holds it for a moment, then releases it).
wait_done() {
  local i=0 held=0 state
  while [ $i -lt $(($2 * 2)) ]; do
    state=$(job_field "$1" JobState)
    [ -n "$state" ] || state=$(acct "$1" State | cut -d' ' -f1)
    if [ "$state" = PENDING ] &&
      job_field "$1" Reason | grep -Eq '^(JobHeld|job_requeued_in_held_state)'; then
      held=$((held + 1))
      [ $held -lt 60 ] || { echo "HELD($(job_field "$1" Reason))"; return 1; }
    else
      held=0
    fi
    case $state in
      COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|DEADLINE)
        acct_settled "$1" # so that sacct agrees when the caller reads it
        echo "$state"; return 0 ;;
    esac
    sleep 0.5
    i=$((i + 1))
  done
  echo "TIMEOUT_WAITING($(job_field "$1" JobState))"
  return 1
}

# wait_for SECONDS CMD...: until CMD succeeds (polled every 0.2 s).
wait_for() {
  local n=$(($1 * 5)) i=0
  shift
  until "$@" 2>/dev/null; do
    i=$((i + 1))
    [ $i -ge $n ] && return 1
    sleep 0.2
  done
}

# await NAME SECONDS CMD...: wait_for, counted: a pass, or a failure that says what did not come.
# SECONDS bounds a hang, never a speed: the suites' bounds are sized to leave room for a node at a
# quarter of a core (tools/check --slow), and a test acts on what it waited for only after this said so.
await() {
  aname=$1 asecs=$2
  shift 2
  if wait_for "$asecs" "$@"; then ok "$aname"; else bad "$aname: not within $asecs s"; fi
}

# lacks FILE PATTERN: FILE exists and has lines, and none matches PATTERN (grep -E).  A negative
# grep that a missing or empty file would pass.
lacks() { [ -s "$1" ] && ! grep -Eq -- "$2" "$1"; }

# sacct_lacks ID FIELD PATTERN: accounting answers for every attempt of ID (sacct -D), with at
# least one record, and no record's FIELD matches PATTERN.
sacct_lacks() {
  rows=$(sacct -n -P -D -X -j "$1" -o "$2" 2>/dev/null) || return 1
  [ -n "$rows" ] && ! printf '%s\n' "$rows" | grep -Eq -- "$3"
}

# attempts ID: how many times the job ran (sacct -D: one record per attempt; a requeue adds one).
attempts() { sacct -n -P -D -X -j "$1" -o JobID 2>/dev/null | grep -c .; }

# Holding a job at a step (the test-hook build's RYZEN_TEST_HOLD=STEPS:FILE, core/hooks.h): every
# rank waits after step N until FILE exists or the stop signal came, so a test that acts on a
# running job (a signal, a requeue, a node set DOWN, a killed or stopped rank) never races a job
# that a fast CPU has already finished.  hold_file NAME: the release file for scenario NAME.
hold_file() { echo "$sub/release-$1"; }
release() { touch "$(hold_file "$1")"; }

# Reading JSON: with jq, never grep or sed, which depend on key order and number formatting
# (tests/lint.sh holds tests/ and tools/ to it).  JQ-OPTIONs (--arg NAME VALUE, --argjson) come
# after the filter in these helpers.
# json_ok FILE FILTER [JQ-OPTION...]: FILTER is true of FILE's JSON document.
json_ok() {
  local f=$1 q=$2
  shift 2
  jq -e "$@" "$q" "$f" >/dev/null
}

# jsonl FILE FILTER [JQ-OPTION...]: FILTER over each record of a JSON Lines file (events.jsonl, a
# rank's metrics); strings print raw, objects on one line.  A line that is not (yet) a whole JSON
# value is skipped, as grep skipped it: a writer may be mid-line while a test polls.
jsonl() {
  local f=$1 q=$2
  shift 2
  jq -crR "$@" "fromjson? | $q" "$f" 2>/dev/null
}

# jsonl_ok FILE FILTER [JQ-OPTION...]: FILTER, given the array of FILE's records, is true.
jsonl_ok() {
  local f=$1 q=$2
  shift 2
  jq -enR "$@" "[inputs | fromjson?] | $q" "$f" >/dev/null 2>&1
}

# has_event RUN JOB EVENT [COND [JQ-OPTION...]]: JOB's EVENT in RUN/events.jsonl, one for which
# the jq condition COND holds (e.g. '.reason == "preemption"').
has_event() {
  local r=$1 j=$2 e=$3 c=${4:-true}
  shift 3
  [ $# -gt 0 ] && shift
  jsonl_ok "$r/events.jsonl" "any(.[]; .job == \$j and .event == \$e and ($c))" \
    --arg j "$j" --arg e "$e" "$@"
}

# lacks_event FILE COND [JQ-OPTION...]: FILE (an events.jsonl) has records, and none for which the
# jq condition COND holds (lacks, for JSON: a negative check that cannot pass on a missing file).
lacks_event() {
  local f=$1 c=$2
  shift 2
  jsonl_ok "$f" "length > 0 and all(.[]; ($c) | not)" "$@"
}

# last_event FILE EVENT KEY: KEY of the last EVENT record in FILE (an events.jsonl); empty when
# there is none, or it has no KEY.
last_event() {
  jq -rnR --arg e "$2" --arg k "$3" \
    '[inputs | fromjson? | select(.event == $e)] | last | .[$k] // empty' "$1" 2>/dev/null
}

# event_field RUN JOB EVENT KEY: KEY of JOB's last EVENT.
event_field() {
  jsonl "$1/events.jsonl" 'select(.job == $j and .event == $e and has($k)) | .[$k]' \
    --arg j "$2" --arg e "$3" --arg k "$4" | tail -n 1
}

# step_reached RUN JOB N: rank 0's metrics of JOB reached step N.
step_reached() {
  last=$(jsonl "$1/metrics/$2/rank-00000.jsonl" '.step' | tail -n 1)
  [ -n "$last" ] && [ "$last" -ge "$3" ]
}

# ckpts_verify RUN: every checkpoint the run committed verifies (ryzen-ckpt verify); prints how
# many there are, and fails when there are none or one does not verify.
ckpts_verify() {
  local f n=0
  for f in "$1"/checkpoints/step-*.h5; do
    [ -f "$f" ] || continue
    "$prefix/bin/ryzen-ckpt" verify "$f" >/dev/null 2>&1 || { echo "$n, then $f failed"; return 1; }
    n=$((n + 1))
  done
  echo "$n"
  [ "$n" -gt 0 ]
}

# check_ckpts NAME RUN: the check that every checkpoint of RUN verifies, and that there is one.
check_ckpts() {
  local said
  if said=$(ckpts_verify "$2"); then ok "$1 ($said)"; else bad "$1 (${said:-none})"; fi
}

# ckpt_info FILE KEY: a field of `ryzen-ckpt info`.
ckpt_info() { "$prefix/bin/ryzen-ckpt" info "$1" 2>/dev/null | jq -r --arg k "$2" 'select(has($k)) | .[$k]'; }
newest_ckpt() { ls "$1"/checkpoints/step-*.h5 2>/dev/null | sort | tail -n 1; }

# same_params NAME REF-RUN RUN STEP: the two runs' step-STEP checkpoints hold the same parameters.
same_params() {
  a=$(ckpt_info "$3/checkpoints/step-$(printf %08d "$4").h5" params_sha256)
  b=$(ckpt_info "$2/checkpoints/step-$(printf %08d "$4").h5" params_sha256)
  check "$1: params_sha256 $a" test -n "$a" -a "$a" = "$b"
}

# show_job ID: for a failed check, the end of its output, then its events in every run
# directory under the submit directory (event name and message: the attempts and why each ended).
show_job() {
  local f
  for f in "$sub"/*-"$1".out; do
    [ -f "$f" ] && grep -v '^step ' "$f" | tail -n 25 | sed 's/^/     | /'
  done
  for f in "$sub"/runs/*/*/events.jsonl; do
    [ -f "$f" ] && jsonl "$f" 'select(.job == $j and has("message")) |
      "     | event \(.event): \(.message[:300])"' --arg j "$1" | tail -n 15
  done
  for f in "$sub"/core*; do # a rank's core: where it died
    [ -f "$f" ] && command -v gdb >/dev/null &&
      gdb -batch -ex bt "$prefix/bin/ryzen-train" "$f" 2>/dev/null | grep '^#' | head -n 12 |
      sed "s|^|     | $(basename "$f"): |"
  done
}
