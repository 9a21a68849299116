#!/bin/sh
# mpich.sh: an MPICH build of ryzen-llm on the dev cluster under Slurm's PMI-2 plugin (tools/check's
# MPICH phase runs it from its --with-mpi=mpich build; in any other build it skips with 77).  As
# rzuser, from the installed prefix, one multi-node phase:
#   the programs link MPICH, not Open MPI; this Slurm offers pmi2 (srun --mpi=list)
#   phase2a_8proc (2 nodes x 4 ranks) without RYZEN_SRUN_MPI: ryzen-step chooses pmi2 even though
#     pmix is listed (an srun_mpi event says so), the preflight and the training step run under
#     srun --mpi=pmi2, 8 ranks of one MPI world on 2 nodes train, checkpoint and get a verdict
#   the MPICH ryzen-train started by srun --mpi=pmix (each task would be a world of its own): the
#     launch check ends it before MPI_Init, exit 70, naming srun --mpi=pmi2
# Needs root (slurmd); leaves the cluster up for the next suite.
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
case $src in /*) ;; *) src=$(cd "$src" && pwd) ;; esac
case $build in /*) ;; *) build=$(cd "$build" && pwd) ;; esac

if ! grep -q '^MPI_KIND = mpich' "$build/Makefile"; then
  echo "SKIP: not an MPICH build (configure --with-mpi=mpich; tools/check's MPICH phase does)"
  exit 77
fi

# Scratch on the shared filesystem: in the dev cluster's ns mode /tmp is each node's own.
tmp=$(mktemp -d /var/tmp/rz-mpich-XXXXXX)
fail=0
trap 'cancel_submitted; if [ "$fail" -eq 0 ]; then rm -rf "$tmp"; else echo "kept $tmp for inspection"; fi' EXIT
. "$src/tests/lib.sh"
site_setup
site_flags
unset RYZEN_SRUN_MPI

echo "# the installed programs are MPICH's"
for p in ryzen-train ryzen-step; do
  libs=$(ldd "$prefix/bin/$p" 2>/dev/null | grep -oE 'lib(mpich|mpi)\.so[.0-9]*' | sort -u | paste -sd' ' -)
  check "$p links ${libs:-no MPI library}" test "$libs" = "libmpich.so.12"
done
srun --mpi=list >"$tmp/mpi-list" 2>&1
check "this Slurm offers pmi2 ($(grep -E '^[[:space:]]+[a-z_0-9]+$' "$tmp/mpi-list" | paste -sd, - | tr -d '\t '))" \
  grep -qx '[[:space:]]*pmi2' "$tmp/mpi-list"

echo "# phase2a_8proc, 2 nodes x 4 ranks, under the plugin ryzen-step chooses"
j=$(run p2a rzuser $site "$T/phase2a_8proc.sh" $small --set training.steps=10)
r=$(R p2a phase2a_8proc)
st=$(wait_done "$j" 400)
ended "phase2a_8proc completes ($st)" "$j" COMPLETED 0:0
check "... ryzen-step chose pmi2 for MPICH: $(event_field "$r" "$j" srun_mpi message)" \
  test "$(event_field "$r" "$j" srun_mpi plugin)" = pmi2
check "... the training step ran under srun --mpi=pmi2" \
  has_event "$r" "$j" train_start '.message | contains($m)' --arg m "srun --mpi=pmi2 "
check "... 8 ranks of one world" json_ok "$r/summary.json" '.num_processes == 8'
check "... metrics from all 8 ranks" test -s "$r/metrics/$j/rank-00007.jsonl"
hosts=$(jq '[.ranks[].host] | unique | length' "$r/health.json" 2>/dev/null)
check "... on 2 nodes (health.json names $hosts)" test "$hosts" -eq 2
check_ckpts "... every checkpoint verifies" "$r"
check "... a verdict in sacct's Comment: $(acct "$j" Comment)" \
  sh -c "sacct -n -P -X -j $j -o Comment | grep -Eq '^phase2a_8proc: (GO|HOLD|NO-GO)'"

echo "# the MPICH trainer under srun --mpi=pmix: ended by the launch check before MPI_Init"
as rzuser srun -A ml -p batch -N 2 -n 2 --mem=500M -t 2 --mpi=pmix "$prefix/bin/ryzen-train" \
  --config "$prefix/share/ryzen-llm/configs/seed_benchmark.yaml" --preflight \
  --run-dir "$sub/runs/pmix" >"$tmp/pmix.out" 2>&1
code=$?
check "srun exits 70 (exit $code)" test "$code" -eq 70
check "... saying PMI_RANK is unset and to launch with srun --mpi=pmi2" \
  grep -q 'PMI_RANK is unset.*Launch with `srun --mpi=pmi2`' "$tmp/pmix.out"
[ "$fail" -eq 0 ] || show "$tmp/pmix.out"

finish
