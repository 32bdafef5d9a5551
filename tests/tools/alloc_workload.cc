// A small program for `memarena run` tests: 8 MiB in 128 KiB blocks, freed, then small
// objects; prints how many allocations failed and exits with status 3.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main() {
  int failed = 0;
  std::vector<void*> blocks;
  blocks.reserve(64);
  for (int i = 0; i < 64; ++i) {
    void* p = std::malloc(128 * 1024);
    if (p == nullptr) {
      ++failed;
      continue;
    }
    std::memset(p, i, 4096);
    blocks.push_back(p);
  }
  for (void* p : blocks) std::free(p);
  for (int i = 0; i < 1000; ++i) std::free(std::malloc(static_cast<std::size_t>(16 + i)));
  std::printf("failed %d\n", failed);
  return 3;
}
