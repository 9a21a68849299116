# shellcheck shell=bash
# devcluster.d/mariadb.sh: the site profile's private MariaDB server, where slurmdbd keeps the
# accounting.  Sourced by tools/devcluster; uses daemons.sh and packages.sh, and DB_*, STATE,
# TIMEOUT.
#
# Its datadir, socket and port are the state directory's and the cluster's (DB_PORT); the
# system's MariaDB (/etc/mysql, its datadir, its service) is never touched.  It runs as root,
# like the Slurm daemons here.  Owns the slurmdbd account's password (made once, kept 0600 in
# the state directory), the database and its grant.  Not here: slurmdbd.conf (configs.sh).

# The MariaDB password of the slurmdbd account: made once, kept in the state dir (0600).
db_password() {
  local f=$STATE/slurmdbd.pass
  if [[ ! -s "$f" ]]; then
    (umask 077 && tr -dc 'A-Za-z0-9' </dev/urandom | head -c 24 >"$f")
  fi
  cat "$f"
}

db_client() { mariadb --no-defaults --protocol=socket --socket="$DB_SOCKET" -u root "$@"; }

db_init() { # a fresh datadir; .initialized marks a complete one (a half-made one is redone)
  [[ -f "$DB_DIR/.initialized" ]] && return 0
  local log
  log=$(daemon_log mariadbd)
  note "initialising MariaDB in $DB_DIR/data"
  rm -rf "$DB_DIR/data"
  mkdir -p "$DB_DIR/data"
  if ! mariadb-install-db --no-defaults --user=root --datadir="$DB_DIR/data" \
    --auth-root-authentication-method=socket --skip-test-db >>"$log" 2>&1; then
    fail_daemon mariadbd "mariadb-install-db failed"
  fi
}

start_mariadb() {
  alive mariadbd && return 0
  local bin log i child
  bin=$(need_bin mariadbd mariadb-server-core)
  log=$(daemon_log mariadbd)
  mkdir -p "$DB_DIR"
  chmod 0700 "$DB_DIR"
  db_init
  rm -f "$DB_SOCKET" "$(pidfile mariadbd)"
  # mariadbd stays in the foreground: run it detached, it writes its own pid file.  As root
  # (--user=root), like the Slurm daemons here: no 'mysql' account or file ownership needed.
  detached "$bin" --no-defaults --user=root --datadir="$DB_DIR/data" \
    --socket="$DB_SOCKET" --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
    --pid-file="$(pidfile mariadbd)" --log-error="$log" --skip-log-bin \
    --innodb-buffer-pool-size=128M --innodb-log-file-size=64M --innodb-lock-wait-timeout=900 \
    --innodb-flush-log-at-trx-commit=2 </dev/null >>"$log" 2>&1 &
  child=$!
  for ((i = 0; i < TIMEOUT * 5; i++)); do
    if alive mariadbd && db_client -e 'SELECT 1' >/dev/null 2>&1; then
      db_grant
      return 0
    fi
    kill -0 "$child" 2>/dev/null || fail_daemon mariadbd "exited during start-up"
    sleep 0.2
  done
  fail_daemon mariadbd "does not answer on $DB_SOCKET"
}

db_grant() { # the database and the account slurmdbd uses (idempotent)
  local pass
  pass=$(db_password)
  db_client <<EOF >>"$(daemon_log mariadbd)" 2>&1 || fail_daemon mariadbd "could not create the slurmdbd account"
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$pass';
ALTER USER '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$pass';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'127.0.0.1';
EOF
  touch "$DB_DIR/.initialized"
}
