// Parsing and help text for the subcommands' options.
#include "cli_args.h"

#include <fmt/format.h>

#include <charconv>

#include "memarena/config.h"
#include "memarena/errors.h"

namespace memarena::tools {

std::optional<std::string> ParsedArgs::Value(std::string_view name) const {
  const auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

ParsedArgs ParseArgs(const CommandSpec& spec, std::span<const std::string> args) {
  ParsedArgs parsed;
  auto find = [&spec](std::string_view name) -> const OptionSpec* {
    for (const OptionSpec& o : spec.options) {
      if (o.name == name) return &o;
    }
    return nullptr;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--" && spec.takes_command) {
      parsed.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (arg == "-h" || arg == "--help") {
      parsed.help = true;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      const std::size_t eq = arg.find('=');
      const std::string name = arg.substr(0, eq);
      const OptionSpec* option = find(name);
      if (option == nullptr) {
        throw UsageError(fmt::format("unknown option '{}' (see memarena {} --help)", name, spec.name));
      }
      if (option->value_name.empty()) {
        if (eq != std::string::npos) {
          throw UsageError(fmt::format("option '{}' takes no value", name));
        }
        parsed.flags[name] = true;
      } else if (eq != std::string::npos) {
        parsed.values[name] = arg.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        parsed.values[name] = args[++i];
      } else {
        throw UsageError(fmt::format("option '{}' needs a value ({})", name, option->value_name));
      }
      continue;
    }
    parsed.positional.push_back(arg);
  }
  if (parsed.help) return parsed;
  if (parsed.positional.size() < spec.min_positional) {
    throw UsageError(fmt::format("missing argument: usage: memarena {} {}", spec.name, spec.usage));
  }
  if (parsed.positional.size() > spec.max_positional) {
    throw UsageError(fmt::format("unexpected argument '{}': usage: memarena {} {}",
                                 parsed.positional[spec.max_positional], spec.name, spec.usage));
  }
  if (spec.takes_command && parsed.command.empty()) {
    throw UsageError(fmt::format("no command to run: usage: memarena {} {}", spec.name, spec.usage));
  }
  return parsed;
}

std::string HelpText(const CommandSpec& spec) {
  std::string out = fmt::format("usage: memarena {} {}\n\n{}\n", spec.name, spec.usage, spec.summary);
  if (!spec.options.empty()) out += "\noptions:\n";
  for (const OptionSpec& o : spec.options) {
    const std::string left =
        o.value_name.empty() ? std::string(o.name) : fmt::format("{} {}", o.name, o.value_name);
    out += fmt::format("  {:<24} {}\n", left, o.help);
  }
  out += fmt::format("  {:<24} {}\n", "-h, --help", "show this help");
  if (!spec.epilog.empty()) out += fmt::format("\n{}\n", spec.epilog);
  return out;
}

std::size_t ParseSizeOption(std::string_view option, std::string_view value) {
  try {
    // The host config parser reads sizes; a value must not smuggle in other keys.
    if (value.find_first_of(",:=") != std::string_view::npos) throw ConfigError("separator");
    return HostConfig::Parse(fmt::format("ceiling:{}", value)).ceiling;
  } catch (const ConfigError&) {
    throw UsageError(fmt::format("bad value '{}' for {}: expected a size such as 512MiB or 8GiB",
                                 value, option));
  }
}

std::size_t ParseCountOption(std::string_view option, std::string_view value) {
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n == 0) {
    throw UsageError(fmt::format("bad value '{}' for {}: expected a whole number >= 1", value, option));
  }
  return n;
}

}  // namespace memarena::tools
