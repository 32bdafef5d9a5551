// The replay targets: host (the process-wide host allocator under a ceiling), bfc (a BfcArena
// on mmap memory that behaves like device memory, or with expandable_segments:1 on a virtual
// range with the device's 2 MiB granules), planned (a PlannedArena over malloc) and system (malloc).
#include "replay_target.h"

#include <fmt/format.h>

#include <array>

#include "memarena/arena.h"
#include "memarena/config.h"
#include "memarena/errors.h"
#include "memarena/host.h"
#include "memarena/planner.h"
#include "cli_args.h"
#include "memarena/virtual_memory_source.h"
#include "system_allocator.h"

namespace memarena::tools {
namespace {

// host, system and planned take only a limit for a replay: the other host keys are fixed
// when the host allocator starts, so they belong in MEMARENA_CONF. Errors name --config and
// what this allocator accepts, never MEMARENA_CONF's own key list.
std::size_t ParseLimitOnly(std::string_view allocator, std::string_view config) {
  if (config.empty()) return 0;
  const std::size_t colon = config.find(':');
  const std::string_view key = config.substr(0, colon);
  if (key != "ceiling" || colon == std::string_view::npos ||
      config.find(',') != std::string_view::npos) {
    throw UsageError(fmt::format(
        "--config for {}: '{}' is not accepted; {} takes only ceiling:SIZE (e.g. ceiling:1GiB)"
        "{}",
        allocator, config, allocator,
        allocator == "host" ? "; set the other host keys in MEMARENA_CONF before starting memarena"
                            : ""));
  }
  return ParseSizeOption(fmt::format("--config for {}: ceiling", allocator), config.substr(colon + 1));
}

std::string LimitLabel(std::string_view base, std::size_t limit) {
  return limit == 0 ? std::string(base) : fmt::format("{} (ceiling {})", base, FormatBytes(limit));
}

class HostTarget final : public ReplayTarget {
 public:
  explicit HostTarget(std::size_t ceiling) : ceiling_(ceiling), previous_(Ceiling()) {
    memarena::ReleaseUnusedSpans();
    if (!SetCeiling(ceiling)) {
      throw ConfigError(fmt::format(
          "--config for host: cannot set the ceiling to {}: the host allocator already holds "
          "{} that it cannot release",
          FormatBytes(ceiling), FormatBytes(HostAllocator().GetStats().bytes_held)));
    }
  }
  ~HostTarget() override {
    HostAllocator().ReleaseUnusedSpans();
    SetCeiling(previous_);
  }
  Allocator& allocator() override { return HostAllocator(); }
  std::string label() const override { return LimitLabel("host", ceiling_); }

 private:
  std::size_t ceiling_;
  std::size_t previous_;
};

class SystemTarget final : public ReplayTarget {
 public:
  explicit SystemTarget(std::size_t limit) : system_(limit), limit_(limit) {}
  Allocator& allocator() override { return system_; }
  std::string label() const override { return LimitLabel("system", limit_); }

 private:
  SystemAllocator system_;
  std::size_t limit_;
};

std::string_view StrategyName(ArenaExtendStrategy s) {
  return s == ArenaExtendStrategy::kNextPowerOfTwo ? "kNextPowerOfTwo" : "kSameAsRequested";
}

// mmap memory that the arena may not merge across regions, as on a device (cudaMalloc
// regions never merge). So that the same trace gives the same numbers in every process, a
// replay must not depend on where mmap places regions: not on whether two are adjacent
// (they never merge here), nor on their address order, by which best fit breaks ties
// (they come in falling address order).
class DeviceLikeSource final : public MemorySource {
 public:
  void* Reserve(std::size_t bytes) noexcept override { return mmap_.Reserve(bytes); }
  void Release(void* ptr, std::size_t bytes) noexcept override { mmap_.Release(ptr, bytes); }
  std::size_t Alignment() const noexcept override { return mmap_.Alignment(); }
  bool MergesAdjacent() const noexcept override { return false; }
  AllocatorKind kind() const noexcept override { return AllocatorKind::kHost; }
  std::string_view name() const noexcept override { return "host_mmap_unmerged"; }

 private:
  HostMemorySource mmap_{0, HostMemorySource::Placement::kFallingAddresses};
};

// CUDA's usual allocation granularity, so that an expandable replay on the host commits in
// the same steps as on a device.
constexpr std::size_t kDeviceGranularity = std::size_t{2} << 20;

std::shared_ptr<MemorySource> BfcSource(const ArenaConfig& config) {
  if (config.expandable_segments) {
    return std::make_shared<HostVirtualMemorySource>(HostVirtualMemorySource::kDefaultReserveBytes,
                                                     kDeviceGranularity);
  }
  return std::make_shared<DeviceLikeSource>();
}

class BfcTarget final : public ReplayTarget {
 public:
  explicit BfcTarget(const ArenaConfig& config) : arena_(BfcSource(config), config) {}
  Allocator& allocator() override { return arena_; }
  std::string label() const override {
    return fmt::format("bfc ({}{})",
                       arena_.config().expandable_segments
                           ? std::string_view("expandable")
                           : StrategyName(arena_.config().arena_extend_strategy),
                       arena_.config().max_mem == 0
                           ? std::string()
                           : fmt::format(", max_mem {}", FormatBytes(arena_.config().max_mem)));
  }

 private:
  BfcArena arena_;
};

// ORT's mem pattern: a trace without phases is run once to record and plan it, then
// measured while served from the plan; with phases, each phase key is an input shape and
// the arena plans each shape the first time it ends.
class PlannedTarget final : public ReplayTarget {
 public:
  explicit PlannedTarget(std::size_t limit) : upstream_(limit), planned_(upstream_), limit_(limit) {}
  Allocator& allocator() override { return planned_; }
  std::string label() const override { return LimitLabel("planned", limit_); }
  bool WantsRecordingPass(bool has_phases) const override { return !has_phases; }
  bool BeginPhase(std::uint64_t key) override {
    try {
      planned_.BeginRun({{static_cast<std::int64_t>(key)}});
      run_open_ = true;
    } catch (const OutOfMemory&) {
      // The pattern block did not fit: this run goes through without a plan.
      run_open_ = false;
    }
    return run_open_;
  }
  void EndPhase() override {
    // The arena plans on its own thread; a replay wants the plan before the next phase.
    if (run_open_) {
      planned_.EndRun();
      planned_.WaitForPlans();
    }
    run_open_ = false;
  }

 private:
  SystemAllocator upstream_;
  PlannedArena planned_;
  std::size_t limit_;
  bool run_open_ = false;
};

constexpr std::array<std::string_view, 4> kNames = {"host", "bfc", "planned", "system"};

}  // namespace

std::span<const std::string_view> TargetNames() { return kNames; }

std::unique_ptr<ReplayTarget> MakeTarget(std::string_view name, std::string_view config) {
  if (name == "host") return std::make_unique<HostTarget>(ParseLimitOnly(name, config));
  if (name == "system") return std::make_unique<SystemTarget>(ParseLimitOnly(name, config));
  if (name == "planned") return std::make_unique<PlannedTarget>(ParseLimitOnly(name, config));
  if (name == "bfc") {
    try {
      return std::make_unique<BfcTarget>(ArenaConfig::Parse(config));
    } catch (const ConfigError& e) {
      throw UsageError(fmt::format("--config for bfc: {}", e.what()));
    }
  }
  throw UsageError(fmt::format("unknown allocator '{}'; allowed: host, bfc, planned, system", name));
}

std::string TargetConfigHelp() {
  return fmt::format(
      "--config KEY:VALUE,... per allocator:\n"
      "  host     ceiling:SIZE   (the host ceiling during the replay; other host keys go in "
      "MEMARENA_CONF)\n"
      "  system   ceiling:SIZE   (fails requests that would put more than SIZE in use)\n"
      "  planned  ceiling:SIZE   (cap on the malloc upstream of the planned arena)\n"
      "  bfc      every key of ArenaConfig, listed next\n{}\n",
      ArenaConfigHelp());
}

}  // namespace memarena::tools
