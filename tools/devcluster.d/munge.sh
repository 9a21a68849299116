# shellcheck shell=bash
# devcluster.d/munge.sh: munged, the authentication every daemon and client goes through.
# Sourced by tools/devcluster; uses daemons.sh and packages.sh, and MUNGE_* and PROFILE.
#
# The site profile's munged serves munge's default socket (MUNGE_DEFAULT_SOCKET); a munged that
# already answers there (the system's) is used and left alone.  The light profile's munged has a
# socket in the state directory.  The key is made once, in the state directory (0600).  Not
# here: stopping it (daemons.sh's stop_daemons, from updown.sh).

munge_answers() { # SOCKET: a munged with a working key answers there
  munge -n -S "$1" 2>/dev/null | unmunge -S "$1" >/dev/null 2>&1
}

start_munged() {
  alive munged && return 0
  local munged mungekey out dir
  munged=$(need_bin munged munge)
  need_bin unmunge munge >/dev/null
  if [[ $PROFILE == site ]] && munge_answers "$MUNGE_SOCKET"; then
    # A munged we did not start (the system's) serves the default socket: use it, as the
    # daemons of a real site would; 'down' leaves it alone.
    note "using the munged already serving $MUNGE_SOCKET (not started by devcluster)"
    return 0
  fi
  if [[ ! -s "$MUNGE_KEY" ]]; then
    if mungekey=$(find_bin mungekey); then
      "$mungekey" --create --keyfile="$MUNGE_KEY" --force
    else
      dd if=/dev/urandom of="$MUNGE_KEY" bs=1 count=1024 status=none
    fi
    chmod 0600 "$MUNGE_KEY"
  fi
  dir=$(dirname "$MUNGE_SOCKET")
  if [[ ! -d "$dir" ]]; then
    mkdir -p "$dir"
    chmod 0755 "$dir" # munged: the socket dir must be world-searchable, not writable
    echo "$dir" >"$MUNGE_DIR/made-socket-dir" # 'down' removes it again
  fi
  # Debian's munge package may have made /run/munge for its own 'munge' user: our munged runs
  # as root and would refuse that directory's ownership; --force makes it a warning.
  local force=()
  [[ $(stat -c %u "$dir") -eq 0 ]] || force=(--force)
  rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock" # nothing answers there (checked above)
  # munged forks into the background by itself; detached leaves it nothing of ours.
  if ! out=$(detached "$munged" "${force[@]}" --socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" \
    --pid-file="$(pidfile munged)" --log-file="$(daemon_log munged)" \
    --seed-file="$MUNGE_DIR/munged.seed" --num-threads=4 </dev/null 2>&1); then
    echo "$out" >&2
    fail_daemon munged "failed to start"
  fi
  wait_pid munged 10 || fail_daemon munged "did not write its pid file $(pidfile munged)"
  munge_answers "$MUNGE_SOCKET" || fail_daemon munged "does not answer on $MUNGE_SOCKET"
}

# munge_forget_socket_dir: remove the socket directory start_munged made (/run/munge), if it made
# one; 'down' runs it once munged has stopped.
munge_forget_socket_dir() {
  if [[ -s "$MUNGE_DIR/made-socket-dir" ]]; then
    rmdir "$(cat "$MUNGE_DIR/made-socket-dir")" 2>/dev/null || true
    rm -f "$MUNGE_DIR/made-socket-dir"
  fi
}
