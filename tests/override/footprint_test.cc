// The drop-in's start-up footprint (issue 12): the library loads nothing but the C library
// (no libstdc++, libfmt, libm or libgcc_s), and a trivial C program under
// LD_PRELOAD=libmemarena_malloc.so peaks within a guard of glibc's peak (docs/dropin.md,
// "Start-up footprint"). The bar is 512 KiB; the library is at about +500-640 KiB
// today (its own text, touched by the first allocation, is most of it), so the guard holds
// what was won and fails on any return of the C++ runtime (which cost 1.9 MiB).
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tools/subprocess.h"

namespace memarena::testing {
namespace {

constexpr long kBarKib = 512;    // the bar: glibc's peak + 0.5 MB (not met yet)
constexpr long kGuardKib = 896;  // what this test holds (measured: +504 to +636)
constexpr int kRuns = 7;         // per allocator, alternating; the medians are compared

// The program's own VmHWM report; -1 when it failed.
long PeakKib(const std::vector<std::string>& env) {
  const ProcessResult result = RunProcess({MEMARENA_ONE_MALLOC}, env);
  long kib = -1;
  if (result.status != 0 || std::sscanf(result.err.c_str(), "VmHWM %ld", &kib) != 1) {
    ADD_FAILURE() << "one_malloc failed: status " << result.status << ", stderr: " << result.err;
    return -1;
  }
  return kib;
}

long Median(std::vector<long> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::string Show(const std::vector<long>& values) {
  std::string out;
  for (long v : values) out += std::to_string(v) + " ";
  return out;
}

TEST(DropinFootprint, ATrivialCProgramPeaksWithin896KiBOfGlibc) {
  std::vector<long> glibc;
  std::vector<long> memarena;
  for (int i = 0; i < kRuns; ++i) {
    glibc.push_back(PeakKib({"LD_PRELOAD=", "MEMARENA_CONF="}));
    memarena.push_back(PeakKib({std::string("LD_PRELOAD=") + MEMARENA_MALLOC_SO, "MEMARENA_CONF="}));
  }
  const long glibc_kib = Median(glibc);
  const long memarena_kib = Median(memarena);
  EXPECT_LE(memarena_kib, glibc_kib + kGuardKib)
      << "peak RSS, KiB: glibc " << Show(glibc) << "; memarena " << Show(memarena);
  std::printf("one malloc + one printf, median VmHWM of %d runs: glibc %ld KiB, memarena %ld KiB "
              "(+%ld; the issue's bar is +%ld)\n", kRuns, glibc_kib, memarena_kib,
              memarena_kib - glibc_kib, kBarKib);
}

// The DT_NEEDED entries of an ELF shared object, read from its dynamic section.
std::vector<std::string> NeededLibraries(const char* path) {
  std::vector<std::string> needed;
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return needed;
  struct stat st {};
  fstat(fd, &st);
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return needed;
  const auto* base = static_cast<const unsigned char*>(map);
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(base);
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(base + header->e_shoff);
  for (int i = 0; i < header->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_DYNAMIC) continue;
    const char* strings = reinterpret_cast<const char*>(base + sections[sections[i].sh_link].sh_offset);
    const auto* entry = reinterpret_cast<const Elf64_Dyn*>(base + sections[i].sh_offset);
    for (; entry->d_tag != DT_NULL; ++entry) {
      if (entry->d_tag == DT_NEEDED) needed.emplace_back(strings + entry->d_un.d_val);
    }
  }
  munmap(map, size);
  return needed;
}

TEST(DropinFootprint, TheLibraryLoadsOnlyTheCLibrary) {
  const std::vector<std::string> needed = NeededLibraries(MEMARENA_MALLOC_SO);
  ASSERT_FALSE(needed.empty()) << "no DT_NEEDED entry read from " << MEMARENA_MALLOC_SO;
  for (const std::string& library : needed) {
    EXPECT_TRUE(library == "libc.so.6" || library == "ld-linux-x86-64.so.2")
        << MEMARENA_MALLOC_SO << " needs " << library;
  }
}

}  // namespace
}  // namespace memarena::testing
