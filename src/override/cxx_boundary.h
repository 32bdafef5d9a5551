// What operator new hands to the program's C++ code: the new_handler it calls and the
// exception it throws. libmemarena_malloc.so carries a private copy of libstdc++ (for its
// own use: config parsing, stats text); there both must be the program's (its
// std::set_new_handler, its exception runtime, which counts std::uncaught_exceptions), so
// the library switches to them at load. Everywhere else the two runtimes are one.
#pragma once

#include <cstddef>
#include <new>

namespace memarena::dropin {

// Called once at load by libmemarena_malloc.so (private_cxx_runtime.cc).
void UseProgramCxxRuntime() noexcept;

// The new_handler the program installed (std::get_new_handler of its runtime); nullptr when
// none is, or when the process has no C++ runtime (a C program).
std::new_handler CurrentNewHandler() noexcept;

// Throws memarena::OutOfMemory (a std::bad_alloc; what() is the host allocator's diagnostic)
// through the program's runtime: its __cxa_allocate_exception and __cxa_throw. The frames
// between here and the program have no cleanups or handlers, so the program's unwinder
// passes them by their unwind tables alone and never calls this library's personality.
[[noreturn]] void ThrowOutOfMemory(std::size_t bytes, std::size_t alignment);

// The nothrow operator new of the program's runtime, when the library runs on the
// program's runtime and finds it: the standard's definition (the global throwing operator
// new, ours, inside a catch), so an exception from the program's new_handler is caught by
// the runtime that threw it. False, and `result` untouched, otherwise.
bool NothrowNewInProgramRuntime(std::size_t bytes, std::size_t alignment, void*& result) noexcept;

}  // namespace memarena::dropin
