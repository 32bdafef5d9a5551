// Run under LD_PRELOAD with heap_profile set: allocates about 4 MiB through each of the C
// and C++ allocation functions (realloc both moving a small block and growing a large one)
// and keeps every block to exit, so that the exit profile holds samples of each way.
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

namespace {

constexpr int kBlocks = 1024;
constexpr std::size_t kBytes = 4096;
std::vector<void*> g_kept;

void Keep(void* block) {
  if (block == nullptr) {
    std::fprintf(stderr, "allocate_every_way: an allocation failed\n");
    std::exit(1);
  }
  g_kept.push_back(block);
}

void* PosixMemalign(std::size_t alignment, std::size_t bytes) {
  void* block = nullptr;
  return posix_memalign(&block, alignment, bytes) == 0 ? block : nullptr;
}

}  // namespace

int main() {
  g_kept.reserve(16 * kBlocks);
  for (int i = 0; i < kBlocks; ++i) {
    Keep(std::malloc(kBytes));
    Keep(std::calloc(16, kBytes / 16));
    Keep(std::realloc(std::malloc(100), kBytes));               // a small block moves
    Keep(reallocarray(nullptr, 16, kBytes / 16));
    Keep(std::aligned_alloc(64, kBytes));
    Keep(memalign(256, kBytes));
    Keep(PosixMemalign(128, kBytes));
    Keep(valloc(kBytes));
    Keep(pvalloc(kBytes - 1));
    Keep(::operator new(kBytes));
    Keep(new char[kBytes]);
    Keep(::operator new(kBytes, std::nothrow));
    Keep(::operator new(kBytes, std::align_val_t{512}));
  }
  for (int i = 0; i < 16; ++i) {
    Keep(std::realloc(std::malloc(300 << 10), 600 << 10));  // a page run grows or moves
  }
  std::printf("kept %zu blocks\n", g_kept.size());
  return 0;
}
