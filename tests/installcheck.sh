#!/bin/sh
# installcheck.sh: what `make install` put in the install tree, for `make installcheck` (and so
# `make distcheck`), not a `make check` suite: the programs, each man page (and `man -l`
# renders it without a warning, where man is installed), the docs, both modulefiles (with the
# configured directories in them; the Tcl one parses where tclsh is installed) and the bash
# completion under each program's name (bash parses it and it completes a subcommand).
# Usage (Makefile.am's installcheck-local): installcheck.sh DESTDIR BINDIR MANDIR DOCDIR
#   MODULEFILESDIR COMPLETIONDIR VERSION PKGDATADIR 'MAN1 PAGES'
set -u
bindir=$1$2 mandir=$1$3 docdir=$1$4 modules=$1$5 comp=$1$6 version=$7 pkgdatadir=$8 man1=$9
fail=0 pass=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
has() { if [ -s "$1" ]; then ok; else bad "$1 is not installed"; fi; }
progs="ryzen-train ryzen-ckpt ryzen-step ryzen-gate ryzen-data ryzen-generate"
pages="$mandir/man7/ryzen-llm.7"
for p in $man1; do pages="$pages $mandir/man1/${p#man/}"; done
[ -n "$man1" ] || echo "SKIP the programs' man pages: configure found no help2man"
for p in $progs; do
  if [ -x "$bindir/$p" ]; then ok; else bad "$bindir/$p is not installed"; fi
  has "$comp/$p"
done
for f in $pages; do
  has "$f"
  if command -v man >/dev/null 2>&1 && [ -s "$f" ]; then
    w=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
    if [ -z "$w" ]; then ok; else bad "man -l $f warns: $w"; fi
  fi
done
for f in README.md ChangeLog LICENSE docs/DESIGN.md docs/exit-codes.md docs/config.md; do
  has "$docdir/$f"
done
for f in "$modules/$version.lua" "$modules/$version"; do
  has "$f"
  for s in "$2" "$3" "$pkgdatadir/sbatch" "$pkgdatadir/configs"; do
    if grep -qF "$s" "$f" 2>/dev/null; then ok; else bad "$f does not name $s"; fi
  done
  if grep -q '@[a-z]*@' "$f" 2>/dev/null; then bad "$f has an unreplaced @name@"; else ok; fi
done
if command -v tclsh >/dev/null 2>&1; then
  # the Tcl modulefile is Tcl: its commands stubbed, it runs
  if printf 'proc prepend-path args {}\nproc setenv args {}\nproc conflict args {}\nproc module-whatis args {}\nsource {%s}\n' \
      "$modules/$version" | tclsh >/dev/null 2>&1; then ok; else bad "$modules/$version is not valid Tcl"; fi
fi
if command -v bash >/dev/null 2>&1; then
  # the completion parses, and completes ryzen-ckpt's subcommands
  w=$(PATH="$bindir:$PATH" bash -c '. "$1" && COMP_WORDS=(ryzen-ckpt ve) COMP_CWORD=1 && _ryzen_llm && echo "${COMPREPLY[*]}"' sh "$comp/ryzen-ckpt" 2>&1)
  if [ "$w" = verify ]; then ok; else bad "the completion of 'ryzen-ckpt ve' is '$w', not verify"; fi
fi
echo "installcheck: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
