// Linux side of platform/symbolize.h: dladdr finds the file and load base of an address;
// the file's section headers give its symbol table, its program headers the mapping from
// file offsets to link-time addresses.
#include "platform/symbolize.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace memarena::platform {
namespace {

struct Function {
  std::uint64_t start = 0;
  std::uint64_t size = 0;
  std::string name;  // mangled
};

struct Segment {
  std::uint64_t offset = 0;
  std::uint64_t vaddr = 0;
  std::uint64_t bytes = 0;
};

// One file's functions (sorted by start) and loadable segments.
struct ElfSymbols {
  std::vector<Function> functions;
  std::vector<Segment> segments;
  std::uint64_t first_vaddr = 0;  // the lowest loadable address, page-aligned down

  std::string NameAt(std::uint64_t vaddr) const {
    auto it = std::upper_bound(functions.begin(), functions.end(), vaddr,
                               [](std::uint64_t a, const Function& f) { return a < f.start; });
    if (it == functions.begin()) return {};
    --it;
    if (vaddr >= it->start + std::max<std::uint64_t>(it->size, 1)) return {};
    return it->name;
  }
};

// The section's table lies inside the file: `count` entries of `entry` bytes at `offset`.
bool Inside(std::size_t file_bytes, std::uint64_t offset, std::uint64_t count, std::uint64_t entry) {
  return entry != 0 && offset <= file_bytes && count <= (file_bytes - offset) / entry;
}

void ReadFunctions(const unsigned char* file, std::size_t bytes, const Elf64_Ehdr& header,
                   ElfSymbols& out) {
  if (!Inside(bytes, header.e_shoff, header.e_shnum, sizeof(Elf64_Shdr))) return;
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(file + header.e_shoff);
  for (const std::uint32_t wanted : {std::uint32_t{SHT_SYMTAB}, std::uint32_t{SHT_DYNSYM}}) {
    for (std::size_t i = 0; i < header.e_shnum; ++i) {
      const Elf64_Shdr& table = sections[i];
      if (table.sh_type != wanted || table.sh_link >= header.e_shnum) continue;
      const Elf64_Shdr& names = sections[table.sh_link];
      if (!Inside(bytes, table.sh_offset, table.sh_size / sizeof(Elf64_Sym), sizeof(Elf64_Sym)) ||
          !Inside(bytes, names.sh_offset, names.sh_size, 1)) {
        continue;
      }
      const auto* symbols = reinterpret_cast<const Elf64_Sym*>(file + table.sh_offset);
      const char* strings = reinterpret_cast<const char*>(file + names.sh_offset);
      for (std::size_t s = 0; s < table.sh_size / sizeof(Elf64_Sym); ++s) {
        const Elf64_Sym& sym = symbols[s];
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 ||
            sym.st_name >= names.sh_size) {
          continue;
        }
        const char* name = strings + sym.st_name;
        out.functions.push_back(
            {sym.st_value, sym.st_size, std::string(name, strnlen(name, names.sh_size - sym.st_name))});
      }
    }
    if (!out.functions.empty()) break;  // .symtab found: .dynsym adds nothing
  }
  std::sort(out.functions.begin(), out.functions.end(),
            [](const Function& a, const Function& b) { return a.start < b.start; });
}

void ReadSegments(const unsigned char* file, std::size_t bytes, const Elf64_Ehdr& header,
                  ElfSymbols& out) {
  if (!Inside(bytes, header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr))) return;
  const auto* programs = reinterpret_cast<const Elf64_Phdr*>(file + header.e_phoff);
  bool first = true;
  for (std::size_t i = 0; i < header.e_phnum; ++i) {
    const Elf64_Phdr& p = programs[i];
    if (p.p_type != PT_LOAD) continue;
    out.segments.push_back({p.p_offset, p.p_vaddr, p.p_filesz});
    const std::uint64_t page_start = p.p_vaddr & ~(std::uint64_t{p.p_align > 1 ? p.p_align : 1} - 1);
    if (first || page_start < out.first_vaddr) out.first_vaddr = page_start;
    first = false;
  }
}

std::shared_ptr<const ElfSymbols> Load(const std::string& path) {
  auto symbols = std::make_shared<ElfSymbols>();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return symbols;
  struct stat info {};
  const bool sized = fstat(fd, &info) == 0 && info.st_size >= static_cast<off_t>(sizeof(Elf64_Ehdr));
  void* map = sized ? mmap(nullptr, static_cast<std::size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0)
                    : MAP_FAILED;
  close(fd);
  if (map == MAP_FAILED) return symbols;
  const auto* file = static_cast<const unsigned char*>(map);
  const auto bytes = static_cast<std::size_t>(info.st_size);
  Elf64_Ehdr header;
  std::memcpy(&header, file, sizeof header);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 && header.e_ident[EI_CLASS] == ELFCLASS64) {
    ReadSegments(file, bytes, header, *symbols);
    ReadFunctions(file, bytes, header, *symbols);
  }
  munmap(map, bytes);
  return symbols;
}

// Files stay cached: a program symbolizes the same few files every monitor interval.
std::shared_ptr<const ElfSymbols> SymbolsOf(const std::string& path) {
  static std::mutex mutex;
  static auto* cache = new std::map<std::string, std::shared_ptr<const ElfSymbols>>;
  {
    std::lock_guard<std::mutex> hold(mutex);
    if (auto it = cache->find(path); it != cache->end()) return it->second;
  }
  std::shared_ptr<const ElfSymbols> loaded = Load(path);  // outside the lock: file I/O
  std::lock_guard<std::mutex> hold(mutex);
  return cache->emplace(path, std::move(loaded)).first->second;
}

std::string Demangle(const std::string& name) {
  if (name.empty()) return name;
  int status = 0;
  char* plain = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || plain == nullptr) return name;
  std::string out(plain);
  std::free(plain);
  return out;
}

}  // namespace

std::string SymbolizeAddress(const void* pc) {
  Dl_info info{};
  if (dladdr(pc, &info) == 0 || info.dli_fname == nullptr || info.dli_fbase == nullptr) return {};
  // For the main program glibc reports argv[0], which may be relative to another directory;
  // /proc/self/exe is the file itself.
  const bool main_program = info.dli_fname[0] == '\0' ||
                            std::strcmp(info.dli_fname, program_invocation_name) == 0;
  const std::shared_ptr<const ElfSymbols> symbols =
      SymbolsOf(main_program ? "/proc/self/exe" : info.dli_fname);
  const std::uint64_t vaddr = reinterpret_cast<std::uintptr_t>(pc) -
                              reinterpret_cast<std::uintptr_t>(info.dli_fbase) + symbols->first_vaddr;
  return Demangle(symbols->NameAt(vaddr));
}

std::string SymbolizeFileOffset(const std::string& path, std::uint64_t file_offset) {
  const std::shared_ptr<const ElfSymbols> symbols = SymbolsOf(path);
  for (const Segment& s : symbols->segments) {
    if (file_offset >= s.offset && file_offset - s.offset < s.bytes) {
      return Demangle(symbols->NameAt(file_offset - s.offset + s.vaddr));
    }
  }
  return {};
}

}  // namespace memarena::platform
