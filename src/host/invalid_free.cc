// The on_invalid_free policy and the message of a double, interior or foreign free.
#include "host/invalid_free.h"

#include <fmt/format.h>

#include <cstdlib>

#include "platform/os.h"

namespace memarena::host {
namespace {

constinit std::atomic<InvalidFreeAction> g_action{InvalidFreeAction::kAbort};
constinit std::atomic<std::uint64_t> g_invalid_frees{0};

const char* Kind(Misuse misuse) noexcept {
  return misuse == Misuse::kDoubleFree ? "double free" : "invalid free";
}

const char* Detail(Misuse misuse) noexcept {
  switch (misuse) {
    case Misuse::kDoubleFree:
      return "the block is already free";
    case Misuse::kInteriorFree:
      return "inside a live block, not at its start";
    case Misuse::kForeignFree:
      return "not a block of the memarena heap";
  }
  return "";
}

}  // namespace

void InitFreeKey() noexcept {
  std::uintptr_t expected = 0;
  g_free_key.compare_exchange_strong(expected, platform::RandomWord(), std::memory_order_relaxed);
}

void SetInvalidFreeAction(InvalidFreeAction action) noexcept {
  g_action.store(action, std::memory_order_relaxed);
}

std::uint64_t InvalidFrees() noexcept { return g_invalid_frees.load(std::memory_order_relaxed); }

void ReportInvalidFree(const void* ptr, Misuse misuse, const char* operation,
                       std::size_t cls) noexcept {
  g_invalid_frees.fetch_add(1, std::memory_order_relaxed);
  const InvalidFreeAction action = g_action.load(std::memory_order_relaxed);
  if (action == InvalidFreeAction::kIgnore) return;
  // A stack buffer: formatting must not allocate inside free.
  char line[320];
  const char* then = action == InvalidFreeAction::kAbort
                         ? "aborting (MEMARENA_CONF=on_invalid_free:report carries on)"
                         : "the block is left alone";
  const auto result =
      cls != 0
          ? fmt::format_to_n(line, sizeof line,
                             "memarena: {} of {} in {}(): {} (size class {}: {} B objects); {}\n",
                             Kind(misuse), ptr, operation, Detail(misuse), cls, ClassSize(cls),
                             then)
          : fmt::format_to_n(line, sizeof line,
                             "memarena: {} of {} in {}(): {} (no size class: a large block "
                             "or none); {}\n",
                             Kind(misuse), ptr, operation, Detail(misuse), then);
  const std::size_t size = result.size < sizeof line ? result.size : sizeof line;
  line[size - 1] = '\n';
  platform::WriteStderr(line, size);
  if (action == InvalidFreeAction::kAbort) std::abort();
}

}  // namespace memarena::host
