#!/bin/bash
# Baseline: 1 node x 1 rank, the reference every scaling phase is measured against (the
# roadmap's "Baseline | 1" row).  Config: configs/baseline_1proc.yaml.
#   sbatch sbatch/baseline_1proc.sh [--set key=value]...      (extra arguments are config overrides)
# Partition, account and time limit come from sbatch's own flags or the SBATCH_PARTITION,
# SBATCH_ACCOUNT and SBATCH_TIMELIMIT environment variables: nothing site-specific is written
# here.  The warning signal gives ryzen-step 120 s to checkpoint before the time limit.
#SBATCH --job-name=ryzen-baseline_1proc
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=1
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --signal=B:USR2@120
#SBATCH --output=%x-%j.out
set -euo pipefail
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
cd "${SLURM_SUBMIT_DIR:-.}"
exec "${RYZEN_STEP:-ryzen-step}" --config configs/baseline_1proc.yaml "$@"
