// memarena::HostAllocator(): the host heap behind the Allocator interface, plus the public
// SetCeiling/Ceiling/ReleaseUnusedSpans of memarena/host.h.
#include <fmt/format.h>

#include <new>
#include <string>
#include <vector>

#include "common/format.h"
#include "common/memarena_conf.h"
#include "common/release_registry.h"
#include "host/heap.h"
#include "host/host_api.h"
#include "memarena/host.h"
#include "platform/os.h"
#include "platform/stack.h"

namespace memarena {
namespace {

class HostHeapAllocator final : public Allocator {
 public:
  void ResetPeakStats() override { host::ResetPeaks(); }
  std::size_t ReleaseUnusedSpans() override { return host::ReleaseUnused(); }
  AllocatorKind kind() const noexcept override { return AllocatorKind::kHost; }
  std::string_view name() const noexcept override { return "host"; }

  std::string DescribeFailure(std::size_t bytes, std::size_t alignment) const override {
    const AllocatorStats stats = GetStats();
    const std::string reason =
        stats.limit_bytes != 0
            ? fmt::format("held bytes (in use, cached and free spans) would cross the ceiling "
                          "of {} even after releasing free spans and flushing idle caches",
                          FormatBytes(stats.limit_bytes))
            : std::string("the OS refused to map more memory");
    return common::OutOfMemoryMessage(
        name(), bytes, alignment, stats, reason,
        "Raise the ceiling (MEMARENA_CONF=ceiling:SIZE, or memarena::SetCeiling), free memory, "
        "or call memarena::ReleaseUnusedSpans(); other threads' caches keep what they claimed "
        "of thread_cache_bytes (all caches together) until their next slow path.");
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
// key must not cost the process a valid ceiling).
void ApplyEnvironmentConfig() {
  std::vector<std::string> errors;
  const common::MemarenaConf conf = common::MemarenaConfFromEnvironment(errors);
  for (const std::string& error : errors) {
    const std::string line = fmt::format("memarena: {}; skipped, the other keys apply\n", error);
    platform::WriteStderr(line.data(), line.size());
  }
  host::ApplyConfig(conf.host);
}

}  // namespace

Allocator& HostAllocator() {
  // Never destroyed: other static destructors may still free through it.
  alignas(HostHeapAllocator) static unsigned char storage[sizeof(HostHeapAllocator)];
  static Allocator* const instance = [] {
    Allocator* allocator = new (storage) HostHeapAllocator();
    ApplyEnvironmentConfig();
    return allocator;
  }();
  return *instance;
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
