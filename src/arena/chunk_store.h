// The BFC bookkeeping of one arena: chunks linked in address order inside regions, the 21
// power-of-two bins of free chunks ordered by (size, address), split, merge and coalesce.
// Not thread-safe; BfcArena locks around it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "memarena/arena.h"

namespace memarena::arena {

inline constexpr std::size_t kMinAllocationSize = 256;
inline constexpr int kNumBins = 21;

using ChunkHandle = std::size_t;
inline constexpr ChunkHandle kInvalidChunk = ~ChunkHandle{0};

// Requests round up to a multiple of 256 B (ORT's RoundedBytes); 0 stays 0.
constexpr std::size_t RoundedBytes(std::size_t bytes) noexcept {
  return (bytes + kMinAllocationSize - 1) / kMinAllocationSize * kMinAllocationSize;
}

// Bin b holds chunk sizes in [256 * 2^b, 256 * 2^(b+1)); the last bin has no upper bound.
int BinForSize(std::size_t size) noexcept;

// Invariants (ChunkStore::CheckInvariants checks each):
//   the chunks of a region, followed through next from head to tail, tile it in address
//   order: chunk.addr + chunk.size == next chunk's addr, and prev links back
//   sum of chunk.size over a region's chunks == region.size == sum of its pieces' sizes
//   bin == BinForSize(size) when a free chunk is in a bin; bin == -1 when in use (or free
//   but left out of the bins), and every bin entry names a chunk with that bin and size
struct Chunk {
  std::uintptr_t addr = 0;
  std::size_t size = 0;
  std::size_t requested = 0;  // what the caller asked for; meaningful while in use
  ChunkHandle prev = kInvalidChunk;
  ChunkHandle next = kInvalidChunk;
  bool in_use = false;
  int bin = -1;               // -1 when not in a bin (in use, or being worked on)
  StreamHandle stream = 0;    // in use: allocation stream; free: stream of the last use
  std::uint64_t fence = 0;    // free on `stream`: the fence recorded at the free
};

// One range from the source (a region may hold several when the source merges adjacent ones).
struct Piece {
  std::uintptr_t addr = 0;
  std::size_t size = 0;
};

struct Region {
  std::size_t size = 0;
  ChunkHandle head = kInvalidChunk;
  ChunkHandle tail = kInvalidChunk;
  bool pinned = false;  // ORT keeps the first region under kNextPowerOfTwo
  std::vector<Piece> pieces;
};

class ChunkStore {
 public:
  struct FreeKey {
    std::size_t size;
    std::uintptr_t addr;
    ChunkHandle handle;
    bool operator<(const FreeKey& o) const noexcept {
      return size != o.size ? size < o.size : addr < o.addr;
    }
  };
  using Bin = std::set<FreeKey>;
  using RegionMap = std::map<std::uintptr_t, Region>;

  Chunk& at(ChunkHandle h) noexcept { return chunks_[h]; }
  const Chunk& at(ChunkHandle h) const noexcept { return chunks_[h]; }
  const Bin& bin(int b) const noexcept { return bins_[static_cast<std::size_t>(b)]; }
  const RegionMap& regions() const noexcept { return regions_; }

  // Adds a fresh range as a free chunk. With `merge`, it joins an adjacent unpinned region
  // and coalesces with a free neighbour. Returns the free chunk now covering the range.
  ChunkHandle AddPiece(std::uintptr_t addr, std::size_t size, bool merge, bool pinned);

  // Allocates ahead what one allocation or free may need (chunk records and bin nodes), so
  // that the operation itself cannot allocate. False when operator new refused; what was
  // already reserved stays.
  bool ReserveMetadata() noexcept;
  // Whether what is reserved covers taking a free chunk (two splits), with no extension.
  bool CanTakeWithoutAllocating() const noexcept {
    return num_spare_nodes_ >= 2 && chunks_.capacity() - chunks_.size() + num_free_handles_ >= 2;
  }

  // Puts a free chunk in its bin with a spare node. Without one, and when a fresh node
  // cannot be had, the chunk stays out of the bins (bin -1): still free, found again when a
  // neighbour coalesces with it or its region is released. Never throws.
  void InsertFree(ChunkHandle h) noexcept;
  void RemoveFree(ChunkHandle h) noexcept;

  // Cuts chunk `h` (not in a bin) at `bytes`; the rest becomes a free chunk in its bin.
  void Split(ChunkHandle h, std::size_t bytes);

  // Merges `h` (free, not in a bin) with free neighbours it may share with (same stream,
  // or one side without a stream). Returns the surviving chunk, not in a bin.
  ChunkHandle Coalesce(ChunkHandle h);

  // The region that contains `addr`.
  RegionMap::iterator RegionOf(std::uintptr_t addr);

  // Removes the region at `it` and all its chunks (all free); returns its pieces.
  std::vector<Piece> RemoveRegion(RegionMap::iterator it);

  // The largest free chunk's size (0 when none).
  std::size_t LargestFree() const noexcept;

  // Checks the invariants written above Chunk. nullptr when they hold, else what is broken.
  const char* CheckInvariants() const noexcept;

 private:
  ChunkHandle NewChunk();
  void DeleteChunk(ChunkHandle h);
  void Merge(ChunkHandle h1, ChunkHandle h2);  // h2 follows h1; h2 is deleted
  void JoinRegions(RegionMap::iterator low, RegionMap::iterator high);

  // An allocation inserts at most 4 free chunks (an extension per try, a front pad, a split
  // tail); a free at most 1. Refills go to kSpareNodes, so most calls allocate nothing.
  static constexpr int kMinSpareNodes = 4;
  static constexpr int kSpareNodes = 8;
  static constexpr std::size_t kSpareChunks = 4;

  std::vector<Chunk> chunks_;
  Bin::node_type spare_nodes_[kSpareNodes];
  int num_spare_nodes_ = 0;
  ChunkHandle free_handles_ = kInvalidChunk;  // recycled handles, linked through Chunk::next
  std::size_t num_free_handles_ = 0;
  Bin bins_[kNumBins];
  RegionMap regions_;  // by base address
};

}  // namespace memarena::arena
