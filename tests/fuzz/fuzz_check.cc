// What the fuzz harnesses share at run time: the broken-invariant exit and the op counter.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_input.h"

namespace memarena::fuzz {

bool CountOperation() {
  static std::uint64_t operations = 0;
  if ((++operations & ((std::uint64_t{1} << 20) - 1)) == 0) {
    std::fprintf(stderr, "fuzz: %llu operations checked\n",
                 static_cast<unsigned long long>(operations));
  }
  return true;
}

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

}  // namespace memarena::fuzz
