#!/bin/sh
# tools.sh: tools/bench-history, the chart of every recorded tools/bench run against issue 11's
# targets: the committed docs/bench-history.svg is what docs/bench-history.tsv draws, a point is
# drawn met or missed by its own ISA's target, and a malformed row is an error naming FILE:LINE
# with exit 65 that leaves the chart as it was.
set -u
src=${top_srcdir:-.}
tool=$src/tools/bench-history
tmp=$(mktemp -d /tmp/rz-tools-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/lib.sh"

expect "help" 0 "usage|tools/bench-history" -- "$tool" --help
expect "unknown option" 64 "usage: tools/bench-history" -- "$tool" --bogus
expect "missing history" 66 "cannot read $tmp/none.tsv" -- "$tool" "$tmp/none.tsv" "$tmp/none.svg"
expect "the committed chart is current" 0 "" -- "$tool" --check

# The header line, then rows: a 1t run on AVX-512 just under 1.4x (missed), a 1t AVX2 run at 1.30
# (met: 1.25x is the target there), and bf16 exactly at 1.8x (met).
T=$(printf '\t')
hdr="date${T}run${T}commit${T}cpu${T}isa${T}config${T}rounds${T}ours${T}peer${T}ratio"
{ echo "# a comment"; echo "$hdr"
  echo "2026-11-23${T}R1${T}abc1234${T}Test CPU (6/1)${T}avx512${T}1t${T}5${T}69.5${T}50.0${T}1.39"
  echo "2026-11-23${T}A1${T}-${T}Test CPU (6/1), proxy${T}avx2${T}1t${T}3${T}65.0${T}50.0${T}1.30"
  echo "2026-11-23${T}R1${T}abc1234${T}Test CPU (6/1)${T}avx512${T}bf16${T}5${T}126.0${T}70.0${T}1.80"
} >"$tmp/h.tsv"
expect "draws a history" 0 "wrote $tmp/h.svg" -- "$tool" "$tmp/h.tsv" "$tmp/h.svg"
count() { grep -o "$1" "$tmp/h.svg" | wc -l | tr -d ' '; }
check "one missed point (1.39x against 1.4x on AVX-512)" test "$(count 'class="missed"')" = 1
check "two met points (1.30x against 1.25x on AVX2, 1.80x against 1.8x)" \
  test "$(count 'class="met"')" = 2
check "the AVX2 run is a diamond" test "$(count '<path d=')" = 1
check "its tooltip names the run and its figures" \
  grep -q '<title>R1, 2026-11-23, commit abc1234 (Test CPU (6/1)): 69.5 vs 50.0 samples/s = 1.39x, 5 rounds; target 1.40x</title>' "$tmp/h.svg"
check "1t draws both targets" grep -q '1.4x AVX-512.*' "$tmp/h.svg"
check "panel summaries" grep -q 'met in 1 of 2 runs' "$tmp/h.svg"
cp "$tmp/h.svg" "$tmp/h.before"

expect "a stale chart fails --check" 1 "bench-history.svg is not what .*h.tsv draws" \
  -- "$tool" --check "$tmp/h.tsv" "$src/docs/bench-history.svg"

bad_row() { # bad_row NAME PATTERN ROW: the row after the header is rejected, the chart untouched
  { echo "$hdr"; echo "$3"; } >"$tmp/bad.tsv"
  expect "$1" 65 "bench-history: $tmp/bad.tsv:2: $2" -- "$tool" "$tmp/bad.tsv" "$tmp/h.svg"
  check "$1: the chart is left as it was" cmp -s "$tmp/h.svg" "$tmp/h.before"
}
bad_row "too few fields" "9 fields, expected 10" \
  "2026-11-23${T}R1${T}-${T}cpu${T}avx512${T}1t${T}5${T}69.5${T}1.39"
bad_row "unknown config" 'config "3t" is not' \
  "2026-11-23${T}R1${T}-${T}cpu${T}avx512${T}3t${T}5${T}69.5${T}50.0${T}1.39"
bad_row "ratio not a number" 'ratio "fast" is not a positive number' \
  "2026-11-23${T}R1${T}-${T}cpu${T}avx512${T}1t${T}5${T}69.5${T}50.0${T}fast"
bad_row "unknown isa" 'isa "sse" is not' \
  "2026-11-23${T}R1${T}-${T}cpu${T}sse${T}1t${T}5${T}69.5${T}50.0${T}1.39"
bad_row "bad date" 'date "23/11/2026" is not YYYY-MM-DD' \
  "23/11/2026${T}R1${T}-${T}cpu${T}avx512${T}1t${T}5${T}69.5${T}50.0${T}1.39"
printf 'run\tdate\n' >"$tmp/nohdr.tsv"
expect "no header" 65 "nohdr.tsv:1: the header must be" -- "$tool" "$tmp/nohdr.tsv" "$tmp/x.svg"
check "no chart from a bad history" test ! -e "$tmp/x.svg"
echo "# only a comment" >"$tmp/empty.tsv"
expect "a history without a header" 65 "empty.tsv: no header line" \
  -- "$tool" "$tmp/empty.tsv" "$tmp/x.svg"

finish
