#!/bin/sh
# generate.sh: ryzen-generate as a user runs it, on a model ryzen-train just trained: a
# tokenizer and token files from ryzen-data, a few steps with a validation file, then
# --perplexity of that file equals the trainer's validation loss (the text and its token file
# alike), the same seed gives the same text, greedy is deterministic, --json and --logits-out,
# and bad input (an empty prompt, a prompt longer than the context, a tokenizer of another
# vocabulary or another hash, a damaged checkpoint, a run directory without one, a missing
# tokenizer file) exits with the documented code and a message.
set -u
src=${top_srcdir:-.}
bindir=${top_builddir:-.}
gen=$bindir/ryzen-generate
tmp=$(mktemp -d /tmp/rz-generate-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/lib.sh"
export OMP_NUM_THREADS=1
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0   # Open MPI's runtime (ryzen-train)
export ASAN_OPTIONS

# A corpus: fortunes when the package is there, else sentences of made-up words (which
# RZ_GENERATE_MADE_UP=1 forces, to try that path).
if [ -r /usr/share/games/fortunes/fortunes ] && [ -z "${RZ_GENERATE_MADE_UP:-}" ]; then
  cat /usr/share/games/fortunes/fortunes /usr/share/games/fortunes/science >"$tmp/all.txt"
else
  awk 'BEGIN { srand(3); for (i = 0; i < 600; i++) { w[i] = "";    # 600 made-up words
                 n = 2 + int(rand() * 7); for (j = 0; j < n; j++)
                   w[i] = w[i] substr("etaoinshrdlucmfwypvbgkjqxz", 1 + int(rand() * rand() * 26), 1) }
               for (i = 0; i < 24000; i++) printf "%s%s", w[int(rand() * rand() * 600)],
                                                  (i % 9 == 8) ? ".\n" : " " }' >"$tmp/all.txt"
fi
head -c 100000 "$tmp/all.txt" >"$tmp/train.txt"
tail -c 20000 "$tmp/all.txt" >"$tmp/val.txt"

expect "tokenizer" 0 "vocabulary 384" -- "$bindir/ryzen-data" tokenizer train --vocab-size 384 \
  --threads 1 --out "$tmp/tk" "$tmp/train.txt"
expect "encode train" 0 "" -- "$bindir/ryzen-data" encode --threads 1 --tokenizer "$tmp/tk.model" \
  --out "$tmp/train.tok" "$tmp/train.txt"
expect "encode val" 0 "" -- "$bindir/ryzen-data" encode --threads 1 --tokenizer "$tmp/tk.model" \
  --out "$tmp/val.tok" "$tmp/val.txt"

cat >"$tmp/tiny.yaml" <<EOF
model:
  vocab_size: 384
  d_model: 32
  n_heads: 4
  n_layers: 2
  d_ff: 64
  seq_len: 32
training:
  batch_size: 4
  steps: 12
  eval_interval: 6
  eval_samples: 10
optimizer:
  lr: 0.003
data:
  kind: tokens
  path: $tmp/train.tok
  val_path: $tmp/val.tok
checkpoint:
  interval: 12
EOF
expect "train 12 steps with a validation file" 0 "validation|val " -- "$bindir/ryzen-train" \
  --config "$tmp/tiny.yaml" --run-dir "$tmp/run"
run=$tmp/run
ck=$run/checkpoints/step-00000012.h5
tk=$tmp/tk.model

# --perplexity equals summary.json's val_loss (the end-of-run validation, same parameters)
# out_field FILE KEY: KEY of the --json record among a program's messages (expect's $tmp/out).
out_field() { jsonl "$1" '.[$k] // empty' --arg k "$2" | head -n 1; }
val=$(jq -r '.aggregated_metrics.val_loss' "$run/summary.json")
expect "perplexity of the validation token file" 0 "" -- "$gen" --checkpoint "$run" \
  --tokenizer "$tk" --perplexity "$tmp/val.tok" --json
cp "$tmp/out" "$tmp/ppl_tok.json"
ppl=$(out_field "$tmp/ppl_tok.json" loss)
check "... a JSON record with the loss ($ppl)" test -n "$ppl"
same_loss() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d;
                                              exit !(a > 0 && d <= 1e-6 * a) }'; }
check "... equals the trainer's validation loss $val within fp32 rounding (got $ppl)" \
  same_loss "$val" "$ppl"
check "... bit for bit on the same backend and thread count" \
  test "$(out_field "$tmp/ppl_tok.json" loss_hex)" = "$(jq -r '.aggregated_metrics.val_loss_hex' "$run/summary.json")"
expect "perplexity of the validation text" 0 "" -- "$gen" --checkpoint "$ck" \
  --tokenizer "$tk" --perplexity "$tmp/val.txt" --json
check "... the same as its token file's" same_loss "$ppl" "$(out_field "$tmp/out" loss)"
expect "perplexity, plain output" 0 "loss [0-9.]+ nats/token, perplexity [0-9.]+ \(10 windows of 32 tokens\)" \
  -- "$gen" --checkpoint "$ck" --perplexity "$tmp/val.tok"

# sampling
expect "sample with a seed" 0 "" -- "$gen" --checkpoint "$run" --tokenizer "$tk" \
  --prompt "The " --max-new-tokens 20 --seed 11 --top-k 40 --top-p 0.9 --temperature 0.8
cp "$tmp/out" "$tmp/s1"
expect "... again" 0 "" -- "$gen" --checkpoint "$run" --tokenizer "$tk" \
  --prompt "The " --max-new-tokens 20 --seed 11 --top-k 40 --top-p 0.9 --temperature 0.8
check "... the same seed gives the same text" cmp -s "$tmp/s1" "$tmp/out"
check "... which starts with the prompt" grep -q "^The " "$tmp/s1"
expect "greedy" 0 "" -- "$gen" --checkpoint "$ck" --tokenizer "$tk" --prompt "A" --greedy \
  --max-new-tokens 16 --seed 1
cp "$tmp/out" "$tmp/g1"
expect "... with another seed" 0 "" -- "$gen" --checkpoint "$ck" --tokenizer "$tk" --prompt "A" \
  --greedy --max-new-tokens 16 --seed 2
check "... greedy is deterministic" cmp -s "$tmp/g1" "$tmp/out"
expect "--json and --logits-out" 0 "" -- "$gen" --checkpoint "$ck" \
  --tokenizer "$tk" --prompt "Time" --max-new-tokens 5 --json --logits-out "$tmp/logits.f32"
check "... a JSON record of the 5 new tokens, each an id and its text" jsonl_ok "$tmp/out" \
  'any(.[]; (.tokens | length == 5 and all(.[]; (.id | type == "number") and (.text | type == "string"))))'
n_prompt=$(jsonl "$tmp/out" '.prompt_ids | length')
check "... one logits row per prompt position and per new token but the last" \
  test "$(wc -c <"$tmp/logits.f32")" -eq $(( (n_prompt + 4) * 384 * 4 ))
check "... the tokenizer's hash in the JSON" \
  jsonl_ok "$tmp/out" 'any(.[]; .tokenizer_sha256 | test("^[0-9a-f]{64}$"))'
expect "a long request stops at the context" 0 "" -- "$gen" --checkpoint "$ck" --tokenizer "$tk" \
  --prompt "A" --max-new-tokens 1000 --json

# bad input
expect "empty prompt: 64" 64 "the prompt is empty" -- "$gen" --checkpoint "$ck" --tokenizer "$tk" \
  --prompt ""
head -c 2000 "$tmp/val.txt" >"$tmp/long.txt"
expect "prompt longer than the context: 64" 64 "longer than the model's context \(model.seq_len 32\)" \
  -- "$gen" --checkpoint "$ck" --tokenizer "$tk" --prompt-file "$tmp/long.txt"
expect "a tokenizer of 400 tokens" 0 "" -- "$bindir/ryzen-data" tokenizer train \
  --vocab-size 400 --threads 1 --out "$tmp/other" "$tmp/train.txt"
expect "... refused for this checkpoint: 64" 64 "has 400 tokens but checkpoint .* model.vocab_size 384" -- "$gen" \
  --checkpoint "$ck" --tokenizer "$tmp/other.model" --prompt "A"
expect "another tokenizer of the same size" 0 "" -- "$bindir/ryzen-data" tokenizer train \
  --vocab-size 384 --model-type unigram --threads 1 --out "$tmp/uni" "$tmp/train.txt"
if json_ok "$run/summary.json" '.aggregated_metrics.tokenizer_sha256 | test("^[0-9a-f]")' 2>/dev/null ||
   "$bindir/ryzen-ckpt" info "$ck" | jq -e '[.. | .tokenizer_sha256? | strings] | any(test("^[0-9a-f]"))' >/dev/null; then
  expect "... refused by the hash the checkpoint records" 64 "is not the one checkpoint" -- "$gen" \
    --checkpoint "$ck" --tokenizer "$tmp/uni.model" --prompt "A"
  expect "a token file of that tokenizer" 0 "" -- "$bindir/ryzen-data" encode --threads 1 \
    --tokenizer "$tmp/uni.model" --out "$tmp/uni.tok" "$tmp/val.txt"
  expect "... refused by --perplexity: 64" 64 "is not the one checkpoint" -- "$gen" \
    --checkpoint "$ck" --perplexity "$tmp/uni.tok"
else
  ok "... (this checkpoint records no tokenizer hash: nothing to compare)"
fi
mkdir -p "$tmp/bad/checkpoints"
head -c 3000 "$ck" >"$tmp/bad/checkpoints/step-00000001.h5"
expect "damaged checkpoint: 65" 65 "step-00000001.h5" -- "$gen" \
  --checkpoint "$tmp/bad/checkpoints/step-00000001.h5" --tokenizer "$tk" --prompt "A"
expect "a run directory without a valid checkpoint: 65" 65 "no valid checkpoint" -- "$gen" \
  --checkpoint "$tmp/bad" --tokenizer "$tk" --prompt "A"
check "... which is left where it was (read only)" test -f "$tmp/bad/checkpoints/step-00000001.h5"
expect "missing tokenizer file: 64" 64 "none.model.*No such file" -- "$gen" --checkpoint "$ck" --tokenizer "$tmp/none.model" \
  --prompt "A"
expect "no prompt: 64" 64 "exactly one of --prompt and --prompt-file" -- "$gen" --checkpoint "$ck" \
  --tokenizer "$tk"
expect "help" 0 "usage: ryzen-generate" -- "$gen" --help
finish
