// The rows of ArenaConfig's keys (one per key: name, value, help, parser, printer), for the
// docs table generated from them (tests/common/config_docs_test).
#pragma once

#include <span>

#include "common/config_table.h"
#include "memarena/arena.h"

namespace memarena::arena {

std::span<const common::ConfigRow<ArenaConfig>> ArenaRows();

}  // namespace memarena::arena
