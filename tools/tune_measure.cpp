// SPDX-License-Identifier: Apache-2.0
#include "tools/tune_measure.h"

#include <cuda_runtime_api.h>
#include <unistd.h>
#include <functional>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/symmetric_comm.h"
#include "plugin/record_gather.h"
#include "tools/bench_data.h"
#include "tools/bench_timing.h"
#include "tools/tune_report.h"

namespace symmem {

namespace {

using kernels::Algorithm;
using kernels::SymmetricComm;

// Keeps the first problem any rank reports, for the parent's message; returns `code` for the caller.
int reportProblem(TuneRankReport* report, int rank, int code, const std::string& what) {
  std::fprintf(stderr, "[rank %d] %s\n", rank, what.c_str());
  int expected = 0;
  if (report->errorClaimed.compare_exchange_strong(expected, 1)) {
    std::snprintf(report->error, sizeof report->error, "rank %d: %s", rank, what.c_str());
  }
  return code;
}

void showProgress(const TuneRankJob& job, int step, const char* path, uint64_t bytes, int round) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - job.start).count();
  const std::string line = progressLine(job.stepsBefore + step, job.stepsTotal, elapsed, job.world->nRanks, path, bytes,
                                        round, job.options->rounds);
  // On a terminal one line is rewritten in place; in a log every step is a line of its own.
  if (isatty(STDERR_FILENO))
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
  else
    std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

int measureTuneRank(const TuneRankJob& job, int rank) {
  const TuneOptions& o = *job.options;
  const NcclLibrary& nccl = *job.nccl;
  const int n = job.world->nRanks;
  TuneRankReport* report = job.report;

  // The rank's GPU by PCI bus id: NVML's numbering (the plan's) need not be CUDA's.
  int device = job.world->gpus[rank];
  const std::string& busId = job.world->busIds[rank];
  if (!busId.empty() && cudaDeviceGetByPCIBusId(&device, busId.c_str()) != cudaSuccess) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return reportProblem(
        report, rank, 8,
        "CUDA does not see GPU " + busId + (visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : ""));
  }
  CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  report->ccMajor[rank] = prop.major;
  report->ccMinor[rank] = prop.minor;
  if (rank == 0) {
    std::snprintf(report->deviceName, sizeof report->deviceName, "%s", prop.name);
    cudaRuntimeGetVersion(&report->cudaRuntimeVersion);
    cudaDriverGetVersion(&report->cudaDriverVersion);
  }

  auto ncclOk = [&](ncclResult_t result, const char* what) {
    if (result == ncclSuccess) return true;
    reportProblem(report, rank, 3, std::string(what) + ": " + nccl.getErrorString(result));
    return false;
  };
  ncclUniqueId id;
  // Rank 0 ends before publishing a bad id: the others then give up waiting instead of joining it.
  auto makeId = [&](ncclUniqueId* made) {
    if (!ncclOk(nccl.getUniqueId(made), "ncclGetUniqueId")) std::exit(3);
  };
  if (!bench::exchangeUniqueId(*job.rendezvous, rank, makeId, &id))
    return reportProblem(report, rank, 4, "no ncclUniqueId from rank 0");
  ncclComm_t comm;
  if (!ncclOk(nccl.commInitRank(&comm, n, id, rank), "ncclCommInitRank")) return 3;
  bench::RankBarrier barrier(job.rendezvous, rank, n);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const bench::ElementType type = bench::elementTypeOf(o.dtype);
  const bench::ElementFormat format = type.format;
  const uint64_t largest = job.sizes->back();
  void* buffer = nullptr;
  CUDA_CHECK(cudaMalloc(&buffer, std::max<uint64_t>(largest, 4096)));

  // Both kernels sized for every measured size: the crossover needs both paths at each size.
  kernels::SymmetricConfig cfg;
  cfg.rank = rank;
  cfg.nRanks = n;
  cfg.device = device;
  cfg.oneShotMaxBytes = largest;
  cfg.twoShotMaxBytes = largest;
  NcclRecordGather allGather(nccl.allGather, comm, n);
  std::string whyNot;
  std::unique_ptr<SymmetricComm> ours = SymmetricComm::create(cfg, std::ref(allGather), &whyNot);
  if (!ours) return reportProblem(report, rank, 5, "the symmetric path could not be set up: " + whyNot);

  int step = 0;
  for (size_t s = 0; s < job.sizes->size(); ++s) {
    const uint64_t bytes = (*job.sizes)[s];
    const size_t count = bytes / format.bytes;
    // One in-place all-reduce of `buffer` on the path in report column `path`.
    auto call = [&](int path) -> bool {
      const TunedChoice choice = kTunePathOrder[path];
      if (choice == TunedChoice::Nccl)
        return nccl.allReduce(buffer, buffer, count, type.nccl, ncclSum, comm, stream) == ncclSuccess;
      return ours->allReduce(buffer, buffer, count, type.ours, ReduceOp::Sum,
                             choice == TunedChoice::OneShot ? Algorithm::OneShot : Algorithm::TwoShot,
                             stream) == kernels::Status::Ok;
    };

    // Check each path once (exact integer sums); a path that computes wrong results is never chosen.
    for (int path = 0; path < kTunePaths; ++path) {
      const long long wrong =
          bench::countWrongAfterOneCall(rank, n, barrier, stream, buffer, count, format, [&] { return call(path); });
      if (wrong < 0)
        return reportProblem(report, rank, 6,
                             std::string(tunePathName(path)) + " refused " + std::to_string(bytes) + " bytes");
      if (wrong != 0) report->wrong[s][path] = wrong;  // any rank: the parent only needs "not zero"
      if (wrong != 0)
        std::fprintf(stderr, "[rank %d] %s gave %lld wrong elements at %llu bytes\n", rank, tunePathName(path), wrong,
                     static_cast<unsigned long long>(bytes));
    }

    const int calls = callsForSize(bytes, o.callsPerBatch);
    std::unique_ptr<bench::CapturedBatch> batches[kTunePaths];
    for (int path = 0; path < kTunePaths; ++path) {
      batches[path] = std::make_unique<bench::CapturedBatch>(rank, stream, calls, [&] { return call(path); });
      if (!batches[path]->allCallsAccepted())
        return reportProblem(report, rank, 6, std::string(tunePathName(path)) + " refused a call under graph capture");
    }
    barrier.wait();
    for (auto& batch : batches) batch->replay();  // warm-up
    CUDA_CHECK(cudaStreamSynchronize(stream));

    bench::BatchTimer timer(rank, barrier, stream);
    std::vector<double> samples[kTunePaths];
    for (int round = 0; round < o.rounds; ++round)
      for (int path = 0; path < kTunePaths; ++path) {
        if (rank == 0) showProgress(job, step, tunePathName(path), bytes, round);
        ++step;
        const std::vector<double> us = timer.time(o.batchesPerRound, calls, [&] { batches[path]->replay(); });
        samples[path].insert(samples[path].end(), us.begin(), us.end());
      }
    if (rank == 0)
      for (int path = 0; path < kTunePaths; ++path) {
        std::sort(samples[path].begin(), samples[path].end());
        report->medianUs[s][path] = bench::medianOfSorted(samples[path]);
        report->minUs[s][path] = samples[path].front();
        report->maxUs[s][path] = samples[path].back();
      }
    for (auto& batch : batches) batch.reset();  // graphs go before any ncclCommDestroy
    if (ours->deviceStatus() != kernels::Status::Ok)
      return reportProblem(report, rank, 7,
                           std::string("the symmetric path reports ") + kernels::statusName(ours->deviceStatus()) +
                               " at " + std::to_string(bytes) + " bytes");
    if (rank == 0) report->sizesDone = static_cast<int>(s + 1);
  }
  if (rank == 0 && isatty(STDERR_FILENO)) std::fprintf(stderr, "\n");
  barrier.wait();
  ours.reset();
  cudaFree(buffer);
  nccl.commDestroy(comm);
  return 0;
}

}  // namespace symmem
