// SPDX-License-Identifier: Apache-2.0
#include "tools/tune/measure.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <tuple>

#include "kernels/symmetric_comm.h"
#include "plugin/nccl/record_gather.h"
#include "tools/common/checked_data.h"
#include "tools/common/graph_timing.h"
#include "tools/tune/summary.h"

namespace symmem {

namespace {

using kernels::Algorithm;
using kernels::SymmetricComm;

static_assert(std::tuple_size_v<decltype(kernels::SymmetricConfig::halfOf)> == kMaxHalvesVariantRanks);

// Keeps the first problem any rank reports, for the parent's message; returns `code` for the caller.
int reportProblem(TuneRankReport* report, int rank, int code, const std::string& what) {
  std::fprintf(stderr, "[rank %d] %s\n", rank, what.c_str());
  int expected = 0;
  if (report->errorClaimed.compare_exchange_strong(expected, 1)) {
    std::snprintf(report->error, sizeof report->error, "rank %d: %s", rank, what.c_str());
  }
  return code;
}

void showProgress(const TuneRankJob& job, int step, TunePath path, uint64_t bytes, int round) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - job.start).count();
  const std::string line = progressLine(job.stepsBefore + step, job.stepsTotal, elapsed, job.world->nRanks,
                                        tunePathLabel(path), bytes, round, job.options->rounds);
  // On a terminal one line is rewritten in place; in a log every step is a line of its own.
  if (isatty(STDERR_FILENO))
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
  else
    std::fprintf(stderr, "%s\n", line.c_str());
}

// NCCL's spelling of a configuration for NCCL_ALGO / NCCL_PROTO (it compares without case).
void forceNcclConfig(TunePath config) {
  setenv("NCCL_ALGO", std::string(ncclAlgoName(ncclAlgoOf(config))).c_str(), 1);
  setenv("NCCL_PROTO", std::string(ncclProtoName(ncclProtoOf(config))).c_str(), 1);
}

}  // namespace

std::vector<TunePath> TuneRankJob::paths() const {
  std::vector<TunePath> all = {ncclPath};
  all.insert(all.end(), symmetricPaths.begin(), symmetricPaths.end());
  return all;
}

int measureTuneRank(const TuneRankJob& job, int rank) {
  const TuneOptions& o = *job.options;
  const NcclLibrary& nccl = *job.nccl;
  const int n = job.world->nRanks;
  TuneRankReport* report = job.report;
  const bool config = isNcclConfig(job.ncclPath);
  const std::vector<TunePath> paths = job.paths();

  // Before any NCCL call of this process: its communicator keeps what it reads at init.
  if (config) forceNcclConfig(job.ncclPath);

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
  if (!harness::exchangeUniqueId(*job.rendezvous, rank, makeId, &id))
    return reportProblem(report, rank, 4, "no ncclUniqueId from rank 0");
  ncclComm_t comm;
  if (!ncclOk(nccl.commInitRank(&comm, n, id, rank), "ncclCommInitRank")) return 3;
  harness::RankBarrier barrier(job.rendezvous, rank, n);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const harness::ElementType type = harness::elementTypeOf(o.dtype);
  const harness::ElementFormat format = type.format;
  const uint64_t largest = job.sizes->back();
  void* buffer = nullptr;
  CUDA_CHECK(cudaMalloc(&buffer, std::max<uint64_t>(largest, 4096)));

  // Both kernels sized for every measured size: the bands need every path at each size.
  std::unique_ptr<SymmetricComm> ours;
  if (!job.symmetricPaths.empty()) {
    kernels::SymmetricConfig cfg;
    cfg.rank = rank;
    cfg.nRanks = n;
    cfg.device = device;
    cfg.oneShotMaxBytes = largest;
    cfg.twoShotMaxBytes = largest;
    job.world->halves.fill(cfg.halves, cfg.halfOf);  // the halves variant's, planned for this world
    NcclRecordGather allGather(nccl.allGather, comm, n);
    std::string whyNot;
    ours = SymmetricComm::create(cfg, std::ref(allGather), &whyNot);
    if (!ours) return reportProblem(report, rank, 5, "the symmetric path could not be set up: " + whyNot);
  }

  // Every rank learns whether any rank's NCCL refused the configuration (they must stop together: a
  // rank that went on would wait for the others in the next collective).
  // A refusal on only some ranks cannot be waited out in the check (phase 0): the ranks that accepted
  // are stuck in a collective that needs the others, and only the parent can stop them. So a rank that
  // finds the ranks split there (or the barrier not met) exits non-zero, and the parent kills the set.
  // Under capture (phase 1) nothing has run yet: the ranks stop together.
  auto refusedByAny = [&](size_t s, int phase, bool refusedHere, ncclResult_t why) {
    if (refusedHere && report->refusals[s][phase].fetch_add(1) == 0)
      std::snprintf(report->refusal, sizeof report->refusal, "%s", nccl.getErrorString(why));
    const bool met = barrier.wait();
    const int refusals = report->refusals[s][phase].load();
    if (!met || (phase == 0 && refusals > 0 && refusals < n)) {
      reportProblem(report, rank, 9,
                    tunePathLabel(job.ncclPath) + " at " + std::to_string((*job.sizes)[s]) + " bytes: " +
                        (met ? std::to_string(refusals) + " of " + std::to_string(n) + " ranks refused it (" +
                                   report->refusal + ")"
                             : std::string("the ranks did not meet after the call (one refused it, or hangs)")));
      std::fflush(nullptr);
      _exit(9);
    }
    return refusals > 0;
  };

  int step = 0;
  for (size_t s = 0; s < job.sizes->size(); ++s) {
    const uint64_t bytes = (*job.sizes)[s];
    const size_t count = bytes / format.bytes;
    ncclResult_t ncclResult = ncclSuccess;
    // One in-place all-reduce of `buffer` on `path`.
    auto call = [&](TunePath path) -> bool {
      if (isNcclPath(path)) {
        ncclResult = nccl.allReduce(buffer, buffer, count, type.nccl, ncclSum, comm, stream);
        return ncclResult == ncclSuccess;
      }
      const kernels::KernelChoice kernel(symAlgoOf(path) == SymAlgo::OneShot ? Algorithm::OneShot : Algorithm::TwoShot,
                                         symVariantOf(path));
      return ours->allReduce(buffer, buffer, count, type.ours, ReduceOp::Sum, kernel, stream) == kernels::Status::Ok;
    };
    // A configuration NCCL does not take ends this set here; stock NCCL or a kernel refusing is a failure.
    auto stopHere = [&]() {
      report->sizesDone = static_cast<int>(s);
      if (rank == 0)
        std::fprintf(stderr, "%s[rank 0] %s refused at %llu bytes (%s): not available from here on\n",
                     isatty(STDERR_FILENO) ? "\n" : "", tunePathLabel(job.ncclPath).c_str(),
                     static_cast<unsigned long long>(bytes), report->refusal);
      return 0;  // the process ends: NCCL's resources go with it, without a destroy that could wait
    };

    // Check each path once (exact integer sums); a path that computes wrong results is never chosen.
    for (TunePath path : paths) {
      const long long wrong =
          harness::countWrongAfterOneCall(rank, n, barrier, stream, buffer, count, format, [&] { return call(path); });
      if (isNcclPath(path) && refusedByAny(s, 0, wrong < 0, ncclResult)) {
        if (config) return stopHere();
        return reportProblem(report, rank, 6,
                             "stock NCCL refused " + std::to_string(bytes) + " bytes: " + report->refusal);
      }
      if (wrong < 0)
        return reportProblem(report, rank, 6, tunePathLabel(path) + " refused " + std::to_string(bytes) + " bytes");
      const auto column = static_cast<size_t>(tunePathIndex(path));
      if (wrong != 0) report->wrong[s][column] = wrong;  // any rank: the parent only needs "not zero"
      if (wrong != 0)
        std::fprintf(stderr, "[rank %d] %s gave %lld wrong elements at %llu bytes\n", rank, tunePathLabel(path).c_str(),
                     wrong, static_cast<unsigned long long>(bytes));
    }

    const int calls = callsForSize(bytes, o.callsPerBatch);
    std::vector<std::unique_ptr<harness::CapturedBatch>> batches;
    for (TunePath path : paths) {
      batches.push_back(std::make_unique<harness::CapturedBatch>(rank, stream, calls, [&] { return call(path); }));
      const bool accepted = batches.back()->allCallsAccepted();
      if (isNcclPath(path) && refusedByAny(s, 1, !accepted, ncclResult)) {
        if (config) return stopHere();
        return reportProblem(report, rank, 6,
                             "stock NCCL refused a call under graph capture: " + std::string(report->refusal));
      }
      if (!accepted) return reportProblem(report, rank, 6, tunePathLabel(path) + " refused a call under graph capture");
    }
    barrier.wait();
    for (auto& batch : batches) batch->replay();  // warm-up
    CUDA_CHECK(cudaStreamSynchronize(stream));

    harness::BatchTimer timer(rank, barrier, stream);
    std::vector<std::vector<double>> samples(paths.size());
    for (int round = 0; round < o.rounds; ++round)
      for (size_t k = 0; k < paths.size(); ++k) {
        if (rank == 0) showProgress(job, step, paths[k], bytes, round);
        ++step;
        const std::vector<double> us = timer.time(o.batchesPerRound, calls, [&] { batches[k]->replay(); });
        samples[k].insert(samples[k].end(), us.begin(), us.end());
      }
    if (rank == 0)
      for (size_t k = 0; k < paths.size(); ++k) {
        const auto column = static_cast<size_t>(tunePathIndex(paths[k]));
        std::sort(samples[k].begin(), samples[k].end());
        report->medianUs[s][column] = harness::medianOfSorted(samples[k]);
        report->minUs[s][column] = samples[k].front();
        report->maxUs[s][column] = samples[k].back();
      }
    batches.clear();  // graphs go before any ncclCommDestroy
    if (ours && ours->deviceStatus() != kernels::Status::Ok)
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
