#!/bin/sh
# chaos.sh: a short soak of tools/chaos on the dev cluster's site profile (phase2a_8proc, two
# nodes of four ranks, as rzuser): a run without faults, then one with a rank killed, its run
# root's disk filled at a checkpoint, a rank stopped, a checkpoint corrupted and the job
# requeued, from a fixed seed (400 steps, about a minute and a half on 2 cores).  It asserts what must hold whatever the machine's speed: the
# faulted run finishes, its final parameters are the undisturbed run's bits, no committed
# checkpoint is lost, and every rank loss was recovered and measured.  Never a goodput figure: that is the soak's measurement, not a test (the issue's
# targets are judged from tools/chaos runs, docs/reliability.md).  Needs root.
# In the slow tier (`tools/check --all`; two runs of a phase, about 3 minutes on 2 cores): each
# fault kind it injects is also tested alone in faults.sh, slurm.sh and net.sh, which
# `tools/check` runs.
# tier: slow
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
case $src in /*) ;; *) src=$(cd "$src" && pwd) ;; esac
case $build in /*) ;; *) build=$(cd "$build" && pwd) ;; esac
tmp=$(mktemp -d /var/tmp/rz-chaos-test-XXXXXX)
fail=0
# shellcheck disable=SC2154 # kept is set inside the trap's own text
trap 'kept=$(sed -n "s/^chaos: runs kept in //p" "$tmp/out" 2>/dev/null | tail -n 1)
      if [ "$fail" -eq 0 ]; then rm -rf "$tmp" ${kept:+"$kept"}
      else echo "kept $tmp and ${kept:-no soak directory} for inspection"; fi' EXIT
. "$src/tests/lib.sh"
site_setup

echo "# tools/chaos: phase2a_8proc, 400 steps, a kill -9 while held after step 100, then a fault"
echo "# every 4 s on average, seed 7"
# The first fault hits the job held after step 100 (RYZEN_TEST_HOLD), so that it happens on a
# CPU of any speed; the later ones come when they come, and are only checked as they came.  The
# bound (5 minutes per run) is a hang guard.
expect "the soak ran both runs and wrote its report" 0 "goodput" -- \
  env RYZEN_BUILD="$build" "$src/tools/chaos" --phase phase2a_8proc --steps 400 \
  --mean-interval 4 --minutes 5 --seed 7 --faults "kill9 stop corrupt requeue full" \
  --set restart.failures=relaunch \
  --first-at-step 100 --json "$tmp/chaos.json"
cat "$tmp/out"
j() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
  "$tmp/chaos.json" "$1" 2>/dev/null; }
check "the faulted run trained all 400 steps ($(j 'd["steps_done"]'))" \
  test "$(j 'd["completed"]')" = True
check "its final parameters are the undisturbed run's bits ($(j 'd["params_sha256"]["chaos"]'))" \
  test "$(j 'd["bit_identical"]')" = True
check "no committed checkpoint was lost ($(j 'd["checkpoints_committed"]') committed)" \
  test "$(j 'd["lost_checkpoints"]')" = 0 -a "$(j 'd["checkpoints_committed"]')" -gt 0
check "the first fault was the kill -9 ($(j 'd["faults"][0]["kind"]'))" \
  test "$(j 'd["faults"][0]["kind"]')" = kill9
check "... recovered in the allocation (relaunch), not through the queue" \
  test "$(j 'd["faults"][0].get("restarted_by")')" = relaunch
check "... its recovery measured and split ($(j 'd["faults"][0]["recovery_s"]') s)" \
  test "$(j 'd["faults"][0]["recovery_s"] > 0 and d["faults"][0]["parts"]["queue_wait"] == 0')" = True
# seed 7's second fault is the full disk, as soon as training runs again after the first: the
# checkpoint 20 steps on finds no room, and training goes on (checkpoint.failures_tolerated)
check "the second fault filled the run root's disk ($(j 'd["faults"][1]["kind"]'): $(j 'd["faults"][1].get("detail")'))" \
  test "$(j 'd["faults"][1]["kind"]')" = full
check "... a checkpoint was not written, and training went on without a restart" \
  test "$(j '"a checkpoint was not written" in d["faults"][1]["detail"] and d["faults"][1]["note"].startswith("training went on")')" = True
check "every rank loss of the soak recovered, with its time measured ($(j 'len(d["faults"])') faults)" \
  test "$(j 'all(f["recovery_s"] is not None for f in d["faults"] if f["kind"] in ("kill9", "stop"))')" = True
check "the goodput is a share (0 < $(j 'd["goodput"]') <= 1)" \
  test "$(j '0 < d["goodput"] <= 1 and 0 < d["baseline"]["goodput"] <= 1')" = True
finish
