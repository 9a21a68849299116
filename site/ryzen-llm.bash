# bash completion for the ryzen-llm programs (ryzen-train, ryzen-ckpt, ryzen-step, ryzen-gate,
# ryzen-data, ryzen-generate): subcommands and options, read from the program's own --help when
# completing, so they cannot drift from it; file names otherwise.  Installed under each
# program's name in bash-completion's directory (Makefile.am).
# Not here: option values (a config is a file, a phase a name), which complete as file names.

# _ryzen_llm_help MODE PROG WORD...: from PROG --help's usage entries (lines that begin with
# "usage: PROG" or "  PROG", with their indented continuation lines), MODE sub: the word after
# PROG WORD... in those that begin so; MODE opt: their --options, or all of the help's when none.
_ryzen_llm_help()
{
    local mode=$1 prog=$2
    shift 2
    "$prog" --help 2>/dev/null | awk -v mode="$mode" -v prog="${prog##*/}" -v words="$*" '
        function opts(s) {
            while (match(s, /--[a-z][a-z0-9-]*/)) {
                print substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
            }
        }
        BEGIN { nw = split(words, w, " "); found = 0 }
        { all = all "\n" $0; line = $0; sub(/^usage: +/, "", line); sub(/^ +/, "", line)
          split(line, f, /[ \t]+/)
          if (f[1] == prog) {
              entry = 1
              for (i = 1; i <= nw; i++) if (f[i + 1] != w[i]) entry = 0
              if (entry && mode == "sub" && f[nw + 2] ~ /^[a-z][a-z-]*$/) print f[nw + 2]
          } else if ($0 !~ /^[ \t]/) entry = 0
          if (entry && mode == "opt") { found = 1; opts($0) }
        }
        END { if (mode == "opt" && !found) opts(all) }' | sort -u
}

_ryzen_llm()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]} i
    local -a lead=()
    # the subcommand words typed so far: the leading words that are plain lower-case names
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} =~ ^[a-z][a-z-]*$ ]] || break
        lead+=("${COMP_WORDS[i]}")
    done
    COMPREPLY=()
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_ryzen_llm_help opt "$prog" "${lead[@]}")" -- "$cur")
    elif ((${#lead[@]} == COMP_CWORD - 1)); then
        mapfile -t COMPREPLY < <(compgen -W "$(_ryzen_llm_help sub "$prog" "${lead[@]}")" -- "$cur")
    fi
    # nothing matched: bash completes file names (-o default)
    return 0
}
complete -o default -F _ryzen_llm ryzen-train ryzen-ckpt ryzen-step ryzen-gate ryzen-data ryzen-generate
