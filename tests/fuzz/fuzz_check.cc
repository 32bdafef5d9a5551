// What the fuzz harnesses share at run time: the broken-invariant exit and the op counter.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_input.h"

namespace memarena::fuzz {
namespace {

std::uint64_t operations = 0;

void PrintTotal() {
  std::fprintf(stderr, "fuzz: %llu operations checked in all\n",
               static_cast<unsigned long long>(operations));
}

}  // namespace

bool CountOperations(std::uint64_t n) {
  // libFuzzer ends a timed run with exit(), so the total reaches the log; an interrupted
  // run leaves the last running total below.
  static const bool total_at_exit = std::atexit(PrintTotal) == 0;
  static_cast<void>(total_at_exit);
  const std::uint64_t before = operations;
  operations += n;
  if ((before >> 20) != (operations >> 20)) {
    std::fprintf(stderr, "fuzz: %llu operations checked\n",
                 static_cast<unsigned long long>(operations));
  }
  return true;
}

bool CountOperation() { return CountOperations(1); }

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

}  // namespace memarena::fuzz
