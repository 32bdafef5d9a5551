// A program outside the memarena tree, built only against the installed package.
#include <memarena/memarena.h>

// The umbrella header declares only what libmemarena defines; the drop-in-only C API
// (memarena_get_stats, ...) must stay out of a program linked against libmemarena alone.
#if defined(MEMARENA_C_API_H_)
#error "memarena/memarena.h must not include memarena/c_api.h (drop-in libraries only)"
#endif

#include <cstdio>
#include <cstring>

int main() {
  memarena::Allocator& host = memarena::HostAllocator();
  void* p = host.Allocate(1000);
  std::memset(p, 1, 1000);
  const bool ok = host.UsableSize(p) >= 1000 && host.GetStats().bytes_in_use >= 1000;
  host.Deallocate(p);
  std::printf("consumer: %s\n", ok ? "memarena works from the install tree" : "FAILED");
  return ok ? 0 : 1;
}
