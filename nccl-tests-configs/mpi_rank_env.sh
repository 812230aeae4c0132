#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Per-rank environment for nccl-tests run by mpirun with every process on one GPU (testing only: the
# processes time-slice the GPU, so correctness only; nothing measured this way is a latency figure).
# NCCL refuses two ranks on one GPU only when their host hashes match: each rank gets its own
# NCCL_HOSTID and the ranks talk over loopback sockets. Then it runs its arguments.
#
#   mpirun --allow-run-as-root -np 4 --oversubscribe nccl-tests-configs/mpi_rank_env.sh all_reduce_perf -g 1 ...
#
# nccl-tests must be built with MPI: make MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi
# SYMMEM_TEST_SHARED_GPU=1 lets the plugin's symmetric path run on ranks that share the GPU (an explicit
# SYMMEM_TEST_SHARED_GPU=0 in the environment is kept, to see the all-reduces stay on NCCL).
set -euo pipefail
rank="${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-}}}"
if [[ -z "$rank" ]]; then
  echo "mpi_rank_env.sh: no OMPI_COMM_WORLD_RANK (or PMIX_RANK, PMI_RANK): run it under mpirun" >&2
  exit 2
fi
if (( $# == 0 )); then
  echo "mpi_rank_env.sh: no command to run" >&2
  exit 2
fi
export NCCL_HOSTID="symmem-test-host-$rank"
export NCCL_TESTS_DEVICE=0 NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
export SYMMEM_TEST_SHARED_GPU="${SYMMEM_TEST_SHARED_GPU:-1}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
exec "$@"
