#!/bin/sh
# asan-ladder.sh: one ladder step through the dev cluster with the programs built with
# AddressSanitizer and UndefinedBehaviorSanitizer (tools/check's sanitizer phase runs it from its
# --enable-asan --enable-ubsan build; elsewhere it skips with 77).  As rzuser, from the installed
# prefix, every job submitted by the one before it:
#   baseline_1proc (GO) -> phase1_4proc on 4 ranks, forced to NO-GO by an unreachable throughput
#   gate -> automatic rollback to baseline_1proc, resuming from phase1's last good checkpoint.
# Every process of every job (ryzen-step, ryzen-gate, each rank of ryzen-train) writes its
# sanitizer reports to files in one directory (log_path); the suite fails on any report there or
# in a job's output.  A deliberately faulty program, run the same way on 4 ranks, shows first that
# a report from each rank does arrive there.
#
# Leak detection stays on for our code.  Open MPI's runtime (and PMIx, hwloc and libevent under
# it) does not free everything at MPI_Finalize: LeakSanitizer suppresses the leaks whose
# allocation stack passes through those libraries, and only those.  The stacks are unwound in
# full (fast_unwind_on_malloc=0): the fast unwinder stops in libraries built without frame
# pointers, and Open MPI unloads its components at MPI_Finalize, so a 2-frame stack names no
# library to suppress (measured: 27 such reports per rank).  It makes each MPI start-up slower
# (a 2-rank run of 10 steps: 4.4 s -> 21.6 s on the loaded 2-core machine).
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
case $src in /*) ;; *) src=$(cd "$src" && pwd) ;; esac
case $build in /*) ;; *) build=$(cd "$build" && pwd) ;; esac

if ! grep -q '^RYZEN_SAN_CFLAGS = .*-fsanitize=address' "$build/Makefile" ||
  ! grep -q '^RYZEN_SAN_CFLAGS = .*-fsanitize=undefined' "$build/Makefile"; then
  echo "SKIP: not a sanitizer build (configure --enable-asan --enable-ubsan; tools/check does)"
  exit 77
fi

# Scratch on the shared filesystem: in the dev cluster's ns mode /tmp is each node's own.
tmp=$(mktemp -d /var/tmp/rz-asan-ladder-XXXXXX)
fail=0
trap 'if [ "$fail" -eq 0 ]; then rm -rf "$tmp"; else echo "kept $tmp for inspection"; fi' EXIT
. "$src/tests/lib.sh"
site_setup

# Sanitizer settings for every process of the jobs: sbatch, ryzen-step and srun pass the
# submitting environment on.  Reports go to $S/<tool>.<exe>.<pid>; a report ends the process
# (halt_on_error, and -fno-sanitize-recover for UBSan) with an exit status no stage of ours
# uses.
S=$tmp/sanitizer
mkdir -p "$S"
chown rzuser: "$S"
cat >"$tmp/lsan.supp" <<'EOF'
# Open MPI's runtime and the libraries under it keep allocations past MPI_Finalize.
leak:libmpi.so
leak:libopen-pal.so
leak:libopen-rte.so
leak:libpmix.so
leak:libhwloc.so
leak:libevent
leak:libprrte.so
EOF
chmod 644 "$tmp/lsan.supp"
export ASAN_OPTIONS="log_path=$S/asan:log_exe_name=1:halt_on_error=1:exitcode=99:detect_leaks=1:fast_unwind_on_malloc=0"
export LSAN_OPTIONS="suppressions=$tmp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="log_path=$S/ubsan:log_exe_name=1:print_stacktrace=1:halt_on_error=1:exitcode=99"

# reports DIR...: every sanitizer report in the log directory and in the given outputs.
reports() {
  find "$S" -type f
  grep -rlE 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer' "$@" \
    2>/dev/null
}

echo "# the programs are sanitized builds"
for p in ryzen-train ryzen-step ryzen-gate; do
  libs=$(ldd "$prefix/bin/$p" 2>/dev/null | grep -oE 'lib(asan|ubsan)\.so' | sort -u | paste -sd' ' -)
  check "$p links $libs" test "$libs" = "libasan.so libubsan.so"
done

echo "# a report from every rank arrives in $S"
cat >"$tmp/overflow.c" <<'EOF'
#include <stdlib.h>
int main(void)
{
    volatile char *p = malloc(8);
    p[8] = 1; /* heap-buffer-overflow */
    free((void *)p);
    return 0;
}
EOF
if ${CC:-cc} -fsanitize=address,undefined -g -o "$tmp/overflow" "$tmp/overflow.c"; then
  chmod 755 "$tmp/overflow"
  as rzuser srun -A ml -p batch -N 1 -n 4 --mem=400M -t 2 "$tmp/overflow" >"$tmp/overflow.out" 2>&1
  n=$(grep -l 'ERROR: AddressSanitizer: heap-buffer-overflow' "$S"/asan.overflow.* 2>/dev/null | wc -l)
  if [ "$n" -eq 4 ]; then ok "... 4 ranks, 4 reports of the overflow"; else
    bad "... 4 ranks, $n reports of the overflow, expected 4"; show "$tmp/overflow.out"; fi
else
  bad "... could not compile the faulty program with ${CC:-cc}"
fi
rm -f "$S"/*

R=$sub/runs
export RYZEN_RUN_ROOT=$R
sets="$chain_model --set checkpoint.interval=5 --set health.sync_check_interval=5
  --set restart.max_restarts=0 $open_gates --set training.steps=20 --set phase1_4proc:training.steps=10
  --set phase1_4proc:gates.throughput_go=1e12 --set phase1_4proc:gates.throughput_no_go=1e12"

field() { last_event "$@"; }
# need NAME JOB CMD...: a condition that must hold; else JOB's output is shown.
need() {
  need_name=$1 need_job=$2 # not n or j: lib.sh's wait_for sets n
  shift 2
  if "$@"; then ok "$need_name"; else bad "$need_name"; show_job "$need_job"; fi
}
samples_at() { jsonl "$1" 'select(.step == ($s | tonumber)) | .samples_seen' --arg s "$2"; }

# no_reports: the last check, also when a stage ended the ladder early.
no_reports() {
  echo "# sanitizer reports of every process of the jobs"
  found=$(reports "$sub"/*.out "$R")
  check "none: ${found:-no report}" test -z "$found"
  for f in $found; do
    echo "---- $f"
    head -n 30 "$f" | sed 's/^/     | /'
  done
}
# followed JOB: the next stage has a job to follow; else the ladder stops here.
followed() {
  [ -n "$1" ] && return 0
  bad "... no job to follow: the ladder stops here"
  no_reports
  finish
}

b=$(submit_as rzuser -A ml -p batch --time=00:20:00 --mem=2000M "$T/baseline_1proc.sh" $sets)
echo "# baseline_1proc: job $b"
# Each stage waits for its job to end (a sanitizer report ends it early), then reads its events.
state=$(wait_done "$b" 600)
need "... ended ($state) after promoting phase1_4proc" "$b" \
  jsonl_ok "$R/baseline_1proc/events.jsonl" 'any(.[]; .event == "promote")'
check "... verdict GO" test "$(field "$R/baseline_1proc/events.jsonl" verdict verdict)" = GO
p=$(field "$R/baseline_1proc/events.jsonl" promote next_job)
check "... as job '$p'" test -n "$p"
followed "$p"

echo "# phase1_4proc: job $p, NO-GO by design"
state=$(wait_done "$p" 600)
need "... ended ($state) after rolling back" "$p" \
  jsonl_ok "$R/phase1_4proc/events.jsonl" 'any(.[]; .event == "rollback")'
check "... verdict NO-GO" test "$(field "$R/phase1_4proc/events.jsonl" verdict verdict)" = NO-GO
check "... on 4 ranks" json_ok "$R/phase1_4proc/summary.json" '.num_processes == 4'
rb=$(field "$R/phase1_4proc/events.jsonl" rollback new_job)
ck=$(field "$R/phase1_4proc/events.jsonl" rollback checkpoint)
check "... to baseline_1proc as job '$rb'" test -n "$rb" -a \
  "$(field "$R/phase1_4proc/events.jsonl" rollback to_phase)" = baseline_1proc
check "... from its last good checkpoint $ck" test "$ck" = "$R/phase1_4proc/checkpoints/step-00000010.h5"
followed "$rb"

echo "# rollback: job $rb, baseline_1proc on 1 rank from phase1's checkpoint"
state=$(wait_done "$rb" 600)
rdir=$R/baseline_1proc/rollback-$p
need "the rollback job completed ($state $(acct "$rb" ExitCode))" "$rb" test "$(acct "$rb" ExitCode)" = 0:0
check "... it started from phase1's checkpoint" \
  test -n "$ck" -a "$(field "$rdir/events.jsonl" rollback_start checkpoint)" = "$ck"
s10=$(samples_at "$R/phase1_4proc/metrics/$p/rank-00000.jsonl" 10)
s11=$(samples_at "$rdir/metrics/$rb/rank-00000.jsonl" 11)
check "... and continued at step 11 with phase1's global batch: samples $s10 -> $s11" \
  test -n "$s10" -a -n "$s11" -a "$((${s11:-0} * 10))" = "$((${s10:-0} * 11))"
check "... finished with a report" test -s "$rdir/reports/$rb/report.json"

no_reports
finish
