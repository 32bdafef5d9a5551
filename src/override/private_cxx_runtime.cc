// Linked into libmemarena_malloc.so only, which carries its own copy of libstdc++ (see
// src/override/CMakeLists.txt): at load, operator new's failure path switches to the
// program's C++ runtime for what it hands to the program (cxx_boundary.h).
#include "override/cxx_boundary.h"

namespace {
__attribute__((constructor)) void UseTheProgramsCxxRuntime() {
  memarena::dropin::UseProgramCxxRuntime();
}
}  // namespace
