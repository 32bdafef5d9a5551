// RunCommand: the shared frame of every subcommand (help, usage errors, failures).
#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>

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

void AttachProgress(std::optional<ProgressLine>& progress, ReplayOptions& options) {
  if (!progress) return;
  options.progress = [&progress](std::size_t d, std::size_t t) { progress->Update(d, t); };
  options.phase = [&progress](std::string_view p) { progress->Phase(p); };
}

std::vector<TraceEvent> ReadTraceShowingProgress(const ParsedArgs& args, std::string_view name,
                                                  const std::string& path) {
  constexpr std::uintmax_t kLargeTrace = std::uintmax_t{16} << 20;
  std::error_code error;
  const std::uintmax_t bytes = std::filesystem::file_size(path, error);
  const bool show = !args.Flag("--no-progress") &&
                    (args.Flag("--progress") || (!error && bytes >= kLargeTrace));
  if (!show) return ReadTrace(path);
  // A large trace shows its line at once: parsing it is the first second of the command.
  ProgressLine line(std::string(name), std::chrono::milliseconds(0));
  line.Phase(fmt::format("parsing {}", path), ProgressLine::Unit::kBytes);
  try {
    std::vector<TraceEvent> trace =
        ReadTrace(path, [&line](std::size_t done, std::size_t total) { line.Update(done, total); });
    line.Done();
    return trace;
  } catch (...) {
    line.Done();  // the error then starts a line of its own
    throw;
  }
}

void RequireInputFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    throw std::runtime_error(fmt::format("{}: is a directory", path));
  }
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: {}", path, std::strerror(errno)));
}

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
