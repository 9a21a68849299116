#!/bin/sh
# prepare.sh: data preparation as a Slurm job array, end to end on the dev cluster's site profile,
# as rzuser from the installed prefix (sbatch/prepare_data.sh, docs/data.md), then phase 1 trained
# on what it wrote.  Nothing is stubbed:
#   - the template with --local, outside Slurm: trains a small tokenizer (vocabulary 512) on five
#     fortunes files and encodes them, one shard a file: the reference shards;
#   - the template submitted with that tokenizer: a plan job that submits a 5-task array and a
#     manifest job after it (afterok).  Shard 4's input is a named pipe that the test feeds, so
#     that task is held mid-encode, however fast the CPU: it is requeued there (scontrol
#     requeue), and a finished task (1) is requeued too; then the pipe is fed.  Only shard 4 is
#     encoded again (the other shards keep their inode and mtime, task 1's second attempt says
#     it had nothing to do), no temporary file is left, every shard is the same bytes as the
#     reference, and the manifest lists the five and verifies;
#   - phase 1 (sbatch/phase1_4proc.sh --config text_example, 4 ranks, a short run) trains on the
#     manifest: COMPLETED 0:0, summary.json with the tokenizer's SHA-256 and the unigram entropy;
#   - a changed shard: the next submission is refused before training, naming the shard.
# Needs root (slurmd); leaves the cluster up for the next suite.
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
case $src in /*) ;; *) src=$(cd "$src" && pwd) ;; esac
case $build in /*) ;; *) build=$(cd "$build" && pwd) ;; esac
# Scratch on the shared filesystem: in the dev cluster's ns mode /tmp is each node's own.
tmp=$(mktemp -d /var/tmp/rz-prepare-XXXXXX)
fail=0
writer=
trap '[ -n "$writer" ] && kill "$writer" 2>/dev/null
      cancel_submitted
      if [ "$fail" -eq 0 ]; then rm -rf "$tmp"; else echo "kept $tmp for inspection"; fi' EXIT
. "$src/tests/lib.sh"

fortunes=/usr/share/games/fortunes
if [ ! -s "$fortunes/computers" ]; then
  # tools/install-deps installs it; a machine without it cannot run this suite
  echo "FAIL: $fortunes/computers: install the Debian package 'fortunes' (tools/install-deps)"
  exit 1
fi
site_setup
site_flags
D=$prefix/bin/ryzen-data
P=$T/prepare_data.sh
flags="-A ml -p batch --time=00:10:00 --mem=1000M"

# ---- the corpus: four files, and a named pipe that stands for the fifth ---------------------
corpus=$sub/corpus
as rzuser mkdir -p "$corpus"
for f in linux wisdom science literature computers; do cp "$fortunes/$f" "$corpus/$f"; done
chown -R rzuser: "$corpus"
as rzuser mkfifo "$corpus/held"
printf '%s\n' "$corpus/linux" "$corpus/wisdom" "$corpus/science" "$corpus/literature" \
  "$corpus/held" >"$sub/inputs.txt"

echo "# the reference: --local, outside Slurm, trains the tokenizer and encodes the five files"
ref=$sub/ref
expect "prepare_data.sh --local --vocab-size 512: tokenizer, 5 shards, manifest" 0 \
  "5 shard\(s\) in" -- as rzuser "$P" --local --out "$ref" --vocab-size 512 \
  "$corpus/linux" "$corpus/wisdom" "$corpus/science" "$corpus/literature" "$corpus/computers"
tok=$ref/tokenizer.model
check "... its manifest verifies ($(ls "$ref"/shard-*.tok 2>/dev/null | grep -c .) shards)" \
  "$D" verify "$ref/manifest.json"
expect "a second plan with other inputs into the same directory is refused, naming the plan" 64 \
  "shards.tsv holds another plan" -- as rzuser "$P" --local --out "$ref" \
  --vocab-size 512 "$corpus/linux"

echo "# the array: 5 tasks, shard 4 held mid-encode on its named pipe"
data=$sub/data
plan=$(submit_as rzuser $flags "$P" --out data --tokenizer "$tok" --list "$sub/inputs.txt")
await "the plan job $plan submitted the array and the manifest job" 120 test -s "$data/jobs"
A=$(sed -n 's/^array //p' "$data/jobs")
M=$(sed -n 's/^manifest //p' "$data/jobs")
echo "# array $A, manifest $M"
echo "$A $M" >>"$tmp/submitted"
check "... the manifest job waits for the array (afterok)" \
  sh -c "scontrol show job -o $M | grep -q 'Dependency=afterok:${A}_\*'"
shard() { printf '%s/shard-%05d.tok' "$data" "$1"; }
four_done() { for k in 0 1 2 3; do test -s "$(shard $k).sha256" || return 1; done; }
await "shards 0-3 are written" 120 four_done
# feed part of the fifth file and keep the pipe open: the task reads, then waits, mid-encode
# (exec: the writer's pid is the process that holds the pipe, so killing it closes the pipe)
( { head -c 40000 "$corpus/computers"; : >"$tmp/fed"; exec sleep 300; } >"$corpus/held" ) &
writer=$!
await "task 4 opened its input and read the first 40000 bytes" 120 test -e "$tmp/fed"
check "... task ${A}_4 is running" test "$(job_field "${A}_4" JobState)" = RUNNING
stamp() { for k in 0 1 2 3; do stat -c "%n %i %Y" "$(shard $k)" "$(shard $k).sha256"; done; }
before=$(stamp)
# The first writer keeps the pipe open through the requeue: the first attempt dies without ever
# seeing end of file (so it cannot commit a part of the file), and the second attempt, which
# Slurm starts only once the first is gone, opens the pipe and waits for data.
expect "scontrol requeue ${A}_4 (mid-encode)" 0 "" -- scontrol requeue "${A}_4"
expect "scontrol requeue ${A}_1 (finished)" 0 "" -- scontrol requeue "${A}_1"
done1() { [ "$(job_field "${A}_1" JobState)" = COMPLETED ] &&
          grep -q "shard 1: .* is done" "$sub/ryzen-prepare_data-${A}_1.out"; }
await "task 1 ran again, said its shard was done and did not encode it again" 120 done1
check "... in its second attempt ($(attempts "${A}_1"))" test "$(attempts "${A}_1")" = 2
await "task 4's second attempt started" 180 \
  grep -q 'shard 4: encoding .*(attempt 2)' "$sub/ryzen-prepare_data-${A}_4.out"
# the whole fifth file to that attempt (cat's open waits for its reader), then end of file
check "... and read the whole fifth file from the pipe" \
  timeout 120 sh -c "cat '$corpus/computers' >'$corpus/held'"
kill "$writer" 2>/dev/null
wait "$writer" 2>/dev/null
writer=
st=$(wait_done "$M" 180)
check "the manifest job ended: $st" test "$st" = COMPLETED || show_job "$M"
check "task 4 ran twice ($(attempts "${A}_4") attempts), tasks 0 and 2 once" \
  test "$(attempts "${A}_4") $(attempts "${A}_0") $(attempts "${A}_2")" = "2 1 1"
check "... task 4 encoded in both attempts" \
  test "$(grep -c '^prepare_data: shard 4: encoding' "$sub/ryzen-prepare_data-${A}_4.out")" = 2
check "shards 0-3 were not written again (inode and mtime, with their checksums)" \
  test "$(stamp)" = "$before"
check "no temporary file is left in the data directory" \
  sh -c "! ls '$data' | grep -q '\.tmp\.'"
same() { for k in 0 1 2 3 4; do cmp -s "$(shard $k)" "$ref/$(basename "$(shard $k)")" || return 1; done; }
check "every shard is the reference's, byte for byte" same
check "the manifest lists the 5 shards" \
  json_ok "$data/manifest.json" '[.shards[].path | select(test("^shard-0000[0-4][.]tok$"))] | length == 5'
expect "ryzen-data verify data/manifest.json" 0 "" -- "$D" verify "$data/manifest.json"

echo "# phase 1 on the manifest: phase1_4proc.sh --config text_example, a short run"
opened="--set gates.unigram_margin_go=-1e9 --set gates.unigram_margin_no_go=-1e9"
short="$lenient $opened --set model.vocab_size=512 --set model.d_model=64 --set model.n_heads=2
  --set model.d_ff=128 --set model.seq_len=32 --set training.batch_size=4 --set training.steps=20
  --set training.eval_interval=10 --set training.eval_samples=8 --set checkpoint.interval=10
  --set optimizer.warmup_steps=0 --set data.path=data/manifest.json"
p=$(run text rzuser $site "$T/phase1_4proc.sh" --config text_example $short)
st=$(wait_done "$p" 300)
ended "phase 1 trained on the manifest" "$p" COMPLETED 0:0
s=$sub/runs/text/text_example/summary.json
check "... summary.json records the tokenizer's SHA-256" \
  json_ok "$s" 'any(.. | objects; .tokenizer_sha256? == $t)' --arg t "$(sha256sum <"$tok" | cut -d' ' -f1)"
# has_number KEY FILE: FILE's JSON holds KEY, a number of at least 0, at some depth
has_number() { json_ok "$2" '[.. | objects | .[$k]? | numbers | select(. >= 0)] | length > 0' --arg k "$1"; }
check "... and the unigram entropy" has_number unigram_entropy "$s"
check "... and a validation loss" has_number val_loss "$s"
check "... its report shows the unigram entropy" \
  has_number unigram_entropy "$sub/runs/text/text_example/reports/$p/report.json"

echo "# a changed shard is refused before training, by name"
f=$(shard 2)
b=$(od -An -tu1 -j200 -N1 "$f" | tr -d ' ')
printf "\\$(printf %03o $(((b + 1) % 256)))" | dd of="$f" bs=1 seek=200 conv=notrunc status=none
check "... shard 2 changed: one byte at offset 200, $b -> $(od -An -tu1 -j200 -N1 "$f" | tr -d ' ')" \
  test "$(od -An -tu1 -j200 -N1 "$f" | tr -d ' ')" = $(((b + 1) % 256))
p2=$(run text rzuser $site "$T/phase1_4proc.sh" --config text_example $short --set training.steps=30)
st=$(wait_done "$p2" 300)
code=$(acct "$p2" ExitCode)
check "... the job ended $st $code, once (not requeued: $(attempts "$p2") attempt)" \
  test "$st $(attempts "$p2")" = "FAILED 1"
said=$(cat "$sub/ryzen-phase1_4proc-$p2.out" "$sub/runs/text/text_example/events.jsonl" 2>/dev/null |
  grep 'shard-00002\.tok' | head -n 1 | cut -c1-200)
check "... its output names the shard: $said" test -n "$said"
check "... and no step was trained" test ! -e "$sub/runs/text/text_example/metrics/$p2"

finish
