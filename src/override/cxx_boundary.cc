// The program's C++ runtime, looked up when operator new fails (cold: never on the fast
// path): its new_handler, its exception machinery, its nothrow operator new. See
// cxx_boundary.h.
#include "override/cxx_boundary.h"

#include <atomic>
#include <typeinfo>

#include "common/inline_out_of_memory.h"
#include "host/host_api.h"
#include "platform/os.h"

namespace memarena::dropin {
namespace {

constinit std::atomic<bool> g_program_runtime{false};

constexpr const char* kProgramRuntime = "libstdc++.so.6";

// libstdc++ as the program loaded it, also under a dlopen'ed library's RTLD_LOCAL; then any
// runtime in the global scope (libc++abi has the same Itanium ABI names). This library's
// own copy is never found: its symbols are local.
void* FindInProgramRuntime(const char* name) noexcept {
  if (void* symbol = platform::FindSymbolInLoadedLibrary(kProgramRuntime, name)) return symbol;
  return platform::FindSymbol(name);
}

using GetNewHandlerFn = std::new_handler (*)() noexcept;
using AllocateExceptionFn = void* (*)(std::size_t) noexcept;
using ThrowFn = void (*)(void*, std::type_info*, void (*)(void*));
using NothrowNewFn = void* (*)(std::size_t, const std::nothrow_t&) noexcept;
using AlignedNothrowNewFn = void* (*)(std::size_t, std::align_val_t,
                                      const std::nothrow_t&) noexcept;

// The host allocator's diagnostic inside the exception object: it is built where the heap
// just failed, so neither the text nor the exception may need it (libstdc++ serves the
// object itself from its emergency pool when malloc fails).
class HeapOutOfMemory final : public common::InlineOutOfMemory {
 public:
  HeapOutOfMemory(std::size_t bytes, std::size_t alignment) noexcept {
    host::DescribeFailure(text(), bytes, alignment);
  }
};

// Out of line so that ThrowOutOfMemory holds no temporary to destroy: its frame must have
// no cleanup for the program's unwinder to run.
[[gnu::noinline]] void ConstructOutOfMemory(void* object, std::size_t bytes,
                                            std::size_t alignment) noexcept {
  new (object) HeapOutOfMemory(bytes, alignment);
}

void DestroyOutOfMemory(void* object) noexcept {
  static_cast<HeapOutOfMemory*>(object)->~HeapOutOfMemory();
}

// This library's own runtime: the static link form, the tests, or a program whose runtime
// cannot be found (one linked with -static-libstdc++ exports none of it).
[[noreturn, gnu::noinline]] void ThrowWithOwnRuntime(std::size_t bytes, std::size_t alignment) {
  throw HeapOutOfMemory(bytes, alignment);
}

}  // namespace

void UseProgramCxxRuntime() noexcept { g_program_runtime.store(true, std::memory_order_relaxed); }

std::new_handler CurrentNewHandler() noexcept {
  if (!g_program_runtime.load(std::memory_order_relaxed)) return std::get_new_handler();
  const auto get =
      reinterpret_cast<GetNewHandlerFn>(FindInProgramRuntime("_ZSt15get_new_handlerv"));
  return get != nullptr ? get() : nullptr;
}

void ThrowOutOfMemory(std::size_t bytes, std::size_t alignment) {
  if (g_program_runtime.load(std::memory_order_relaxed)) {
    const auto allocate =
        reinterpret_cast<AllocateExceptionFn>(FindInProgramRuntime("__cxa_allocate_exception"));
    const auto raise = reinterpret_cast<ThrowFn>(FindInProgramRuntime("__cxa_throw"));
    if (allocate != nullptr && raise != nullptr) {
      // The program's runtime allocates, counts and frees the exception; the type_info and
      // the destructor are this library's (a catch matches a type by its name).
      void* object = allocate(sizeof(HeapOutOfMemory));
      ConstructOutOfMemory(object, bytes, alignment);
      raise(object, const_cast<std::type_info*>(&typeid(HeapOutOfMemory)), &DestroyOutOfMemory);
      __builtin_unreachable();
    }
  }
  ThrowWithOwnRuntime(bytes, alignment);
}

bool NothrowNewInProgramRuntime(std::size_t bytes, std::size_t alignment,
                                void*& result) noexcept {
  if (!g_program_runtime.load(std::memory_order_relaxed)) return false;
  if (alignment <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
    const auto nothrow_new = reinterpret_cast<NothrowNewFn>(
        platform::FindSymbolInLoadedLibrary(kProgramRuntime, "_ZnwmRKSt9nothrow_t"));
    if (nothrow_new == nullptr) return false;
    result = nothrow_new(bytes, std::nothrow);
    return true;
  }
  const auto aligned_nothrow_new = reinterpret_cast<AlignedNothrowNewFn>(
      platform::FindSymbolInLoadedLibrary(kProgramRuntime, "_ZnwmSt11align_val_tRKSt9nothrow_t"));
  if (aligned_nothrow_new == nullptr) return false;
  result = aligned_nothrow_new(bytes, static_cast<std::align_val_t>(alignment), std::nothrow);
  return true;
}

}  // namespace memarena::dropin
