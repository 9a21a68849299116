# shellcheck shell=bash
# devcluster.d/env.sh: 'env', the shell exports that reach the cluster (docs/devcluster.md
# "Environment"): eval "$(tools/devcluster env)".  Sourced by tools/devcluster; uses CONF, STATE,
# NET_MODE, PROFILE and netns.sh's NET_CIDR.
#
# Prints only; it starts and checks nothing (that is 'status', status.sh).

cmd_env() {
  # Minimal set, each one needed (docs/devcluster.md "Environment"); the same for root and
  # for rzuser.
  echo "export SLURM_CONF='$CONF'"
  echo "export RYZEN_DEVCLUSTER_DIR='$STATE'"
  if [[ $NET_MODE == ns ]]; then
    # Between nodes over their eth0 (TCP), within a node through shared memory: Open MPI's
    # defaults, told only which network is the cluster's.
    echo "export OMPI_MCA_btl_tcp_if_include='$NET_CIDR'"
    echo "export OMPI_MCA_oob_tcp_if_include='$NET_CIDR'"
  else
    # Every node is one host here: Open MPI would take ranks of different nodes for one
    # node's and use shared memory between them; TCP over loopback only.
    echo "export OMPI_MCA_btl='self,tcp'"
    echo "export OMPI_MCA_btl_tcp_if_include='lo'"
    echo "export OMPI_MCA_oob_tcp_if_include='lo'"
  fi
  # Slurm maps each node's CPUs onto the machine's modulo their number: rank 0 of n1 and rank 0
  # of n2 both run on CPU 0.  Two ranks that spin while they wait for each other on one CPU get
  # it a time slice at a time: the preflight's 8-byte round trip between n1 and n2 measured
  # 4000 us spinning, 6 us yielding (a real site's nodes have cores of their own).
  echo "export OMPI_MCA_mpi_yield_when_idle=1"
  echo "export OMPI_ALLOW_RUN_AS_ROOT=1"
  echo "export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  # Each node's 8 CPUs are the machine's 2, so srun cannot give more than 2 ranks of a node
  # cores of their own ("Unable to layout tasks"): ryzen-step asks for no binding here.  A real
  # site keeps ryzen-step's default, --cpu-bind=cores (docs/devcluster.md, "CPU binding").
  [[ $PROFILE == site ]] && echo "export RYZEN_CPU_BIND=none"
  return 0
}
