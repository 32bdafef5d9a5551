// libFuzzer harness for both config parsers (MEMARENA_CONF's HostConfig and ArenaConfig):
// any text either parses or throws ConfigError (nothing else escapes), a parsed ArenaConfig
// passes Validate() with every size within kMaxConfigBytes, and an arena built from it
// (expandable ones over a simulated virtual range; over a plain source they are refused
// with a ConfigError) serves a request (or refuses it) without hanging.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "arena/simulated_memory_source.h"
#include "arena/simulated_virtual_memory_source.h"
#include "common/config_parser.h"
#include "common/config_table.h"
#include "fuzz/fuzz_input.h"
#include "memarena/arena.h"
#include "memarena/config.h"
#include "memarena/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using memarena::fuzz::Check;
  memarena::fuzz::FuzzInput in(data, size);
  const std::string text = in.Rest();
  // Each parser judges every key:value setting of the text (a bad one does not stop the
  // others), so an operation is one setting judged by one parser; a text with none is one.
  const std::size_t settings = memarena::common::SplitSettings(text).size();
  memarena::fuzz::CountOperations(2 * std::max<std::size_t>(settings, 1));
  try {
    const memarena::HostConfig host = memarena::HostConfig::Parse(text);
    Check(host.ceiling <= memarena::common::kMaxConfigBytes, "ceiling above the maximum");
    Check(host.thread_cache_bytes <= memarena::common::kMaxConfigBytes,
          "thread_cache_bytes above the maximum");
  } catch (const memarena::ConfigError&) {
  }
  memarena::ArenaConfig config;
  try {
    config = memarena::ArenaConfig::Parse(text);
  } catch (const memarena::ConfigError&) {
    return 0;
  }
  config.Validate();  // throws (a crash here) if Parse let a bad value through
  constexpr std::size_t kCapacity = std::size_t{64} << 20;
  memarena::arena::SimulatedMemorySource::Options options;
  options.capacity = kCapacity;
  auto plain = std::make_shared<memarena::arena::SimulatedMemorySource>(options);
  std::shared_ptr<memarena::MemorySource> source = plain;
  if (config.expandable_segments) {
    // A source that cannot commit and decommit is refused with a ConfigError naming the key;
    // the expandable arena gets a simulated virtual range.
    try {
      memarena::BfcArena refused(plain, config);
      Check(false, "expandable_segments:1 accepted over a plain source");
    } catch (const memarena::ConfigError&) {
    }
    memarena::arena::SimulatedVirtualMemorySource::Options virtual_options;
    virtual_options.capacity = kCapacity;
    source = std::make_shared<memarena::arena::SimulatedVirtualMemorySource>(virtual_options);
  }
  memarena::BfcArena arena(source, config);
  for (std::size_t bytes : {std::size_t{1}, std::size_t{4096}, std::size_t{1} << 20}) {
    void* p = arena.TryAllocate(bytes);
    if (p != nullptr) arena.Deallocate(p);
  }
  arena.ReleaseUnusedSpans();
  void* p = arena.TryAllocate(std::size_t{3} << 20);
  if (p != nullptr) arena.Deallocate(p);
  Check(arena.GetStats().bytes_in_use == 0, "bytes in use after freeing everything");
  return 0;
}
