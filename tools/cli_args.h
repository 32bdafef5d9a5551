// Command-line parsing for the memarena subcommands: declared options, --help, and usage
// errors that name the problem.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memarena::tools {

// A bad command line. main prints "memarena SUBCOMMAND: what()" and exits with 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string_view name;        // "--report"
  std::string_view value_name;  // "FILE"; empty for a flag
  std::string_view help;
};

struct CommandSpec {
  std::string_view name;   // "replay"
  std::string_view usage;  // "TRACE [options]"
  std::string_view summary;
  std::span<const OptionSpec> options;
  std::size_t min_positional = 0;
  std::size_t max_positional = 0;
  bool takes_command = false;  // everything after "--" is a command to run
  std::string_view epilog;     // extra help text
};

struct ParsedArgs {
  bool help = false;
  std::map<std::string, std::string, std::less<>> values;  // options with a value
  std::map<std::string, bool, std::less<>> flags;
  std::vector<std::string> positional;
  std::vector<std::string> command;  // after "--"

  bool Flag(std::string_view name) const { return flags.contains(name); }
  std::optional<std::string> Value(std::string_view name) const;
};

// Parses `args` (without the program and subcommand names). Accepts --opt VALUE and
// --opt=VALUE, -h/--help anywhere. Throws UsageError on an unknown option, a missing value,
// or the wrong number of positional arguments (unless help was asked for).
ParsedArgs ParseArgs(const CommandSpec& spec, std::span<const std::string> args);

// The --help text of a subcommand.
std::string HelpText(const CommandSpec& spec);

// Parses a size such as 512MiB or 8GiB for an option; throws UsageError naming the option.
std::size_t ParseSizeOption(std::string_view option, std::string_view value);
// Parses a whole number >= 1 for an option; throws UsageError naming the option.
std::size_t ParseCountOption(std::string_view option, std::string_view value);

}  // namespace memarena::tools
