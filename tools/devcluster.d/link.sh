# shellcheck shell=bash
# devcluster.d/link.sh: link control of the ns network mode (docs/devcluster.md "Link control").
# Sourced by tools/devcluster; uses netns.sh.
#
#   tools/devcluster net show                    each node's link: rate, loss, cut, counters
#   tools/devcluster net NODE [--rate R] [--loss PCT] [--cut | --cut-from PEER | --heal]
#   tools/devcluster net all  [--rate R] [--loss PCT] [--heal]
#   tools/devcluster net reset                   every node back to the default rate, no loss, healed
#
#   --rate R    the node's link rate in both directions, a tc rate (100mbit, 1gbit, 500kbit ...),
#               or "off" for the veth's own speed.  A token bucket (tc tbf) on the node's eth0
#               (what it sends) and on its veth on the host (what it receives).
#   --loss PCT  random loss of PCT percent (0.01 steps) of the packets the node sends, and of
#               those it receives, each way; 0 or "off" for none.  nftables drops at the ingress
#               of both ends of the link (numgen random): these kernels have no netem.
#   --cut       a partition: every packet to or from the node is dropped, silently, as by a
#               failed switch port.  Its processes keep running.  --heal ends it.
#   --cut-from PEER  a fault between two nodes only: every packet between NODE's address and
#               PEER's is dropped at NODE's end of the link (both ways); each still reaches the
#               head and every other node, so Slurm sees both up.  Repeat for more peers;
#               --heal ends every cut of the node.
# Each setting is read back from the kernel after it is made; 'show' prints what the kernel has.

LINK_DEFAULT_RATE=${RYZEN_DEVCLUSTER_RATE:-250mbit}
LINK_TABLE=rzdev_link # the nftables tables of a node's loss and cut rules (netdev family)

link_usage() {
  awk '/^#   tools\/devcluster net/,/^# Each setting/ { sub(/^# ?/, ""); print }' \
    "$HERE/devcluster.d/link.sh" >&2
  exit 64
}

link_need_ns() {
  [[ $(recorded_net_mode) == ns ]] ||
    die "net: the cluster is in the $(recorded_net_mode) network mode; link control needs the" \
      "ns mode ('tools/devcluster up --net ns')"
  command -v tc >/dev/null || die "net: tc (Debian package iproute2) not found"
  command -v nft >/dev/null || die "net: nft (Debian package nftables) not found: tools/install-deps"
}

link_nft() { ip netns exec "$(net_ns "$1")" nft "${@:2}"; }

# link_tbf DEV_ARGS... RATE: a tbf on a device (ip -n NS or plain), or none for "off"
link_tbf() {
  local where=("${@:1:$#-2}") dev=${*: -2:1} rate=${*: -1}
  tc "${where[@]}" qdisc del dev "$dev" root 2>/dev/null || true
  [[ $rate == off ]] && return 0
  # burst: 10 ms at the rate, at least 64 KiB (one GSO segment of the veth); the queue holds
  # 100 ms at the rate before it drops.
  local bits burst
  bits=$(link_rate_bits "$rate") || die "net --rate: '$rate' is not a rate (e.g. 100mbit, 1gbit)"
  burst=$((bits / 8 / 100))
  ((burst >= 65536)) || burst=65536
  tc "${where[@]}" qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 100ms ||
    die "net: tc could not set rate $rate on $dev"
}

# link_rate_bits RATE: bits per second of a tc rate (k/m/g with bit or bps suffix)
link_rate_bits() {
  awk -v r="$1" 'BEGIN {
    if (!match(r, /^[0-9]+(\.[0-9]+)?/)) exit 1
    v = substr(r, 1, RLENGTH); u = tolower(substr(r, RLENGTH + 1))
    m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9
    m["bps"] = 8; m["kbps"] = 8e3; m["mbps"] = 8e6; m["gbps"] = 8e9
    if (!(u in m)) exit 1
    printf "%d\n", v * m[u] }'
}

link_set_rate() {
  local n=$1 rate=$2 ns
  ns=$(net_ns "$n")
  link_tbf -n "$ns" eth0 "$rate"
  link_tbf "$ns" "$rate"
}

# link_rules NODE LOSS_PER_10000 CUT CUT_FROM: rewrite the node's loss and cut rules (CUT_FROM:
# the peers cut from it, comma-separated, or "-").  Both are drops
# at the ingress of each end of the node's link: on the host's veth (what the node sends) and on
# the node's eth0 (what it receives).  A drop there is lost on the wire for the sender's TCP,
# which must notice and retransmit; a drop in the sender's output hook would not be (TCP sees
# the error at once and sends again, and counts no retransmission).  The veths carry one MTU
# packet per frame (net_up: gso_max_segs 1), so PCT is of packets on the wire.
link_rules() {
  local n=$1 loss=$2 cut=$3 from=${4:--} ns
  ns=$(net_ns "$n")
  nft delete table netdev "$LINK_TABLE-$n" 2>/dev/null || true
  link_nft "$n" delete table netdev "$LINK_TABLE" 2>/dev/null || true
  ((loss == 0)) && [[ $cut == no && $from == - ]] && return 0
  # the host's veth sees what the node sends (to PEER: daddr); its eth0 what it receives (saddr)
  link_table "$LINK_TABLE-$n" "$ns" "$loss" "$cut" "$from" daddr | nft -f - ||
    die "net: nft could not set the rules of $n's veth $ns"
  link_table "$LINK_TABLE" eth0 "$loss" "$cut" "$from" saddr | link_nft "$n" -f - ||
    die "net: nft could not set the rules of $n's eth0"
}

# link_table TABLE DEVICE LOSS_PER_10000 CUT CUT_FROM PEER_FIELD: an nftables netdev table
# dropping at DEVICE's ingress; each peer of CUT_FROM matched by its address in PEER_FIELD
link_table() {
  local p
  echo "table netdev $1 {"
  echo "  chain ingress { type filter hook ingress device \"$2\" priority 0; policy accept;"
  [[ $4 == yes ]] && echo "    counter drop comment \"cut\""
  [[ ${5:--} == - ]] || for p in ${5//,/ }; do
    echo "    ip $6 $(net_addr "$p") counter drop comment \"cut-from $p\""
  done
  (($3 > 0)) && echo "    numgen random mod 10000 < $3 counter drop comment \"loss\""
  echo "  }"
  echo "}"
}

# link_state NODE: "RATE LOSS_PER_10000 CUT CUT_FROM" read back from the kernel (CUT_FROM: the
# peers of its cut-from rules in both tables, or "-")
link_state() {
  local n=$1 ns rate loss cut from
  ns=$(net_ns "$n")
  rate=$(tc -n "$ns" qdisc show dev eth0 root 2>/dev/null | awk '/tbf/ { for (i = 1; i < NF; i++) if ($i == "rate") { print $(i + 1); exit } }')
  local rules
  rules=$(nft list table netdev "$LINK_TABLE-$n" 2>/dev/null || true)
  loss=$(awk '/numgen random mod 10000/ { for (i = 1; i < NF; i++) if ($i == "<") { print $(i + 1); exit } }' <<<"$rules")
  grep -q 'comment "cut"' <<<"$rules" && cut=yes || cut=no
  from=$( (sed -n 's/.*comment "cut-from \(n[0-9]*\)".*/\1/p' <<<"$rules"
    link_nft "$n" list table netdev "$LINK_TABLE" 2>/dev/null |
      sed -n 's/.*comment "cut-from \(n[0-9]*\)".*/\1/p') | sort | uniq -d | paste -sd, -)
  echo "${rate:-off} ${loss:-0} $cut ${from:--}"
}

link_summary() { # NODE: ", rate R, loss P%, cut" for net_status
  [[ $(recorded_net_mode) == ns ]] || return 0
  local s
  read -r -a s <<<"$(link_state "$1")"
  printf ', rate %s, loss %s%%%s%s' "${s[0]}" "$(awk -v l="${s[1]}" 'BEGIN { printf "%g", l / 100 }')" \
    "$([[ ${s[2]} == yes ]] && echo ', CUT')" "$([[ ${s[3]} != - ]] && echo ", cut from ${s[3]}")"
}

# link_counters NODE: the node's eth0 counters (rx/tx bytes, packets, drops, errors) and TCP's
# segments sent and retransmitted, as "key=value" words, from the node's own /proc/net
link_counters() {
  # shellcheck disable=SC2016 # an awk program, run in the node's namespace: its $N are awk's fields
  ip netns exec "$(net_ns "$1")" awk '
    FILENAME == "/proc/net/dev" && $1 == "eth0:" {
      printf "rx_bytes=%s rx_packets=%s rx_errs=%s rx_drop=%s tx_bytes=%s tx_packets=%s tx_errs=%s tx_drop=%s ", $2, $3, $4, $5, $10, $11, $12, $13 }
    FILENAME == "/proc/net/snmp" && $1 == "Tcp:" {
      if (!h) { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
      printf "tcp_out_segs=%s tcp_retrans_segs=%s", $col["OutSegs"], $col["RetransSegs"] }
    END { print "" }' /proc/net/dev /proc/net/snmp
}

link_show() {
  local n s
  printf '%-4s %-14s %-10s %-8s %-5s %-9s %s\n' node address rate loss cut cut_from counters
  for n in "${NODES[@]}"; do
    read -r -a s <<<"$(link_state "$n")"
    printf '%-4s %-14s %-10s %-8s %-5s %-9s %s\n' "$n" "$(net_addr "$n")" "${s[0]}" \
      "$(awk -v l="${s[1]}" 'BEGIN { printf "%g%%", l / 100 }')" "${s[2]}" "${s[3]}" \
      "$(link_counters "$n")"
  done
}

# link_apply NODE RATE LOSS CUT [CUT_FROM]: RATE/LOSS/CUT/CUT_FROM empty = keep the node's current
# one; CUT_FROM "+PEER" adds a peer, "-" clears them
link_apply() {
  local n=$1 rate=$2 loss=$3 cut=$4 from=${5:-} cur
  read -r -a cur <<<"$(link_state "$n")"
  if [[ -n $rate ]]; then
    link_set_rate "$n" "$rate"
  fi
  [[ -n $loss ]] || loss=${cur[1]}
  [[ -n $cut ]] || cut=${cur[2]}
  case $from in
    '') from=${cur[3]} ;;
    +*) from=$( (tr , '\n' <<<"${cur[3]}" | grep -v '^-$'; echo "${from#+}") | sort -u | paste -sd, -) ;;
  esac
  link_rules "$n" "$loss" "$cut" "$from"
  # read back
  read -r -a cur <<<"$(link_state "$n")"
  [[ -z $rate || $rate == off || ${cur[0]} != off ]] || die "net: the rate of $n did not take"
  [[ ${cur[1]} == "$loss" && ${cur[2]} == "$cut" && ${cur[3]} == "$from" ]] ||
    die "net: $n reads back loss ${cur[1]}/10000 cut ${cur[2]} cut from ${cur[3]}, not" \
      "$loss/10000 $cut $from"
  note "$n: $(link_summary "$n" | sed 's/^, //')"
}

# link_loss_arg PCT: loss per 10000 packets
link_loss_arg() {
  [[ $1 == off ]] && { echo 0; return 0; }
  awk -v p="$1" 'BEGIN { if (p !~ /^[0-9]+(\.[0-9]+)?$/ || p > 100) exit 1; printf "%d\n", p * 100 + 0.5 }' ||
    die "net --loss: '$1' is not a percentage from 0 to 100"
}

cmd_net() {
  [[ $# -gt 0 ]] || link_usage
  local target=$1 rate='' loss='' cut='' from='' n targets=()
  shift
  case $target in
    show) link_need_ns; link_show; return 0 ;;
    reset)
      link_need_ns
      for n in "${NODES[@]}"; do link_apply "$n" "$LINK_DEFAULT_RATE" 0 no -; done
      return 0
      ;;
    all) targets=("${NODES[@]}") ;;
    n[0-9]*)
      [[ " ${NODES[*]} " == *" $target "* ]] || die "net: no node '$target' (nodes: ${NODES[*]})"
      targets=("$target")
      ;;
    *) link_usage ;;
  esac
  while (($# > 0)); do
    case $1 in
      --rate) (($# > 1)) || link_usage; rate=$2; shift ;;
      --loss) (($# > 1)) || link_usage; loss=$(link_loss_arg "$2"); shift ;;
      --cut) cut=yes ;;
      --cut-from)
        (($# > 1)) || link_usage
        [[ " ${NODES[*]} " == *" $2 "* ]] || die "net --cut-from: no node '$2' (nodes: ${NODES[*]})"
        [[ $2 != "$target" ]] || die "net --cut-from: $2 is the node itself; name another node"
        from=+$2
        shift
        ;;
      --heal) cut=no from=- ;;
      *) link_usage ;;
    esac
    shift
  done
  [[ -n $rate$loss$cut$from ]] || link_usage
  [[ $target == all && $cut == yes ]] && die "net: 'all --cut' would cut every node; cut one node"
  [[ $target == all && $from == +* ]] && die "net: 'all --cut-from' would cut every node; cut one node"
  link_need_ns
  for n in "${targets[@]}"; do link_apply "$n" "$rate" "$loss" "$cut" "$from"; done
}
