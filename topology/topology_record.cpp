// SPDX-License-Identifier: Apache-2.0
#include "topology/topology_record.h"

#include <charconv>
#include <optional>
#include <vector>

#include "topology/matrix_tokens.h"

namespace symmem {

namespace {

constexpr std::string_view kFormat = "symmem-topology-record 1";

class FieldWriter {
 public:
  void text(std::string_view s) {
    out_ += std::to_string(s.size());
    out_ += ':';
    out_ += s;
  }
  void number(long long v) { text(std::to_string(v)); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes) : rest_(bytes) {}

  std::optional<std::string_view> text() {
    const auto colon = rest_.find(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    size_t length = 0;
    const auto [end, ec] = std::from_chars(rest_.data(), rest_.data() + colon, length);
    if (ec != std::errc() || end != rest_.data() + colon || length > rest_.size() - colon - 1) return std::nullopt;
    const std::string_view field = rest_.substr(colon + 1, length);
    rest_.remove_prefix(colon + 1 + length);
    return field;
  }
  std::optional<long long> number(long long min, long long max) {
    const auto field = text();
    if (!field) return std::nullopt;
    long long v = 0;
    const auto [end, ec] = std::from_chars(field->data(), field->data() + field->size(), v);
    if (ec != std::errc() || end != field->data() + field->size() || v < min || v > max) return std::nullopt;
    return v;
  }
  bool atEnd() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

constexpr long long kMaxInt = 1 << 30;

}  // namespace

std::string encodeTopology(const Topology& topo) {
  FieldWriter w;
  w.text(kFormat);
  w.text(topo.source());
  w.number(static_cast<long long>(topo.notes().size()));
  for (const std::string& note : topo.notes()) w.text(note);
  w.number(topo.gpuCount());
  for (const GpuInfo& g : topo.gpus()) {
    w.number(g.index);
    w.text(g.pciBusId);
    w.text(g.name);
    w.number(g.capability.major);
    w.number(g.capability.minor);
    w.number(g.numaNode ? *g.numaNode : -1);
    w.text(g.cpuAffinity);
  }
  for (int a = 0; a < topo.gpuCount(); ++a)
    for (int b = 0; b < topo.gpuCount(); ++b) {
      if (a == b) continue;
      const PairLink& l = topo.link(a, b);
      w.number(static_cast<int>(l.path));
      w.number(l.nvlinks);
      w.number(static_cast<int>(l.p2pRead));
      w.number(static_cast<int>(l.p2pWrite));
    }
  return w.take();
}

Expected<Topology> decodeTopology(std::string_view bytes) {
  using Result = Expected<Topology>;
  const auto broken = [](const std::string& what) { return Result::failure("topology record: " + what); };
  FieldReader r(bytes);
  if (r.text() != kFormat) return broken("not a topology record");
  const auto source = r.text();
  const auto noteCount = r.number(0, kMaxInt);
  if (!source || !noteCount) return broken("bad header");
  std::vector<std::string> notes;
  for (long long i = 0; i < *noteCount; ++i) {
    const auto note = r.text();
    if (!note) return broken("bad notes");
    notes.emplace_back(*note);
  }
  const auto gpuCount = r.number(0, kMaxMatrixColumns);
  if (!gpuCount) return broken("bad GPU count");
  std::vector<GpuInfo> gpus(static_cast<size_t>(*gpuCount));
  for (GpuInfo& g : gpus) {
    const auto index = r.number(-kMaxInt, kMaxInt);
    const auto busId = r.text();
    const auto name = r.text();
    const auto major = r.number(0, kMaxInt);
    const auto minor = r.number(0, kMaxInt);
    const auto numa = r.number(-1, kMaxInt);
    const auto cpus = r.text();
    if (!index || !busId || !name || !major || !minor || !numa || !cpus) return broken("bad GPU");
    g.index = static_cast<int>(*index);
    g.pciBusId = std::string(*busId);
    g.name = std::string(*name);
    g.capability = {static_cast<int>(*major), static_cast<int>(*minor)};
    if (*numa >= 0) g.numaNode = static_cast<int>(*numa);
    g.cpuAffinity = std::string(*cpus);
  }
  Topology topo(std::move(gpus));
  topo.setSource(std::string(*source));
  for (std::string& note : notes) topo.addNote(std::move(note));
  const int n = topo.gpuCount();
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const auto path = r.number(0, static_cast<int>(PathKind::Unknown));
      const auto nvlinks = r.number(0, kMaxInt);
      const auto read = r.number(0, static_cast<int>(Support::No));
      const auto write = r.number(0, static_cast<int>(Support::No));
      if (!path || !nvlinks || !read || !write) return broken("bad pair list");
      // setPath writes both directions: the second direction repeats the first, as encoded.
      topo.setPath(a, b, static_cast<PathKind>(*path), static_cast<int>(*nvlinks));
      topo.setP2p(a, b, static_cast<Support>(*read), static_cast<Support>(*write));
    }
  if (!r.atEnd()) return broken("trailing bytes");
  return topo;
}

}  // namespace symmem
