// Run under LD_PRELOAD with a 64 MiB ceiling: takes 62 MiB in 1 MiB blocks with malloc and
// keeps them to exit, so the watermark lines, the exit heap profile and the Prometheus
// file of the drop-in have something to show.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

[[gnu::noinline]] void* TakeOneMiB() {
  void* block = std::malloc(1 << 20);
  if (block != nullptr) std::memset(block, 1, 1 << 20);
  return block;
}

}  // namespace

int main() {
  std::vector<void*> blocks;
  blocks.reserve(64);
  for (int i = 0; i < 62; ++i) {
    void* block = TakeOneMiB();
    if (block == nullptr) {
      std::fprintf(stderr, "grow_to_ceiling: malloc failed at %d MiB\n", i);
      return 1;
    }
    blocks.push_back(block);
  }
  std::printf("holding %zu MiB\n", blocks.size());
  return 0;
}
