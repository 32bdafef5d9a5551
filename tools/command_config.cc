// memarena config --doc: every settings key (MEMARENA_CONF's host and drop-in keys, and
// ArenaConfig's) with its value, default and meaning, from the same rows the parsers read.
#include <fmt/format.h>

#include <array>

#include "commands.h"
#include "memarena/arena.h"
#include "memarena/config.h"
#include "memarena/config_docs.h"

namespace memarena::tools {
namespace {

constexpr std::array kOptions = {
    OptionSpec{"--doc", "", "print every key: its value form, default and meaning"},
    OptionSpec{"--markdown", "",
               "with --doc: the markdown tables of docs/dropin.md and docs/arena.md"},
};

const CommandSpec kSpec{"config", "--doc [--markdown]",
                        "list every MEMARENA_CONF and ArenaConfig key with its default", kOptions,
                        0, 0, false,
                        "MEMARENA_CONF (key:value,...) sets the host heap and the drop-in; "
                        "ArenaConfig strings\n(ArenaConfig::Parse, `memarena replay --config`) "
                        "set a BFC arena. The lists come from\nthe rows the parsers use, so they "
                        "name exactly the keys that parse."};

// The sections of the markdown output: a heading, a line on where the keys apply, the table.
struct MarkdownSection {
  std::string_view heading;
  std::string_view where;
  std::string (*table)();
};
constexpr std::array kMarkdownSections = {
    MarkdownSection{"MEMARENA_CONF: host keys", "The host heap's keys (`memarena::HostConfig`).",
                    &HostConfigDocTable},
    MarkdownSection{"MEMARENA_CONF: drop-in keys",
                    "Under `LD_PRELOAD=libmemarena_malloc.so` or the link-time override.",
                    &DropinConfigDocTable},
    MarkdownSection{"ArenaConfig keys",
                    "`ArenaConfig::Parse` and `memarena replay --config` (OrtArenaCfg's names).",
                    &ArenaConfigDocTable},
};

int Run(const ParsedArgs& args) {
  if (!args.Flag("--doc")) {
    throw UsageError("nothing to do: give --doc (see memarena config --help)");
  }
  if (!args.Flag("--markdown")) {
    fmt::print("{}\n\n{}\n", HostConfigHelp(), ArenaConfigHelp());
    return 0;
  }
  for (std::size_t i = 0; i < kMarkdownSections.size(); ++i) {
    const MarkdownSection& section = kMarkdownSections[i];
    fmt::print("{}## {}\n\n{}\n\n{}", i == 0 ? "" : "\n", section.heading, section.where,
               section.table());
  }
  return 0;
}

}  // namespace

const Command kConfigCommand{&kSpec, &Run};

}  // namespace memarena::tools
