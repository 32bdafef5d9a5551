// memarena profile-diff A B: where live memory grew between two heap profiles, by stack.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "commands.h"
#include "heap_profile_file.h"
#include "memarena/stats.h"

namespace memarena::tools {
namespace {

constexpr std::array<OptionSpec, 1> kOptions = {
    OptionSpec{"--top", "N", "show the N stacks that changed most (default 10)"},
};

const CommandSpec kSpec{
    "profile-diff", "A B [options]",
    "show which stacks' live bytes grew from heap profile A to heap profile B", kOptions, 2, 2,
    false,
    "A and B are heap profiles (memarena::WriteHeapProfile, MEMARENA_CONF=heap_profile:PATH).\n"
    "Frames print as module+offset, so profiles of different runs compare; for symbols run\n"
    "`google-pprof --text --base=A PROGRAM B`."};

std::string SignedBytes(long long bytes) {
  return fmt::format("{}{}", bytes < 0 ? "-" : "+",
                     FormatBytes(static_cast<std::size_t>(bytes < 0 ? -bytes : bytes)));
}

int Diff(const ParsedArgs& args) {
  const std::size_t top = args.Value("--top") ? ParseCountOption("--top", *args.Value("--top")) : 10;
  const auto before = ReadHeapProfile(args.positional[0]);
  const auto after = ReadHeapProfile(args.positional[1]);
  struct Change {
    std::string stack;
    long long before = 0;
    long long after = 0;
  };
  std::map<std::string, Change> changes;
  for (const auto& [stack, usage] : before) changes[stack].before = usage.bytes;
  for (const auto& [stack, usage] : after) changes[stack].after = usage.bytes;
  std::vector<Change> ordered;
  long long total_before = 0;
  long long total_after = 0;
  for (auto& [stack, change] : changes) {
    change.stack = stack;
    total_before += change.before;
    total_after += change.after;
    if (change.after != change.before) ordered.push_back(change);
  }
  std::sort(ordered.begin(), ordered.end(), [](const Change& a, const Change& b) {
    return a.after - a.before > b.after - b.before;
  });
  fmt::print("live bytes {} -> {} ({}); {} of {} stacks changed\n",
             FormatBytes(static_cast<std::size_t>(total_before)),
             FormatBytes(static_cast<std::size_t>(total_after)),
             SignedBytes(total_after - total_before), ordered.size(), changes.size());
  for (std::size_t i = 0; i < ordered.size() && i < top; ++i) {
    const Change& c = ordered[i];
    fmt::print("{:>12}  {} -> {}  @ {}\n", SignedBytes(c.after - c.before),
               FormatBytes(static_cast<std::size_t>(c.before)),
               FormatBytes(static_cast<std::size_t>(c.after)), c.stack);
  }
  return 0;
}

}  // namespace

const Command kProfileDiffCommand{&kSpec, &Diff};

}  // namespace memarena::tools
