// OrtAllocatorAdapter: the C function table ORT calls (Alloc, Free, Info, Reserve, GetStats,
// Shrink), each forwarding to a memarena::Allocator.
#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <stdexcept>

#include "memarena/ort.h"
#include "ort/ort_abi.h"

namespace memarena::ort {

struct OrtAllocatorAdapter::Impl {
  // ORT holds a pointer to `table`; the thunks get back to the Impl through `owner`. Slot is
  // standard layout, so a pointer to it and to its first member convert into each other.
  struct Slot {
    abi::Allocator table;
    Impl* owner;
  };

  Impl(const OrtApi* ort_api, Allocator& target, OrtAllocatorOptions opts)
      : api(ort_api), allocator(target), options(std::move(opts)) {
    slot.table = abi::Allocator{abi::kAllocatorVersion, &AllocThunk,    &FreeThunk, &InfoThunk,
                                &ReserveThunk,          &GetStatsThunk, nullptr,    &ShrinkThunk};
    slot.owner = this;
  }

  static Impl& Of(const abi::Allocator* table) noexcept {
    return *reinterpret_cast<const Slot*>(table)->owner;
  }

  // Throws OutOfMemory (memarena's diagnostic) through ORT when the request cannot be served:
  // ORT's own arenas throw the same way, and ORT turns it into the failing call's status.
  void* Allocate(std::size_t size) {
    try {
      return allocator.Allocate(size, options.alignment);
    } catch (...) {
      failures.fetch_add(1, std::memory_order_relaxed);
      throw;
    }
  }

  static void* AllocThunk(abi::Allocator* self, std::size_t size) {
    return Of(self).Allocate(size);
  }

  static void* ReserveThunk(abi::Allocator* self, std::size_t size) {
    Impl& impl = Of(self);
    impl.reserves.fetch_add(1, std::memory_order_relaxed);
    return impl.Allocate(size);
  }

  static void FreeThunk(abi::Allocator* self, void* p) { Of(self).allocator.Deallocate(p); }

  static const OrtMemoryInfo* InfoThunk(const abi::Allocator* self) { return Of(self).memory_info; }

  OrtStatus* FailureStatus(const char* operation, const std::exception& error) const noexcept {
    return abi::Get<abi::CreateStatusFn>(api, abi::Entry::kCreateStatus)(
        abi::kOrtFail,
        fmt::format("memarena: {} on {} failed: {}", operation, allocator.name(), error.what())
            .c_str());
  }

  static OrtStatus* GetStatsThunk(const abi::Allocator* self, OrtKeyValuePairs** out) {
    const Impl& impl = Of(self);
    try {
      const auto entries =
          OrtStatsEntries(impl.allocator.GetStats(), impl.reserves.load(std::memory_order_relaxed));
      OrtKeyValuePairs* pairs = nullptr;
      abi::Get<abi::CreateKeyValuePairsFn>(impl.api, abi::Entry::kCreateKeyValuePairs)(&pairs);
      const auto add = abi::Get<abi::AddKeyValuePairFn>(impl.api, abi::Entry::kAddKeyValuePair);
      for (const auto& [key, value] : entries) add(pairs, key.c_str(), value.c_str());
      *out = pairs;
      return nullptr;
    } catch (const std::exception& error) {
      return impl.FailureStatus("GetStats", error);
    }
  }

  static OrtStatus* ShrinkThunk(abi::Allocator* self) {
    Impl& impl = Of(self);
    try {
      impl.allocator.ReleaseUnusedSpans();
      return nullptr;
    } catch (const std::exception& error) {
      return impl.FailureStatus("Shrink", error);
    }
  }

  const OrtApi* api;
  Allocator& allocator;
  OrtAllocatorOptions options;
  OrtMemoryInfo* memory_info = nullptr;
  std::atomic<std::uint64_t> reserves{0};
  std::atomic<std::uint64_t> failures{0};
  Slot slot{};
};

OrtAllocatorAdapter::OrtAllocatorAdapter(const OrtApi* api, Allocator& allocator,
                                         OrtAllocatorOptions options) {
  if (api == nullptr) throw std::invalid_argument("memarena: OrtAllocatorAdapter: api is null");
  if (!IsValidAlignment(options.alignment)) {
    throw std::invalid_argument(
        fmt::format("memarena: OrtAllocatorOptions.alignment is {}; it must be a power of two",
                    options.alignment));
  }
  impl_ = std::make_unique<Impl>(api, allocator, std::move(options));
  // ORT refuses OrtArenaAllocator for user allocators ("reserved for internal arena logic"),
  // so a memarena arena registers as a device allocator, as ORT's docs ask.
  ThrowIfError(api,
               abi::Get<abi::CreateMemoryInfoFn>(api, abi::Entry::kCreateMemoryInfo)(
                   impl_->options.memory_name.c_str(), abi::kOrtDeviceAllocator,
                   impl_->options.device_id, abi::kOrtMemTypeDefault, &impl_->memory_info),
               fmt::format("memarena: ORT CreateMemoryInfo({}, device {})",
                           impl_->options.memory_name, impl_->options.device_id));
}

OrtAllocatorAdapter::~OrtAllocatorAdapter() {
  abi::Get<abi::ReleaseMemoryInfoFn>(impl_->api,
                                     abi::Entry::kReleaseMemoryInfo)(impl_->memory_info);
}

OrtAllocator* OrtAllocatorAdapter::get() noexcept {
  return reinterpret_cast<OrtAllocator*>(&impl_->slot.table);
}

const OrtMemoryInfo* OrtAllocatorAdapter::memory_info() const noexcept {
  return impl_->memory_info;
}

Allocator& OrtAllocatorAdapter::allocator() const noexcept { return impl_->allocator; }

std::uint64_t OrtAllocatorAdapter::num_reserves() const noexcept {
  return impl_->reserves.load(std::memory_order_relaxed);
}

std::uint64_t OrtAllocatorAdapter::num_failures() const noexcept {
  return impl_->failures.load(std::memory_order_relaxed);
}

}  // namespace memarena::ort
