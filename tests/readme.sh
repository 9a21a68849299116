#!/bin/sh
# readme.sh: the README's first hour, as written.
# - Every command of its `sh` code blocks is handled, or the test fails ("a command this test
#   does not know"), so the README cannot show a command that nothing checks:
#   run: _build/ryzen-* and mpirun lines, as written, from a scratch directory that holds only
#     links to configs/ and _build/, outside any Slurm allocation; exit 0, and what each prints
#     (the run's summary, every checkpoint listed valid, info's step, verify's "ok");
#   checked for what they name, not run (they need Slurm, root, a whole machine, or are this
#     very `make check`): tools/* (executable), ./configure (each option in configure --help),
#     make TARGET (a target of the generated Makefile; `make install` is run, into a scratch
#     prefix, and T=PREFIX/... must be what it installed), sbatch (the installed template and
#     the config beside it; each --set override, PHASE:key=value against that phase's config,
#     accepted by ryzen-train --plan), srun (its ryzen-train arguments accepted with --plan),
#     sacct (each -o field one that sacct has, where sacct can say).
# - A plain code block right after an `sh` block is that block's sample output: each of its
#   lines ("..." stands for any text; a line of only "..." for any lines) must be printed, in
#   that order, by the block's last command.
# - Every path it names (code spans, code blocks, links) exists in the repository or the build,
#   unless it is a run directory's name or lies outside the repository (../shared/peers/...);
#   every config key it names is in the key table and every `key: value` and `--set k=v` is
#   accepted; every option it shows for a program is in that program's --help; the names the
#   Layout block lists are in their directories; the Outputs block's fields are in the files a
#   run writes.  The same for docs/DESIGN.md's names, keys and options.  Every relative link in
#   docs/*.md resolves, and whatever cites DESIGN.md finds docs/DESIGN.md.
# RYZEN_README=FILE checks FILE instead of README.md (to see the test fail on a broken copy).
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
readme=${RYZEN_README:-$src/README.md}
tmp=$(mktemp -d /tmp/rz-readme-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/lib.sh"
mpi_setup # the README's mpirun line, as lib.sh's MPI suites run it (containers forbid CMA)
# Open MPI's runtime does not free everything at MPI_Finalize (see cli.sh): under the sanitizer
# build, leak reports are off for the runs; memory errors stay fatal.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS
# A user's shell outside Slurm: no SLURM_* and no RYZEN_RUN_ROOT (the README's defaults).
conf=${SLURM_CONF:-} # sacct_fields asks sacct with it
for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\)=.*/\1/p') RYZEN_RUN_ROOT RYZEN_RUN_ID; do
  unset "$v"
done
# A hang guard only, for each command run: the longest (50 steps of the seed model) takes
# under two minutes on a loaded 2-core VM; a machine 10x slower still ends well within it.
hang=3600

skipped=0
skip() { skipped=$((skipped + 1)); echo "SKIP $1"; }
done_all() {
  echo "$pass passed, $fail failed, $skipped skipped"
  [ "$fail" -eq 0 ]
  exit $?
}

[ -s "$readme" ] || { bad "no README at $readme"; done_all; }
train=$build/ryzen-train
sections=$("$train" --config-reference | sed -n 's/^## \([a-z_]*\)$/\1/p' | paste -sd'|' -)
"$train" --config-reference | sed -n 's/^| `\([a-z0-9_.]*\)` |.*/\1/p' >"$tmp/keys"
check "the key table lists its sections and keys" test -n "$sections" -a -s "$tmp/keys"

# ---- the README's code blocks ---------------------------------------------------------------
# $tmp/blocks/index: "N<TAB>FIRST-LINE<TAB>INFO<TAB>SAMPLE" per block (INFO "-" for a plain
# block; SAMPLE 1: a plain block right after an sh block); $tmp/blocks/N: "LINE<TAB>TEXT" per line of block N.
mkdir "$tmp/blocks"
awk -v d="$tmp/blocks" '
  /^```/ {
    if (inb) { inb = 0; gap = 1; prev = info; next }
    inb = 1; n++; info = substr($0, 4)
    printf "%d\t%d\t%s\t%d\n", n, NR + 1, (info == "" ? "-" : info), (gap && prev == "sh" && info == "") >>(d "/index")
    printf "" >(d "/" n)
    next
  }
  inb { printf "%d\t%s\n", NR, $0 >>(d "/" n); next }
  /[^[:space:]]/ { gap = 0 }' "$readme"
check "the README has sh code blocks" grep -q "	sh	" "$tmp/blocks/index"

# commands N: "LINE<TAB>COMMAND" for sh block N: comments removed, continued lines joined
commands() {
  awk -F '\t' '
    { t = substr($0, length($1) + 2); sub(/(^|[ \t])#.*$/, "", t)
      if (acc == "") line = $1
      if (t ~ /\\$/) { sub(/\\$/, "", t); acc = acc t " "; next }
      t = acc t; acc = ""; gsub(/[ \t]+/, " ", t); sub(/^ /, "", t); sub(/ $/, "", t)
      if (t != "") printf "%s\t%s\n", line, t }' "$tmp/blocks/$1"
}

# A scratch directory as a user's checkout looks after the build: configs/ and _build/.
work=$tmp/work
mkdir -p "$work"
ln -s "$src/configs" "$work/configs"
ln -s "$build" "$work/_build"
prefix=$tmp/prefix # where the README's `make install` goes here
readme_prefix= T= last_out=

# plan_ok WHERE CONFIG KEY=VALUE: ryzen-train accepts the override on CONFIG (--plan: no run)
plan_ok() {
  if "$train" --config "$2" --set "$3" --plan </dev/null >"$tmp/plan.out" 2>&1; then
    ok "$1: --set $3 accepted on ${2#"$src"/}"
  else
    bad "$1: --set $3 refused on $2"; show "$tmp/plan.out" 5
  fi
}

# make_target WHERE TARGET: a target of the generated Makefile (install: installed into $prefix)
make_target() {
  case $2 in
    "") check "$1: make: the tree is built" test -x "$train" ;;
    install)
      if make -C "$build" install prefix="$prefix" </dev/null >"$tmp/install.log" 2>&1; then
        ok "$1: make install (into $prefix)"
      else
        bad "$1: make install"; show "$tmp/install.log"
      fi ;;
    *) check "$1: make $2 is a target of the Makefile" grep -q "^$2:" "$build/Makefile" ;;
  esac
}

# configure_opts WHERE ARGS...: each --enable/--disable/--with option is one configure offers
configure_opts() {
  w=$1
  shift
  "$src/configure" --help >"$tmp/configure.help" 2>&1
  for a in "$@"; do
    o=${a%%=*}
    case $o in
      --prefix) readme_prefix=${a#*=}; ok "$w: configure --prefix" ;;
      --enable-*|--disable-*)
        f=${o#--enable-}; f=${f#--disable-}
        check "$w: configure $o" grep -Eq -- "--(enable|disable)-$f([[ ]|\$)" "$tmp/configure.help" ;;
      --with-*|--without-*)
        f=${o#--with-}; f=${f#--without-}
        check "$w: configure $o" grep -Eq -- "--with(out)?-$f([[ =]|\$)" "$tmp/configure.help" ;;
      *) bad "$w: configure option $a: not one this test knows" ;;
    esac
  done
}

# sbatch_line WHERE ARGS...: the template exists, installed, with its config beside it (or the
# one its --config names); each override is accepted on that config (PHASE:key=value on PHASE's);
# prepare_data.sh's own options are in its usage comment, and its inputs exist
sbatch_line() {
  w=$1 t=
  shift
  while [ $# -gt 0 ]; do
    if [ "${t##*/}" = prepare_data.sh ]; then
      case $1 in
        --*) check "$w: prepare_data.sh's usage names $1" grep -q -- "^#.*$1" "$t"
             case $1 in --local) shift ;; *) shift 2 ;; esac ;;
        *) check "$w: ... its input $1 exists" test -e "$1"; shift ;;
      esac
      continue
    fi
    case $1 in
      --config) [ -n "$t" ] || bad "$w: --config before the template"
                cfg=$(dirname "$t")/../configs/$2.yaml
                check "$w: ... --config $2: configs/$2.yaml is installed beside it" test -s "$cfg"
                shift 2 ;;
      --set) [ -n "$t" ] || bad "$w: --set before the template"
             case ${2%%=*} in
               *:*) ph=${2%%:*}; plan_ok "$w" "$src/configs/$ph.yaml" "${2#*:}" ;;
               *) plan_ok "$w" "$cfg" "$2" ;;
             esac
             shift 2 ;;
      --*) shift ;;
      -?) shift 2 ;;
      *) case $1 in
           '$T/'*) t=$T/${1#\$T/} ;;
           *) t=$src/$1 ;;
         esac
         ph=$(basename "$t" .sh)
         cfg=$(dirname "$t")/../configs/$ph.yaml
         check "$w: template ${t#"$tmp"/} is installed and executable" test -x "$t"
         [ "$ph" = prepare_data ] || check "$w: ... with configs/$ph.yaml beside it" test -s "$cfg"
         shift ;;
    esac
  done
}

# sacct_fields WHERE FIELDS: each -o field is one of sacct's (sacct --helpformat needs a
# slurm.conf with accounting: the caller's, or the dev cluster's when it is set up)
sacct_fields() {
  for c in "$conf" "${RYZEN_DEVCLUSTER_DIR:-/var/tmp/ryzen-devcluster}/slurm.conf"; do
    [ -n "$c" ] && [ -s "$c" ] && command -v sacct >/dev/null 2>&1 &&
      SLURM_CONF=$c timeout 60 sacct --helpformat 2>/dev/null | tr -s ' ' '\n' >"$tmp/sacct.fields" &&
      grep -qx JobID "$tmp/sacct.fields" && break
    : >"$tmp/sacct.fields"
  done
  if [ ! -s "$tmp/sacct.fields" ]; then
    skip "$1: sacct's fields $2 (no sacct, or no slurm.conf with accounting to ask it)"
    return
  fi
  for f in $(echo "$2" | tr ',' ' '); do
    check "$1: sacct has the field $f" grep -qix "$f" "$tmp/sacct.fields"
  done
}

# run_line WHERE COMMAND: run it in $work; exit 0 and what it prints
run_line() {
  n=$((n + 1))
  last_out=$tmp/run-$n.out
  (cd "$work" && timeout "$hang" sh -c "$2") </dev/null >"$last_out" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then
    bad "$1: exit $rc: $2"; show "$last_out"; return
  fi
  ok "$1: $2"
  set -- "$1" $2
  w=$1
  shift
  [ "$1" = mpirun ] && while [ $# -gt 0 ] && [ "${1#_build/}" = "$1" ]; do shift; done
  case $1 in
    _build/ryzen-train)
      s=$(sed -n 's/^ryzen-train: summary -> //p' "$last_out")
      check "$w: ... wrote its summary (${s:-none printed})" test -n "$s" -a -s "$work/$s" ;;
    _build/ryzen-ckpt)
      f=$3
      case $2 in
        list)
          set -- "$work/$f"/step-*.h5
          check "$w: ... the directory has checkpoints" test -e "$1"
          for c in "$@"; do
            k=$(basename "$c" .h5 | sed 's/^step-0*//')
            check "$w: ... lists step $k as valid" grep -Eq "^$k +.* valid\$" "$last_out"
          done ;;
        info)
          k=$(basename "$f" .h5 | sed 's/^step-0*//')
          check "$w: ... JSON of step $k, verified" jsonl_ok "$last_out" \
            'any(.[]; .step == ($k | tonumber) and .verified == true)' --arg k "$k" ;;
        verify) check "$w: ... says ok" grep -qxF "$f: ok" "$last_out" ;;
        export)
          d=$(eval "echo \${$#}")
          check "$w: ... wrote model.safetensors and config.json" \
            test -s "$work/$d/model.safetensors" -a -s "$work/$d/config.json" ;;
        *) bad "$w: ryzen-ckpt $2: not a command this test knows" ;;
      esac ;;
    _build/ryzen-data)
      case $2 in
        tokenizer) check "$w: ... wrote the model" test -s "$work/$7.model" ;;
        encode) check "$w: ... wrote the token file and its checksum" \
                  test -s "$work/$6" -a -s "$work/$6.sha256" ;;
        info) check "$w: ... the header and the unigram entropy" \
                sh -c "grep -q 'vocab' '$last_out' && grep -q 'unigram entropy' '$last_out'" ;;
        *) bad "$w: ryzen-data $2: not a command this test knows" ;;
      esac ;;
    _build/ryzen-generate)
      case " $* " in
        *" --perplexity "*) check "$w: ... a loss and a perplexity" grep -q 'perplexity' "$last_out" ;;
        *) check "$w: ... text after the prompt" grep -q "The meaning of life is" "$last_out" ;;
      esac ;;
    *) bad "$w: $1: not a program this test knows how to judge" ;;
  esac
}

# command_line WHERE COMMAND: run it, or check what it names
command_line() {
  w=$1 c=$2
  last_out= # a sample output shows the block's last command, so that command must run
  case $c in
    *"&&"*)
      echo "$c" | awk '{ n = split($0, p, / *&& */); for (i = 1; i <= n; i++) print p[i] }' >"$tmp/parts"
      while read -r part; do command_line "$w" "$part"; done <"$tmp/parts" ;;
    tools/*)
      check "$w: ${c%% *} is in the repository, executable (not run: it needs root and the whole machine)" \
        test -x "$src/${c%% *}" ;;
    autoreconf*) check "$w: autoreconf: configure.ac is here" test -s "$src/configure.ac" ;;
    ./configure*) configure_opts "$w" ${c#./configure} ;;
    make|"make "*) for tg in ${c#make}; do make_target "$w" "$tg"; done
                   [ "$c" = make ] && make_target "$w" "" ;;
    T=*) v=${c#T=}
         if [ -n "$readme_prefix" ] && [ "${v#"$readme_prefix"}" != "$v" ]; then
           T=$prefix${v#"$readme_prefix"}
           check "$w: T names the installed templates ($T)" test -d "$T"
         else
           bad "$w: T=$v is not under the configure --prefix ($readme_prefix)"
         fi ;;
    "sbatch "*) sbatch_line "$w" ${c#sbatch } ;;
    "srun "*)
      set -- ${c#srun }
      while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done # srun's own options
      prog=$1
      shift
      check "$w: srun's program $prog is built" test -x "$build/${prog#_build/}"
      if (cd "$work" && "$prog" "$@" --plan) </dev/null >"$tmp/plan.out" 2>&1; then
        ok "$w: ... and takes the arguments $*"
      else
        bad "$w: ... refuses the arguments $*"; show "$tmp/plan.out" 5
      fi ;;
    "sacct "*)
      set -- $c
      while [ $# -gt 0 ] && [ "$1" != -o ]; do shift; done
      [ $# -ge 2 ] && sacct_fields "$w" "$2" ;;
    "scontrol requeue "*|"scancel "*) echo "# $w: Slurm's own command, nothing of ours to check: $c" ;;
    _build/*|"mpirun "*) run_line "$w" "$c" ;;
    *) bad "$w: a command this test does not know: $c" ;;
  esac
}

# sample WHERE N OUTPUT: block N's lines ("..." any text) appear in OUTPUT in that order
sample() {
  awk -F '\t' -v out="$3" '
    function matches(line, pat,   n, p, i, pos, k, tail) {
      n = split(pat, p, /\.\.\./)
      if (substr(line, 1, length(p[1])) != p[1]) return 0
      pos = length(p[1]) + 1
      for (i = 2; i < n; i++) {
        k = index(substr(line, pos), p[i]); if (k == 0) return 0
        pos += k - 1 + length(p[i])
      }
      if (n == 1) return length(line) == length(p[1])
      tail = length(line) - length(p[n]) + 1
      return tail >= pos && substr(line, tail) == p[n]
    }
    { pat = substr($0, length($1) + 2); if (pat == "...") next
      while ((getline line < out) > 0) if (matches(line, pat)) next
      printf "README line %d: no line of the output matches (after the ones before): %s\n", $1, pat
      bad = 1; exit }
    END { exit bad }' "$tmp/blocks/$2" >"$tmp/sample.out"
  if [ $? -eq 0 ]; then ok "$1: the sample output is what the command printed"
  else bad "$1: the sample output differs"; show "$tmp/sample.out"; show "$3" 12; fi
}

n=0
while IFS='	' read -r b first info is_sample; do
  if [ "$info" = sh ]; then
    commands "$b" >"$tmp/cmds"
    while IFS='	' read -r line c; do command_line "README line $line" "$c"; done <"$tmp/cmds"
  elif [ "$is_sample" = 1 ]; then
    if [ -n "$last_out" ]; then sample "README line $first" "$b" "$last_out"
    else bad "README line $first: a sample output after a block that ran nothing"; fi
  fi
  [ "$info" = sh ] || last_out=
done <"$tmp/blocks/index"

# ---- what the README says of ryzen-train's outputs (the runs above) ---------------------------
runs=$work/runs/seed_benchmark
set -- "$runs"/metrics/*/rank-00000.jsonl
m=$1
id=$(basename "$(dirname "$m")")
check "<run-id> outside Slurm is local-<UTC time>-<pid> ($id)" \
  sh -c 'echo "$1" | grep -Eqx "local-[0-9]{8}T[0-9]{6}Z-[0-9]+"' - "$id"
check "RUN_DIR/prom/ryzen-<run-id>-<node>.prom" test -s "$(ls "$runs"/prom/ryzen-"$id"-*.prom 2>/dev/null | head -n 1)"
# the Outputs block: the per-step fields ("one JSON object per step: a, b, ...; ...") and the
# summary's ("RUN_DIR/summary.json  a, b, c {d, e, ...}, f[]")
outputs=$(awk -F '\t' '$3 == "-" && $4 == 0 { print $1 }' "$tmp/blocks/index" | while read -r b; do
  grep -q 'RUN_DIR/summary.json' "$tmp/blocks/$b" && echo "$b"; done | head -n 1)  # json-grep-ok: README text
if [ -z "$outputs" ]; then
  bad "the README's Outputs block (RUN_DIR/summary.json ...) is not there"
else
  cut -f2- "$tmp/blocks/$outputs" | sed 's/^  *//' | tr '\n' ' ' >"$tmp/outputs"
  fields=$(sed -n 's/.*one JSON object per step: \([^;]*\);.*/\1/p' "$tmp/outputs" | tr -d ',')  # json-grep-ok: README text
  check "the Outputs block lists the per-step fields" test -n "$fields"
  for f in $fields; do
    check "... $f is in each metrics line" jsonl_ok "$m" 'length > 0 and all(.[]; has($k))' --arg k "$f"
  done
  sfields=$(sed -n 's/.*RUN_DIR\/summary.json *\(.*\]\).*/\1/p' "$tmp/outputs" | tr -c 'a-z_\n' ' ')  # json-grep-ok: README text
  check "the Outputs block lists summary.json's fields" test -n "$sfields"
  for f in $sfields; do
    check "... $f is in summary.json" json_ok "$runs/summary.json" 'any(.. | objects; has($k))' --arg k "$f"
  done
fi
# --run-dir's default: $RYZEN_RUN_ROOT/<config name>
(cd "$work" && RYZEN_RUN_ROOT=$tmp/root timeout "$hang" _build/ryzen-train \
  --config configs/seed_benchmark.yaml --set training.steps=1 --quiet) >"$tmp/root.out" 2>&1
check "--run-dir defaults to \$RYZEN_RUN_ROOT/<config name>" test -s "$tmp/root/seed_benchmark/summary.json"
# bf16: trains where oneDNN has native bf16, else exit 64 naming the ISA (as the README says)
if grep -m1 '^flags' /proc/cpuinfo | grep -Eqw 'avx512_bf16|amx_bf16'; then
  expect "--set training.precision=bf16 trains on this CPU (avx512_bf16 or amx_bf16)" 0 "" -- \
    "$train" --config "$src/configs/seed_benchmark.yaml" --set training.precision=bf16 \
    --set training.steps=2 --quiet --run-dir "$tmp/bf16"
else
  expect "--set training.precision=bf16 exits 64 on this CPU, naming the ISA" 64 \
    "avx512_bf16 or amx_bf16" -- "$train" --config "$src/configs/seed_benchmark.yaml" \
    --set training.precision=bf16 --set training.steps=2 --quiet --run-dir "$tmp/bf16"
fi

# ---- names in the README and docs/DESIGN.md -------------------------------------------------
# path_kind WORD: repo (must exist in the repository), build (in the build), or skip (a run
# directory's name, outside the repository, absolute, a variable, an option or a value)
path_kind() {
  case $1 in
    */*) ;;
    *) echo skip; return ;;
  esac
  case $1 in
    /*|\$*|-*|*=*|*://*|../*|~*) echo skip ;;
    _build/*) echo build ;;
    runs/*|metrics/*|reports/*|checkpoints/*|prom/*|health/*|data/*|'<'*) echo skip ;;
    [A-Z]*) echo skip ;; # a placeholder: RUN_DIR/..., PREFIX/...
    *) echo repo ;;
  esac
}
# paths_in FILE: path-like words of FILE's code spans, sh blocks, links and, in other code
# blocks (not sample output), of words at a line's start or with a file extension
paths_in() {
  awk '
    /^```/ { if (inb) { inb = 0; prev = info; gap = 1; next }
             inb = 1; info = substr($0, 4); sample = (gap && prev == "sh" && info == ""); next }
    inb && sample { next }
    inb && info == "sh" { sub(/(^|[ \t])#.*$/, ""); print; next }
    inb { n = split($0, w, /[ \t]+/)
          for (i = 1; i <= n; i++) if ((i == 1 && w[i] != "") || w[i] ~ /\.(md|c|h|sh|yaml|yml|json|tsv|svg|png|py)[),.;:]*$/) print w[i]
          next }
    /[^[:space:]]/ { gap = 0 }
    { text = text " " $0 }
    END {
      s = text
      while (match(s, /`[^`]*`/)) { print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) }
      s = text
      while (match(s, /\]\([^)]*\)/)) { print substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH) }
    }' "$1" | tr -s ' \t' '\n\n' | sed 's/^[(`"]*//; s/[),.;:`"]*$//' | grep / | sort -u
}
# check_paths FILE: every repository path FILE names exists (placeholders <x> and {a,b} match
# anything)
check_paths() {
  doc=$2
  paths_in "$1" >"$tmp/paths"
  k=0
  while read -r p; do
    p=${p#./}
    g=$(echo "$p" | sed 's/<[^>]*>/*/g; s/{[^}]*}/*/g; s/#.*//')
    case $(path_kind "$p") in
      repo) set -- "$src"/$g ;;
      build) set -- "$build"/${g#_build/} ;;
      *) continue ;;
    esac
    if [ -e "$1" ]; then k=$((k + 1)); else bad "$doc: names $p, which is not in the $(path_kind "$p")"; fi
  done <"$tmp/paths"
  check "$doc: the $k paths it names exist" test "$k" -gt 0
}
check_paths "$readme" README.md

# spans FILE: the code spans outside code blocks
spans() {
  awk '/^```/ { inb = !inb; next } !inb { text = text " " $0 }
    END { s = text; while (match(s, /`[^`]*`/)) { print substr(s, RSTART + 1, RLENGTH - 2)
          s = substr(s, RSTART + RLENGTH) } }' "$1" | sed 's/  */ /g' | sort -u
}
# check_spans FILE NAME: config keys, --set overrides, programs' options, template names
check_spans() {
  spans "$1" >"$tmp/spans"
  nk=0 no=0
  while read -r s; do
    case $s in
      --set\ *=*) echo "${s#--set }" | grep -Eq "^($sections)\.[a-z0-9_]+=" &&
                    plan_ok "$2" "$src/configs/seed_benchmark.yaml" "${s#--set }" ;;
    esac
    k=${s%%[: ]*}
    case $k in *.json|*.jsonl|*.md|*.yaml|*.prom|*.h5|*.html) k= ;; esac # a file, not a key
    if echo "$k" | grep -Eqx "($sections)\.[a-z0-9_]+"; then
      if grep -qxF "$k" "$tmp/keys"; then nk=$((nk + 1)); else bad "$2: \`$s\`: $k is not a config key"; fi
      case $s in *": "*) plan_ok "$2" "$src/configs/seed_benchmark.yaml" "$k=${s#*: }" ;; esac
    fi
    case $s in
      ryzen-train\ -*|ryzen-gate\ -*|ryzen-ckpt\ -*|ryzen-step\ -*|--*)
        case $s in --*) prog=ryzen-train ;; *) prog=${s%% *} ;; esac
        "$build/$prog" --help >"$tmp/help" 2>&1
        for o in $(echo "$s" | grep -oE -- '--[a-z][a-z-]*'); do
          if [ "$o" = --isa ] || [ "$o" = --record ]; then h=$src/tools/bench; else h=$tmp/help; fi
          if grep -q -- "$o" "$h"; then no=$((no + 1)); else bad "$2: \`$s\`: $prog has no $o"; fi
        done ;;
      ryzen-train|ryzen-gate|ryzen-ckpt|ryzen-step)
        check "$2: $s is built" test -x "$build/$s" ;;
      make\ *) check "$2: \`$s\`: a target of the Makefile" grep -q "^${s#make }:" "$build/Makefile" ;;
    esac
    if echo "$s" | grep -Eqx '(baseline|phase[0-9]+[a-z]?)_[0-9]+proc'; then
      check "$2: phase $s has sbatch/$s.sh and configs/$s.yaml" test -x "$src/sbatch/$s.sh" -a -s "$src/configs/$s.yaml"
    fi
  done <"$tmp/spans"
  check "$2: the $nk config keys it names are in the key table" test "$nk" -gt 0
  check "$2: the $no program options it names are in the programs' --help" test "$no" -gt 0
}
check_spans "$readme" README.md

# the Layout block: each DIR/ line's .c and .sh names are in DIR; tools/'s list is tools/*
layout=$(awk -F '\t' '$3 == "-" && $4 == 0 { print $1 }' "$tmp/blocks/index" | while read -r b; do
  grep -q '	src/core/' "$tmp/blocks/$b" && echo "$b"; done | head -n 1)
if [ -z "$layout" ]; then
  bad "the README's Layout block (src/core/ ...) is not there"
else
  cut -f2- "$tmp/blocks/$layout" | awk '
    /^[a-z]/ { dir = $1; sub(/,$/, "", dir); print dir }
    { t = $0; if (t ~ /^[a-z]/) sub(/^[^ ]+( [a-z]+\/,?)* +/, "", t)
      if (dir == "tools/") { n = split(t, w, /[ ,]+/); for (i = 1; i <= n; i++) if (w[i] != "") print dir w[i]; next }
      n = split(t, w, /[^A-Za-z0-9_.-]+/)
      for (i = 1; i <= n; i++) if (w[i] ~ /^[A-Za-z0-9_-]+\.(c|sh|md)$/) print dir w[i] }' >"$tmp/layout"
  k=0
  while read -r p; do
    if [ -e "$src/$p" ]; then k=$((k + 1)); else bad "the Layout block names $p, which is not in the repository"; fi
  done <"$tmp/layout"
  check "the Layout block's $k names are in their directories" test "$k" -gt 5
  # and it is complete: every module directory, shell suite and tool is there
  k=0
  for p in $(cd "$src" && ls -d src/*/ tests/*.sh tools/*); do
    case $p in tests/lib.sh|*.c) continue ;; esac
    if grep -qxF "$p" "$tmp/layout"; then k=$((k + 1)); else bad "the Layout block does not name $p"; fi
  done
  check "the Layout block names all $k module directories, shell suites and tools" test "$k" -gt 20
fi

# ---- docs ------------------------------------------------------------------------------------
# every relative link of README.md and docs/*.md resolves (from the file's directory)
k=0
for f in "$readme" "$src"/docs/*.md; do
  d=$(dirname "$f")
  [ "$f" = "$readme" ] && d=$src
  for l in $(tr '\n' ' ' <"$f" | grep -oE '\]\([^) ]+\)' | sed 's/^](//; s/)$//; s/#.*//'); do
    case $l in http*|mailto:*|"") continue ;; esac
    if [ -e "$d/$l" ]; then k=$((k + 1)); else bad "$(basename "$f"): the link $l leads nowhere"; fi
  done
done
check "the $k relative links of README.md and docs/*.md resolve" test "$k" -gt 20
# whatever cites DESIGN.md finds it in docs/
cites=$(grep -rl --exclude-dir=.git --exclude-dir=_build 'DESIGN\.md' "$src/src" "$src/tools" \
  "$src/docs" "$src/tests" "$src/Makefile.am" "$src/configure.ac" "$readme" 2>/dev/null |
  grep -v '/tests/readme\.sh$' | sed "s|^$src/||" | paste -sd' ' -)
check "docs/DESIGN.md, which ${cites:-nothing} cites, is there" test -s "$src/docs/DESIGN.md"
if [ -s "$src/docs/DESIGN.md" ]; then
  check_paths "$src/docs/DESIGN.md" docs/DESIGN.md
  check_spans "$src/docs/DESIGN.md" docs/DESIGN.md
fi

done_all
