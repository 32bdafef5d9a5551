// Function names for code addresses, from the ELF symbol tables of the files the code was
// loaded from (.symtab, so functions with internal linkage are named too; .dynsym when the
// file was stripped). For the growth monitor's and profile-diff's "sites that grew".
#pragma once

#include <cstdint>
#include <string>

namespace memarena::platform {

// The demangled name of the function that contains `pc` in this process ("" when no loaded
// file has a symbol there). Allocates; reads and caches each file's symbols on first use.
std::string SymbolizeAddress(const void* pc);

// The demangled name of the function at `file_offset` bytes into the ELF file `path` (a
// code address as a /proc/PID/maps line relocates it); "" when the file is not a readable
// 64-bit ELF file or has no function there.
std::string SymbolizeFileOffset(const std::string& path, std::uint64_t file_offset);

}  // namespace memarena::platform
