// memarena profile-diff A B: where live memory grew between two heap profiles, by stack.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <vector>

#include "commands.h"
#include "heap_profile_file.h"
#include "memarena/observability.h"
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
    "Frames print as function names read from the modules' symbol tables (module+offset\n"
    "where a module has no symbol there), so profiles of different runs compare; for line\n"
    "numbers run `google-pprof --text --base=A PROGRAM B`."};

// A stack of "module+0xoffset" frames (innermost first) as "f1 < f2 < ...", each frame
// named where its module's symbol table has it. Offsets are return addresses (but the
// first, which the writer moved back already): one byte back lies in the call.
std::string NamedStack(const std::string& stack) {
  std::istringstream frames(stack);
  std::string frame;
  std::string out;
  bool any_named = false;
  for (bool first = true; frames >> frame; first = false) {
    std::string name;
    const std::size_t plus = frame.rfind("+0x");
    if (plus != std::string::npos) {
      const std::uint64_t offset = std::stoull(frame.substr(plus + 1), nullptr, 16);
      name = SymbolizeModuleOffset(frame.substr(0, plus), first ? offset : offset - 1);
    }
    any_named |= !name.empty();
    out += fmt::format("{}{}", first ? "" : " < ", name.empty() ? frame : name);
  }
  return any_named ? out : stack;
}

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
               FormatBytes(static_cast<std::size_t>(c.after)), NamedStack(c.stack));
  }
  return 0;
}

}  // namespace

const Command kProfileDiffCommand{&kSpec, &Diff};

}  // namespace memarena::tools
