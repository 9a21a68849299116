#!/bin/bash
# Data preparation: a corpus of text files -> token-file shards and a manifest for data.path
# (docs/data.md, "Preparing data on a cluster").  One submission does it all:
#   sbatch [-A ACCOUNT -p PARTITION --time=... --mem=... -c N] prepare_data.sh --out DIR
#          (--tokenizer MODEL | --vocab-size N [--model-type bpe|unigram] [--max-sentences N])
#          [--shards N] [--width 2|4] [--max-parallel K] [--exclude GLOB]... [--list FILE]
#          [FILE|DIRECTORY]...
# Inputs, in this order: each FILE; each DIRECTORY's regular files sorted by name, but those
# whose name matches an --exclude GLOB; each line of a --list FILE (one path a line).  They are
# cut into --shards N shards of about equal bytes, in order (default: one file a shard; a shard
# always holds whole files).  This first job (the plan) writes DIR/shards.tsv, trains the
# tokenizer into DIR/tokenizer.model when --vocab-size is given and there is none yet (else
# copies --tokenizer there), then submits, with its own account, partition, QOS, time limit,
# memory and CPUs per task:
#   - a job array, task K encoding shard K (`ryzen-data encode`) into DIR/shard-%05d.tok and its
#     DIR/shard-%05d.tok.sha256; a task whose shard is there, matches its checksum and was made
#     by DIR/tokenizer.model does nothing, so a requeued task, or a second submission after a
#     failed one, redoes only the shards that are not done;
#   - the manifest job (--dependency=afterok on the array): `ryzen-data manifest` re-hashes every
#     shard against its checksum and writes DIR/manifest.json, which data.path can name.
# Every step can be requeued (--requeue): ryzen-data writes each file to a temporary name and
# renames it, so an interrupted encode leaves no partial shard, and the plan does not submit
# twice.  A second submission with other inputs or shards into the same DIR is refused (64).
# Without Slurm (or to run it all in one allocation), --local does every step in this process.
# Partition, account, QOS, time limit, memory and CPUs per task come from sbatch's own flags;
# encoding uses the task's CPUs (-c).  Exit: 0, 64 bad usage or input, 74 I/O (ryzen-data's).
#SBATCH --job-name=ryzen-prepare_data
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=%x-%j.out
set -uo pipefail
data=${RYZEN_DATA:-ryzen-data}
me=prepare_data

say() { echo "$me: $*"; }
die() { local code=$1; shift; echo "$me: $*" >&2; exit "$code"; }
usage() { die 64 "$1 (usage: see the comment at the top of prepare_data.sh)"; }

# ---- arguments -------------------------------------------------------------------------------
mode=plan out='' tokenizer='' vocab='' model_type='' max_sentences='' shards='' width='' max_parallel=''
run_local=0
inputs=() lists=() excludes=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --out|--tokenizer|--vocab-size|--model-type|--max-sentences|--shards|--width|--max-parallel|--list|--exclude|--encode|--manifest)
      [[ $# -ge 2 ]] || usage "$1 needs a value" ;;&
    --out) out=$2; shift 2 ;;
    --tokenizer) tokenizer=$2; shift 2 ;;
    --vocab-size) vocab=$2; shift 2 ;;
    --model-type) model_type=$2; shift 2 ;;
    --max-sentences) max_sentences=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --max-parallel) max_parallel=$2; shift 2 ;;
    --list) lists+=("$2"); shift 2 ;;
    --exclude) excludes+=("$2"); shift 2 ;;
    --local) run_local=1; shift ;;
    # the steps this template submits of itself: --encode DIR (an array task), --manifest DIR
    --encode) mode=encode; out=$2; shift 2 ;;
    --manifest) mode=manifest; out=$2; shift 2 ;;
    --) shift; inputs+=("$@"); break ;;
    -*) usage "unknown option '$1'" ;;
    *) inputs+=("$1"); shift ;;
  esac
done
[[ -n $out ]] || usage "--out DIR is required"
for n in "$vocab" "$shards" "$max_parallel" "$max_sentences"; do
  [[ -z $n || $n =~ ^[1-9][0-9]*$ ]] || usage "'$n' is not a positive integer"
done
[[ -z $width || $width == 2 || $width == 4 ]] || usage "--width is 2 or 4, not '$width'"

plan=$out/shards.tsv # "SHARD<TAB>BYTES<TAB>PATH", one line per input file, in order
model=$out/tokenizer.model
shard_path() { printf '%s/shard-%05d.tok' "$out" "$1"; }
n_shards() { awk -F'\t' 'END { print (NR ? $1 + 1 : 0) }' "$plan"; }
sha_of() { sha256sum <"$1" | cut -d' ' -f1; }

# ---- an array task: encode shard K, unless it is done ----------------------------------------
# done_shard K: the shard, its sidecar, the checksum they agree on, and the tokenizer's hash in
# its header are all there
done_shard() {
  local f want got info
  f=$(shard_path "$1")
  [[ -s $f && -s $f.sha256 ]] || return 1
  read -r want _ <"$f.sha256" || return 1
  got=$(sha_of "$f") && [[ $got == "$want" ]] || return 1
  info=$("$data" info --json "$f" 2>/dev/null) || return 1
  [[ $info == *"\"tokenizer_sha256\":\"$(sha_of "$model")\""* ]]
}

encode_shard() {
  local k=$1 f files=()
  f=$(shard_path "$k")
  if done_shard "$k"; then
    say "shard $k: $f is done (checksum and tokenizer agree); nothing to do"
    return 0
  fi
  mapfile -t files < <(awk -F'\t' -v k="$k" '$1 == k { print $3 }' "$plan")
  [[ ${#files[@]} -gt 0 ]] || die 64 "shard $k: not in $plan"
  # what an interrupted attempt of this shard left (ryzen-data's temporary files), and a shard
  # that did not verify: this task's own files only
  rm -f "$f" "$f.sha256" "$f".tmp.* "$f.sha256".tmp.*
  say "shard $k: encoding ${#files[@]} file(s) into $f (attempt $((${SLURM_RESTART_COUNT:-0} + 1)))"
  "$data" encode --tokenizer "$model" --out "$f" ${width:+--width "$width"} "${files[@]}" ||
    die $? "shard $k: ryzen-data encode failed"
}

# ---- the manifest step ---------------------------------------------------------------------
write_manifest() {
  local n k list=()
  n=$(n_shards)
  for ((k = 0; k < n; k++)); do list+=("$(shard_path "$k")"); done
  say "writing $out/manifest.json over $n shard(s)"
  "$data" manifest --out "$out/manifest.json" "${list[@]}" || die $? "ryzen-data manifest failed"
  "$data" info "$out/manifest.json" || true
}

# ---- the plan ----------------------------------------------------------------------------------
# list_inputs: every input file, one absolute path a line, in order
excluded() {
  local g
  for g in "${excludes[@]}"; do
    # shellcheck disable=SC2053 # the glob is the point
    [[ $1 == $g ]] && return 0
  done
  return 1
}
list_inputs() {
  local p f l
  for p in "${inputs[@]}"; do
    if [[ -d $p ]]; then
      while IFS= read -r -d '' f; do
        excluded "${f##*/}" || realpath -s "$f"
      done < <(find "$p" -mindepth 1 -maxdepth 1 -type f -print0 | sort -z)
    else
      realpath -s "$p"
    fi
  done
  for l in "${lists[@]}"; do
    [[ -r $l ]] || die 64 "--list $l: not readable"
    while IFS= read -r f || [[ -n $f ]]; do
      [[ -n $f ]] && realpath -s "$f"
    done <"$l"
  done
}

# make_plan FILE: the inputs cut into shards of about equal bytes, in order (whole files)
make_plan() {
  local f size
  : >"$1.files"
  while IFS= read -r f; do
    [[ $f != *$'\t'* ]] || die 64 "input '$f': a tab in a path is not supported"
    [[ -r $f && ! -d $f ]] || die 64 "input '$f': not a readable file"
    size=$(stat -L -c %s "$f") || die 64 "input '$f': cannot stat"
    printf '%s\t%s\n' "$size" "$f" >>"$1.files"
  done < <(list_inputs)
  [[ -s $1.files ]] || die 64 "no input files (give FILEs, DIRECTORYs or --list)"
  # shard = floor(bytes before the file * N / total bytes); empty shards are closed up
  awk -F'\t' -v want="${shards:-0}" '
    { size[NR] = $1; path[NR] = $2; total += $1 }
    END {
      n = (want > 0 && want < NR) ? want : NR
      for (i = 1; i <= NR; i++) {
        s = (want > 0) ? int(before * n / (total > 0 ? total : 1)) : i - 1
        if (s >= n) s = n - 1
        if (i > 1 && s != last) k++
        last = s; before += size[i]
        printf "%d\t%d\t%s\n", k, size[i], path[i]
      }
    }' "$1.files" >"$1"
  rm -f "$1.files"
}

# own_flags: this job's account, partition, QOS, time limit, memory and CPUs per task as sbatch
# flags (what the steps it submits get), from Slurm; none outside a job
own_flags() {
  local line v
  [[ -n ${SLURM_JOB_ID:-} ]] || return 0
  line=" $(scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null) "
  field() {
    v=${line##* "$1"=}
    [[ $v != "$line" ]] || { v=; return; }
    v=${v%% *}
    [[ $v != "(null)" ]] || v=
  }
  field Account; [[ -n $v ]] && printf '%s\n' "--account=$v"
  field Partition; [[ -n $v ]] && printf '%s\n' "--partition=$v"
  field QOS; [[ -n $v ]] && printf '%s\n' "--qos=$v"
  field TimeLimit; [[ -n $v && $v != UNLIMITED && $v != Partition_Limit ]] && printf '%s\n' "--time=$v"
  field MinMemoryNode; if [[ -n $v && $v != 0 ]]; then printf '%s\n' "--mem=$v"
  else field MinMemoryCPU; [[ -n $v && $v != 0 ]] && printf '%s\n' "--mem-per-cpu=$v"; fi
  field CPUs/Task; [[ -n $v ]] && printf '%s\n' "--cpus-per-task=$v"
  field Reservation; [[ -n $v ]] && printf '%s\n' "--reservation=$v"
  return 0
}

# the template to submit again: Slurm's Command (its first word) when readable, else this script
self() {
  local c=
  [[ -n ${SLURM_JOB_ID:-} ]] &&
    c=$(scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null | tr ' ' '\n' | sed -n 's/^Command=//p')
  if [[ -n $c && -r $c ]]; then echo "$c"; else echo "$0"; fi
}

# prepare_tokenizer: DIR/tokenizer.model from --tokenizer, or trained (to a temporary prefix,
# renamed when complete: a requeued plan never takes half a model)
prepare_tokenizer() {
  local tmp
  if [[ -n $tokenizer ]]; then
    [[ -r $tokenizer ]] || die 64 "--tokenizer $tokenizer: not readable"
    if [[ -e $model ]] && cmp -s "$tokenizer" "$model"; then return 0; fi
    [[ ! -e $model ]] || die 64 "$model is another tokenizer than --tokenizer $tokenizer; use another --out"
    { cp "$tokenizer" "$model.tmp.$$" && mv "$model.tmp.$$" "$model"; } ||
      die 74 "cannot copy $tokenizer to $model"
    return 0
  fi
  if [[ -s $model ]]; then
    say "tokenizer: $model is there (sha256 $(sha_of "$model")); not trained again"
    return 0
  fi
  tmp=$out/tokenizer.tmp.$$
  rm -f "$out"/tokenizer.tmp.* # what a plan job killed while it trained left
  mapfile -t files < <(cut -f3 "$plan")
  say "training a tokenizer of $vocab pieces on ${#files[@]} file(s)"
  "$data" tokenizer train --vocab-size "$vocab" --out "$tmp" ${model_type:+--model-type "$model_type"} \
    ${max_sentences:+--max-sentences "$max_sentences"} ${SLURM_CPUS_PER_TASK:+--threads "$SLURM_CPUS_PER_TASK"} \
    "${files[@]}" || die $? "ryzen-data tokenizer train failed"
  { mv "$tmp.vocab" "$out/tokenizer.vocab" && mv "$tmp.model" "$model"; } ||
    die 74 "cannot rename $tmp.model"
}

plan_and_submit() {
  local n new array manifest flags=() to=() self_path
  [[ -n $tokenizer || -n $vocab ]] || usage "give --tokenizer MODEL or --vocab-size N"
  [[ -z $tokenizer || -z $vocab ]] || usage "--tokenizer and --vocab-size exclude each other"
  mkdir -p "$out" || die 74 "cannot create $out"
  # a requeued plan that had already submitted its steps does not submit them again
  if [[ -n ${SLURM_JOB_ID:-} && -s $out/submitted.$SLURM_JOB_ID ]]; then
    say "job $SLURM_JOB_ID already submitted its steps: $(cat "$out/submitted.$SLURM_JOB_ID")"
    return 0
  fi
  rm -f "$out"/shards.tsv.new.*
  new=$out/shards.tsv.new.$$
  make_plan "$new"
  if [[ -s $plan ]] && ! cmp -s "$new" "$plan"; then
    rm -f "$new"
    die 64 "$plan holds another plan (other inputs or --shards); use another --out, or remove $out"
  fi
  mv "$new" "$plan" || die 74 "cannot write $plan"
  n=$(n_shards)
  say "$(wc -l <"$plan") file(s), $(awk -F'\t' '{ b += $2 } END { print b }' "$plan") bytes -> $n shard(s) in $out"
  prepare_tokenizer
  say "tokenizer $model, sha256 $(sha_of "$model")"
  if [[ $run_local -eq 1 ]]; then
    for ((k = 0; k < n; k++)); do encode_shard "$k"; done
    write_manifest
    return 0
  fi
  mapfile -t flags < <(own_flags)
  self_path=$(self)
  to=(${width:+--width "$width"})
  array=$(sbatch --parsable "${flags[@]}" --job-name=ryzen-prepare_data \
    --array="0-$((n - 1))${max_parallel:+%$max_parallel}" --output=%x-%A_%a.out \
    "$self_path" --encode "$out" "${to[@]}") || die 64 "sbatch of the encoding array failed"
  array=${array%%;*}
  manifest=$(sbatch --parsable "${flags[@]}" --job-name=ryzen-prepare_data \
    --dependency="afterok:$array" --kill-on-invalid-dep=yes --output=%x-%j.out \
    "$self_path" --manifest "$out") || die 64 "sbatch of the manifest job failed"
  manifest=${manifest%%;*}
  say "array job $array (tasks 0-$((n - 1))): one shard each; manifest job $manifest after it (afterok)"
  printf 'array %s\nmanifest %s\n' "$array" "$manifest" >"$out/jobs"
  if [[ -n ${SLURM_JOB_ID:-} ]]; then
    printf 'array %s manifest %s\n' "$array" "$manifest" >"$out/submitted.$SLURM_JOB_ID"
  fi
}

case $mode in
  plan) plan_and_submit ;;
  encode)
    [[ -s $plan && -s $model ]] || die 64 "$out has no plan or tokenizer (submit without --encode first)"
    [[ -n ${SLURM_ARRAY_TASK_ID:-} ]] || die 64 "--encode runs as a task of the array (SLURM_ARRAY_TASK_ID)"
    encode_shard "$SLURM_ARRAY_TASK_ID" ;;
  manifest)
    [[ -s $plan ]] || die 64 "$out has no plan (submit without --manifest first)"
    write_manifest ;;
esac
