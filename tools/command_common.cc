// RunCommand: the shared frame of every subcommand (help, usage errors, failures).
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "commands.h"

namespace memarena::tools {

int RunCommand(const Command& command, std::span<const std::string> args) {
  const CommandSpec& spec = *command.spec;
  try {
    const ParsedArgs parsed = ParseArgs(spec, args);
    if (parsed.help) {
      fmt::print("{}", HelpText(spec));
      return 0;
    }
    return command.run(parsed);
  } catch (const UsageError& e) {
    fmt::print(stderr, "memarena {}: {}\n", spec.name, e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "memarena {}: {}\n", spec.name, e.what());
    return 1;
  }
}

}  // namespace memarena::tools

namespace memarena::tools {

void RejectJsonWithPrometheus(const ParsedArgs& args) {
  if (args.Flag("--json") && args.Flag("--prometheus")) {
    throw UsageError("--json and --prometheus are two output formats; choose one");
  }
}

std::optional<ProgressLine> MakeProgress(const ParsedArgs& args, std::string name) {
  if (args.Flag("--no-progress")) return std::nullopt;
  return ProgressLine(std::move(name), args.Flag("--progress") ? std::chrono::milliseconds(0)
                                                               : std::chrono::milliseconds(1000));
}

}  // namespace memarena::tools
