# shellcheck shell=bash
# devcluster.d/daemons.sh: what every daemon of the cluster shares: its pid file, its log, whether
# it is alive, how it is started (detached) and how it is stopped.  Sourced by tools/devcluster;
# uses its STATE paths (RUN, LOG, DB_DIR), NODES, PROFILE, note and warn.
#
# Every daemon's pid file is known; we only ever signal those pids, and only after checking that
# the process really is the daemon we expect (pids get reused).  Daemon names: munged, mariadbd,
# slurmdbd, slurmctld, slurmd-nX.  Not here: how each daemon is started (munge.sh, mariadb.sh,
# slurmd.sh) and the order of up and down (updown.sh).

pidfile() { # daemon name: munged | mariadbd | slurmdbd | slurmctld | slurmd-nX
  case $1 in
    mariadbd) echo "$DB_DIR/mariadbd.pid" ;; # written by mariadbd itself
    *) echo "$RUN/$1.pid" ;;
  esac
}

daemon_comm() { # expected /proc/PID/comm of a daemon name
  case $1 in
    slurmd-*) echo slurmd ;;
    *) echo "$1" ;;
  esac
}

daemon_log() { echo "$LOG/$1.log"; }

recorded_pid() { # prints the recorded pid of a daemon if that process is alive and is the daemon
  local name=$1 f pid comm
  f=$(pidfile "$name")
  [[ -s "$f" ]] || return 1
  pid=$(tr -dc '0-9' <"$f")
  [[ -n "$pid" && -d /proc/$pid ]] || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [[ "$comm" == "$(daemon_comm "$name")" ]] || return 1
  echo "$pid"
}

alive() { recorded_pid "$1" >/dev/null; }

profile_daemons() { # the daemons of a profile, in start order
  echo munged
  [[ $1 == site ]] && printf "%s\n" mariadbd slurmdbd
  echo slurmctld
  local n
  for n in "${NODES[@]}"; do echo "slurmd-$n"; done
}

all_daemons() { profile_daemons site; }

count_alive() {
  local d n=0
  for d in "$@"; do alive "$d" && n=$((n + 1)); done
  echo "$n"
}

# healthy NAME: the daemon runs; for munged also a munged we did not start (start_munged).
healthy() {
  alive "$1" || { [[ $1 == munged && $PROFILE == site ]] && munge_answers "$MUNGE_SOCKET"; }
}

count_healthy() {
  local d n=0
  for d in "$@"; do healthy "$d" && n=$((n + 1)); done
  echo "$n"
}

# ---------------------------------------------------------------------------------------------
# starting
# ---------------------------------------------------------------------------------------------
fail_daemon() { # name message
  local log
  log=$(daemon_log "$1")
  warn "$1 $2 (log: $log)"
  if [[ -s "$log" ]]; then
    echo "---- last lines of $log" >&2
    tail -n 20 "$log" >&2
  fi
  warn "daemons that did start are left running for inspection; 'tools/devcluster down' stops them"
  exit 1
}

wait_pid() { # name seconds: wait for the pid file of a daemon to name a live daemon
  local name=$1 i
  for ((i = 0; i < $2 * 10; i++)); do
    alive "$name" && return 0
    sleep 0.1
  done
  return 1
}

# A daemon keeps every descriptor it inherits (munged, mariadbd and slurmdbd close only 0-2), so
# a caller's lock or pipe would stay held as long as the daemon runs: a test suite's flock on the
# cluster did, and the next suite waited for it until CI's time ran out.  Every daemon is started
# by detached.
# detached CMD...: close this process's descriptors above 2, then exec CMD in a session of its
# own.  It replaces the process that runs it, so it is only ever run in a child: a command
# substitution, or a background job.
detached() {
  local fd
  for fd in "/proc/$BASHPID/fd/"*; do
    fd=${fd##*/}
    ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
  done
  exec setsid "$@"
}

# ---------------------------------------------------------------------------------------------
# stopping
# ---------------------------------------------------------------------------------------------
# stop_daemons NAME...: SIGTERM to each recorded, live daemon at once, then wait for all of them
# (SIGKILL after 30 s). Only pids from our pid files, checked against the daemon's name.
stop_daemons() {
  local name pid i rc=0 names=() pids=()
  for name in "$@"; do
    if pid=$(recorded_pid "$name"); then
      kill -TERM "$pid" 2>/dev/null || true
      names+=("$name") pids+=("$pid")
    else
      rm -f "$(pidfile "$name")"
    fi
  done
  for i in "${!pids[@]}"; do
    name=${names[$i]} pid=${pids[$i]}
    wait_gone "$pid" 300 || {
      warn "$name (pid $pid) ignored SIGTERM for 30s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone "$pid" 50
    } || { warn "$name (pid $pid) did not exit"; rc=1; continue; }
    rm -f "$(pidfile "$name")"
    note "stopped $name (pid $pid)"
  done
  return $rc
}

wait_gone() { # pid tenths-of-seconds
  local i
  for ((i = 0; i < $2; i++)); do
    [[ -d /proc/$1 ]] || return 0
    sleep 0.1
  done
  [[ ! -d /proc/$1 ]]
}
