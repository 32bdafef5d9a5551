// Reading heap profiles (gperftools' text format, as memarena::WriteHeapProfile writes
// them) with each stack's addresses made position-independent ("module+0xoffset" from the
// profile's MAPPED_LIBRARIES), so profiles of two processes of one program can be compared.
#pragma once

#include <map>
#include <string>

namespace memarena::tools {

struct StackUsage {
  long long objects = 0;
  long long bytes = 0;
};

// Live bytes by stack, keyed by the stack's frames joined by spaces. Throws
// std::runtime_error naming the file and line when it is not a heap profile.
std::map<std::string, StackUsage> ReadHeapProfile(const std::string& path);

}  // namespace memarena::tools
