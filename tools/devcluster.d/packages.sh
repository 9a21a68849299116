# shellcheck shell=bash
# devcluster.d/packages.sh: the programs the cluster runs and the Debian packages they come from.
# Sourced by tools/devcluster; uses its note and die.
#
# Each program is found on the PATH, with /usr/sbin and /sbin added (they are not always on a
# non-root PATH); a missing one runs tools/install-deps once, and one still missing after it
# stops 'up' naming its package.  Slurm's PMIx plugin is checked too: srun --mpi=pmix needs it.
# Not here: starting anything (daemons.sh and the files of each daemon).

find_bin() {
  local name=$1 path
  path=$(PATH="$PATH:/usr/sbin:/sbin" command -v "$name" 2>/dev/null) || return 1
  echo "$path"
}

need_bin() {
  local name=$1 pkg=$2 path
  path=$(find_bin "$name") || die "'$name' not found: install the Debian package '$pkg' (tools/install-deps)"
  echo "$path"
}

# The daemons' packages, installed through tools/install-deps when a program is missing.
ensure_packages() {
  local profile=$1 b missing=0
  local bins=(slurmctld slurmd sinfo munged)
  [[ $profile == site ]] && bins+=(slurmdbd mariadbd mariadb-install-db mariadb)
  for b in "${bins[@]}"; do find_bin "$b" >/dev/null || missing=1; done
  if ((missing)); then
    note "Slurm, munge or MariaDB programs missing: running tools/install-deps"
    "$HERE/install-deps" || die "tools/install-deps failed"
  fi
  need_bin slurmctld slurmctld >/dev/null
  need_bin slurmd slurmd >/dev/null
  need_bin sinfo slurm-client >/dev/null
  need_bin munged munge >/dev/null
  if [[ $profile == site ]]; then
    need_bin slurmdbd slurmdbd >/dev/null
    need_bin mariadbd mariadb-server-core >/dev/null
    need_bin mariadb-install-db mariadb-server-core >/dev/null
    need_bin mariadb mariadb-client-core >/dev/null
  fi
  check_pmix_plugin
}

# Slurm's plugin directory, from the library the client commands load (no hard-coded path).
plugin_dir() {
  local lib
  lib=$(ldd "$(need_bin sinfo slurm-client)" 2>/dev/null | awk '/libslurm/ {print $3; exit}')
  [[ -n "$lib" ]] && dirname "$lib"
}

check_pmix_plugin() {
  local dir
  dir=$(plugin_dir) || true
  if [[ -n "$dir" && ! -e "$dir/mpi_pmix.so" ]]; then
    die "Slurm's PMIx plugin ($dir/mpi_pmix.so) is missing: install the Debian package" \
      "'slurm-wlm-basic-plugins' (tools/install-deps); srun --mpi=pmix needs it"
  fi
}
