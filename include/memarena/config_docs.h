// The settings keys as markdown tables, exactly as docs/dropin.md and docs/arena.md show
// them (| key | value | default | meaning |), generated from the rows the parsers read; for
// `memarena config --doc --markdown`. The one-line-per-key text forms are HostConfigHelp()
// (config.h) and ArenaConfigHelp() (arena.h).
#pragma once

#include <string>

namespace memarena {

// MEMARENA_CONF's host heap keys (HostConfig).
std::string HostConfigDocTable();
// MEMARENA_CONF's drop-in keys (under LD_PRELOAD or the link-time override).
std::string DropinConfigDocTable();
// ArenaConfig's keys (ArenaConfig::Parse, OrtArenaCfg's names).
std::string ArenaConfigDocTable();

}  // namespace memarena
