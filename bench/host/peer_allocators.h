// The peer allocators host_bench measures beside memarena in the same process: gperftools
// tcmalloc and mimalloc, loaded with dlopen (RTLD_LOCAL | RTLD_DEEPBIND, so they never
// replace this process's malloc) and called through their own entry points (tc_malloc /
// tc_free, mi_malloc / mi_free). jemalloc is left out: Debian's build uses initial-exec TLS
// and cannot be dlopened ("cannot allocate memory in static TLS block").
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <string>

namespace memarena::bench {

struct PeerFunctions {
  void* (*allocate)(std::size_t) = nullptr;
  void (*free)(void*) = nullptr;
  std::string error;  // why the peer is unavailable; empty when loaded
};

// Loads `library` once and looks up its two entry points; the error says which step failed
// (the Debian packages are libgoogle-perftools4 and libmimalloc2.0, see scripts/bootstrap.sh).
inline PeerFunctions LoadPeer(const char* library, const char* allocate, const char* free) {
  PeerFunctions peer;
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (handle == nullptr) {
    peer.error = std::string(library) + " could not be loaded: " + dlerror();
    return peer;
  }
  peer.allocate = reinterpret_cast<void* (*)(std::size_t)>(dlsym(handle, allocate));
  peer.free = reinterpret_cast<void (*)(void*)>(dlsym(handle, free));
  if (peer.allocate == nullptr || peer.free == nullptr) {
    peer.error = std::string(library) + " has no " + allocate + "/" + free;
    peer.allocate = nullptr;
  }
  return peer;
}

struct TcmallocNames {
  static constexpr const char* kLibrary = "libtcmalloc_minimal.so.4";
  static constexpr const char* kAllocate = "tc_malloc";
  static constexpr const char* kFree = "tc_free";
};

struct MimallocNames {
  static constexpr const char* kLibrary = "libmimalloc.so.2";
  static constexpr const char* kAllocate = "mi_malloc";
  static constexpr const char* kFree = "mi_free";
};

// An allocator policy for the benchmark templates (Allocate / Free / Available).
template <typename Names>
struct Peer {
  static const PeerFunctions& Functions() {
    static const PeerFunctions functions =
        LoadPeer(Names::kLibrary, Names::kAllocate, Names::kFree);
    return functions;
  }
  static void* Allocate(std::size_t n) { return Functions().allocate(n); }
  static void Free(void* p) { Functions().free(p); }
  static const std::string& Unavailable() { return Functions().error; }
};

using Tcmalloc = Peer<TcmallocNames>;
using Mimalloc = Peer<MimallocNames>;

}  // namespace memarena::bench
