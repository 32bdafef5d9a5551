// The drop-in's start-up footprint (issue 12): the library loads nothing but the C library
// (no libstdc++, libfmt, libm or libgcc_s), and a trivial C program under
// LD_PRELOAD=libmemarena_malloc.so peaks within the bar, glibc's peak + 512 KiB
// (docs/dropin.md, "Start-up footprint"; about +300 KiB measured), because what start-up
// touches is packed at the start of the library's segments (checked here on the ELF file).
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "tools/subprocess.h"

namespace memarena::testing {
namespace {

constexpr long kBarKib = 512;  // the bar: glibc's peak + 0.5 MB (measured: +306 median)
constexpr int kRuns = 7;       // per allocator, alternating; the medians are compared

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

TEST(DropinFootprint, ATrivialCProgramPeaksWithin512KiBOfGlibc) {
  std::vector<long> glibc;
  std::vector<long> memarena;
  for (int i = 0; i < kRuns; ++i) {
    glibc.push_back(PeakKib({"LD_PRELOAD=", "MEMARENA_CONF="}));
    memarena.push_back(PeakKib({std::string("LD_PRELOAD=") + MEMARENA_MALLOC_SO, "MEMARENA_CONF="}));
  }
  const long glibc_kib = Median(glibc);
  const long memarena_kib = Median(memarena);
  EXPECT_LE(memarena_kib, glibc_kib + kBarKib)
      << "peak RSS, KiB: glibc " << Show(glibc) << "; memarena " << Show(memarena);
  std::printf("one malloc + one printf, median VmHWM of %d runs: glibc %ld KiB, memarena %ld KiB "
              "(+%ld; the bar is +%ld)\n", kRuns, glibc_kib, memarena_kib,
              memarena_kib - glibc_kib, kBarKib);
}

// A file read at start-up maps the libc code and constants of open, read and the parsing
// around it, which a glibc-malloc program never touches. The host heap used to learn the
// transparent huge page size (two sysfs files) at its first large block: the private C++
// runtime's emergency pool, allocated at load. open_log.so, preloaded ahead of the drop-in,
// reports every open; the program's own read of /proc/self/status shows that it works.
TEST(DropinFootprint, StartUpOpensNoFile) {
  const ProcessResult result =
      RunProcess({MEMARENA_ONE_MALLOC}, {std::string("LD_PRELOAD=") + MEMARENA_OPEN_LOG + " " +
                                             MEMARENA_MALLOC_SO,
                                         "MEMARENA_CONF="});
  ASSERT_EQ(result.status, 0) << result.err;
  std::vector<std::string> opened;
  std::size_t at = 0;
  while ((at = result.err.find("open ", at)) != std::string::npos) {
    const std::size_t end = result.err.find('\n', at);
    opened.push_back(result.err.substr(at + 5, end - at - 5));
    at = end;
  }
  EXPECT_EQ(opened, std::vector<std::string>{"/proc/self/status"}) << result.err;
}

// An ELF shared object mapped read-only for inspection; empty when it cannot be read.
class MappedElf {
 public:
  explicit MappedElf(const char* path) {
    const int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) == 0) {
      size_ = static_cast<std::size_t>(st.st_size);
      void* map = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map != MAP_FAILED) base_ = static_cast<const unsigned char*>(map);
    }
    close(fd);
  }
  ~MappedElf() {
    if (base_ != nullptr) munmap(const_cast<unsigned char*>(base_), size_);
  }
  MappedElf(const MappedElf&) = delete;
  MappedElf& operator=(const MappedElf&) = delete;

  bool ok() const { return base_ != nullptr; }
  const Elf64_Ehdr& header() const { return *reinterpret_cast<const Elf64_Ehdr*>(base_); }
  std::span<const Elf64_Shdr> sections() const {
    return {reinterpret_cast<const Elf64_Shdr*>(base_ + header().e_shoff), header().e_shnum};
  }
  std::span<const Elf64_Phdr> segments() const {
    return {reinterpret_cast<const Elf64_Phdr*>(base_ + header().e_phoff), header().e_phnum};
  }
  const char* StringAt(const Elf64_Shdr& table, std::size_t offset) const {
    return reinterpret_cast<const char*>(base_ + table.sh_offset + offset);
  }
  template <typename T>
  std::span<const T> Entries(const Elf64_Shdr& section) const {
    return {reinterpret_cast<const T*>(base_ + section.sh_offset), section.sh_size / sizeof(T)};
  }
  // The section called `name`, or nullptr.
  const Elf64_Shdr* Section(std::string_view name) const {
    const Elf64_Shdr& names = sections()[header().e_shstrndx];
    for (const Elf64_Shdr& section : sections()) {
      if (name == StringAt(names, section.sh_name)) return &section;
    }
    return nullptr;
  }

 private:
  const unsigned char* base_ = nullptr;
  std::size_t size_ = 0;
};

// The DT_NEEDED entries of an ELF shared object, read from its dynamic section.
std::vector<std::string> NeededLibraries(const MappedElf& elf) {
  std::vector<std::string> needed;
  for (const Elf64_Shdr& section : elf.sections()) {
    if (section.sh_type != SHT_DYNAMIC) continue;
    for (const Elf64_Dyn& entry : elf.Entries<Elf64_Dyn>(section)) {
      if (entry.d_tag == DT_NULL) break;
      if (entry.d_tag == DT_NEEDED) {
        needed.emplace_back(elf.StringAt(elf.sections()[section.sh_link], entry.d_un.d_val));
      }
    }
  }
  return needed;
}

// The address of the exported symbol `name`, or 0.
std::uint64_t ExportedAddress(const MappedElf& elf, std::string_view name) {
  const Elf64_Shdr* dynsym = elf.Section(".dynsym");
  if (dynsym == nullptr) return 0;
  for (const Elf64_Sym& symbol : elf.Entries<Elf64_Sym>(*dynsym)) {
    if (symbol.st_shndx != SHN_UNDEF &&
        name == elf.StringAt(elf.sections()[dynsym->sh_link], symbol.st_name)) {
      return symbol.st_value;
    }
  }
  return 0;
}

// The loadable segment that holds `address`, or nullptr.
const Elf64_Phdr* SegmentOf(const MappedElf& elf, std::uint64_t address) {
  for (const Elf64_Phdr& segment : elf.segments()) {
    if (segment.p_type == PT_LOAD && address >= segment.p_vaddr &&
        address < segment.p_vaddr + segment.p_memsz) {
      return &segment;
    }
  }
  return nullptr;
}

TEST(DropinFootprint, TheLibraryLoadsOnlyTheCLibrary) {
  const MappedElf elf(MEMARENA_MALLOC_SO);
  ASSERT_TRUE(elf.ok()) << "cannot read " << MEMARENA_MALLOC_SO;
  const std::vector<std::string> needed = NeededLibraries(elf);
  ASSERT_FALSE(needed.empty()) << "no DT_NEEDED entry read from " << MEMARENA_MALLOC_SO;
  for (const std::string& library : needed) {
    EXPECT_TRUE(library == "libc.so.6" || library == "ld-linux-x86-64.so.2")
        << MEMARENA_MALLOC_SO << " needs " << library;
  }
}

// The layout that keeps the footprint down (src/override/libmemarena_malloc_startup.ld): a
// read fault in file-backed memory maps up to 16 pages (the kernel's 64 KiB fault-around)
// starting no earlier than the segment, so code and constants that start-up touches must sit
// in the first 64 KiB of their segments. This holds on any machine, where the peak test above
// depends on the kernel.
TEST(DropinFootprint, WhatStartUpTouchesSitsInTheFirstFaultAroundWindowOfItsSegment) {
  constexpr std::uint64_t kFaultAroundBytes = 64 << 10;
  const MappedElf elf(MEMARENA_MALLOC_SO);
  ASSERT_TRUE(elf.ok()) << "cannot read " << MEMARENA_MALLOC_SO;
  for (const char* name : {".text.memarena_startup", ".rodata.memarena_startup"}) {
    const Elf64_Shdr* section = elf.Section(name);
    ASSERT_NE(section, nullptr) << MEMARENA_MALLOC_SO << " has no " << name
                                << " section: was the linker script dropped?";
    const Elf64_Phdr* segment = SegmentOf(elf, section->sh_addr);
    ASSERT_NE(segment, nullptr) << name << " is in no loadable segment";
    EXPECT_LE(section->sh_addr + section->sh_size - segment->p_vaddr, kFaultAroundBytes)
        << name << " ends " << section->sh_addr + section->sh_size - segment->p_vaddr
        << " bytes into its segment";
  }
  // Constants stay out of executable memory.
  EXPECT_EQ(elf.Section(".rodata.memarena_startup")->sh_flags & SHF_EXECINSTR, 0u);
  const Elf64_Shdr* startup = elf.Section(".text.memarena_startup");
  for (const char* entry : {"malloc", "free"}) {
    const std::uint64_t address = ExportedAddress(elf, entry);
    EXPECT_TRUE(address >= startup->sh_addr && address < startup->sh_addr + startup->sh_size)
        << entry << " at " << address << " lies outside .text.memarena_startup";
  }
}

// The code every program runs is a segment of its own, so its first fault maps it and no
// more (the fault-around stops at the mapping's end): 32 KiB of text instead of 64-128 KiB.
// What only busier programs run (threads, remote frees, large blocks) is the next segment,
// which a small single-threaded program never maps.
TEST(DropinFootprint, TheStartUpTextIsASegmentOfItsOwn) {
  const MappedElf elf(MEMARENA_MALLOC_SO);
  ASSERT_TRUE(elf.ok()) << "cannot read " << MEMARENA_MALLOC_SO;
  const Elf64_Shdr* startup = elf.Section(".text.memarena_startup");
  const Elf64_Shdr* busy = elf.Section(".text.memarena_busy");
  const Elf64_Shdr* first_use = elf.Section(".text.memarena_first_use");
  ASSERT_NE(startup, nullptr) << "was the linker script dropped?";
  ASSERT_NE(busy, nullptr) << "was the linker script dropped?";
  ASSERT_NE(first_use, nullptr) << "was the linker script dropped?";
  for (const Elf64_Shdr* section : {startup, busy}) {
    const Elf64_Phdr* segment = SegmentOf(elf, section->sh_addr);
    ASSERT_NE(segment, nullptr);
    EXPECT_EQ(segment->p_vaddr + segment->p_memsz, section->sh_addr + section->sh_size)
        << "a text section shares its segment with what follows "
        << "(libmemarena_malloc_startup.ld's page gaps)";
  }
  EXPECT_NE(SegmentOf(elf, startup->sh_addr), SegmentOf(elf, busy->sh_addr))
      << "the start-up text shares a segment with the busy text";
  EXPECT_NE(SegmentOf(elf, busy->sh_addr), SegmentOf(elf, first_use->sh_addr))
      << "the busy text shares a segment with the rest";
}

// A program maps all of each segment that start-up touches at its first fault there (the
// fault-around fills the mapping), so their page counts are what every program pays:
// - the first, read-only segment (the loader's tables and .rodata.memarena_startup): four
//   pages. An internal-linkage copy of three class tables for the fast paths' RIP-relative
//   addressing had made it six; the tables are now hidden instead, one copy each. The
//   string literals (2.8 KiB of messages) left it for .rodata, and SizeClassInfo's counts
//   became 16-bit (1.2 KiB less): five pages before.
// - the start-up text, the PLT included: eight pages. The MEMARENA_CONF parsing runs only
//   where the variable is set (memarena_conf.h), so it lies elsewhere; with it the segment
//   was 34.0 KiB, nine pages. Calls into libc go through the GOT (-fno-plt, src/
//   CMakeLists.txt), which took 56 of the 73 PLT stubs (0.9 KiB) out of it.
// A function or table that joins the start-up lists costs a page once a segment grows past
// its bound.
TEST(DropinFootprint, TheSegmentsStartUpTouchesKeepTheirPageCounts) {
  constexpr std::uint64_t kPage = 4096;
  const MappedElf elf(MEMARENA_MALLOC_SO);
  ASSERT_TRUE(elf.ok()) << "cannot read " << MEMARENA_MALLOC_SO;
  const struct {
    const char* section;
    std::uint64_t max_pages;
  } kBounds[] = {{".rodata.memarena_startup", 4}, {".text.memarena_startup", 8}};
  for (const auto& bound : kBounds) {
    const Elf64_Shdr* section = elf.Section(bound.section);
    ASSERT_NE(section, nullptr) << "no " << bound.section << ": was the linker script dropped?";
    const Elf64_Phdr* segment = SegmentOf(elf, section->sh_addr);
    ASSERT_NE(segment, nullptr);
    EXPECT_LE(segment->p_memsz, bound.max_pages * kPage)
        << "the segment of " << bound.section << " is " << segment->p_memsz << " bytes, more "
        << "than " << bound.max_pages << " pages: what start-up runs or reads grew (the "
        << "largest: nm -S --size-sort on the library)";
  }
}

// The library's mappings of one kind in a trivial C program ("text" or "rodata" lines of
// `override_one_malloc text`): file offset and resident KiB each, and the program's output.
struct ResidentMapping {
  unsigned long offset;
  long kib;
};
std::vector<ResidentMapping> TrivialProgramsMappings(const char* kind, std::string* out) {
  const ProcessResult result = RunProcess({MEMARENA_ONE_MALLOC, "text"},
                                          {std::string("LD_PRELOAD=") + MEMARENA_MALLOC_SO});
  EXPECT_EQ(result.status, 0) << result.err;
  *out = result.out;
  const std::string format = std::string(kind) + " %lx %ld";
  std::vector<ResidentMapping> mappings;
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    ResidentMapping mapping{};
    if (std::sscanf(line.c_str(), format.c_str(), &mapping.offset, &mapping.kib) == 2) {
      mappings.push_back(mapping);
    }
  }
  return mappings;
}

// The file offset at which the mapping of `section`'s segment starts, as smaps gives it; 0
// when the library or the section cannot be read (offset 0 is the ELF header's segment).
unsigned long MappingOffsetOf(const char* section) {
  const MappedElf elf(MEMARENA_MALLOC_SO);
  const Elf64_Shdr* header = elf.ok() ? elf.Section(section) : nullptr;
  const Elf64_Phdr* segment = header != nullptr ? SegmentOf(elf, header->sh_addr) : nullptr;
  return segment != nullptr ? segment->p_offset & ~std::uint64_t{4095} : 0;
}

// What a trivial C program runs lies in the first segment. This fails when a function on the
// start-up path was renamed or added and so dropped out of the linker script's list: run
// scripts/startup_functions.sh (it regenerates the lists) and relink.
TEST(DropinFootprint, ATrivialCProgramRunsOnlyTheStartUpText) {
  const unsigned long startup = MappingOffsetOf(".text.memarena_startup");
  ASSERT_NE(startup, 0u) << "cannot read .text.memarena_startup of " << MEMARENA_MALLOC_SO;
  std::string out;
  const std::vector<ResidentMapping> mappings = TrivialProgramsMappings("text", &out);
  long startup_kib = -1;
  for (const ResidentMapping& mapping : mappings) {
    if (mapping.offset == startup) {
      startup_kib = mapping.kib;
    } else {
      EXPECT_EQ(mapping.kib, 0) << "the program touched " << mapping.kib << " KiB of the "
                                << "library's code at file offset 0x" << std::hex
                                << mapping.offset << ", outside the start-up segment: rerun "
                                << "scripts/startup_functions.sh\n" << out;
    }
  }
  EXPECT_GE(mappings.size(), 3u) << out;
  EXPECT_GT(startup_kib, 0) << "no resident start-up text: " << out;
}

// The metadata chunk (1 MiB, host/meta_pool.cc) of a trivial C program keeps two pages
// resident: its thread cache, taken from the chunk's top. Its span records (10-12, 64 bytes
// each) come from the reserve beside the small globals of .bss, a page every process writes
// anyway; from the chunk's bottom they made it three pages.
TEST(DropinFootprint, ATrivialCProgramsMetadataChunkHoldsOnlyItsThreadCache) {
  constexpr long kChunkKib = 1024;
  constexpr long kThreadCacheKib = 8;
  const ProcessResult result = RunProcess({MEMARENA_ONE_MALLOC, "anon"},
                                          {std::string("LD_PRELOAD=") + MEMARENA_MALLOC_SO,
                                           "MEMARENA_CONF="});
  ASSERT_EQ(result.status, 0) << result.err;
  int chunks = 0;
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    long size = 0;
    long kib = 0;
    if (std::sscanf(line.c_str(), "anon %ld %ld", &size, &kib) != 2 || size != kChunkKib) continue;
    ++chunks;
    EXPECT_LE(kib, kThreadCacheKib) << "the metadata chunk keeps " << kib << " KiB resident: "
                                    << "small records came from it, not the reserve\n"
                                    << result.out;
  }
  EXPECT_EQ(chunks, 1) << "expected one 1 MiB anonymous mapping, the metadata chunk:\n"
                       << result.out;
}

// The constants that start-up reads sit in the first segment, beside the loader's tables
// (.rodata.memarena_startup), and string literals in .rodata, where only a failure's report
// or the stats read them: a read fault there maps 16 pages (64 KiB) of .rodata at once. This
// fails when start-up reads a literal, as getenv("MEMARENA_CONF") did: give it a name (a
// named array stays with start-up's constants) or list its section in the linker script.
TEST(DropinFootprint, ATrivialCProgramMapsNoneOfTheLibrarysRodata) {
  const unsigned long rodata = MappingOffsetOf(".rodata");
  ASSERT_NE(rodata, 0u) << "cannot read .rodata of " << MEMARENA_MALLOC_SO;
  std::string out;
  bool found = false;
  for (const ResidentMapping& mapping : TrivialProgramsMappings("rodata", &out)) {
    if (mapping.offset != rodata) continue;
    found = true;
    EXPECT_EQ(mapping.kib, 0) << "the program mapped " << mapping.kib << " KiB of the "
                              << "library's .rodata: start-up read a string literal or a "
                              << "constant outside .rodata.memarena_startup\n" << out;
  }
  EXPECT_TRUE(found) << "no mapping of .rodata's segment:\n" << out;
}

// The pages of the library's writable segment (RELRO, .data, .bss) that count in a trivial C
// program's RSS: two of RELRO and two of .data (relocated at load), the pagemap's last page
// (its first-leaf words, which the central lists of the first 30 slots share: the linker
// script starts the pagemap on a page), and the small globals' page. Reads of untouched .bss
// (the empty thread cache, the other classes' lists, the root) map the shared zero page,
// which RSS does not count. The list of stdio's 4 KiB buffer's class sat on the next page
// of lists and made it 7 (CentralCache::ListSlot); the first leaf's root slot, alone on the
// root's 16th page for a heap near 0x7f.., 8 (Pagemap::LeafOf). Each class's central list is
// one line pair (ClassList, central_cache.h): with its transfer batches inline, 320 bytes a
// class, the same program kept 9 pages resident.
TEST(DropinFootprint, ATrivialCProgramKeepsSixPagesOfTheLibrarysDataResident) {
  constexpr long kResidentPages = 6;
  const ProcessResult result = RunProcess({MEMARENA_ONE_MALLOC, "data"},
                                          {std::string("LD_PRELOAD=") + MEMARENA_MALLOC_SO,
                                           "MEMARENA_CONF="});
  ASSERT_EQ(result.status, 0) << result.err;
  long resident = -1;
  long pages = -1;
  const std::size_t line = result.out.find("data ");
  ASSERT_NE(line, std::string::npos) << result.out;
  ASSERT_EQ(std::sscanf(result.out.c_str() + line, "data %ld %ld", &resident, &pages), 2)
      << result.out;
  EXPECT_GT(resident, 0) << result.out;
  EXPECT_LE(resident, kResidentPages)
      << resident << " of the " << pages << " pages of the library's writable segment are "
      << "resident: a field the program writes joined a large zero-initialised object, or one "
      << "moved onto a page of its own";
}

// Loading reads every relocated word of the writable segment, which maps all of its file
// pages (fault-around), so every object with a non-zero byte costs its pages from the start.
// The big ones are all zero (the central lists, the empty thread cache: .bss, touched only
// where used); before, two relocated pointers put the 31 KiB of central lists in .data.
TEST(DropinFootprint, TheLibrarysInitialisedDataStaysSmall) {
  const MappedElf elf(MEMARENA_MALLOC_SO);
  ASSERT_TRUE(elf.ok()) << "cannot read " << MEMARENA_MALLOC_SO;
  const Elf64_Shdr* data = elf.Section(".data");
  ASSERT_NE(data, nullptr) << MEMARENA_MALLOC_SO << " has no .data section";
  EXPECT_LE(data->sh_size, std::uint64_t{8} << 10)
      << ".data is " << data->sh_size << " bytes: a large object with a non-zero member "
      << "(a pointer, a count starting at 1) left .bss";
}

// The small zero-initialised globals every process writes (flags, locks, counters) share
// one page: the large ones (MEMARENA_LARGE_BSS, src/common/large_bss.h) sit ahead of .bss,
// and .bss starts a page (libmemarena_malloc_startup.ld). Between the large ones they
// dirtied two pages more in every process (a one-malloc program: 180 -> 172 KiB anonymous).
TEST(DropinFootprint, TheSmallGlobalsShareOnePage) {
  constexpr std::uint64_t kPageBytes = 4096;
  const MappedElf elf(MEMARENA_MALLOC_SO);
  ASSERT_TRUE(elf.ok()) << "cannot read " << MEMARENA_MALLOC_SO;
  const Elf64_Shdr* large = elf.Section(".bss.memarena_large");
  ASSERT_NE(large, nullptr) << MEMARENA_MALLOC_SO << " has no .bss.memarena_large section: "
                            << "was the linker script dropped?";
  const Elf64_Shdr* bss = elf.Section(".bss");
  ASSERT_NE(bss, nullptr) << MEMARENA_MALLOC_SO << " has no .bss section";
  EXPECT_EQ(large->sh_type, static_cast<std::uint32_t>(SHT_NOBITS));
  EXPECT_LT(large->sh_addr, bss->sh_addr);
  EXPECT_EQ(bss->sh_addr % kPageBytes, 0u) << ".bss starts at " << bss->sh_addr;
  EXPECT_LE(bss->sh_size, kPageBytes)
      << ".bss is " << bss->sh_size << " bytes: a large zero-initialised object without "
      << "MEMARENA_LARGE_BSS (src/common/large_bss.h) pushed the small globals onto a second page";
}

// Exit runs the library's DT_FINI, and compare.sh's peak RSS counts what exit touches: it
// sits in the first fault-around window of the text, beside DT_INIT.
TEST(DropinFootprint, WhatExitRunsSitsInTheFirstFaultAroundWindowOfTheText) {
  constexpr std::uint64_t kFaultAroundBytes = 64 << 10;
  const MappedElf elf(MEMARENA_MALLOC_SO);
  ASSERT_TRUE(elf.ok()) << "cannot read " << MEMARENA_MALLOC_SO;
  std::uint64_t fini = 0;
  for (const Elf64_Shdr& section : elf.sections()) {
    if (section.sh_type != SHT_DYNAMIC) continue;
    for (const Elf64_Dyn& entry : elf.Entries<Elf64_Dyn>(section)) {
      if (entry.d_tag == DT_FINI) fini = entry.d_un.d_ptr;
    }
  }
  ASSERT_NE(fini, 0u) << MEMARENA_MALLOC_SO << " has no DT_FINI";
  const Elf64_Phdr* text = SegmentOf(elf, elf.Section(".text.memarena_startup")->sh_addr);
  ASSERT_NE(text, nullptr);
  EXPECT_TRUE(fini >= text->p_vaddr && fini < text->p_vaddr + kFaultAroundBytes)
      << "DT_FINI at " << fini << ", the text segment starts at " << text->p_vaddr;
}

}  // namespace
}  // namespace memarena::testing
