#!/bin/sh
# faults.sh: what a site does to a running phase, on the dev cluster's site profile, as rzuser
# from the installed prefix:
#   preemption by a job in the urgent partition: the user signal, a checkpoint within GraceTime,
#     Slurm's requeue, a resume, parameters bit-identical to an uninterrupted run; the report
#     counts a preemption, not a failure
#   a node of a 2-node phase with a spare (-N 3 --no-kill) set DOWN mid-run: relaunched in the
#     allocation on the two nodes left, not requeued, bit-identical (a node loss without a spare,
#     requeued by Slurm: net.sh's cut link)
#   a real time limit with the template's --signal: checkpoint on the warning, 75, requeue, resume
#   restart policy: stop-signal requeues have their own cap (then held, as restart.when_stuck
#     hold asks, with a report); array tasks requeue as themselves; a node that fails the
#     preflight is excluded and named; a preflight that hangs in MPI's start-up is ended at
#     health.preflight_timeout_s and launched again; so is a training step whose start-up hangs
#     (health.start_timeout_s), as a hang that restart.failures relaunches
# Needs root (slurmd, node states); leaves the cluster up and every node in service.
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
case $src in /*) ;; *) src=$(cd "$src" && pwd) ;; esac
case $build in /*) ;; *) build=$(cd "$build" && pwd) ;; esac
# Scratch on the shared filesystem: in the dev cluster's ns mode /tmp is each node's own.
tmp=$(mktemp -d /var/tmp/rz-faults-XXXXXX)
fail=0
down_node=""
trap 'for n in $down_node; do scontrol update nodename=$n state=resume >/dev/null 2>&1; done
      if [ "$fail" -eq 0 ]; then rm -rf "$tmp"; else echo "kept $tmp for inspection"; fi' EXIT
. "$src/tests/lib.sh"
site_setup

site_flags
P1=$T/phase1_4proc.sh
P2=$T/phase2a_8proc.sh

echo "# submitting the uninterrupted references"
# (not on n4, which the preemption test takes)
ref1=$(run ref1 rzuser $site --exclude=n4 "$P1" $small --set training.steps=60)
ref400=$(run ref400 rzuser $site --exclude=n4 "$P1" $small --set training.steps=400 \
  --set checkpoint.interval=20)
# A real time limit, checked further down: --time=3 with a 60 s lead, so the warning comes 90 to
# 120 s into each attempt (Slurm sends it up to 30 s early, measured).  The first attempt holds
# after step 20 (a checkpoint) until the warning comes (RYZEN_TEST_HOLD, lib.sh), so it is still
# training then on any machine, however fast; and start-up has 90 s to reach training, room for
# a node at a quarter of a core (with --time=1 the warning came during a loaded machine's
# 12 s preflight: two attempts without a checkpoint, then held).  The math stays the reference's.
j_time=$(RYZEN_TEST_HOLD=20:$(hold_file time) run time rzuser -A ml -p batch --time=3 \
  -w n1 --signal=B:USR2@60 --mem=2000M "$P1" $small --set training.steps=400 --set checkpoint.interval=20)
ref2=$(run ref2 rzuser $site --exclude=n4 "$P2" $small --set training.steps=60)

echo "# preemption: an urgent job takes the node of a running batch phase"
j=$(RYZEN_TEST_HOLD=15:$(hold_file pre) run pre rzuser $site -w n4 "$P1" $small --set training.steps=60)
r=$(R pre phase1_4proc)
await "... the batch job holds at step 15" 300 step_reached "$r" "$j" 15
u=$(submit_as rzother -A other -p urgent -w n4 -N 1 -n 8 --time=00:05:00 --mem=500M \
  -o /dev/null --wrap "sleep 5")
wait_for 120 has_event "$r" "$j" requeue '.reason == "preemption"'
check "... the batch job was requeued as a preemption" has_event "$r" "$j" requeue '.reason == "preemption"'
check "... after a checkpoint on the user signal" has_event "$r" "$j" attempt_end '.progress == 1'
st=$(wait_done "$u" 200)
check "the urgent job ran (sacct: $(acct "$u" State))" test "$(acct "$u" State)" = COMPLETED
st=$(wait_done "$j" 400)
ended "the preempted job completes" "$j" COMPLETED 0:0
check "... it resumed from its checkpoint" has_event "$r" "$j" resume '.message | contains("resuming from")'
st=$(wait_done "$ref1" 400)
same_params "... bit-identical to an uninterrupted run" "$(R ref1 phase1_4proc)" "$r" 60
check "... the report counts a preemption, not a failure" \
  json_ok "$r/reports/$j/report.json" '.requeues.preemption == 1 and .requeues.failure == 0'

echo "# node loss with a spare: a node the ranks run on goes DOWN; relaunched in the allocation"
# sbatch -N 3 --no-kill: one node more than the template's 2.  The lost node leaves the
# allocation; ryzen-step runs the phase again on the two left, with its 8 ranks, without a trip
# through the queue (src/step/place.c).
j=$(RYZEN_TEST_HOLD=15:$(hold_file node) run node rzuser $site -N 3 --no-kill "$P2" $small \
  --set training.steps=60)
r=$(R node phase2a_8proc)
await "... the job holds at step 15" 300 step_reached "$r" "$j" 15
batch=$(job_field "$j" BatchHost)
ranks=$(squeue -s -j "$j" -h -o "%i %N" | awk '$1 ~ /\.[0-9]+$/ {n = $2} END {print n}')
# a node with ranks on it, not the batch host (under --no-kill Slurm ends the job FAILED when
# that one goes: docs/reliability.md), and not n1 (the time-limit job's node)
victim=$(for n in $(scontrol show hostnames "$ranks"); do
           [ "$n" != "$batch" ] && [ "$n" != n1 ] && echo "$n"; done | head -n 1)
check "... its ranks run on 2 of its 3 nodes ($ranks), a victim among them (${victim:-none})" \
  test -n "$victim" -a "$(scontrol show hostnames "$ranks" | wc -l)" -eq 2
down_node=$victim
scontrol update nodename="$victim" state=down reason=ryzen-test
release node
st=$(wait_done "$j" 400)
ended "... it completes" "$j" COMPLETED 0:0
check "... $victim was named lost" has_event "$r" "$j" node_failed '.nodes == $v' --arg v "$victim"
check "... and the phase relaunched in its allocation, as a node failure" \
  has_event "$r" "$j" relaunch '.reason == "node_failure"'
check "... never requeued (one start)" \
  jsonl_ok "$r/events.jsonl" '[.[] | select(.event == "start")] | length == 1'
# the lost step holds its CPUs on the nodes left until Slurm marks the node down: the
# relaunch's steps share them (place.c), the first launch does not
overlap() { jsonl "$r/events.jsonl" 'select(.event == "train_start") | .message | contains(" --overlap ") | if . then 1 else 0 end'; }
ov_first=$(overlap | head -n 1)
ov_last=$(overlap | tail -n 1)
check "... the relaunch's steps overlap what the lost step holds (srun --overlap: $ov_last), the first not ($ov_first)" \
  test "$ov_last" = 1 -a "$ov_first" = 0
last=$(sacct -n -P -j "$j" -o JobID,NodeList | awk -F'|' '$1 ~ /\.[0-9]+$/ {n = $2} END {print n}')
check "... its last step ran on 2 nodes without $victim ($last)" \
  sh -c "test \"\$(scontrol show hostnames '$last' | wc -l)\" -eq 2 && ! scontrol show hostnames '$last' | grep -qx '$victim'"
check "... no failure was counted" lacks_event "$r/events.jsonl" '.reason == "failure"'
check "... the report names $victim lost" json_ok "$r/reports/$j/report.json" '.nodes_lost == $v' --arg v "$victim"
st=$(wait_done "$ref2" 400)
same_params "... bit-identical to an uninterrupted run" "$(R ref2 phase2a_8proc)" "$r" 60
scontrol update nodename="$victim" state=resume
down_node=""
wait_for 60 sh -c "sinfo -h -n $victim -o %T | grep -qv 'down\|drain'"
check "$victim is back in service ($(sinfo -h -n "$victim" -o %T))" \
  sh -c "sinfo -h -n $victim -o %T | grep -qv 'down\|drain'"

echo "# stop-signal requeues have their own cap: then held (restart.when_stuck hold), with a report"
# holds after steps 10 and 25 (checkpoints), each until its signal: both signals reach a training job
j=$(RYZEN_TEST_HOLD=10,25:$(hold_file cap) run cap rzuser $site "$P1" $small --set training.steps=400 \
  --set restart.max_signal_requeues=1 --set restart.when_stuck=hold)
r=$(R cap phase1_4proc)
await "... the job holds at step 10" 200 step_reached "$r" "$j" 10
as rzuser scancel --signal=USR2 --batch "$j"
await "... requeued and started again" 200 \
  jsonl_ok "$r/events.jsonl" '[.[] | select(.job == $j and .event == "start")] | length == 2' --arg j "$j"
await "... holds at step 25" 200 step_reached "$r" "$j" 25
as rzuser scancel --signal=USR2 --batch "$j"
await "... gives up" 120 has_event "$r" "$j" give_up
wait_for 60 sh -c "scontrol show job $j | grep -q 'Reason=.*[Hh]eld'"
check "... the second signal requeue was over the cap: held" \
  sh -c "scontrol show job $j | grep -q 'Reason=.*[Hh]eld'"
check "... a NO-GO report says why" \
  json_ok "$r/reports/$j/report.json" 'any(.. | strings; contains("restart.max_signal_requeues"))'
scancel "$j"

echo "# array tasks requeue as themselves, each in its own run directory"
# both tasks hold after step 10: task 0 until its signal, task 1 until released
a=$(RYZEN_TEST_HOLD=10:$(hold_file array) run array rzuser $site --array=0-1 "$P1" $small \
  --set training.steps=40)
r0=$(R array phase1_4proc)/task-0
await "task 0 started" 300 sh -c "ls $r0/metrics/*/rank-00000.jsonl"
t0=$(ls "$r0/metrics" | head -n 1)
await "... holds at step 10" 200 step_reached "$r0" "$t0" 10
as rzuser scancel --signal=USR2 --batch "${a}_0"
await "... was requeued" 200 has_event "$r0" "$t0" requeue
release array
st=$(wait_done "${a}_0" 400)
st=$(wait_done "${a}_1" 400)
check "task 0 completed ($(acct "${a}_0" State))" test "$(acct "${a}_0" State)" = COMPLETED
check "task 1 completed ($(acct "${a}_1" State))" test "$(acct "${a}_1" State)" = COMPLETED
check "... task 0 was requeued once ($(job_field "${a}_0" Restarts))" test "$(job_field "${a}_0" Restarts)" = 1
check "... task 1 never ($(job_field "${a}_1" Restarts))" test "$(job_field "${a}_1" Restarts)" = 0
check "... each task has its own run directory" \
  test -f "$r0/summary.json" -a -f "$(R array phase1_4proc)/task-1/summary.json"
same_params "... task 0 ends bit-identical to task 1, which ran uninterrupted" \
  "$(R array phase1_4proc)/task-1" "$r0" 40

echo "# a node that fails the preflight is excluded from the next attempt and named"
scontrol update nodename=n4 state=drain reason=ryzen-test
down_node=n4
j=$(RYZEN_TEST_PREFLIGHT_FAIL_HOST=n3 run excl rzuser $site --exclude=n1,n2 "$P1" $small \
  --set training.steps=10)
r=$(R excl phase1_4proc)
wait_for 200 has_event "$r" "$j" preflight_failed
scontrol update nodename=n4 state=resume
down_node=""
st=$(wait_done "$j" 400)
ended "the job completes elsewhere" "$j" COMPLETED 0:0
check "... its preflight failed on n3" has_event "$r" "$j" preflight_failed '.failed_hosts == "n3"'
check "... n3 was excluded ($(job_field "$j" ExcNodeList))" sh -c "scontrol show job $j | grep -q 'ExcNodeList=.*n3'"
check "... it ran on n4 ($(job_field "$j" NodeList))" test "$(job_field "$j" NodeList)" = n4
check "... the report names the excluded node" grep -q 'n3' "$r/reports/$j/report.md"

# Hung start-ups: a preflight, and a training step, each submitted now and checked below (two
# jobs side by side, on nodes of their own: each waits out its limit).  The limit: 10 times
# ref1's own preflight on this machine, at least 20 s, so a slow machine's usual preflight is
# never taken for a hang; the training's start-up to every rank's watchdog is MPI's start-up,
# as in the preflight, with less after it.  Rank 0 of the first launch waits before MPI_Init
# (RYZEN_TEST_PREFLIGHT_HANG, RYZEN_TEST_START_HANG), so the others wait in MPI's start-up.
r1=$(R ref1 phase1_4proc)
pf=$(awk -v a="$(event_field "$r1" "$ref1" preflight_start t)" \
  -v b="$(event_field "$r1" "$ref1" preflight t)" 'BEGIN { printf "%.1f", b - a }')
limit=$(awk -v p="$pf" 'BEGIN { l = int(10 * p) + 1; print (l < 20 ? 20 : l) }')
hang_p=$sub/runs/hang/preflight-hang hang_s=$sub/runs/starthang/start-hang
jp=$(RYZEN_TEST_PREFLIGHT_HANG=$hang_p run hang rzuser $site "$P1" $small \
  --set training.steps=10 --set health.preflight_timeout_s="$limit")
js=$(RYZEN_TEST_START_HANG=$hang_s run starthang rzuser $site "$P1" $small \
  --set training.steps=10 --set health.start_timeout_s="$limit" --set restart.failures=relaunch)

echo "# a preflight whose MPI start-up hangs is ended at health.preflight_timeout_s, launched again"
r=$(R hang phase1_4proc)
st=$(wait_done "$jp" 400)
ended "the job completes (ref1's preflight took $pf s: limit $limit s)" "$jp" COMPLETED 0:0
check "... its first preflight hung (the hook left $hang_p)" test -e "$hang_p"
check "... it was ended at the limit" \
  has_event "$r" "$jp" preflight_timeout '.message | contains($m)' \
  --arg m "preflight_timeout_s = $limit s (attempt 1 of 3)"
check "... and launched again, which passed" has_event "$r" "$jp" preflight \
  '.message | contains("all checks passed")'
check "... in the same allocation (no requeue)" lacks_event "$r/events.jsonl" '.event == "requeue"'
s0=$(sacct -n -P -j "$jp.0" -o State 2>/dev/null | head -n 1)
check "... the hung step ended in Slurm too ($jp.0: ${s0:-no record})" \
  sh -c "test -n '$s0' -a '$s0' != RUNNING -a '$s0' != COMPLETED"

echo "# a training step whose MPI start-up hangs is ended at health.start_timeout_s, relaunched"
r=$(R starthang phase1_4proc)
st=$(wait_done "$js" 400)
ended "the job completes (limit $limit s)" "$js" COMPLETED 0:0
check "... its first training launch hung (the hook left $hang_s)" test -e "$hang_s"
check "... it was ended at the limit, naming the ranks not up" has_event "$r" "$js" start_timeout \
  '.message | contains($m)' --arg m \
  "start_timeout_s = $limit s and was ended: 4 of 4 rank(s) never started their watchdog (not started: rank 0 rank 1 rank 2 rank 3)"
check "... counted as a hang" has_event "$r" "$js" attempt_end '.class == "hang"'
check "... and relaunched in the allocation" has_event "$r" "$js" relaunch '.reason == "failure"'
check "... never through the queue: 1 attempt in accounting ($(attempts "$js"))" \
  test "$(attempts "$js")" = 1
# ryzen-step's own textfile, written at the relaunch with its restart counted (step_prom.c)
sp=$r/prom/ryzen-$js-step.prom
check "... ryzen-step's textfile counts the restart and passes promtool check metrics" \
  sh -c "grep -q '^ryzen_step_restarts_total{.*reason=\"failure\"} 1' '$sp' &&
         promtool check metrics <'$sp'"
s1=$(sacct -n -P -j "$js.1" -o State 2>/dev/null | head -n 1)
check "... the hung step ended in Slurm too ($js.1: ${s1:-no record})" \
  sh -c "test -n '$s1' -a '$s1' != RUNNING -a '$s1' != COMPLETED"

# Checked last: its warning comes 90 to 120 s into each attempt, so the scenarios above run while
# it waits on n1 (none of them asks for n1 by name).
echo "# a real time limit with the template's --signal: checkpoint on the warning, requeue, resume"
r=$(R time phase1_4proc)
st=$(wait_done "$j_time" 600)
j=$j_time
ended "the time-limited job completes" "$j" COMPLETED 0:0
check "... requeued at the time-limit warning" has_event "$r" "$j" requeue '.reason == "time_limit"'
check "... after a checkpoint on the warning (exit 75)" has_event "$r" "$j" attempt_end '.status == 75'
check "... and resumed from that checkpoint" has_event "$r" "$j" resume '.message | contains("resuming from")'
check "... never hit the limit itself" sacct_lacks "$j" State TIMEOUT
st=$(wait_done "$ref400" 400)
same_params "... bit-identical to an uninterrupted run" "$(R ref400 phase1_4proc)" "$r" 400

finish
