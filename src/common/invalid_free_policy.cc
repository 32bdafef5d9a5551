// The on_invalid_free setting every allocator follows, and the report of a foreign pointer.
#include "common/invalid_free_policy.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>

#include "memarena/allocator.h"
#include "platform/os.h"

namespace memarena {
namespace {

constexpr int kUnset = -1;
constinit std::atomic<int> g_action{kUnset};
constinit std::atomic<std::uint64_t> g_invalid_frees{0};

InvalidFreeAction ActionFromEnvironment() noexcept {
  try {
    return HostConfig::FromEnvironment().on_invalid_free;
  } catch (...) {
    return HostConfig{}.on_invalid_free;  // a bad MEMARENA_CONF is reported where it is applied
  }
}

}  // namespace

void SetInvalidFreeAction(InvalidFreeAction action) noexcept {
  g_action.store(static_cast<int>(action), std::memory_order_relaxed);
}

InvalidFreeAction GetInvalidFreeAction() noexcept {
  const int action = g_action.load(std::memory_order_relaxed);
  return action == kUnset ? HostConfig{}.on_invalid_free : static_cast<InvalidFreeAction>(action);
}

std::uint64_t InvalidFreeCount() noexcept {
  return g_invalid_frees.load(std::memory_order_relaxed);
}

namespace common {

InvalidFreeAction CountInvalidFree(bool read_environment) noexcept {
  g_invalid_frees.fetch_add(1, std::memory_order_relaxed);
  if (read_environment && g_action.load(std::memory_order_relaxed) == kUnset) {
    int expected = kUnset;
    g_action.compare_exchange_strong(expected, static_cast<int>(ActionFromEnvironment()),
                                     std::memory_order_relaxed);
  }
  return GetInvalidFreeAction();
}

const char* InvalidFreeOutcome(InvalidFreeAction action) noexcept {
  return action == InvalidFreeAction::kAbort
             ? "aborting (MEMARENA_CONF=on_invalid_free:report carries on)"
             : "the block is left alone";
}

void ReportForeignPointer(std::string_view allocator, const void* ptr,
                          const char* operation) noexcept {
  const InvalidFreeAction action = CountInvalidFree(/*read_environment=*/true);
  if (action == InvalidFreeAction::kIgnore) return;
  char line[320];  // a stack buffer: Deallocate must not allocate
  const auto result = fmt::format_to_n(
      line, sizeof line - 1,
      "memarena: invalid free of {} in {}.{}(): not a live block of this allocator "
      "(foreign, inside a block, or already freed); {}\n",
      ptr, allocator, operation, InvalidFreeOutcome(action));
  const std::size_t size = result.size < sizeof line - 1 ? result.size : sizeof line - 1;
  line[size - 1] = '\n';
  platform::WriteStderr(line, size);
  if (action == InvalidFreeAction::kAbort) std::abort();
}

}  // namespace common
}  // namespace memarena
