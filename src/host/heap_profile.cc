// memarena::WriteHeapProfile and the sampler's public controls: live samples grouped by
// stack, scaled to estimated true bytes, in gperftools' heap-profile text format.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>

#include "common/observability_config.h"
#include "common/replace_file.h"
#include "host/heap_sampler.h"
#include "memarena/observability.h"
#include "platform/os.h"
#include "platform/stack.h"
#include "platform/symbolize.h"

namespace memarena {
namespace {

struct StackTotals {
  double objects = 0.0;
  double bytes = 0.0;
};

using StackKey = std::vector<void*>;

std::map<StackKey, StackTotals> GroupByStack(const std::vector<host::sampler::Sample>& samples,
                                             std::size_t mean) {
  std::map<StackKey, StackTotals> stacks;
  for (const host::sampler::Sample& s : samples) {
    StackTotals& totals = stacks[StackKey(s.frames, s.frames + s.depth)];
    totals.objects += host::sampler::EstimatedObjects(s.bytes, mean);
    totals.bytes += host::sampler::EstimatedBytes(s.bytes, mean);
  }
  return stacks;
}

// gperftools' bucket line: "in-use objects: in-use bytes [allocated objects: bytes] @".
// Only live blocks are kept, so both pairs carry the live estimate.
std::string BucketLine(const StackTotals& t) {
  const auto objects = static_cast<long long>(std::llround(std::max(t.objects, 1.0)));
  const auto bytes = static_cast<long long>(std::llround(t.bytes));
  return fmt::format("{:6d}: {:8d} [{:6d}: {:8d}] @", objects, bytes, objects, bytes);
}

std::string FormatProfile(const std::map<StackKey, StackTotals>& stacks) {
  StackTotals total;
  std::vector<std::pair<const StackKey*, StackTotals>> ordered;
  for (const auto& [stack, totals] : stacks) {
    total.objects += totals.objects;
    total.bytes += totals.bytes;
    ordered.emplace_back(&stack, totals);
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
  std::string out = "heap profile: " + BucketLine(total) + " heapprofile\n";
  for (const auto& [stack, totals] : ordered) {
    out += BucketLine(totals);
    // Frames are return addresses; pprof moves every frame but the first back into its
    // call instruction, so the first is moved here (else it may land in inlined code that
    // follows the call).
    for (std::size_t i = 0; i < stack->size(); ++i) {
      out += fmt::format(" {:#x}", reinterpret_cast<std::uintptr_t>((*stack)[i]) - (i == 0 ? 1 : 0));
    }
    out += '\n';
  }
  out += "\nMAPPED_LIBRARIES:\n";
  return out;
}

}  // namespace

void SetHeapSampleInterval(std::size_t bytes) { host::sampler::SetMeanInterval(bytes); }

std::size_t HeapSampleInterval() noexcept { return host::sampler::MeanInterval(); }

HeapProfileTotals SampledHeapTotals() {
  const std::size_t mean = host::sampler::MeanInterval();
  HeapProfileTotals totals;
  for (const host::sampler::Sample& s : host::sampler::Snapshot()) {
    ++totals.samples;
    totals.estimated_objects += host::sampler::EstimatedObjects(s.bytes, mean);
    totals.estimated_bytes += host::sampler::EstimatedBytes(s.bytes, mean);
  }
  return totals;
}

std::string SymbolizeModuleOffset(const std::string& module, std::uint64_t file_offset) {
  return platform::SymbolizeFileOffset(module, file_offset);
}

void WriteHeapProfile(const std::string& path) {
  const std::size_t mean = host::sampler::MeanInterval();
  if (mean == 0) {
    throw std::runtime_error(fmt::format(
        "WriteHeapProfile('{}'): heap sampling is off; turn it on first with "
        "memarena::SetHeapSampleInterval or MEMARENA_CONF=heap_profile:PATH", path));
  }
  const std::string expanded = common::ExpandPidPattern(path, static_cast<int>(platform::ProcessId()));
  const std::string text = FormatProfile(GroupByStack(host::sampler::Snapshot(), mean));
  common::ReplaceFileContents(expanded, "WriteHeapProfile", [&text](int fd) {
    // The maps let pprof turn addresses of a position-independent program into symbols.
    return platform::WriteAll(fd, text.data(), text.size()) &&
           platform::CopyFileTo("/proc/self/maps", fd);
  });
}

}  // namespace memarena
