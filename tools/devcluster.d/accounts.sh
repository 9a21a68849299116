# shellcheck shell=bash
# devcluster.d/accounts.sh: the site profile's users (rzuser, rzother) and their accounting:
# cluster, accounts, associations and the QOS.  Sourced by tools/devcluster; uses USERS,
# ACCOUNTS, QOS_ML, CLUSTER, note, die and daemons.sh's fail_daemon.
#
# Idempotent; both the users and the associations stay after 'down'.  Not here: the database
# they are kept in (mariadb.sh, slurmdbd in slurmd.sh).

users_exist() {
  local u
  for u in "${USERS[@]%%:*}"; do id -u "$u" >/dev/null 2>&1 || return 1; done
}

ensure_users() {
  local u
  for u in "${USERS[@]%%:*}"; do
    id -u "$u" >/dev/null 2>&1 && continue
    useradd --create-home --shell /bin/bash --comment "ryzen-llm devcluster user" "$u" ||
      die "useradd $u failed"
    note "created user $u"
  done
}

setup_accounts() {
  local have a pair u
  sacctmgr -n -P list cluster format=cluster 2>/dev/null | grep -qx "$CLUSTER" ||
    sacctmgr -i add cluster "$CLUSTER" >/dev/null || fail_daemon slurmdbd "sacctmgr add cluster failed"
  have=$(sacctmgr -n -P list associations cluster="$CLUSTER" format=account,user 2>/dev/null)
  for a in "${ACCOUNTS[@]}"; do
    grep -qx "$a|" <<<"$have" && continue
    sacctmgr -i add account "$a" cluster="$CLUSTER" description="ryzen-llm devcluster" \
      organization=ryzen >/dev/null || fail_daemon slurmdbd "sacctmgr add account $a failed"
  done
  for pair in "${USERS[@]}"; do
    u=${pair%%:*} a=${pair#*:}
    grep -qx "$a|$u" <<<"$have" && continue
    sacctmgr -i add user "$u" account="$a" defaultaccount="$a" cluster="$CLUSTER" >/dev/null ||
      fail_daemon slurmdbd "sacctmgr add user $u failed"
  done
  sacctmgr -n -P list qos format=name 2>/dev/null | grep -qx "$QOS_ML" ||
    sacctmgr -i add qos "$QOS_ML" >/dev/null || fail_daemon slurmdbd "sacctmgr add qos $QOS_ML failed"
  sacctmgr -n -P list associations account=ml user=rzuser format=qos 2>/dev/null |
    grep -q "$QOS_ML" ||
    sacctmgr -i modify user rzuser where account=ml set qos+="$QOS_ML" >/dev/null ||
    fail_daemon slurmdbd "sacctmgr modify user rzuser qos+=$QOS_ML failed"
}
