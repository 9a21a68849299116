#!/bin/sh
# lint.sh: shellcheck on the dev cluster's scripts, one check per file: tools/devcluster (with
# the devcluster.d/ files it sources, -x) and each tools/devcluster.d/*.sh on its own, clean at
# shellcheck's default severity (style and up).  A disable in them is justified in a comment
# beside it.  No shellcheck is a failure naming the Debian package to install (tools/install-deps
# installs it), not a skip: tools/check's shell suites run this, and a check that never runs
# would pass forever.  First a check that the shellcheck found here does flag a known fault, so
# the suite can fail.
# Then JSON read with jq (issue 41): no shell script of tests/ or tools/ reads a .json or .jsonl
# file or a program's JSON output with grep, sed, awk or cut (or lib.sh's lacks, a grep).  The
# check is a heuristic over each line: one of those commands on a line that names a .json/.jsonl
# file, --json, or a JSON key ("key": or \"key\":).  A line that is not reading JSON says why
# with "json-grep-ok: REASON"; comment lines are not read.  It too is first shown planted
# faults, and lines it must let pass, so that it can fail and does not cry wolf.
set -u
src=${top_srcdir:-.}
tmp=$(mktemp -d /tmp/rz-lint-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/lib.sh"

if ! command -v shellcheck >/dev/null 2>&1; then
  bad "shellcheck is not installed: install the Debian package 'shellcheck' (tools/install-deps)"
  finish
  exit
fi

# An unquoted expansion (SC2086) in a bash file: shellcheck must exit non-zero naming it.
printf '#!/usr/bin/env bash\nf() { rm $1; }\nf "$@"\n' >"$tmp/fault.sh"
shellcheck -x "$tmp/fault.sh" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q SC2086 "$tmp/out"; then
  ok "shellcheck flags a known fault (SC2086, exit $rc)"
else
  bad "shellcheck does not flag a known fault (SC2086): exit $rc"
  show "$tmp/out"
fi

files=0
for f in "$src/tools/devcluster" "$src/tools/devcluster.d/"*.sh; do
  [ -f "$f" ] || continue
  files=$((files + 1))
  name=${f#"$src/"}
  if shellcheck -x "$f" >"$tmp/out" 2>&1; then
    ok "shellcheck $name"
  else
    bad "shellcheck $name"
    show "$tmp/out" 40
  fi
done
# tools/devcluster and its devcluster.d/ files: a glob that matched nothing checked nothing.
check "the entry point and at least one devcluster.d file were checked ($files files)" \
  test "$files" -ge 2

# ---- JSON is read with jq --------------------------------------------------------------------
if command -v jq >/dev/null 2>&1; then
  ok "jq is installed ($(jq --version 2>&1)): the suites read JSON with it"
else
  bad "jq is not installed: install the Debian package 'jq' (tools/install-deps)"
fi

# json_greps FILE...: FILE:LINE: TEXT for each line that looks like grep, sed, awk or cut over JSON
json_greps() {
  awk '
    /^[[:space:]]*#/ || /json-grep-ok:/ { next }
    /(^|[^A-Za-z0-9_.-])(grep|egrep|fgrep|sed|awk|cut|lacks)([^A-Za-z0-9_.-]|$)/ &&
    (/\.jsonl?([^A-Za-z0-9_]|$)/ || /--json([^A-Za-z0-9_-]|$)/ || /\\?"\$?[A-Za-z0-9_]*\\?":/) {
      print FILENAME ":" FNR ": " $0
    }' "$@"
}

# Planted: lines 1-6 read JSON with grep, sed, grep again, cut, lacks and awk; the rest must pass
# (an allowed line, a comment, jq).
cat >"$tmp/json.sh" <<'PLANTED'
v=$(grep '"event":"start"' "$r/events.jsonl" | tail -n 1)
n=$(sed -n 's/.*"step":\([0-9]*\).*/\1/p' "$m")
check "x" sh -c "echo '$l' | grep -q '\"ok\":true'"
"$bin" info --json "$f" | cut -d, -f2
check "y" lacks "$r/health.json" 'memory'
awk -F'"loss":' '{ print $2 }' "$m"
grep -q 'RUN_DIR/summary.json' README.md  # json-grep-ok: README text
# grep '"step":' rank-00000.jsonl, a comment
v=$(jq -r '.event' "$r/events.jsonl")
PLANTED
json_greps "$tmp/json.sh" >"$tmp/json.out"
check "the JSON check finds each planted grep, sed, cut, awk or lacks over JSON, and only those" \
  test "$(cut -d: -f2 "$tmp/json.out" | paste -sd' ' -)" = "1 2 3 4 5 6"
show "$tmp/json.out" 8

scripts=0
: >"$tmp/json.out"
for f in "$src"/tests/*.sh "$src"/tools/* "$src"/tools/devcluster.d/*.sh; do
  [ -f "$f" ] || continue
  case $f in
    */tests/lint.sh) continue ;; # this file: the planted lines above
    *.sh) ;;
    *) head -n 1 "$f" | grep -Eq '^#!.*sh' || continue ;; # tools/: its shell scripts
  esac
  scripts=$((scripts + 1))
  json_greps "$f" >>"$tmp/json.out"
done
if [ "$scripts" -ge 20 ] && [ ! -s "$tmp/json.out" ]; then
  ok "no grep, sed, awk or cut over JSON in the $scripts shell scripts of tests/ and tools/"
else
  bad "grep, sed, awk or cut over JSON in tests/ or tools/ ($scripts scripts): read it with jq, or say why it is not JSON (json-grep-ok: REASON)"
  show "$tmp/json.out" 40
fi
finish
