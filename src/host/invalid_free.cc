// The on_invalid_free policy and the message of a double, interior or foreign free.
#include "host/invalid_free.h"

#include <fmt/format.h>

#include <cstdlib>

#include "common/invalid_free_policy.h"
#include "platform/os.h"

namespace memarena::host {
namespace {

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

void ReportInvalidFree(const void* ptr, Misuse misuse, const char* operation,
                       std::size_t cls) noexcept {
  // No MEMARENA_CONF parsing here: free may hold the heap lock, and the drop-in and
  // HostAllocator() set the policy from MEMARENA_CONF when they start.
  const InvalidFreeAction action = common::CountInvalidFree(/*read_environment=*/false);
  if (action == InvalidFreeAction::kIgnore) return;
  // A stack buffer: formatting must not allocate inside free.
  char line[320];
  const char* then = common::InvalidFreeOutcome(action);
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
