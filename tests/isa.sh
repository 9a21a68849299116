#!/bin/sh
# isa.sh: our row kernels and the optimizer's loops are vector code at every level they are
# built for (core/v16.h, Makefile.am's librows_*.a), read from the compiler's output: each hot
# function of the AVX-512 build works in zmm registers, of the AVX2 build in ymm (and never in
# zmm), of the baseline in packed SSE (never ymm or zmm), and none compares lane by lane through
# scalar (u)comiss, which is what GCC made of a 64-byte vector type on AVX2 (issue 26).
set -u
src=${top_srcdir:-.}
build=${top_builddir:-.}
tmp=$(mktemp -d /tmp/rz-isa-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/lib.sh"

hot="exp_rows gelu_forward_rows gelu_backward_cols xent_forward_rows xent_backward_rows
  attn_online attn_probs attn_dscores ln_forward_rows ln_backward_rows round_bf16 colsum adam"

# count FUNCTION PATTERN: instructions of FUNCTION (in $tmp/dis) that match PATTERN
count() {
  awk -v f="<$1>:" '$2 == f { on = 1; next } /^$/ { on = 0 } on' "$tmp/dis" | grep -Ec -- "$2"
}

for level in avx512 avx2 baseline; do
  lib=$build/librows_$level.a
  if ! objdump -d --no-show-raw-insn "$lib" >"$tmp/dis" 2>"$tmp/err"; then
    bad "$level: objdump $lib"; show "$tmp/err"; continue
  fi
  for f in $hot; do
    n=$(count "$f" '.')
    zmm=$(count "$f" '%zmm') ymm=$(count "$f" '%ymm')
    # arithmetic on packed floats or packed integers (moves not counted)
    packed=$(count "$f" '\s(v?(mul|add|sub|div|max|min|and|andn|or|xor|cmp)[a-z]*ps|v?cvt[a-z]*dq|v?sqrtps|v?p(add|sub|and|andn|or|xor|srl|sll|sra|cmp|pack|mul)[a-z]*)\s')
    comiss=$(count "$f" 'v?u?comiss')
    case $level in
      avx512) vec=$zmm wrong=0 ;;
      avx2) vec=$ymm wrong=$zmm ;;
      baseline) vec=$packed wrong=$((zmm + ymm)) ;;
    esac
    if [ "$n" -eq 0 ]; then
      bad "$level: $f not found in $lib"
    elif [ "$vec" -lt 16 ] || [ "$wrong" -ne 0 ] || [ "$comiss" -ne 0 ]; then
      bad "$level: $f: $vec vector instructions of its width (want >= 16), $wrong of a wider one, $comiss scalar compares (of $n)"
    else
      ok "$level: $f is vector code ($vec of $n instructions)"
    fi
  done
done
finish
