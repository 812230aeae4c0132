// SPDX-License-Identifier: Apache-2.0
#include "tools/common/stats_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/printable_text.h"
#include "tools/common/json_text.h"

namespace symmem {

namespace {

using stats::ProcessSnapshot;
using stats::Route;
using stats::SlotSnapshot;

constexpr double kNsPerSecond = 1e9;
constexpr size_t kProgramWidth = 15;  // /proc/PID/comm's length

std::string hexComm(uint64_t comm) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(comm));
  return buf;
}

std::string fixed(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

// The program name for a column: printable, at most kProgramWidth bytes, not cut inside a character.
std::string programColumn(const std::string& program) {
  std::string p = printableText(withValidUtf8(program));
  if (p.size() <= kProgramWidth) return p;
  size_t end = kProgramWidth;
  while (end > 0 && (static_cast<unsigned char>(p[end]) & 0xc0) == 0x80) --end;
  return p.substr(0, end);
}

std::string rtrimmed(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// One line of the table: the columns at their widths.
std::string tableLine(const char* lead, const std::vector<std::string>& c) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s%6s  %5s  %-15s  %-14s  %-7s  %-21s  %9s  %11s  %-14s  %10s  %9s  %9s  %9s", lead,
                c[0].c_str(), c[1].c_str(), c[2].c_str(), c[3].c_str(), c[4].c_str(), c[5].c_str(), c[6].c_str(),
                c[7].c_str(), c[8].c_str(), c[9].c_str(), c[10].c_str(), c[11].c_str(), c[12].c_str());
  return rtrimmed(buf);
}

std::string sizesText(const RouteFigures& r) {
  if (r.smallest < 0) return "-";
  if (r.smallest == r.largest) return bucketLabel(r.smallest);
  return bucketLabel(r.smallest) + "-" + bucketLabel(r.largest);
}

// "75/25": the eager and captured shares in whole percent, adding to 100.
std::string modeShare(const RouteFigures& r) {
  if (r.calls == 0) return "-";
  const auto captured =
      static_cast<long long>(std::llround(100.0 * static_cast<double>(r.captured) / static_cast<double>(r.calls)));
  return std::to_string(100 - captured) + "/" + std::to_string(captured);
}

// The process, and whose it is: another user's process can be the one with a PID.
std::string processLabels(const ProcessSnapshot& p) {
  return "pid=\"" + std::to_string(p.pid) + "\",uid=\"" + std::to_string(p.uid) + "\",program=\"" +
         prometheusLabelValue(p.program) + "\"";
}

std::string identityLabels(const ProcessSnapshot& p, const SlotSnapshot& s) {
  return processLabels(p) + ",comm=\"" + hexComm(s.comm) + "\",rank=\"" + std::to_string(s.rank) + "\",nranks=\"" +
         std::to_string(s.nRanks) + "\"";
}

std::string bucketLeLabel(int b) {
  const uint64_t upper = stats::bucketUpperBytes(b);
  return upper == 0 ? "+Inf" : std::to_string(upper);
}

const char* stateKey(stats::SlotState s) {
  switch (s) {
    case stats::SlotState::Live:
      return "live";
    case stats::SlotState::Ended:
      return "ended";
    case stats::SlotState::Free:
      break;
  }
  return "free";
}

}  // namespace

std::string bucketLabel(int bucket) {
  if (bucket >= stats::kBuckets - 1) return ">1GiB";
  const uint64_t upper = stats::bucketUpperBytes(bucket < 0 ? 0 : bucket);
  if (upper < (uint64_t{1} << 10)) return std::to_string(upper) + "B";
  if (upper < (uint64_t{1} << 20)) return std::to_string(upper >> 10) + "KiB";
  if (upper < (uint64_t{1} << 30)) return std::to_string(upper >> 20) + "MiB";
  return std::to_string(upper >> 30) + "GiB";
}

const ProcessSnapshot* earlierProcess(const ProcessSnapshot& now, const std::vector<ProcessSnapshot>& before) {
  for (const ProcessSnapshot& b : before)
    if (b.pid == now.pid && b.startTicks == now.startTicks && b.takenNs < now.takenNs) return &b;
  return nullptr;
}

const SlotSnapshot* earlierComm(const SlotSnapshot& now, const ProcessSnapshot* before) {
  if (before == nullptr) return nullptr;
  for (const SlotSnapshot& s : before->comms)
    if (s.index == now.index && s.comm == now.comm && s.openedNs == now.openedNs) return &s;
  return nullptr;
}

std::vector<CommFigures> commFigures(const ProcessSnapshot& now, const ProcessSnapshot* before) {
  std::vector<CommFigures> out;
  for (const SlotSnapshot& s : now.comms) {
    CommFigures c;
    c.slot = &s;
    const SlotSnapshot* earlier = earlierComm(s, before);
    // Counts only grow while a slot holds one communicator; one that shrank is another's.
    for (int r = 0; earlier != nullptr && r < stats::kRoutes; ++r)
      if (earlier->routeCalls(static_cast<Route>(r)) > s.routeCalls(static_cast<Route>(r))) earlier = nullptr;
    c.overInterval = earlier != nullptr;
    if (c.overInterval) {
      c.rateSeconds = static_cast<double>(now.takenNs - before->takenNs) / kNsPerSecond;
    } else {
      const uint64_t end = s.state == stats::SlotState::Ended && s.closedNs != 0 ? s.closedNs : now.takenNs;
      c.rateSeconds = end > s.openedNs ? static_cast<double>(end - s.openedNs) / kNsPerSecond : 0.0;
    }
    for (int ri = 0; ri < stats::kRoutes; ++ri) {
      const Route route = static_cast<Route>(ri);
      RouteFigures f;
      f.route = route;
      // Sums that saturate (stats::addCounts): the counts are a file's, any values.
      for (int b = 0; b < stats::kBuckets; ++b) {
        const uint64_t e = s.calls[ri][b][stats::kEager], k = s.calls[ri][b][stats::kCaptured];
        f.eager = stats::addCounts(f.eager, e);
        f.captured = stats::addCounts(f.captured, k);
        if (e == 0 && k == 0) continue;
        if (f.smallest < 0) f.smallest = b;
        f.largest = b;
      }
      f.calls = stats::addCounts(f.eager, f.captured);
      if (f.calls == 0) continue;
      const uint64_t counted = f.calls - (earlier != nullptr ? earlier->routeCalls(route) : 0);
      if (c.rateSeconds > 0) f.perSecond = static_cast<double>(counted) / c.rateSeconds;
      if (stats::isSymmetric(route) && s.gpuSampling != 0) {
        for (int b = 0; b < stats::kBuckets; ++b) {
          const stats::KernelEntry& e = s.gpu.timed[ri][b];
          if (e.count == 0) continue;
          f.gpuMinNs = f.gpuTimed == 0 ? e.minNs : std::min(f.gpuMinNs, e.minNs);
          f.gpuMaxNs = std::max(f.gpuMaxNs, e.maxNs);
          f.gpuTimed = stats::addCounts(f.gpuTimed, e.count);
          f.gpuSumNs = stats::addCounts(f.gpuSumNs, e.sumNs);
        }
        f.gpuExecutions = stats::kindRuns(s.gpu, s.gpuSampling, ri);
        const uint64_t before = earlier != nullptr ? stats::kindRuns(earlier->gpu, earlier->gpuSampling, ri) : 0;
        if (f.gpuExecutions != 0 && c.rateSeconds > 0 && f.gpuExecutions >= before)
          f.gpuPerSecond = static_cast<double>(f.gpuExecutions - before) / c.rateSeconds;
      }
      c.routes.push_back(f);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string statsTableHeader() {
  return tableLine("#", {"pid", "uid", "program", "comm", "rank", "route", "calls/s", "calls", "sizes", "eager/capt",
                         "gpu runs/s", "gpu mean", "gpu max"}) +
         "\n" + tableLine("#", {"", "", "", "", "", "", "1/s", "", "bytes", "%", "1/s", "us", "us"}) + "\n";
}

std::vector<std::string> statsTableRows(const std::vector<ProcessSnapshot>& now,
                                        const std::vector<ProcessSnapshot>& before) {
  std::vector<std::string> rows;
  for (const ProcessSnapshot& p : now) {
    for (const CommFigures& c : commFigures(p, earlierProcess(p, before))) {
      const SlotSnapshot& s = *c.slot;
      const bool ended = s.state == stats::SlotState::Ended;
      std::vector<std::string> cols = {std::to_string(p.pid),
                                       std::to_string(p.uid),
                                       programColumn(p.program),
                                       hexComm(s.comm),
                                       std::to_string(s.rank) + "/" + std::to_string(s.nRanks),
                                       "-",
                                       ended ? "ended" : "-",
                                       "0",
                                       "-",
                                       "-",
                                       "-",
                                       "-",
                                       "-"};
      if (c.routes.empty()) rows.push_back(tableLine(" ", cols));
      for (const RouteFigures& r : c.routes) {
        cols[5] = std::string(stats::routeName(r.route));
        if (!ended) cols[6] = r.perSecond ? fixed(*r.perSecond, 1) : "-";
        cols[7] = std::to_string(r.calls);
        cols[8] = sizesText(r);
        cols[9] = modeShare(r);
        if (!ended) cols[10] = r.gpuPerSecond ? fixed(*r.gpuPerSecond, 1) : "-";
        const bool timed = r.gpuTimed > 0;
        cols[11] = timed ? fixed(static_cast<double>(r.gpuSumNs) / static_cast<double>(r.gpuTimed) / 1e3, 1) : "-";
        cols[12] = timed ? fixed(static_cast<double>(r.gpuMaxNs) / 1e3, 1) : "-";
        rows.push_back(tableLine(" ", cols));
      }
    }
  }
  return rows;
}

std::vector<StatsNote> statsNotes(const std::vector<ProcessSnapshot>& now) {
  std::vector<StatsNote> notes;
  for (const ProcessSnapshot& p : now) {
    const std::string process = std::to_string(p.pid) + ":" + std::to_string(p.startTicks);
    for (const SlotSnapshot& s : p.comms) {
      if (s.symmetric) continue;
      const std::string why = s.path.empty() ? "not set up yet" : printableText(withValidUtf8(s.path));
      notes.push_back({"path:" + process + ":" + std::to_string(s.index) + ":" + std::to_string(s.openedNs) + ":" + why,
                       "pid " + std::to_string(p.pid) + " comm " + hexComm(s.comm) + " rank " + std::to_string(s.rank) +
                           "/" + std::to_string(s.nRanks) + ": symmetric path off: " + why});
    }
    if (p.untrackedComms > 0) {
      const std::string n = std::to_string(p.untrackedComms);
      notes.push_back({"untracked:" + process + ":" + n,
                       "pid " + std::to_string(p.pid) + ": " + n + " communicator" +
                           (p.untrackedComms == 1 ? "" : "s") + " not shown: every one of its " +
                           std::to_string(stats::kSlots) + " slots was live when they were set up"});
    }
  }
  return notes;
}

std::string statsTable(const std::vector<ProcessSnapshot>& now, const std::vector<ProcessSnapshot>& before) {
  std::string out = statsTableHeader();
  for (const std::string& row : statsTableRows(now, before)) out += row + "\n";
  for (const StatsNote& n : statsNotes(now)) out += n.text + "\n";
  return out;
}

std::string statsJson(const std::vector<ProcessSnapshot>& now, const std::vector<ProcessSnapshot>& before,
                      const std::vector<std::string>& notes) {
  JsonWriter j;
  j.beginObject().key("layout_version").value(static_cast<uint64_t>(stats::kLayoutVersion));
  j.key("processes").beginArray();
  for (const ProcessSnapshot& p : now) {
    j.beginObject();
    j.key("pid").value(static_cast<int64_t>(p.pid));
    j.key("program").value(p.program);
    j.key("uid").value(static_cast<uint64_t>(p.uid));
    j.key("start_ticks").value(p.startTicks);
    j.key("plugin_version").value(p.pluginVersion);
    j.key("file").value(p.file);
    j.key("created_ns").value(p.createdNs);
    j.key("taken_ns").value(p.takenNs);
    j.key("untracked_communicators").value(p.untrackedComms);
    j.key("communicators").beginArray();
    for (const CommFigures& c : commFigures(p, earlierProcess(p, before))) {
      const SlotSnapshot& s = *c.slot;
      j.beginObject();
      j.key("slot").value(s.index);
      j.key("comm").value(hexComm(s.comm));
      j.key("state").value(stateKey(s.state));
      j.key("rank").value(s.rank);
      j.key("nranks").value(s.nRanks);
      j.key("device").value(s.device);
      j.key("opened_ns").value(s.openedNs);
      j.key("closed_ns");
      if (s.state == stats::SlotState::Ended) {
        j.value(s.closedNs);
      } else {
        j.null();
      }
      j.key("symmetric").value(s.symmetric);
      j.key("gpu_sampling").value(static_cast<uint64_t>(s.gpuSampling));
      j.key("gpu_runs").beginObject();
      j.key("one_shot").value(s.gpu.runs[0]).key("two_shot").value(s.gpu.runs[1]);
      j.endObject();
      j.key("path").value(s.path);
      j.key("calls").value(s.totalCalls());
      j.key("rates_over_s").value(c.rateSeconds, 3);
      j.key("rates_since").value(c.overInterval ? "previous_snapshot" : "opened");
      j.key("routes").beginObject();
      for (const RouteFigures& r : c.routes) {
        const int ri = static_cast<int>(r.route);
        j.key(stats::routeKey(r.route)).beginObject();
        j.key("calls").value(r.calls).key("eager").value(r.eager).key("captured").value(r.captured);
        j.key("calls_per_s").value(r.perSecond, 3);
        j.key("buckets").beginArray();
        for (int b = 0; b < stats::kBuckets; ++b) {
          const uint64_t e = s.calls[ri][b][stats::kEager], k = s.calls[ri][b][stats::kCaptured];
          if (e + k == 0) continue;
          j.beginObject().key("bucket").value(b).key("le_bytes");
          if (const uint64_t upper = stats::bucketUpperBytes(b); upper != 0) {
            j.value(upper);
          } else {
            j.null();
          }
          j.key("eager").value(e).key("captured").value(k).endObject();
        }
        j.endArray().endObject();
      }
      j.endObject();
      j.key("kernels").beginObject();
      for (const RouteFigures& r : c.routes) {
        if (r.gpuExecutions == 0 && r.gpuTimed == 0) continue;
        const int ri = static_cast<int>(r.route);
        j.key(stats::routeKey(r.route)).beginObject();
        j.key("executions").value(r.gpuExecutions).key("executions_per_s").value(r.gpuPerSecond, 3);
        j.key("timed").value(r.gpuTimed).key("sum_ns").value(r.gpuSumNs);
        j.key("min_ns").value(r.gpuMinNs).key("max_ns").value(r.gpuMaxNs);
        j.key("buckets").beginArray();
        for (int b = 0; b < stats::kBuckets; ++b) {
          const stats::KernelEntry& e = s.gpu.timed[ri][b];
          if (e.count == 0) continue;
          j.beginObject().key("bucket").value(b).key("le_bytes");
          if (const uint64_t upper = stats::bucketUpperBytes(b); upper != 0) {
            j.value(upper);
          } else {
            j.null();
          }
          j.key("count").value(e.count).key("sum_ns").value(e.sumNs);
          j.key("min_ns").value(e.minNs).key("max_ns").value(e.maxNs).endObject();
        }
        j.endArray().endObject();
      }
      j.endObject();
      j.endObject();
    }
    j.endArray();
    j.endObject();
  }
  j.endArray();
  j.key("notes").beginArray();
  for (const std::string& n : notes) j.value(n);
  j.endArray();
  j.endObject();
  return j.text();
}

std::string prometheusLabelValue(const std::string& value) {
  std::string out;
  for (char c : withValidUtf8(value)) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string secondsFromNs(uint64_t ns) {
  std::string out = std::to_string(ns / 1000000000u);
  uint64_t fraction = ns % 1000000000u;
  if (fraction == 0) return out;
  char digits[16];
  std::snprintf(digits, sizeof digits, "%09llu", static_cast<unsigned long long>(fraction));
  std::string f = digits;
  while (f.back() == '0') f.pop_back();
  return out + "." + f;
}

std::string statsPrometheus(const std::vector<ProcessSnapshot>& now) {
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  family("nccl_symmem_calls_total", "counter",
         "All-reduces the nccl-symmem plugin routed, by communicator, route, size bucket (upper bound in bytes) "
         "and mode (eager or captured in a CUDA graph).");
  for (const ProcessSnapshot& p : now) {
    for (const SlotSnapshot& s : p.comms) {
      const std::string id = identityLabels(p, s);
      for (int r = 0; r < stats::kRoutes; ++r) {
        for (int b = 0; b < stats::kBuckets; ++b) {
          for (int m = 0; m < stats::kModes; ++m) {
            if (s.calls[r][b][m] == 0) continue;
            out += "nccl_symmem_calls_total{" + id + ",route=\"" + std::string(stats::routeKey(static_cast<Route>(r))) +
                   "\",bucket_le_bytes=\"" + bucketLeLabel(b) + "\",mode=\"" +
                   (m == stats::kCaptured ? "captured" : "eager") + "\"} " + std::to_string(s.calls[r][b][m]) + "\n";
          }
        }
      }
    }
  }
  struct KernelFamily {
    const char* name;
    const char* type;
    const char* help;
    std::string (*value)(const stats::KernelEntry&);
  };
  const KernelFamily kernels[] = {
      {"nccl_symmem_kernel_timed_executions_total", "counter",
       "Executions of a symmetric kernel the GPU timed (one call in 64 of each kernel and size, the first always; "
       "all with SYMMEM_STATS_GPU=every), by communicator, kernel (route) and size bucket.",
       [](const stats::KernelEntry& e) { return std::to_string(e.count); }},
      {"nccl_symmem_kernel_seconds_total", "counter",
       "GPU time of those executions: block 0, from the end of its wait for the previous kernel to its last "
       "store (%globaltimer).",
       [](const stats::KernelEntry& e) { return secondsFromNs(e.sumNs); }},
      {"nccl_symmem_kernel_max_seconds", "gauge", "The longest of those executions.",
       [](const stats::KernelEntry& e) { return secondsFromNs(e.maxNs); }},
      {"nccl_symmem_kernel_min_seconds", "gauge", "The shortest of those executions.",
       [](const stats::KernelEntry& e) { return secondsFromNs(e.minNs); }},
  };
  for (const KernelFamily& k : kernels) {
    family(k.name, k.type, k.help);
    for (const ProcessSnapshot& p : now) {
      for (const SlotSnapshot& s : p.comms) {
        const std::string id = identityLabels(p, s);
        for (int kind = 0; kind < stats::kKernelKinds; ++kind) {
          for (int b = 0; b < stats::kBuckets; ++b) {
            const stats::KernelEntry& e = s.gpu.timed[kind][b];
            if (e.count == 0) continue;
            out += std::string(k.name) + "{" + id + ",route=\"" +
                   std::string(stats::routeKey(static_cast<Route>(kind))) + "\",bucket_le_bytes=\"" + bucketLeLabel(b) +
                   "\"} " + k.value(e) + "\n";
          }
        }
      }
    }
  }
  family("nccl_symmem_gpu_executions_total", "counter",
         "Executions of the symmetric kernels of each algorithm the GPU counted, graph replays included, by "
         "communicator and algorithm.");
  for (const ProcessSnapshot& p : now) {
    for (const SlotSnapshot& s : p.comms) {
      if (s.gpuSampling == 0) continue;
      const std::string id = identityLabels(p, s);
      for (int a = 0; a < stats::kAlgorithms; ++a)
        out += "nccl_symmem_gpu_executions_total{" + id + ",algorithm=\"" + (a == 0 ? "one_shot" : "two_shot") +
               "\"} " + std::to_string(s.gpu.runs[a]) + "\n";
    }
  }
  family("nccl_symmem_untracked_communicators", "gauge",
         "Communicators of the process that found every statistics slot live, so not counted here.");
  for (const ProcessSnapshot& p : now) {
    if (p.untrackedComms == 0) continue;
    out += "nccl_symmem_untracked_communicators{" + processLabels(p) + "} " + std::to_string(p.untrackedComms) + "\n";
  }
  return out;
}

}  // namespace symmem
