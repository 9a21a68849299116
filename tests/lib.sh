# lib.sh: helpers shared by the shell tests (sourced, not run).
#   ok NAME / bad NAME          count a pass or a failure
#   expect NAME CODE PATTERN -- CMD...   run CMD; exit status CODE and PATTERN (grep -E) in its
#                                        output, which stays in $tmp/out
#   finish                      print "N passed, N failed" and exit accordingly
#   mpi_setup                   Open MPI as the multi-rank suites run it (root allowed, one
#                               thread per rank, oversubscribed on 2 cores); sets $mpirun
# Every test script sets up $tmp (a scratch directory it removes on exit) before sourcing.
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

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

# Open MPI for the multi-rank suites (mpi.sh, ops.sh, ladder.sh).
mpi_setup() {
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none   # containers often forbid CMA
  export OMPI_MCA_rmaps_base_oversubscribe=1
  mpirun=${MPIRUN:-mpirun}
}
