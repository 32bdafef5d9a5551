// libFuzzer harness: a sequence of host heap operations (allocate any size and alignment,
// free, realloc's two paths: growing a large block in place and moving a block to a new one,
// flush, release) under a 64 MiB ceiling. Invariants: blocks never overlap (each is filled
// with its own tag and checked at free), usable size >= request, alignment holds, a block
// grown in place keeps its address and contents, held <= ceiling, and after freeing
// everything nothing is in use and the page heap's invariants hold.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "host/heap.h"
#include "host/host_api.h"

namespace {

using memarena::fuzz::Check;

constexpr std::size_t kCeiling = std::size_t{64} << 20;
constexpr std::size_t kMaxLive = 256;

struct Block {
  unsigned char* ptr;
  std::size_t bytes;
  unsigned char tag;
};

std::size_t PickSize(memarena::fuzz::FuzzInput& in) {
  switch (in.Below(8)) {
    case 0: return in.Below(17);                      // 0..16
    case 1: return in.Below(1025);                    // small classes
    case 2: return in.Below(256 << 10) + 1;           // every class
    case 3: return in.Below(4 << 20) + 1;             // large blocks
    case 4: return std::size_t{1} << in.Below(48);    // powers of two, some absurd
    case 5: return ~std::size_t{0} - in.Below(4096);  // near SIZE_MAX
    default: return in.Below(4096);
  }
}

void Verify(const Block& b) {
  // Only the first and last bytes: checking every byte of a 4 MiB block per op is too slow.
  const std::size_t n = b.bytes < 64 ? b.bytes : 64;
  for (std::size_t i = 0; i < n; ++i) {
    Check(b.ptr[i] == b.tag, "a block's head was overwritten (overlap)");
    Check(b.ptr[b.bytes - 1 - i] == b.tag, "a block's tail was overwritten (overlap)");
  }
}

// Writes the block's tag over its first and last (up to) 64 bytes, the ones Verify reads.
void Tag(const Block& b) {
  const std::size_t n = b.bytes < 64 ? b.bytes : 64;
  std::memset(b.ptr, b.tag, n);
  if (b.bytes > n) std::memset(b.ptr + b.bytes - n, b.tag, n);
}

// Allocates `bytes` at `alignment` (0: malloc's) and checks what any block must satisfy.
unsigned char* AllocateChecked(std::size_t bytes, std::size_t alignment) {
  void* p = memarena::host::Allocate(bytes, alignment);
  if (p == nullptr) return nullptr;  // ceiling or absurd size: allowed
  const std::size_t effective = alignment == 0 ? 16 : alignment;
  Check(reinterpret_cast<std::uintptr_t>(p) % effective == 0, "misaligned block");
  Check(memarena::host::UsableSize(p) >= bytes, "usable size below the request");
  Check(memarena::host::UsableSize(p) != 0, "a live block has usable size 0");
  return static_cast<unsigned char*>(p);
}

// realloc's in-place path (dropin::Realloc): a block grown in place keeps its address and
// its bytes, and its new tail is its own (Tag writes it; an overlap shows at a later Verify).
void GrowInPlace(Block& b, std::size_t bytes) {
  Verify(b);
  if (!memarena::host::GrowInPlace(b.ptr, bytes)) {
    Verify(b);  // refused: the block is as it was
    return;
  }
  Check(memarena::host::UsableSize(b.ptr) >= bytes, "a grown block's usable size is short");
  Verify(b);  // the head and the old tail stay
  b.bytes = bytes;
  Tag(b);
}

// realloc's moving path: a new block, then the old one freed as realloc frees it.
void Move(Block& b, std::size_t bytes, unsigned char tag) {
  unsigned char* fresh = AllocateChecked(bytes, 0);
  if (fresh == nullptr) return;
  Verify(b);
  memarena::host::FreeMoved(b.ptr, memarena::host::UsableSize(b.ptr));
  b = Block{fresh, bytes, tag};
  Tag(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool ceiling_set = memarena::host::SetCeiling(kCeiling);
  Check(ceiling_set, "the ceiling could not be set");
  memarena::fuzz::FuzzInput in(data, size);
  std::vector<Block> live;
  live.reserve(kMaxLive);
  unsigned char next_tag = 1;
  while (!in.Empty() && memarena::fuzz::CountOperation()) {
    const std::uint32_t op = in.Below(12);
    if (op < 5 && live.size() < kMaxLive) {
      const std::size_t bytes = PickSize(in);
      const std::size_t alignment = in.Below(4) == 0 ? std::size_t{1} << in.Below(24) : 0;
      unsigned char* p = AllocateChecked(bytes, alignment);
      if (p == nullptr) continue;
      live.push_back(Block{p, bytes, next_tag});
      Tag(live.back());
      if (++next_tag == 0) next_tag = 1;
    } else if (op >= 10 && !live.empty()) {
      Block& b = live[in.Below(static_cast<std::uint32_t>(live.size()))];
      // Mostly growth by up to a few MiB (large blocks grow in place only above 256 KiB).
      const std::size_t grown = b.bytes + (in.Below(4) == 0 ? in.Below(1024) : in.Below(4 << 20));
      if (op == 10) {
        GrowInPlace(b, grown);
      } else {
        Move(b, in.Below(2) == 0 ? grown : PickSize(in), next_tag);
        if (++next_tag == 0) next_tag = 1;
      }
    } else if (op < 8 && !live.empty()) {
      const std::size_t i = in.Below(static_cast<std::uint32_t>(live.size()));
      Verify(live[i]);
      memarena::host::Free(live[i].ptr);
      live[i] = live.back();
      live.pop_back();
    } else if (op == 8) {
      memarena::host::FlushThreadCache();
    } else {
      memarena::host::ReleaseUnused();
    }
    // HeldBytes() is the number Stats() reports as held, read without folding every thread
    // cache's and central list's counters and walking the free spans; Stats() is checked
    // once per input, after the free-all.
    Check(memarena::host::HeldBytes() <= kCeiling, "held crossed the ceiling");
  }
  for (const Block& b : live) {
    Verify(b);
    memarena::host::Free(b.ptr);
  }
  memarena::host::FlushThreadCache();
  const memarena::AllocatorStats s = memarena::host::Stats();
  Check(s.bytes_held <= kCeiling, "held crossed the ceiling");
  Check(s.bytes_in_use == 0, "bytes in use after freeing everything");
  Check(memarena::host::CheckHeap() == nullptr, "page heap invariants broken");
  return 0;
}
