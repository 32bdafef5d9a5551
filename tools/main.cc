// memarena: the command-line tool (replay, compare, plan, run, demo, profile-diff, config).
#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"

namespace {

constexpr std::array kCommands = {&memarena::tools::kReplayCommand, &memarena::tools::kCompareCommand,
                                  &memarena::tools::kPlanCommand, &memarena::tools::kRunCommand,
                                  &memarena::tools::kDemoCommand,
                                  &memarena::tools::kProfileDiffCommand,
                                  &memarena::tools::kConfigCommand};

// "replay, compare, ..." for the unknown-command message.
std::string CommandNames() {
  std::string out;
  for (const auto* c : kCommands) out += fmt::format("{}{}", out.empty() ? "" : ", ", c->spec->name);
  return out;
}

std::string MainHelp() {
  std::string out =
      "usage: memarena COMMAND [options]\n\n"
      "See where memory goes: replay allocation traces through memarena's allocators, plan\n"
      "tensor lifetimes, run programs under the drop-in allocator, and draw the results.\n\n"
      "commands:\n";
  for (const auto* c : kCommands) out += fmt::format("  {:<13} {}\n", c->spec->name, c->spec->summary);
  out += "\n`memarena COMMAND --help` shows a command's options; `memarena --version` the "
         "version;\n`memarena config --doc` every MEMARENA_CONF and ArenaConfig key with its default.\n"
         "Exit status: 0 success, 1 failure, 2 usage error.\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    fmt::print(stderr, "memarena: no command given\n\n{}", MainHelp());
    return 2;
  }
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    fmt::print("{}", MainHelp());
    return 0;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    fmt::print("memarena {}\n", MEMARENA_VERSION);
    return 0;
  }
  for (const auto* c : kCommands) {
    if (args[0] == c->spec->name) {
      return memarena::tools::RunCommand(*c, std::span<const std::string>(args).subspan(1));
    }
  }
  fmt::print(stderr, "memarena: unknown command '{}'; commands: {} (see memarena --help)\n", args[0],
             CommandNames());
  return 2;
}
