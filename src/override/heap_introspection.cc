#include "override/heap_introspection.h"

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <exception>
#include <string>

#include "host/heap.h"
#include "memarena/host.h"
#include "memarena/stats.h"
#include "override/runtime.h"
#include "platform/os.h"

namespace memarena::dropin {
namespace {

int Saturated(std::size_t value) noexcept {
  return value > static_cast<std::size_t>(INT_MAX) ? INT_MAX : static_cast<int>(value);
}

}  // namespace

struct mallinfo2 MallInfo2() noexcept {
  const AllocatorStats stats = host::Stats();
  struct mallinfo2 info = {};
  info.arena = stats.bytes_held;
  info.uordblks = stats.bytes_in_use;
  // Other threads allocate while the figures are read: never a wrapped difference.
  info.fordblks = stats.bytes_held > stats.bytes_in_use ? stats.bytes_held - stats.bytes_in_use : 0;
  info.fsmblks = stats.bytes_in_thread_caches + stats.bytes_in_central_lists;
  info.keepcost = stats.bytes_releasable;
  return info;
}

struct mallinfo MallInfo() noexcept {
  const struct mallinfo2 wide = MallInfo2();
  struct mallinfo info = {};
  info.arena = Saturated(wide.arena);
  info.uordblks = Saturated(wide.uordblks);
  info.fordblks = Saturated(wide.fordblks);
  info.fsmblks = Saturated(wide.fsmblks);
  info.keepcost = Saturated(wide.keepcost);
  return info;
}

std::string StatsText() {
  Allocator& host = HostAllocator();
  return StatsDetailOn() ? FormatStats(host.GetStats(), host.name(), HostSizeClassStats())
                         : FormatStats(host.GetStats(), host.name());
}

void MallocStats() noexcept {
  try {
    const std::string text = StatsText();
    platform::WriteStderr(text.data(), text.size());
  } catch (const std::exception& e) {
    const std::string text = fmt::format("memarena: malloc_stats failed: {}\n", e.what());
    platform::WriteStderr(text.data(), text.size());
  }
}

int MallocInfo(int options, std::FILE* stream) noexcept {
  if (options != 0 || stream == nullptr) {
    errno = EINVAL;
    return -1;
  }
  const AllocatorStats s = host::Stats();
  // Into a stack buffer: no allocation between the snapshot and the document, so the
  // figures are the heap's as it was when asked (and a heap out of memory still answers).
  char xml[1024];
  const auto written = fmt::format_to_n(
      xml, sizeof xml - 1,
      "<malloc version=\"1\" allocator=\"memarena\">\n"
      "<total type=\"in_use\" size=\"{}\"/>\n"
      "<total type=\"requested\" size=\"{}\"/>\n"
      "<total type=\"thread_caches\" size=\"{}\"/>\n"
      "<total type=\"central_lists\" size=\"{}\"/>\n"
      "<total type=\"releasable\" size=\"{}\"/>\n"
      "<total type=\"metadata\" size=\"{}\"/>\n"
      "<system type=\"current\" size=\"{}\"/>\n"
      "<system type=\"max\" size=\"{}\"/>\n"
      "<system type=\"limit\" size=\"{}\"/>\n"
      "<aspace type=\"total\" size=\"{}\"/>\n"
      "</malloc>\n",
      s.bytes_in_use, s.bytes_requested, s.bytes_in_thread_caches, s.bytes_in_central_lists,
      s.bytes_releasable, s.bytes_metadata, s.bytes_held, s.peak_bytes_held, s.limit_bytes,
      s.bytes_held);
  *written.out = '\0';  // 10 rows of at most 20 digits each fit: never cut
  if (std::fputs(xml, stream) == EOF) return -1;
  return 0;
}

}  // namespace memarena::dropin
