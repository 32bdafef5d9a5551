// AddressMap against std::unordered_map: random inserts, lookups and backward-shift erases.
#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

#include "arena/address_map.h"

namespace memarena::arena {
namespace {

TEST(AddressMap, AgreesWithAReferenceMap) {
  AddressMap map;
  std::unordered_map<std::uintptr_t, ChunkHandle> reference;
  std::vector<std::uintptr_t> keys;
  std::mt19937_64 rng(5);
  for (int op = 0; op < 200000; ++op) {
    if (keys.empty() || rng() % 100 < 52) {
      // Clustered 256 B-aligned addresses, as chunks of one region are.
      const std::uintptr_t addr = (std::uintptr_t{1} << 40) + (rng() % 50000) * 256;
      if (reference.count(addr) != 0) continue;
      const ChunkHandle h = static_cast<ChunkHandle>(op);
      map.Insert(addr, h);
      reference.emplace(addr, h);
      keys.push_back(addr);
    } else {
      const std::size_t k = rng() % keys.size();
      map.Erase(keys[k]);
      reference.erase(keys[k]);
      keys[k] = keys.back();
      keys.pop_back();
    }
    if (op % 997 == 0) {
      for (const auto& [addr, h] : reference) ASSERT_EQ(map.Find(addr), h);
      ASSERT_EQ(map.Find((std::uintptr_t{1} << 40) + 50001 * 256), kInvalidChunk);
    }
  }
  EXPECT_EQ(map.size(), reference.size());
}

}  // namespace
}  // namespace memarena::arena
