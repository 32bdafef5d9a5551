// memarena::HostAllocator(): the host heap behind the Allocator interface, plus the public
// SetCeiling/Ceiling/ReleaseUnusedSpans of memarena/host.h.
#include <fmt/format.h>

#include <exception>
#include <new>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "common/fork_safe_once.h"
#include "common/format.h"
#include "common/inline_out_of_memory.h"
#include "common/memarena_conf.h"
#include "common/release_registry.h"
#include "host/heap.h"
#include "host/host_api.h"
#include "memarena/host.h"
#include "platform/os.h"
#include "platform/stack.h"

namespace memarena {
namespace {

constexpr std::string_view kHostName = "host";
constexpr std::size_t kReasonBytes = 256;
constexpr std::string_view kFailureAdvice =
    "Raise the ceiling (MEMARENA_CONF=ceiling:SIZE, or memarena::SetCeiling), free memory, or "
    "call memarena::ReleaseUnusedSpans(); other threads' caches keep what they claimed of "
    "thread_cache_bytes (all caches together) until their next slow path.";

constexpr std::string_view kTooLargeAdvice =
    "Check how the size and alignment were computed: no ceiling, release or free makes room "
    "for such a block.";

// Why the heap refused `bytes` at `alignment`, into `out` without the heap (operator new's
// diagnostic is built at the ceiling, where a std::string may not fit).
std::string_view WriteFailureReason(std::span<char> out, std::size_t bytes, std::size_t alignment,
                                    const AllocatorStats& stats) noexcept {
  const auto written =
      host::NoBlockCanSpan(bytes, alignment)
          ? fmt::format_to_n(out.data(), out.size(),
                             "no block of that size and alignment fits in the {} of addresses "
                             "the heap maps (48 bits), so no memory was asked of the OS",
                             common::ByteCount{host::kMaxAllocationBytes})
      : stats.limit_bytes != 0
          ? fmt::format_to_n(out.data(), out.size(),
                             "held bytes (in use, cached and free spans) would cross the ceiling "
                             "of {} even after releasing free spans and flushing idle caches",
                             common::ByteCount{stats.limit_bytes})
          : fmt::format_to_n(out.data(), out.size(), "the OS refused to map more memory");
  return {out.data(), static_cast<std::size_t>(written.out - out.data())};
}

std::string_view FailureAdvice(std::size_t bytes, std::size_t alignment) noexcept {
  return host::NoBlockCanSpan(bytes, alignment) ? kTooLargeAdvice : kFailureAdvice;
}

class HostHeapAllocator final : public Allocator {
 public:
  void ResetPeakStats() override { host::ResetPeaks(); }
  std::size_t ReleaseUnusedSpans() override { return host::ReleaseUnused(); }
  AllocatorKind kind() const noexcept override { return AllocatorKind::kHost; }
  std::string_view name() const noexcept override { return kHostName; }

  std::string DescribeFailure(std::size_t bytes, std::size_t alignment) const override {
    const AllocatorStats stats = GetStats();
    char reason[kReasonBytes];
    return common::OutOfMemoryMessage(name(), bytes, alignment, stats,
                                      WriteFailureReason(reason, bytes, alignment, stats),
                                      FailureAdvice(bytes, alignment));
  }

 protected:
  // The heap that failed may be the one a std::string would come from (the link-time
  // override): the diagnostic goes into the exception object instead.
  [[noreturn]] void ThrowOutOfMemory(std::size_t bytes, std::size_t alignment) const override {
    common::InlineOutOfMemory error;
    host::DescribeFailure(error.text(), bytes, alignment);
    throw error;
  }

 private:
  // The base has checked the alignment and zero size. The heap reports a foreign, interior or
  // double free itself (on its fast path, through the same on_invalid_free policy), so every
  // pointer counts as handled here.
  MEMARENA_ALLOCATION_ENTRY void* DoAllocate(std::size_t bytes, std::size_t alignment,
                                             StreamHandle) noexcept override {
    return host::Allocate(bytes, alignment);
  }
  FreeResult DoDeallocate(void* ptr, StreamHandle) noexcept override {
    host::Free(ptr);
    return FreeResult::kFreed;
  }
  std::size_t DoUsableSize(const void* ptr) const noexcept override {
    return host::UsableSize(ptr);
  }
  AllocatorStats DoGetStats() const override { return host::Stats(); }
};

// Every valid key applies; each bad one is reported on its own line and skipped (one bad
// key must not cost the process a valid ceiling). Noexcept: the drop-in builds the heap at
// load, where an exception (the parse's strings out of memory) would end the process; it
// is reported and the host keys keep their defaults instead.
[[gnu::noinline]] HostConfig HostConfigFromEnvironment() noexcept {
  try {
    std::vector<std::string> errors;
    const common::MemarenaConf conf = common::MemarenaConfFromEnvironment(errors);
    for (const std::string& error : errors) {
      const std::string line = fmt::format("memarena: {}; skipped, the other keys apply\n", error);
      platform::WriteStderr(line.data(), line.size());
    }
    return conf.host;
  } catch (const std::exception& e) {
    // No formatting: it would allocate again.
    constexpr std::string_view kBefore = "memarena: MEMARENA_CONF could not be applied (";
    constexpr std::string_view kAfter = "); the host keys keep their defaults\n";
    const std::string_view what = e.what();
    platform::WriteStderr(kBefore.data(), kBefore.size());
    platform::WriteStderr(what.data(), what.size());
    platform::WriteStderr(kAfter.data(), kAfter.size());
    return HostConfig{};
  }
}

// Without MEMARENA_CONF, the defaults: the parsing does not run at start-up (memarena_conf.h).
void ApplyEnvironmentConfig() {
  host::ApplyConfig(common::MemarenaConfIsSet() ? HostConfigFromEnvironment()
                                                : HostConfig{});
}

}  // namespace

namespace host {

std::string_view DescribeFailure(std::span<char> out, std::size_t bytes,
                                 std::size_t alignment) noexcept {
  const AllocatorStats stats = Stats();
  char reason[kReasonBytes];
  return common::WriteOutOfMemoryMessage(out, kHostName, bytes, alignment, stats,
                                         WriteFailureReason(reason, bytes, alignment, stats),
                                         FailureAdvice(bytes, alignment));
}

}  // namespace host

Allocator& HostAllocator() {
  // Never destroyed: other static destructors may still free through it. No function-local
  // static's guard: a child forked while another thread ran the first call would wait for
  // that guard forever (ForkSafeOnce builds again there instead).
  alignas(HostHeapAllocator) static constinit unsigned char storage[sizeof(HostHeapAllocator)] = {};
  static constinit common::ForkSafeOnce built;
  built.Run([] {
    new (storage) HostHeapAllocator();
    ApplyEnvironmentConfig();
  });
  return *std::launder(reinterpret_cast<HostHeapAllocator*>(storage));
}

std::vector<SizeClassStats> HostSizeClassStats() {
  HostAllocator();
  std::vector<SizeClassStats> classes(host::kNumClasses);
  host::SizeClasses(std::span<SizeClassStats, host::kNumClasses>(classes.data(), classes.size()));
  return classes;
}

bool SetCeiling(std::size_t bytes) {
  HostAllocator();  // the environment's settings first, so they never undo this call
  return host::SetCeiling(bytes);
}

std::size_t Ceiling() noexcept {
  HostAllocator();  // a ceiling from MEMARENA_CONF counts even before first use
  return host::Ceiling();
}

std::size_t ReleaseUnusedSpans() {
  HostAllocator();
  return host::ReleaseUnused(host::ReleaseKeep()) + common::ReleaseAllRegistered();
}

void SetReleaseKeep(std::size_t bytes) {
  HostAllocator();  // so a later first use does not overwrite it with MEMARENA_CONF's value
  host::SetReleaseKeep(bytes);
}

std::size_t ReleaseKeep() noexcept { return host::ReleaseKeep(); }

}  // namespace memarena
