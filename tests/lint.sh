#!/bin/sh
# lint.sh: shellcheck on the dev cluster's scripts, one check per file: tools/devcluster (with
# the devcluster.d/ files it sources, -x) and each tools/devcluster.d/*.sh on its own, clean at
# shellcheck's default severity (style and up).  A disable in them is justified in a comment
# beside it.  No shellcheck is a failure naming the Debian package to install (tools/install-deps
# installs it), not a skip: tools/check's shell suites run this, and a check that never runs
# would pass forever.  First a check that the shellcheck found here does flag a known fault, so
# the suite can fail.
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
finish
