// memarena inside ONNX Runtime: an OrtAllocator over any memarena::Allocator, its
// registration as the environment's shared allocator, and the mappings between ORT's
// OrtArenaCfg / allocator stats and memarena's ArenaConfig / AllocatorStats.
// Needs no ONNX Runtime header: the ORT types are only named here. See docs/ort.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memarena/allocator.h"
#include "memarena/arena.h"

struct OrtApi;
struct OrtApiBase;
struct OrtEnv;
struct OrtAllocator;
struct OrtMemoryInfo;
struct OrtSessionOptions;
struct OrtStatus;

namespace memarena::ort {

// The oldest ORT C API this code calls (1.23: OrtAllocator::GetStats, AllocatorGetStats).
inline constexpr std::uint32_t kMinOrtApiVersion = 23;
// The session config entry that makes a session allocate from the environment's allocators.
inline constexpr const char* kUseEnvAllocatorsKey = "session.use_env_allocators";

// An ONNX Runtime call failed, or the runtime is not one we can use. what() carries ORT's
// own message after what we were doing.
class OrtError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The function table of the runtime behind `base` (the library's OrtGetApiBase()) for API
// `version`. Throws OrtError naming the runtime's version and the version asked when the
// runtime is older (GetApi returns null), and when the table fails a sanity check (its
// GetBuildInfoString entry does not describe an ORT build). Cheap; call once per process.
const OrtApi* RequireOrtApi(const OrtApiBase* base, std::uint32_t version = kMinOrtApiVersion);

// Throws OrtError("<what>: <ORT's message>") when `status` is not null; releases it.
void ThrowIfError(const OrtApi* api, OrtStatus* status, std::string_view what);

struct OrtAllocatorOptions {
  // OrtMemoryInfo of the allocator. Sessions pick an environment allocator whose memory info
  // matches their provider's: "Cpu"/0 for the CPU provider, "Cuda"/N for CUDA device N.
  std::string memory_name = "Cpu";
  int device_id = 0;
  // Alignment of every block handed to ORT (ORT's CPU tensors use 64 B).
  std::size_t alignment = 64;
};

// An OrtAllocator (C ABI, version 25: Alloc, Free, Info, Reserve, GetStats, Shrink) over
// `allocator`, which must outlive the adapter; the adapter must outlive every session and
// value that uses it. Alloc and Reserve call allocator.Allocate: a request that cannot be
// served throws memarena::OutOfMemory through ORT, exactly as ORT's own arena throws, so the
// failing Run returns an ORT error whose message carries memarena's diagnostic. GetStats
// reports ORT's key names (see OrtStatsEntries). Thread-safe when `allocator` is.
class OrtAllocatorAdapter {
 public:
  // Throws OrtError when ORT cannot create the memory info, std::invalid_argument when
  // `api` is null or the alignment is not a power of two.
  OrtAllocatorAdapter(const OrtApi* api, Allocator& allocator, OrtAllocatorOptions options = {});
  ~OrtAllocatorAdapter();
  OrtAllocatorAdapter(const OrtAllocatorAdapter&) = delete;
  OrtAllocatorAdapter& operator=(const OrtAllocatorAdapter&) = delete;

  // The C struct to hand to ORT (RegisterAllocator, CreateTensorAsOrtValue, ...).
  OrtAllocator* get() noexcept;
  const OrtMemoryInfo* memory_info() const noexcept;
  Allocator& allocator() const noexcept;
  // Reserve() calls so far: ORT's "NumReserves" (allocations made at session initialization).
  std::uint64_t num_reserves() const noexcept;
  // Calls of Alloc or Reserve that failed so far.
  std::uint64_t num_failures() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Registers `adapter` with `env` (OrtApi::RegisterAllocator): every session created with
// UseEnvironmentAllocators then allocates its initializers, activations and outputs from
// it, so N sessions share one memarena allocator. Throws OrtError with ORT's message (for
// example when an allocator for that memory info is already registered).
void RegisterSharedAllocator(const OrtApi* api, OrtEnv* env, OrtAllocatorAdapter& adapter);
// Removes the registration (OrtApi::UnregisterAllocator). Sessions created before keep
// using the adapter. Throws OrtError with ORT's message.
void UnregisterSharedAllocator(const OrtApi* api, OrtEnv* env, const OrtAllocatorAdapter& adapter);
// Adds session.use_env_allocators=1 to `options`. Throws OrtError with ORT's message.
void UseEnvironmentAllocators(const OrtApi* api, OrtSessionOptions* options);

// One OrtArenaCfg setting as CreateArenaCfgV2 takes it: a key and a number. -1 means
// "ORT's default", as in CreateArenaCfg.
struct OrtArenaCfgEntry {
  std::string key;
  std::int64_t value = -1;
};

// The ArenaConfig with the same meaning as ORT's OrtArenaCfg entries (keys max_mem,
// arena_extend_strategy (0 = kNextPowerOfTwo, 1 = kSameAsRequested), initial_chunk_size_bytes,
// max_dead_bytes_per_chunk, initial_growth_chunk_size_bytes, max_power_of_two_extend_bytes).
// Throws ConfigError naming the key and what is allowed on an unknown key or a bad value.
ArenaConfig ArenaConfigFromOrtArenaCfg(std::span<const OrtArenaCfgEntry> entries);
// The entries (all six keys) that give ORT's arena the same settings as `config`.
std::vector<OrtArenaCfgEntry> OrtArenaCfgFromArenaConfig(const ArenaConfig& config);

// `stats` under ORT's allocator-stats keys, in ORT's order: Limit (-1 = none), InUse,
// TotalAllocated (= held), MaxInUse, NumAllocs, NumReserves (= `num_reserves`),
// NumArenaExtensions, NumArenaShrinkages, MaxAllocSize; then memarena's extra keys
// memarena.PeakHeld, memarena.Requested, memarena.Releasable, memarena.NumOoms.
std::vector<std::pair<std::string, std::string>> OrtStatsEntries(const AllocatorStats& stats,
                                                                 std::uint64_t num_reserves);

}  // namespace memarena::ort
