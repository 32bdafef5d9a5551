// Parses heap-profile text: the header, one "objects: bytes [objects: bytes] @ frames" line
// per stack, and the /proc/self/maps copy after MAPPED_LIBRARIES that relocates frames.
#include "heap_profile_file.h"

#include <fmt/format.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace memarena::tools {
namespace {

struct Mapping {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint64_t offset = 0;
  std::string path;
};

Mapping ParseMapping(const std::string& line) {
  Mapping m;
  char perms[8] = {};
  int path_at = 0;
  if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &m.start,
                  &m.end, perms, &m.offset, &path_at) >= 4 &&
      path_at > 0) {
    m.path = line.substr(static_cast<std::size_t>(path_at));
  }
  return m;
}

std::string Relocate(std::uint64_t address, const std::vector<Mapping>& maps) {
  for (const Mapping& m : maps) {
    if (address >= m.start && address < m.end && !m.path.empty()) {
      return fmt::format("{}+{:#x}", m.path, address - m.start + m.offset);
    }
  }
  return fmt::format("{:#x}", address);
}

}  // namespace

std::map<std::string, StackUsage> ReadHeapProfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", path));
  std::string line;
  std::getline(in, line);
  if (line.rfind("heap profile:", 0) != 0) {
    throw std::runtime_error(fmt::format(
        "{}:1: not a heap profile (expected a first line starting 'heap profile:', as "
        "memarena::WriteHeapProfile and gperftools write)", path));
  }
  std::vector<std::pair<StackUsage, std::vector<std::uint64_t>>> buckets;
  std::vector<Mapping> maps;
  bool in_maps = false;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    if (line == "MAPPED_LIBRARIES:") {
      in_maps = true;
      continue;
    }
    if (in_maps) {
      maps.push_back(ParseMapping(line));
      continue;
    }
    const std::size_t at = line.find('@');
    StackUsage usage;
    if (at == std::string::npos ||
        std::sscanf(line.c_str(), " %lld: %lld", &usage.objects, &usage.bytes) != 2) {
      throw std::runtime_error(fmt::format(
          "{}:{}: not a stack line (expected 'OBJECTS: BYTES [OBJECTS: BYTES] @ 0xADDR ...')",
          path, number));
    }
    std::istringstream frames(line.substr(at + 1));
    std::vector<std::uint64_t> addresses;
    std::string frame;
    while (frames >> frame) addresses.push_back(std::stoull(frame, nullptr, 16));
    buckets.emplace_back(usage, std::move(addresses));
  }
  std::map<std::string, StackUsage> stacks;
  for (const auto& [usage, addresses] : buckets) {
    std::string key;
    for (const std::uint64_t a : addresses) key += (key.empty() ? "" : " ") + Relocate(a, maps);
    StackUsage& total = stacks[key];
    total.objects += usage.objects;
    total.bytes += usage.bytes;
  }
  return stacks;
}

}  // namespace memarena::tools
