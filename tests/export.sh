#!/bin/sh
# export.sh: `ryzen-ckpt export --format safetensors` proven by an independent implementation.
# A model ryzen-train just trained on real tokens is exported to Hugging Face GPT-2's files;
# tests/gpt2_torch.py reads model.safetensors with struct + json + torch.frombuffer and runs
# GPT-2's forward pass in PyTorch, and for several prompts its logits equal ryzen-generate's
# (--logits-out) within 1e-5 of each row's largest logit (the issue asks 1e-4; 1e-5 is what
# tells the GELUs apart here: with GPT-2's tanh GELU instead of ours the same check measured
# 7.5e-5, ours at most 3.3e-7), and its 32 greedy tokens are ryzen-generate's.  The model is
# GPT-2's shape (model.head_bias false: a plain lm_head, no flag needed); a second one, trained
# with our head bias, takes the --head-bias path (refused without it, lm_head.bias with it, the
# same comparison).  Then import gives back a checkpoint with the same params_sha256, which
# ryzen-train resumes from for a few steps, and export of the import gives the same tensors and
# config.json; and what cannot be exported or imported is refused with the reason.  Skips (77) only
# when PyTorch is absent (tools/install-deps installs python3-torch).
set -u
src=${top_srcdir:-.}
bindir=${top_builddir:-.}
ckpt=$bindir/ryzen-ckpt
gen=$bindir/ryzen-generate
tmp=$(mktemp -d /tmp/rz-export-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/lib.sh"
export OMP_NUM_THREADS=1
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0   # Open MPI's runtime (ryzen-train)
export ASAN_OPTIONS

# Debian's python3-torch is for /usr/bin/python3; a python3 of its own (pyenv, a venv) may lack it
py=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import torch' >/dev/null 2>&1; then py=$p; break; fi
done
if [ -z "$py" ]; then
  echo "SKIP: PyTorch is not installed (python3-torch; tools/install-deps installs it)"
  exit 77
fi

# A corpus that every checkout has: the project's own documentation (English prose)
cat "$src"/README.md "$src"/docs/*.md | head -c 100000 >"$tmp/train.txt"
expect "tokenizer" 0 "" -- "$bindir/ryzen-data" tokenizer train --vocab-size 384 --threads 1 \
  --out "$tmp/tk" "$tmp/train.txt"
expect "encode" 0 "" -- "$bindir/ryzen-data" encode --threads 1 --tokenizer "$tmp/tk.model" \
  --out "$tmp/train.tok" "$tmp/train.txt"
tk=$tmp/tk.model

# GPT-2's shape: a tied head without a bias (model.head_bias false); init_std 0.1 puts the MLP's
# pre-activations where the GELU variants differ.  $1: the run directory, $2: head_bias.
train_tiny() {
  cat >"$tmp/tiny_$2.yaml" <<EOF
model:
  vocab_size: 384
  d_model: 32
  n_heads: 4
  n_layers: 2
  d_ff: 128
  seq_len: 48
  tie_embeddings: true
  head_bias: $2
  init_std: 0.1
training:
  batch_size: 4
  steps: 20
optimizer:
  lr: 0.003
data:
  kind: tokens
  path: $tmp/train.tok
checkpoint:
  interval: 20
EOF
  expect "train 20 steps, model.head_bias $2" 0 "" -- "$bindir/ryzen-train" \
    --config "$tmp/tiny_$2.yaml" --run-dir "$1"
}
train_tiny "$tmp/run" false
run=$tmp/run
ck=$run/checkpoints/step-00000020.h5
out=$tmp/hf

expect "export of the run directory's newest checkpoint, no flag needed" 0 \
  "step 20.*model.safetensors \(28 tensors\)" -- "$ckpt" export \
  --format safetensors --tokenizer "$tk" "$run" "$out"
check "... config.json says GPT-2 with the exact GELU" \
  json_ok "$out/config.json" '.model_type == "gpt2" and .activation_function == "gelu"'
check "... and no head bias" \
  json_ok "$out/config.json" '.ryzen_lm_head_bias == false and .ryzen_zero_head_bias == false'
check "... no lm_head.bias in model.safetensors" sh -c "! grep -aq lm_head '$out/model.safetensors'"
check "... the tokenizer is copied, its SHA-256 in tokenizer_config.json" \
  json_ok "$out/tokenizer_config.json" 'any(.. | .sha256? | strings; . == $s)' \
  --arg s "$(sha256sum "$tk" | cut -c1-64)"
check "... byte for byte" cmp -s "$tk" "$out/tokenizer.model"

# PyTorch against ryzen-generate, prompt by prompt: logits and 32 greedy tokens
# gen_json FILE: ryzen-generate's --json record, from among its messages in $tmp/out, into FILE;
# a check that there is one.
gen_json() {
  jsonl "$tmp/out" 'select(has("tokens"))' >"$1"
  check "... its JSON record, with the tokens" test -s "$1"
}
worst=0
n=0
for prompt in "The" "A man" "Q: What is" "You will be"; do
  n=$((n + 1))
  expect "generate greedy from '$prompt'" 0 "" -- "$gen" --checkpoint "$run" \
    --tokenizer "$tk" --prompt "$prompt" --greedy --max-new-tokens 32 --json \
    --logits-out "$tmp/logits$n"
  gen_json "$tmp/gen$n.json"
  expect "... PyTorch's logits within 1e-5 relative, the same 32 greedy tokens" 0 \
    "greedy=same" -- "$py" "$src/tests/gpt2_torch.py" --dir "$out" --gen-json "$tmp/gen$n.json" \
    --logits "$tmp/logits$n" --greedy --rtol 1e-5
  cat "$tmp/out"
  worst=$(awk -v a="$worst" -v b="$(sed -n 's/.*max_rel=\([^ ]*\).*/\1/p' "$tmp/out")" \
    'BEGIN { print (b + 0 > a + 0) ? b : a }')
done
expect "sampled (seed 7, temperature 0.8): PyTorch's logits on its tokens" 0 "greedy=skipped" -- \
  sh -c "'$gen' --checkpoint '$run' --tokenizer '$tk' --prompt 'It was' --seed 7 \
    --temperature 0.8 --max-new-tokens 20 --json --logits-out '$tmp/logits_s' \
    | jq -c 'select(has(\"tokens\"))' >'$tmp/gen_s.json' && '$py' '$src/tests/gpt2_torch.py' --dir '$out' \
    --gen-json '$tmp/gen_s.json' --logits '$tmp/logits_s' --rtol 1e-5"
echo "largest relative logit difference over $n greedy prompts: $worst"

# our head bias, trained: GPT-2 cannot hold it, --head-bias writes it as lm_head.bias
train_tiny "$tmp/runb" true
outb=$tmp/hfb
expect "export refuses the trained head bias GPT-2 cannot hold: 64" 64 \
  "head has a bias.*lm_head has none.*--head-bias.*model.head_bias: false" -- "$ckpt" export \
  --format safetensors --tokenizer "$tk" "$tmp/runb" "$outb"
check "... and writes nothing" test ! -e "$outb"
expect "export --head-bias" 0 "step 20.*model.safetensors \(29 tensors, with lm_head.bias\)" \
  -- "$ckpt" export --format safetensors --head-bias --tokenizer "$tk" "$tmp/runb" "$outb"
check "... config.json says so" json_ok "$outb/config.json" '.ryzen_lm_head_bias == true'
expect "generate greedy with the head bias" 0 "" -- "$gen" --checkpoint "$tmp/runb" \
  --tokenizer "$tk" --prompt "The" --greedy --max-new-tokens 32 --json --logits-out "$tmp/logits_b"
gen_json "$tmp/gen_b.json"
expect "... PyTorch with lm_head.bias: logits within 1e-5 relative, the same greedy tokens" 0 \
  "greedy=same" -- "$py" "$src/tests/gpt2_torch.py" --dir "$outb" --gen-json "$tmp/gen_b.json" \
  --logits "$tmp/logits_b" --greedy --rtol 1e-5
cat "$tmp/out"
expect "import of the head bias" 0 "lm_head.bias" -- "$ckpt" import --format safetensors \
  --set training.batch_size=4 "$outb" "$tmp/runb2"
sha() { "$ckpt" info "$1" | jq -r '.params_sha256 // empty'; }
a=$(sha "$tmp/runb/checkpoints/step-00000020.h5")
b=$(sha "$tmp/runb2/checkpoints/step-00000000.h5")
check "... export then import: params_sha256 equal ($a)" test -n "$a" -a "$a" = "$b"
mkdir -p "$tmp/tanh_hf"
cp "$out/model.safetensors" "$tmp/tanh_hf/"
jq -c '.activation_function = "gelu_new"' "$out/config.json" \
  >"$tmp/tanh_hf/config.json"
expect "... the comparison can fail: GPT-2's tanh GELU in place of ours is outside 1e-5" 1 \
  "max_rel=" -- "$py" "$src/tests/gpt2_torch.py" --dir "$tmp/tanh_hf" --gen-json "$tmp/gen3.json" \
  --logits "$tmp/logits3" --rtol 1e-5
cat "$tmp/out"

# import: the same parameters, bit for bit, in a run ryzen-train resumes from
expect "import into a new run" 0 "imported" -- "$ckpt" import --format safetensors \
  --set data.kind=tokens --set "data.path=$tmp/train.tok" --set training.batch_size=4 \
  --set training.steps=3 --set checkpoint.interval=3 "$out" "$tmp/run2"
a=$(sha "$ck")
b=$(sha "$tmp/run2/checkpoints/step-00000000.h5")
check "export then import: params_sha256 equal ($a)" test -n "$a" -a "$a" = "$b"
"$ckpt" info "$tmp/run2/checkpoints/step-00000000.h5" >"$tmp/info.json" 2>/dev/null
check "... the tokenizer recorded" json_ok "$tmp/info.json" \
  'any(.. | .tokenizer_sha256? | strings; . == $s)' --arg s "$(sha256sum "$tk" | cut -c1-64)"
check "... its config says model.head_bias false" grep -q '^  head_bias: false$' \
  "$tmp/run2/config.yaml"
expect "export of the import" 0 "step 0.*model.safetensors \(28 tensors\)" -- "$ckpt" export \
  --format safetensors --tokenizer "$tk" "$tmp/run2/checkpoints/step-00000000.h5" "$tmp/hf2"
check "... the same config.json" cmp -s "$out/config.json" "$tmp/hf2/config.json"
check "... the same tensors, byte for byte (the metadata names another checkpoint)" "$py" -c '
import json, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return h, b[8 + n:]
sys.exit(0 if load(sys.argv[1]) == load(sys.argv[2]) else 1)' "$out/model.safetensors" \
  "$tmp/hf2/model.safetensors"
expect "ryzen-train resumes the imported model for 3 steps" 0 "resume: loaded" -- \
  "$bindir/ryzen-train" --config "$tmp/run2/config.yaml" --run-dir "$tmp/run2"
expect "... and its checkpoint verifies" 0 ": ok" -- "$ckpt" verify \
  "$tmp/run2/checkpoints/step-00000003.h5"
expect "import into a run that has checkpoints: 64" 64 "already holds checkpoints" -- "$ckpt" \
  import --format safetensors "$out" "$tmp/run2"

# what cannot be expressed, or is not there
mkdir -p "$tmp/tanh"
cp "$out/model.safetensors" "$tmp/tanh/"
jq -c '.activation_function = "gelu_new"' "$out/config.json" \
  >"$tmp/tanh/config.json"
expect "import of a tanh-GELU model: 64, says why" 64 "tanh approximation" -- "$ckpt" import \
  --format safetensors "$tmp/tanh" "$tmp/run3"
head -c 100 "$out/model.safetensors" >"$tmp/tanh/model.safetensors"
cp "$out/config.json" "$tmp/tanh/config.json"
expect "import of a truncated model.safetensors: 64, names the file" 64 \
  "tanh/model.safetensors: the header length" -- "$ckpt" import --format safetensors \
  "$tmp/tanh" "$tmp/run3"
expect "export --format onnx: 64" 64 "the formats are: safetensors" -- "$ckpt" export \
  --format onnx "$ck" "$tmp/x"
expect "export of a checkpoint that is not there: 65" 65 "no such checkpoint" -- "$ckpt" export \
  --format safetensors "$tmp/none.h5" "$tmp/x"
expect "export of a directory without checkpoints: 65" 65 "no checkpoint that verifies" -- \
  "$ckpt" export --format safetensors "$tmp/tanh" "$tmp/x"
finish
