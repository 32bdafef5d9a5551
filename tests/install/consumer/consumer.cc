// A program outside the memarena tree, built only against the installed package.
#include <memarena/memarena.h>

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
