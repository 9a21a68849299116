# shellcheck shell=bash
# devcluster.d/netns.sh: nodes that are hosts (docs/devcluster.md "Network and storage").
# Sourced by tools/devcluster; uses its STATE, NODES, RUN, note, die, alive, recorded_pid.
#
# In the "ns" network mode every slurmd runs in namespaces of its own:
#   network  rzdev-nX: one interface, eth0, with 198.18.0.(10+X)/24 and MTU 9000, a veth whose other end
#            (rzdev-nX on the host) is a port of the bridge rzdev0.  The host, which runs
#            slurmctld, slurmdbd, MariaDB and munged and is the login node, is 198.18.0.1 on
#            that bridge.  198.18.0.0/15 is reserved for benchmarking (RFC 2544): no site uses
#            it.  A node has no default route: the only network it can reach is 198.18.0.0/24.
#   UTS      its hostname is its node name (n1 .. n4).
#   mount    private /tmp and /dev/shm (tmpfs, NET_TMP_SIZE each) and /etc/hosts naming the
#            head and every node.  Everything else, the state directory and the run roots
#            included, is the machine's one filesystem: it plays the shared filesystem (NFS or
#            Lustre) of a site, and must not be under /tmp.  NET_SHARED (/var/tmp), where the
#            tests and the demo keep their run roots, is a shared mount on the head and a slave
#            of it on every node: a filesystem mounted there on the head (a small tmpfs that
#            fills up, in a test) is the same filesystem on every node, as on a shared export.
# The "loopback" mode is the old one: every node is 127.0.0.1 and shares everything.

NET_PREFIX=198.18.0
NET_HEAD=$NET_PREFIX.1
NET_CIDR=$NET_PREFIX.0/24
NET_BRIDGE=rzdev0
NET_MTU=9000
NET_TMP_SIZE=${NET_TMP_SIZE:-1g}
NET_MODE_FILE=$STATE/net-mode
NET_HOSTS=$STATE/hosts
NET_SHARED=/var/tmp
NET_SHARED_MADE=$STATE/made-shared-mount

net_ns() { echo "rzdev-$1"; } # network namespace of node NODE (also its veth's name on the host)
net_addr() { echo "$NET_PREFIX.$((10 + ${1#n}))"; }

# recorded_net_mode: the mode the cluster was brought up in (loopback for a state dir from
# before the modes existed).
recorded_net_mode() {
  if [[ -s $NET_MODE_FILE ]]; then cat "$NET_MODE_FILE"; else echo loopback; fi
}

# net_probe: 0 when this machine can make the namespaces (root, iproute2's ip, util-linux's
# nsenter and unshare, and a kernel with veth and bridge).  It makes and removes a throwaway
# pair; the reason it cannot goes to stderr.
net_probe() {
  local why=
  if [[ $(id -u) -ne 0 ]]; then
    why="not root"
  elif ! command -v ip >/dev/null || ! command -v nsenter >/dev/null || ! command -v unshare >/dev/null; then
    why="ip (iproute2), nsenter or unshare (util-linux) missing"
  elif ! ip netns add rzdev-probe 2>/dev/null; then
    why="'ip netns add' failed (no network namespaces here)"
  else
    if ! ip link add rzdev-probe0 type veth peer name eth0 netns rzdev-probe 2>/dev/null; then
      why="no veth support"
    elif ! ip link add rzdev-probebr type bridge 2>/dev/null; then
      why="no bridge support"
    fi
    ip link del rzdev-probebr 2>/dev/null || true
    ip link del rzdev-probe0 2>/dev/null || true
    ip netns del rzdev-probe 2>/dev/null || true
  fi
  [[ -z $why ]] && return 0
  echo "$why" >&2
  return 1
}

# net_choose REQUESTED: prints the mode to use (ns or loopback) for a request of auto, ns or
# loopback; dies when ns is asked for and cannot be had.
net_choose() {
  local why
  case $1 in
    loopback) echo loopback ;;
    ns | auto)
      if why=$(net_probe 2>&1); then
        echo ns
      elif [[ $1 == ns ]]; then
        die "--net ns: network namespaces are not available here: $why"
      else
        note "network namespaces are not available ($why): nodes share the loopback" \
          "network (tests that need a network will skip)" >&2
        echo loopback
      fi
      ;;
    *) die "--net: '$1' is not auto, ns or loopback" ;;
  esac
}

net_hosts_file() {
  local n
  echo "127.0.0.1 localhost"
  echo "$NET_HEAD $(hostname -s) head"
  for n in "${NODES[@]}"; do echo "$(net_addr "$n") $n"; done
}

# net_cpu_mask: every CPU of the machine as an RPS mask (hex, in 32-bit groups)
net_cpu_mask() {
  local n g out=''
  n=$(nproc --all)
  while ((n > 0)); do
    g=$((n >= 32 ? 32 : n))
    out=$(printf '%08x' $(((1 << g) - 1)))${out:+,$out}
    n=$((n - g))
  done
  echo "$out"
}

# net_rps FILE: every CPU into an rps_cpus file (a kernel without RPS: left as it is)
net_rps() {
  if [[ -w $1 ]]; then net_cpu_mask >"$1" 2>/dev/null || true; fi
}

# net_up: the bridge, and one namespace with its veth and address per node (idempotent: what
# exists is checked and kept).  Then reads it back: each node's only routes are the cluster's.
net_up() {
  local n ns
  case $STATE in /tmp | /tmp/*) die "the state directory $STATE is under /tmp, which each node" \
    "has of its own in the ns network mode: set RYZEN_DEVCLUSTER_DIR elsewhere" ;; esac
  if ! ip link show "$NET_BRIDGE" >/dev/null 2>&1; then
    ip link add "$NET_BRIDGE" type bridge || die "cannot make the bridge $NET_BRIDGE"
  fi
  ip link set "$NET_BRIDGE" mtu "$NET_MTU"
  ip addr replace "$NET_HEAD/24" dev "$NET_BRIDGE"
  ip link set "$NET_BRIDGE" up
  for n in "${NODES[@]}"; do
    ns=$(net_ns "$n")
    [[ -e /run/netns/$ns ]] || ip netns add "$ns" || die "cannot make the network namespace $ns"
    if ! ip link show "$ns" >/dev/null 2>&1; then
      ip -n "$ns" link del eth0 2>/dev/null || true
      ip link add "$ns" type veth peer name eth0 netns "$ns" || die "cannot make the veth of $n"
    fi
    ip link set "$ns" master "$NET_BRIDGE" up
    # One packet per frame, as on a wire: link loss (link.sh) is then per packet, and the token
    # bucket meters packets, not 64 KiB segments.  Jumbo frames (MTU 9000), as HPC fabrics use:
    # with 1500 the machine's CPU, not the link, set the rate (about 400 Mbit/s against 2 Gbit/s
    # measured with iperf3 on a 2-core Xeon).
    ip link set "$ns" mtu "$NET_MTU" gso_max_segs 1
    ip -n "$ns" link set eth0 mtu "$NET_MTU" gso_max_segs 1
    # In order, as a switch delivers a flow: each end steers what it receives to a CPU chosen by
    # the flow's hash (RPS).  Without it a packet goes to the backlog of whichever CPU sent it
    # on, and a flow whose packets two CPUs sent was reordered: about 90 reorderings per node
    # (TcpExt TCPSACKReorder) in 45 healthy phases on 2 CPUs, none with it.
    net_rps "/sys/class/net/$ns/queues/rx-0/rps_cpus"
    ip netns exec "$ns" sh -c "echo $(net_cpu_mask) > /sys/class/net/eth0/queues/rx-0/rps_cpus" \
      2>/dev/null || true
    ip -n "$ns" link set lo up
    ip -n "$ns" addr replace "$(net_addr "$n")/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
  net_share_mounts
  net_hosts_file >"$NET_HOSTS.tmp" && mv "$NET_HOSTS.tmp" "$NET_HOSTS"
  chmod 0644 "$NET_HOSTS"
  net_verify_routes
}

# net_share_mounts: NET_SHARED a shared mount on the head (a bind onto itself, made once and
# recorded, undone by net_down), so that the nodes' mount namespaces, slaves of the head's,
# receive what is mounted under it later.
net_share_mounts() {
  [[ $(findmnt -n -o PROPAGATION --mountpoint "$NET_SHARED" 2>/dev/null) == shared* ]] && return 0
  if ! findmnt -n --mountpoint "$NET_SHARED" >/dev/null 2>&1; then
    mount --bind "$NET_SHARED" "$NET_SHARED" || die "cannot bind $NET_SHARED onto itself"
    echo "$NET_SHARED" >"$NET_SHARED_MADE"
  fi
  mount --make-shared "$NET_SHARED" || die "cannot make $NET_SHARED a shared mount"
}

# net_verify_routes: a node that could reach anything but the cluster's subnet is refused.
net_verify_routes() {
  local n routes
  for n in "${NODES[@]}"; do
    routes=$(ip -n "$(net_ns "$n")" -4 route show table all 2>/dev/null |
      awk '$1 != "local" && $1 != "broadcast" && $0 !~ /dev lo/ { print $1 }' | sort -u)
    [[ $routes == "$NET_CIDR" ]] ||
      die "node $n has routes other than $NET_CIDR: $(echo "$routes" | paste -sd' ')"
  done
}

# net_down: remove what net_up made.  A namespace that still has processes lives on unnamed
# until they end (down stops them first).
net_down() {
  local n ns
  for n in "${NODES[@]}"; do
    ns=$(net_ns "$n")
    ip link del "$ns" 2>/dev/null || true
    [[ -e /run/netns/$ns ]] && { ip netns del "$ns" 2>/dev/null || true; }
  done
  ip link del "$NET_BRIDGE" 2>/dev/null || true
  if [[ -s $NET_SHARED_MADE ]]; then
    umount -l "$(cat "$NET_SHARED_MADE")" 2>/dev/null || true
    rm -f "$NET_SHARED_MADE"
  fi
}

# net_node_prefix NODE: prints, each word ended by a NUL, the command that runs the command after
# it as node NODE: in its network namespace, and in a mount and UTS namespace of its own with the
# node's hostname, private /tmp and /dev/shm and the cluster's /etc/hosts.  Read it with
# mapfile -d '' (start_slurmd).
net_node_prefix() {
  # shellcheck disable=SC2016 # the script is bash -c's: its $1.. are node-init's arguments
  printf '%s\0' nsenter --net="/run/netns/$(net_ns "$1")" -- \
    unshare --mount --uts --propagation slave -- \
    bash -c 'set -e
      hostname "$1"
      mount -t tmpfs -o "mode=1777,size=$2" "tmp-$1" /tmp
      mount -t tmpfs -o "mode=1777,size=$2" "shm-$1" /dev/shm
      mount --bind "$3" /etc/hosts
      shift 3
      exec "$@"' node-init "$1" "$NET_TMP_SIZE" "$NET_HOSTS"
}

# net_node_exec NODE CMD...: run CMD on NODE (in the namespaces of its slurmd, which must run).
net_node_exec() {
  local n=$1 pid
  shift
  pid=$(recorded_pid "slurmd-$n") || die "slurmd of $n is not running"
  nsenter --target "$pid" --net --mount --uts -- "$@"
}

# net_status: one line per node for 'status'.
net_status() {
  local n ns
  echo "  network: $(recorded_net_mode) mode$([[ $(recorded_net_mode) == ns ]] && echo ", head $NET_HEAD on $NET_BRIDGE")"
  [[ $(recorded_net_mode) == ns ]] || return 0
  for n in "${NODES[@]}"; do
    ns=$(net_ns "$n")
    if [[ -e /run/netns/$ns ]]; then
      echo "  $n: $(net_addr "$n") (netns $ns, veth $ns)$(link_summary "$n")"
    else
      echo "  $n: network namespace $ns MISSING"
    fi
  done
}
