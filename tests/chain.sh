#!/bin/sh
# chain.sh: the scaling chain end to end on the dev cluster's site profile, as rzuser from the
# installed prefix, every job submitted by the previous one's ryzen-step:
#   baseline_1proc (GO) -> phase1_4proc (GO) -> phase2a_8proc, forced to NO-GO by an unreachable
#   throughput gate -> automatic rollback to 4 ranks resuming from phase2a's last good
#   checkpoint -> finishes with a report.
# The first job is submitted with a site's flags (account, partition, QOS, time limit, memory,
# CPUs per task, reservation, constraint, exclusion, mail); sacct and scontrol show that every
# follow-up job kept them.  The run root has a comma in its name (paths travel intact).  Decoys:
# a pending job of rzother and one of a second rzuser lineage, both named like a later phase,
# must survive the rollback.  A rollback whose checkpoint is already at the end of the schedule
# trains nothing and says why.  Then `ryzen-gate --ladder` reports the whole run root
# (ladder.{json,md,html}).  Needs root (tools/devcluster, the reservation).
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
case $src in /*) ;; *) src=$(cd "$src" && pwd) ;; esac
case $build in /*) ;; *) build=$(cd "$build" && pwd) ;; esac
# Scratch on the shared filesystem: in the dev cluster's ns mode /tmp is each node's own.
tmp=$(mktemp -d /var/tmp/rz-chain-XXXXXX)
fail=0
trap 'scontrol delete reservation=rzchain >/dev/null 2>&1
      if [ "$fail" -eq 0 ]; then rm -rf "$tmp"; else echo "kept $tmp for inspection"; fi' EXIT
. "$src/tests/lib.sh"
site_setup

R=$sub/runs,chain
mkdir -p "$R"
chown rzuser: "$R"
export RYZEN_RUN_ROOT=$R

# A small model; gates a 2-core machine can pass, except phase2a's throughput gate, which no
# machine can (1e12 samples/s): its NO-GO must roll the chain back.  phase2a trains 20 of the
# 40 steps, so the rollback has steps left to train from its checkpoint; the baseline runs long
# enough (300 x 4 samples) that every later phase's samples overlap its loss curve.
sets="$chain_model --set checkpoint.interval=5 --set health.sync_check_interval=5
  --set training.steps=40 $open_gates
  --set phase2a_8proc:training.steps=20 --set baseline_1proc:training.steps=300
  --set phase2a_8proc:gates.throughput_go=1e12 --set phase2a_8proc:gates.throughput_no_go=1e12"

# The site's flags, every one different from the defaults so that its arrival proves something.
scontrol create reservation ReservationName=rzchain Users=rzuser Nodes=ALL StartTime=now \
  Duration=60 Flags=IGNORE_JOBS >/dev/null
flags="-A ml -p batch --qos=ryzen --time=00:20:00 --mem=1800M -c 2 --reservation=rzchain
  --constraint=ryzen --exclude=n4 --mail-type=END,FAIL --mail-user=rzuser@localhost"

# field FILE EVENT KEY: KEY of the last EVENT record in FILE.
field() { last_event "$@"; }
wait_event() { wait_for "$3" jsonl_ok "$1" 'any(.[]; .event == $e)' --arg e "$2"; }
verdict() { jq -r '.verdict // empty' "$1" 2>/dev/null; }

# kept JOB: the site flags as Slurm holds them for JOB (scontrol), and accounting's view of the
# account, partition and QOS (sacct): one line to compare.
kept() {
  echo "$(job_field "$1" Account) $(job_field "$1" Partition) $(job_field "$1" QOS)" \
    "$(job_field "$1" TimeLimit) $(job_field "$1" MinMemoryNode) $(job_field "$1" CPUs/Task)" \
    "$(job_field "$1" Reservation) $(job_field "$1" Features) $(job_field "$1" ExcNodeList)" \
    "$(job_field "$1" MailUser) $(job_field "$1" MailType)" \
    "sacct: $(acct "$1" Account) $(acct "$1" Partition) $(acct "$1" QOS)"
}
want="ml batch ryzen 00:20:00 1800M 2 rzchain ryzen n4 rzuser@localhost END,FAIL sacct: ml batch ryzen"

echo "# decoys: rzother's pending job and a second rzuser lineage, named like a later phase"
d_other=$(submit_as rzother -A other -p batch --hold -J ryzen-phase2b_12proc --wrap "sleep 1" \
  -o /dev/null)
mkdir -p "$sub/other-lineage"
chown rzuser: "$sub/other-lineage"
d_mine=$(RYZEN_RUN_ROOT=$sub/other-lineage submit_as rzuser -A ml -p batch --hold \
  "$T/phase2b_12proc.sh" $sets)

chain_start=$(date +%Y-%m-%dT%H:%M:%S)
b=$(submit_as rzuser $flags "$T/baseline_1proc.sh" $sets)
echo "# baseline_1proc: job $b"
wait_event "$R/baseline_1proc/events.jsonl" promote 400 || show_job "$b"
check "baseline GO" test "$(field "$R/baseline_1proc/events.jsonl" verdict verdict)" = GO
p=$(field "$R/baseline_1proc/events.jsonl" promote next_job)
check "... promoted phase1_4proc as job '$p'" test -n "$p"
check "... the baseline was submitted with the site's flags: $(kept "$b")" test "$(kept "$b")" = "$want"

echo "# phase1_4proc: job $p"
wait_event "$R/phase1_4proc/events.jsonl" promote 400 || show_job "$p"
check "phase1 GO" test "$(field "$R/phase1_4proc/events.jsonl" verdict verdict)" = GO
check "... it kept the site's flags: $(kept "$p")" test "$(kept "$p")" = "$want"
a=$(field "$R/phase1_4proc/events.jsonl" promote next_job)
check "... promoted phase2a_8proc as job '$a'" test -n "$a"
check "... its efficiency was judged against the baseline's report" \
  json_ok "$R/phase1_4proc/reports/$p/report.json" \
  'any(.criteria[]; .name == "efficiency" and (.measured | type == "number"))'
check "... sacct shows its verdict: $(acct "$p" Comment)" \
  sh -c "sacct -n -P -X -j $p -o Comment | grep -q '^phase1_4proc: GO'"
# phase1's own checkpoints, to compare after the rollback has run in the same phase's directory
sums() { (cd "$R/phase1_4proc/checkpoints" && sha256sum step-*.h5) 2>/dev/null; }
wait_done "$p" 120 >/dev/null
p1_sums=$(sums)

echo "# phase2a_8proc: job $a, NO-GO by design"
wait_event "$R/phase2a_8proc/events.jsonl" rollback 400 || show_job "$a"
wait_done "$a" 120 >/dev/null
check "phase2a NO-GO" test "$(field "$R/phase2a_8proc/events.jsonl" verdict verdict)" = NO-GO
check "... it kept the site's flags: $(kept "$a")" test "$(kept "$a")" = "$want"
check "... sacct: FAILED 1:0, Comment $(acct "$a" Comment)" \
  test "$(acct "$a" State) $(acct "$a" ExitCode)" = "FAILED 1:0"
check "... report.json says NO-GO with throughput as the cause" \
  json_ok "$R/phase2a_8proc/reports/$a/report.json" \
  '.verdict == "NO-GO" and any(.criteria[]; .name == "throughput" and .status == "no_go")'
rb=$(field "$R/phase2a_8proc/events.jsonl" rollback new_job)
ck=$(field "$R/phase2a_8proc/events.jsonl" rollback checkpoint)
check "... rolled back to phase1_4proc as job '$rb'" test -n "$rb" -a \
  "$(field "$R/phase2a_8proc/events.jsonl" rollback to_phase)" = phase1_4proc
check "... from its last good checkpoint $ck (the path has its comma)" \
  test "$ck" = "$R/phase2a_8proc/checkpoints/step-00000020.h5"
check "... the decoys are still pending: rzother's $d_other ($(job_field "$d_other" JobState))" \
  test "$(job_field "$d_other" JobState)" = PENDING
check "... and the other lineage's $d_mine ($(job_field "$d_mine" JobState))" \
  test "$(job_field "$d_mine" JobState)" = PENDING
# every job since the chain began, from accounting: the chain's own jobs are there (so sacct
# answered), and none ended CANCELLED.  By job ID as well as by time: a window also holds any
# older record whose end is Unknown, as Slurm 22.05 leaves for a job that lost a node under
# --no-kill and was cancelled later (faults.sh's node loss, a chaos soak with a spare node).
sacct -n -P -X -a -S "$chain_start" -o JobID,State 2>&1 |
  awk -F'|' -v first="$b" '$1 !~ /^[0-9]+$/ || $1 + 0 >= first + 0' >"$tmp/since"
check "... no job was cancelled ($(grep -c . "$tmp/since") jobs in accounting)" \
  sh -c "grep -q '^$b|' '$tmp/since' && grep -q '^$a|' '$tmp/since' && ! grep -q '|CANCELLED' '$tmp/since'"

echo "# rollback: job $rb, phase1_4proc on 4 ranks from phase2a's checkpoint"
wait_done "$rb" 400 >/dev/null
rdir=$R/phase1_4proc/rollback-$a
check "the rollback job completed ($(acct "$rb" State) $(acct "$rb" ExitCode))" \
  test "$(acct "$rb" ExitCode)" = 0:0 || show_job "$rb"
check "... it kept the site's flags: $(kept "$rb")" test "$(kept "$rb")" = "$want"
check "... it started from phase2a's checkpoint" \
  test "$(field "$rdir/events.jsonl" rollback_start checkpoint)" = "$ck"
first=$(jsonl "$rdir/metrics/$rb/rank-00000.jsonl" '"\(.step) \(.samples_seen)"' | head -n 1)
check "... and continued at step 21 with phase2a's global batch (sample 672): $first" \
  test "$first" = "21 672"
check "... on 4 ranks" json_ok "$rdir/summary.json" '.num_processes == 4'
check "... finished with a report: $(verdict "$rdir/reports/$rb/report.json")" \
  test -s "$rdir/reports/$rb/report.md" -a -s "$rdir/reports/$rb/report.html"
check "... which shows where it came from" \
  json_ok "$rdir/reports/$rb/report.json" 'any(.. | objects; .event? == "rollback_start")'
check "... and it did not promote again by itself" \
  jsonl_ok "$rdir/events.jsonl" 'any(.[]; .event == "promote_skipped")'
check "... the first phase1 run's checkpoints are untouched ($(echo "$p1_sums" | grep -c .) files, same sha256)" \
  sh -c "test -n '$p1_sums' && test '$(sums)' = '$p1_sums'"
check "... and its last one verifies" \
  "$prefix/bin/ryzen-ckpt" verify "$R/phase1_4proc/checkpoints/step-00000040.h5"
scancel "$d_other" "$d_mine"

echo "# a rollback whose checkpoint is already at training.steps trains nothing, and says why"
scontrol delete reservation=rzchain >/dev/null
mkdir -p "$sub/late"
chown rzuser: "$sub/late"
j=$(RYZEN_RUN_ROOT=$sub/late submit_as rzuser -A ml -p batch --time=00:10:00 --mem=1800M \
  "$T/phase1_4proc.sh" $sets --rollback-of "$a" \
  --resume-from "$R/phase1_4proc/checkpoints/step-00000040.h5")
wait_done "$j" 200 >/dev/null
r=$sub/late/phase1_4proc/rollback-$a
check "... it ended with a HOLD report (exit $(acct "$j" ExitCode))" test "$(acct "$j" ExitCode)" = 2:0
check "... that says there was nothing left to train" \
  json_ok "$r/reports/$j/report.json" '.ended == "nothing_to_train"'
check "... and nothing was launched" lacks_event "$r/events.jsonl" '.event == "train_start"'

echo "# the ladder report of the whole run root"
expect "ryzen-gate --ladder \$RYZEN_RUN_ROOT" 0 "ladder: model error" -- "$prefix/bin/ryzen-gate" --ladder "$R"
L=$R/ladder.json
worlds=$(jq -r '[.attempts[].world_size] | map(tostring) | join(" ")' "$L")
check "... its attempts by ranks: $worlds" test "$worlds" = "1 4 4 8"
check "... the rollback lineage is one of them" \
  json_ok "$L" 'any(.attempts[]; .lineage == $l)' --arg l "phase1_4proc/rollback-$a"
check "... which started from phase2a's checkpoint, handed to job $rb" json_ok "$L" \
  'any(.attempts[]; .from_checkpoint == $ck) and any(.attempts[]; .handed_to == $h)' \
  --arg ck "$ck" --arg h "job $rb (phase1_4proc)"
check "... predictions for 12, 16, 32 and 64 ranks (8 was measured)" json_ok "$L" \
  '[.predictions[] | select((.throughput | type == "number") and has("throughput_lo")) | .world_size] == [12, 16, 32, 64]'
check "... the verdict timeline: two promotions and the rollback" json_ok "$L" \
  '([.timeline[] | select(.event == "promote")] | length == 2) and any(.timeline[]; .event == "rollback")'
check "... ladder.html with its four charts, self-contained" \
  sh -c "test \$(grep -c '<svg id=\"chart-ladder-' '$R/ladder.html') -eq 4 && ! grep -qiE '<script|src=' '$R/ladder.html'"
check "... phase2a's report was predicted from the phases below it" \
  json_ok "$R/phase2a_8proc/reports/$a/report.json" '.prediction.throughput | type == "number"'

finish
