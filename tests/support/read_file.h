// A whole text file as a string ("" when it cannot be read), for tests that check what a
// program or the library wrote.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace memarena::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace memarena::testing
