# shellcheck shell=bash
# devcluster.d/ports.sh: the cluster's TCP ports and who holds them.  Sourced by tools/devcluster;
# uses PORT, DBD_PORT, DB_PORT, NET_MODE, STATE, warn and daemons.sh's alive.
#
# A daemon of ours that is not running needs its port free.  A port held by something
# else (most often a dev cluster whose state directory was deleted while it ran, or one under
# another RYZEN_DEVCLUSTER_DIR) would make that daemon fail later with a vaguer message, or
# make our clients talk to the other cluster.
# Ports: slurmctld PORT, slurmd nX PORT+X, slurmdbd PORT+5, MariaDB PORT+6; munged has none.
# Not here: the ports in the configs (configs.sh).

daemon_port() { # NAME: the TCP port a daemon listens on (none for munged)
  case $1 in
    slurmctld) echo "$PORT" ;;
    slurmd-n*) echo $((PORT + ${1#slurmd-n})) ;;
    slurmdbd) echo "$DBD_PORT" ;;
    mariadbd) echo "$DB_PORT" ;;
  esac
}

# listen_inodes PORT: the socket inodes listening on TCP PORT (IPv4 and IPv6), from /proc/net
listen_inodes() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v port="$hex" 'FNR > 1 && $4 == "0A" { n = split($2, a, ":"); if (a[n] == port) print $10 }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# port_holder PORT: "comm (pid N)" of a process listening on PORT, "an unknown process" when the
# socket is another namespace's, nothing when the port is free
port_holder() {
  local inodes inode fd pid
  mapfile -t inodes < <(listen_inodes "$1")
  ((${#inodes[@]} > 0)) || return 0
  for inode in "${inodes[@]}"; do
    for fd in /proc/[0-9]*/fd/*; do
      [[ $(readlink "$fd" 2>/dev/null) == "socket:[$inode]" ]] || continue
      pid=${fd#/proc/}
      pid=${pid%%/*}
      echo "$(cat "/proc/$pid/comm" 2>/dev/null || echo '?') (pid $pid)"
      return 0
    done
  done
  echo "an unknown process"
}

# check_ports NAME...: each daemon that is not running (ours) finds its port free, or 'up' stops
# here, before it starts anything, naming the port and its holder.
check_ports() {
  local name tcp holder bad=0
  for name in "$@"; do
    tcp=$(daemon_port "$name")
    [[ -n $tcp ]] || continue
    alive "$name" && continue
    [[ $name == slurmd-* && $NET_MODE == ns ]] && continue # listens in its node's namespace
    holder=$(port_holder "$tcp")
    [[ -n $holder ]] || continue
    warn "port $tcp, which $name of this cluster ($STATE) needs, is in use by $holder"
    bad=1
  done
  ((bad == 0)) && return 0
  warn "is another dev cluster running (a different RYZEN_DEVCLUSTER_DIR, or one whose" \
    "state directory was deleted while it ran)?  Stop it ('tools/devcluster down' with its" \
    "RYZEN_DEVCLUSTER_DIR, or end those processes), or give this one other ports with" \
    "RYZEN_DEVCLUSTER_PORT (now $PORT: it uses $PORT to $((PORT + 6)))"
  exit 1
}
