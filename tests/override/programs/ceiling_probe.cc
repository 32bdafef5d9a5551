// Run under LD_PRELOAD=libmemarena_malloc.so MEMARENA_CONF=ceiling:256MiB: allocates past
// the ceiling and checks that malloc returns NULL with ENOMEM, new throws std::bad_alloc,
// nothrow new returns nullptr, and that everything works again once memory is freed.
#include <dlfcn.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Results go through a volatile so the compiler cannot elide the allocations it sees freed.
char* volatile g_sink = nullptr;

int Fail(const char* what) {
  std::printf("ceiling-probe: FAILED: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  auto ceiling = reinterpret_cast<std::size_t (*)()>(dlsym(RTLD_DEFAULT, "memarena_ceiling"));
  if (ceiling == nullptr) return Fail("memarena is not preloaded");
  if (ceiling() != 256 * kMiB) return Fail("MEMARENA_CONF=ceiling:256MiB was not applied");

  std::vector<void*> blocks;
  blocks.reserve(1024);
  int malloc_errno = 0;
  while (blocks.size() < 1024) {
    errno = 0;
    void* p = std::malloc(kMiB);
    if (p == nullptr) {
      malloc_errno = errno;
      break;
    }
    std::memset(p, 7, kMiB);
    blocks.push_back(p);
  }
  if (blocks.size() == 1024) return Fail("1 GiB allocated under a 256 MiB ceiling");
  if (blocks.size() < 200) return Fail("stopped far below the ceiling");
  if (malloc_errno != ENOMEM) return Fail("malloc past the ceiling did not set ENOMEM");

  bool threw = false;
  try {
    g_sink = new char[64 * kMiB];
    delete[] g_sink;
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  if (!threw) return Fail("new past the ceiling did not throw std::bad_alloc");
  g_sink = new (std::nothrow) char[64 * kMiB];
  if (g_sink != nullptr) return Fail("nothrow new returned memory");
  if (std::calloc(64, kMiB) != nullptr) return Fail("calloc past the ceiling returned memory");

  for (void* p : blocks) std::free(p);
  // Keeps working: the same amount fits again, in other shapes.
  std::vector<char*> again;
  for (int i = 0; i < 200; ++i) again.push_back(new char[kMiB]);
  for (char* p : again) delete[] p;
  void* big = std::malloc(128 * kMiB);
  if (big == nullptr) return Fail("no recovery after freeing");
  std::free(big);
  std::printf("ceiling-probe: NULL/ENOMEM from malloc, bad_alloc from new, then recovered\n");
  return 0;
}
