// The process's memory mappings from /proc/self/maps, for tests that ask which mapping
// holds an address (the host heap's reservations, its pagemap leaves).
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace memarena::testing {

// Calls `visit(lo, hi)` for each mapping [lo, hi), in the file's order (ascending).
template <typename Visit>
void ForEachMapping(Visit&& visit) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::uintptr_t lo = 0;
    std::uintptr_t hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2) visit(lo, hi);
  }
}

}  // namespace memarena::testing
