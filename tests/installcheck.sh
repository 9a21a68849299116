#!/bin/sh
# installcheck.sh: what `make install` put in the install tree, for `make installcheck` (and so
# `make distcheck`), not a `make check` suite: the programs, each man page (and `man -l`
# renders it without a warning, where man is installed), the docs, both modulefiles (with the
# configured directories in them; the Tcl one parses where tclsh is installed) and the bash
# completion under each program's name (bash parses it and it completes a subcommand); and
# `module load ryzen-llm` in a bash with a module system, as a user's login shell has it:
# Lmod loads the Lua modulefile, and the Tcl one on its own (Lmod reads Tcl modulefiles too),
# and Tcl environment modules the Tcl one, each where installed (Debian: lmod or
# environment-modules, which conflict; RYZEN_LMOD_INIT and RYZEN_MODULES_INIT name an init
# script kept elsewhere).  Loaded, the programs, their man pages and the templates' directory
# resolve to the install tree, and `module unload` takes the programs off PATH again.
# Usage (Makefile.am's installcheck-local): installcheck.sh DESTDIR BINDIR MANDIR DOCDIR
#   MODULEFILESDIR COMPLETIONDIR VERSION PKGDATADIR 'MAN1 PAGES'
set -u
bindir=$1$2 mandir=$1$3 docdir=$1$4 modules=$1$5 comp=$1$6 version=$7 pkgdatadir=$8 man1=$9
fail=0 pass=0
tmp=$(mktemp -d /tmp/rz-installcheck-XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
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

# module_load INIT MODULEPATH: a bash with no rc file and a clean environment sources the module
# system's INIT (as a login shell's profile does), then `module use MODULEPATH`, `module load
# ryzen-llm`; what it then sees, as KEY=VALUE lines in $tmp/module.out.
module_load() {
  env -i HOME="$tmp" USER="${USER:-root}" PATH=/usr/bin:/bin TERM=dumb bash --norc --noprofile -c '
    . "$1" >/dev/null 2>&1
    module use "$2" && module load ryzen-llm 2>"$HOME/load.err" && echo loaded=yes
    echo "said=$(tr "\n" " " <"$HOME/load.err")"
    echo "PATH=$PATH"
    echo "MANPATH=${MANPATH-}"
    echo "SBATCH=${RYZEN_LLM_SBATCH-}"
    echo "CONFIGS=${RYZEN_LLM_CONFIGS-}"
    echo "step=$(command -v ryzen-step)"
    echo "version=$(ryzen-step --version 2>/dev/null | head -n 1)"
    echo "man1=$(man -w ryzen-step 2>/dev/null)"
    echo "man7=$(man -w 7 ryzen-llm 2>/dev/null)"
    module unload ryzen-llm && echo "unloaded=$PATH"' sh "$1" "$2" >"$tmp/module.out" 2>&1
}
field() { sed -n "s|^$1=||p" "$tmp/module.out" | head -n 1; }
is() { # is WHAT GOT WANT
  if [ "$2" = "$3" ]; then ok; else
    bad "$what: $1 is '$2', not '$3'"
    sed 's/^/  | /' "$tmp/module.out"
  fi
}

# module_check NAME INIT MODULEPATH: module_load, and what the module set resolves.
module_check() {
  what="$1 (module load ryzen-llm)"
  module_load "$2" "$3"
  is loaded "$(field loaded)" yes
  is "what module load said" "$(field said)" ""
  is "PATH's first directory" "$(field PATH | cut -d: -f1)" "$bindir_final"
  case :$(field MANPATH): in
    *":$mandir_final:"*) ok ;;
    *) bad "$what: MANPATH lacks $mandir_final" ;;
  esac
  is RYZEN_LLM_SBATCH "$(field SBATCH)" "$pkgdatadir/sbatch"
  is RYZEN_LLM_CONFIGS "$(field CONFIGS)" "$pkgdatadir/configs"
  case :$(field unloaded): in
    *":$bindir_final:"*) bad "$what: module unload left $bindir_final on PATH" ;;
    *) ok ;;
  esac
  if [ -n "$destdir" ]; then
    echo "SKIP $what: the programs and pages: under DESTDIR, the modulefile names $bindir_final"
    return
  fi
  is "ryzen-step" "$(field step)" "$bindir/ryzen-step"
  is "ryzen-step --version" "$(field version)" "ryzen-step (ryzen-llm) $version"
  command -v man >/dev/null 2>&1 || { echo "SKIP $what: man -w: no man installed"; return; }
  is "man -w 7 ryzen-llm" "$(field man7)" "$mandir/man7/ryzen-llm.7"
  [ -z "$man1" ] || is "man -w ryzen-step" "$(field man1)" "$mandir/man1/ryzen-step.1"
}

# first_file FILE...: the first that exists.
first_file() {
  for f in "$@"; do [ -n "$f" ] && [ -f "$f" ] && { echo "$f"; return 0; }; done
  return 1
}

destdir=$1 bindir_final=$2 mandir_final=$3
if ! command -v bash >/dev/null 2>&1; then
  echo "SKIP module load: no bash"
elif lmod=$(first_file "${RYZEN_LMOD_INIT:-}" "${LMOD_PKG:+$LMOD_PKG/init/profile}" \
    /usr/share/lmod/lmod/init/profile /opt/apps/lmod/lmod/init/profile); then
  module_check "Lmod, the Lua modulefile" "$lmod" "${modules%/*}"
  mkdir -p "$tmp/tcl/ryzen-llm" && cp "$modules/$version" "$tmp/tcl/ryzen-llm/$version"
  module_check "Lmod, the Tcl modulefile" "$lmod" "$tmp/tcl"
else
  echo "SKIP module load with Lmod: no Lmod init script (Debian: lmod; or set RYZEN_LMOD_INIT)"
fi
if command -v bash >/dev/null 2>&1 && mods=$(first_file "${RYZEN_MODULES_INIT:-}" \
    "${MODULESHOME:+$MODULESHOME/init/profile.sh}" /usr/share/modules/init/profile.sh); then
  module_check "environment modules, the Tcl modulefile" "$mods" "${modules%/*}"
else
  echo "SKIP module load with Tcl environment modules: no init script (Debian:" \
    "environment-modules, which conflicts with lmod; or set RYZEN_MODULES_INIT)"
fi

echo "installcheck: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
