// Chunk, bin and region bookkeeping of the BFC arena (ORT's BFCArena data structures,
// with regions keyed by address so adjacent ones can merge).
#include "arena/chunk_store.h"

#include <algorithm>

#include <bit>
#include <iterator>

namespace memarena::arena {
namespace {

// Two free neighbours may become one chunk when no stream ordering is lost: same stream,
// or one side carries no stream.
bool CanShare(const Chunk& a, const Chunk& b) noexcept {
  return a.stream == b.stream || a.stream == 0 || b.stream == 0;
}

}  // namespace

int BinForSize(std::size_t size) noexcept {
  const std::size_t units = size / kMinAllocationSize;
  if (units == 0) return 0;
  const int b = std::bit_width(units) - 1;
  return b < kNumBins - 1 ? b : kNumBins - 1;
}

ChunkHandle ChunkStore::NewChunk() {
  if (free_handles_ != kInvalidChunk) {
    const ChunkHandle h = free_handles_;
    free_handles_ = chunks_[h].next;
    --num_free_handles_;
    chunks_[h] = Chunk{};
    return h;
  }
  chunks_.emplace_back();
  return chunks_.size() - 1;
}

void ChunkStore::DeleteChunk(ChunkHandle h) {
  chunks_[h] = Chunk{};
  chunks_[h].next = free_handles_;
  free_handles_ = h;
  ++num_free_handles_;
}

bool ChunkStore::ReserveMetadata() noexcept {
  try {
    if (chunks_.capacity() - chunks_.size() + num_free_handles_ < kSpareChunks) {
      chunks_.reserve(std::max(2 * chunks_.capacity(), chunks_.size() + kSpareChunks));
    }
    if (num_spare_nodes_ >= kMinSpareNodes) return true;
    while (num_spare_nodes_ < kSpareNodes) {
      Bin scratch;
      scratch.insert(FreeKey{0, 0, kInvalidChunk});
      spare_nodes_[num_spare_nodes_++] = scratch.extract(scratch.begin());
    }
    return true;
  } catch (...) {
    return false;
  }
}

void ChunkStore::InsertFree(ChunkHandle h) noexcept {
  Chunk& c = chunks_[h];
  const int bin = BinForSize(c.size);
  Bin& target = bins_[static_cast<std::size_t>(bin)];
  const FreeKey key{c.size, c.addr, h};
  if (num_spare_nodes_ > 0) {
    Bin::node_type node = std::move(spare_nodes_[--num_spare_nodes_]);
    node.value() = key;
    target.insert(std::move(node));
  } else {
    try {
      target.insert(key);
    } catch (...) {
      c.bin = -1;  // an orphan free chunk (see the header)
      return;
    }
  }
  c.bin = bin;
}

void ChunkStore::RemoveFree(ChunkHandle h) noexcept {
  Chunk& c = chunks_[h];
  if (c.bin >= 0) {
    Bin& bin = bins_[static_cast<std::size_t>(c.bin)];
    const auto it = bin.find(FreeKey{c.size, c.addr, h});
    if (it != bin.end()) {
      Bin::node_type node = bin.extract(it);
      if (num_spare_nodes_ < kSpareNodes) spare_nodes_[num_spare_nodes_++] = std::move(node);
    }
  }
  c.bin = -1;
}

ChunkStore::RegionMap::iterator ChunkStore::RegionOf(std::uintptr_t addr) {
  return std::prev(regions_.upper_bound(addr));
}

void ChunkStore::Split(ChunkHandle h, std::size_t bytes) {
  const ChunkHandle nh = NewChunk();  // may move chunks_: take references after it
  Chunk& c = chunks_[h];
  Chunk& n = chunks_[nh];
  n.addr = c.addr + bytes;
  n.size = c.size - bytes;
  n.stream = c.stream;
  n.fence = c.fence;
  n.prev = h;
  n.next = c.next;
  c.size = bytes;
  if (c.next != kInvalidChunk) {
    chunks_[c.next].prev = nh;
  } else {
    RegionOf(c.addr)->second.tail = nh;
  }
  c.next = nh;
  InsertFree(nh);
}

void ChunkStore::Merge(ChunkHandle h1, ChunkHandle h2) {
  Chunk& c1 = chunks_[h1];
  Chunk& c2 = chunks_[h2];
  c1.next = c2.next;
  if (c2.next != kInvalidChunk) {
    chunks_[c2.next].prev = h1;
  } else {
    RegionOf(c1.addr)->second.tail = h1;
  }
  c1.size += c2.size;
  if (c1.stream == c2.stream) {
    c1.fence = c1.fence > c2.fence ? c1.fence : c2.fence;  // later fence covers both
  } else if (c1.stream == 0) {
    c1.stream = c2.stream;
    c1.fence = c2.fence;
  }
  DeleteChunk(h2);
}

ChunkHandle ChunkStore::Coalesce(ChunkHandle h) {
  const ChunkHandle next = chunks_[h].next;
  if (next != kInvalidChunk && !chunks_[next].in_use && CanShare(chunks_[h], chunks_[next])) {
    RemoveFree(next);
    Merge(h, next);
  }
  const ChunkHandle prev = chunks_[h].prev;
  if (prev != kInvalidChunk && !chunks_[prev].in_use && CanShare(chunks_[prev], chunks_[h])) {
    RemoveFree(prev);
    Merge(prev, h);
    return prev;
  }
  return h;
}

void ChunkStore::JoinRegions(RegionMap::iterator low, RegionMap::iterator high) {
  Region& a = low->second;
  Region& b = high->second;
  chunks_[a.tail].next = b.head;
  chunks_[b.head].prev = a.tail;
  a.tail = b.tail;
  a.size += b.size;
  a.pieces.insert(a.pieces.end(), b.pieces.begin(), b.pieces.end());
  regions_.erase(high);
}

ChunkHandle ChunkStore::AddPiece(std::uintptr_t addr, std::size_t size, bool merge, bool pinned) {
  // Every allocation comes before the store changes (pieces vectors sized for the joins,
  // the region's map node), so a std::bad_alloc leaves the store as it was.
  const bool joins = merge && !pinned;
  auto high = joins ? regions_.find(addr + size) : regions_.end();
  if (high != regions_.end() && high->second.pinned) high = regions_.end();
  auto low = regions_.lower_bound(addr);
  if (!joins || low == regions_.begin()) {
    low = regions_.end();
  } else {
    --low;
    if (low->first + low->second.size != addr || low->second.pinned) low = regions_.end();
  }
  const std::size_t high_pieces = high != regions_.end() ? high->second.pieces.size() : 0;
  Region region;
  region.size = size;
  region.pinned = pinned;
  region.pieces.reserve(1 + high_pieces);
  region.pieces.push_back(Piece{addr, size});
  if (low != regions_.end()) low->second.pieces.reserve(low->second.pieces.size() + 1 + high_pieces);
  if (chunks_.capacity() == chunks_.size() && free_handles_ == kInvalidChunk) {
    chunks_.reserve(std::max<std::size_t>(2 * chunks_.capacity(), 16));
  }
  auto it = regions_.emplace(addr, std::move(region)).first;
  const ChunkHandle h = NewChunk();  // capacity reserved above: cannot throw
  chunks_[h].addr = addr;
  chunks_[h].size = size;
  it->second.head = h;
  it->second.tail = h;
  if (low != regions_.end()) {
    JoinRegions(low, it);
    it = low;
  }
  if (high != regions_.end()) JoinRegions(it, high);
  const ChunkHandle merged = Coalesce(h);
  InsertFree(merged);
  return merged;
}

std::vector<Piece> ChunkStore::RemoveRegion(RegionMap::iterator it) {
  ChunkHandle h = it->second.head;
  while (h != kInvalidChunk) {
    const ChunkHandle next = chunks_[h].next;
    if (chunks_[h].bin >= 0) RemoveFree(h);
    DeleteChunk(h);
    h = next;
  }
  std::vector<Piece> pieces = std::move(it->second.pieces);
  regions_.erase(it);
  return pieces;
}

const char* ChunkStore::CheckInvariants() const noexcept {
  std::size_t bin_entries = 0;
  for (int b = 0; b < kNumBins; ++b) {
    for (const FreeKey& key : bins_[static_cast<std::size_t>(b)]) {
      const Chunk& c = chunks_[key.handle];
      if (c.in_use || c.bin != b || c.size != key.size || c.addr != key.addr) {
        return "a bin entry does not match the free chunk it names";
      }
      if (BinForSize(c.size) != b) return "a free chunk sits in the bin of another size";
      ++bin_entries;
    }
  }
  std::size_t binned_chunks = 0;
  for (const auto& [base, region] : regions_) {
    std::size_t piece_bytes = 0;
    for (const Piece& p : region.pieces) piece_bytes += p.size;
    if (piece_bytes != region.size) return "a region's size differs from the sum of its pieces";
    std::uintptr_t end = base;
    ChunkHandle prev = kInvalidChunk;
    for (ChunkHandle h = region.head; h != kInvalidChunk; h = chunks_[h].next) {
      const Chunk& c = chunks_[h];
      if (c.addr != end || c.prev != prev) {
        return "the chunks of a region do not tile it in address order";
      }
      if (c.in_use && c.bin != -1) return "an in-use chunk sits in a bin";
      if (c.bin != -1) ++binned_chunks;
      end += c.size;
      prev = h;
    }
    if (end != base + region.size || prev != region.tail) {
      return "the chunks of a region do not add up to its size";
    }
  }
  if (binned_chunks != bin_entries) return "a chunk claims a bin that does not hold it";
  return nullptr;
}

std::size_t ChunkStore::LargestFree() const noexcept {
  for (int b = kNumBins - 1; b >= 0; --b) {
    const Bin& bin = bins_[static_cast<std::size_t>(b)];
    if (!bin.empty()) return bin.rbegin()->size;
  }
  return 0;
}

}  // namespace memarena::arena
