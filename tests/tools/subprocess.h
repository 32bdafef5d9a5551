// RunProcess: runs a program in a child process and returns its exit status and its stdout
// and stderr, for the end-to-end tests of the CLI and the gtest guard.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace memarena::testing {

struct ProcessResult {
  int status = -1;     // exit code, or 128 + signal
  std::string out;     // stdout
  std::string err;     // stderr
};

// `env` entries are NAME=VALUE added to (or replacing in) the current environment;
// "NAME=" with nothing after '=' removes NAME.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env = {});

}  // namespace memarena::testing
