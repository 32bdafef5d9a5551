// The memarena subcommands. Each takes its arguments (after the subcommand name), prints to
// stdout, and returns the exit status; usage errors throw UsageError, other failures throw
// std::exception with a message for main to print.
#pragma once

#include <span>
#include <string>

#include "cli_args.h"

namespace memarena::tools {

struct Command {
  const CommandSpec* spec;
  int (*run)(const ParsedArgs& args);
};

extern const Command kReplayCommand;
extern const Command kCompareCommand;
extern const Command kPlanCommand;
extern const Command kRunCommand;
extern const Command kDemoCommand;
extern const Command kProfileDiffCommand;
extern const Command kConfigCommand;

// Parses `args` for `command`, prints --help, runs it, and turns exceptions into a message
// on stderr ("memarena NAME: ...") with exit status 2 (usage) or 1 (anything else).
int RunCommand(const Command& command, std::span<const std::string> args);

}  // namespace memarena::tools

#include <optional>

#include "result_format.h"

namespace memarena::tools {

// The progress line a replay shows, from --progress (at once) / --no-progress (never); by
// default it appears once a replay has run for a second. nullopt when disabled.
std::optional<ProgressLine> MakeProgress(const ParsedArgs& args, std::string name);

// Routes a replay's progress and phase calls to `progress` (when it is shown at all).
void AttachProgress(std::optional<ProgressLine>& progress, ReplayOptions& options);

// Reads a trace for a command with the line "NAME: parsing PATH  37% (17.0 MiB/46.0 MiB), ETA
// 0.8 s" on stderr when the file is large (16 MiB or more) or --progress asks for it.
std::vector<TraceEvent> ReadTraceShowingProgress(const ParsedArgs& args, std::string_view name,
                                                  const std::string& path);

// Throws std::runtime_error "PATH: REASON" unless `path` names a readable regular file
// (REASON: "is a directory", or the OS's, e.g. "No such file or directory"), so a bad input
// never reaches a parser that would call it empty.
void RequireInputFile(const std::string& path);

// Throws UsageError when both --json and --prometheus are given (one output format).
void RejectJsonWithPrometheus(const ParsedArgs& args);

// The options every replaying command shares.
inline constexpr OptionSpec kProgressOption{"--progress", "", "show replay progress on stderr at once"};
inline constexpr OptionSpec kNoProgressOption{"--no-progress", "", "never show replay progress"};

}  // namespace memarena::tools
