// SPDX-License-Identifier: Apache-2.0
#pragma once
// Measured all-reduce times for symmem-stat --estimate, read from either CSV a user has:
//   - symmem-tune --csv FILE (tools/tune/csv.h):
//       ranks,link,cc,bytes,path,median_us,min_us,max_us,chosen
//     one world per `ranks`; every path's median at each size ("nccl" is stock NCCL, "oneshot-push" ...
//     "twoshot-halves" the kernels, "nccl-ring-ll" ... NCCL forced to a configuration), and the path the
//     written table chose at each size;
//   - nccl-tests-configs/run.sh's results.csv (nccl-tests-configs/compare.py):
//       case,size_bytes,dtype,redop,stock_oop_us,plugin_oop_us,oop_ratio,stock_ip_us,plugin_ip_us,ip_ratio
//     stock NCCL ("nccl") against whatever the plugin ran ("plugin") for one case, out of place (as
//     vLLM's and SGLang's pynccl call it), the mean over the case's types and operations at each size; the
//     world size is not recorded there.
// The file is read bounded (core/bounded_file.h): a path can name a FIFO or /dev/zero.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace symmem {

inline constexpr size_t kLatencyCsvMaxBytes = size_t{16} << 20;

struct LatencyWorld {
  int ranks = 0;                                               // 0: not recorded (nccl-tests)
  std::string link, cc;                                        // "" when not recorded
  std::map<std::string, std::map<uint64_t, double>> medianUs;  // path -> bytes -> microseconds per call
  std::map<uint64_t, std::string> chosen;                      // bytes -> the path the table chose
};

struct LatencyTable {
  enum class Source { TuneCsv, NcclTestsCsv };
  Source source = Source::TuneCsv;
  std::string file;
  std::string caseName;  // nccl-tests: the case read
  std::vector<LatencyWorld> worlds;

  // The world of `ranks` ranks (for nccl-tests' file, its one world whatever `ranks`), or null.
  const LatencyWorld* world(int ranks) const;
  // "2, 4, 8": the world sizes recorded.
  std::string rankList() const;
  // "symmem-tune CSV FILE" or "nccl-tests results FILE (case ar-latency)".
  std::string describe() const;
};

struct LatencyTableRead {
  LatencyTable table;
  std::string error;  // "" when read
  bool ok() const { return error.empty(); }
};

// `text` is the file's content, `file` its name for messages; `caseName` picks a case of an
// nccl-tests results file ("" : its only case; an error naming the cases when it holds several).
LatencyTableRead parseLatencyTable(const std::string& text, const std::string& file, const std::string& caseName);
LatencyTableRead readLatencyTable(const std::string& path, const std::string& caseName);

// The time of `path` at `bytes` in `world`: measured there, or interpolated on a log-log scale between
// the nearest sizes measured below and above; nullopt outside the measured sizes or for a path
// without numbers.
std::optional<double> latencyAt(const LatencyWorld& world, const std::string& path, uint64_t bytes);

}  // namespace symmem
