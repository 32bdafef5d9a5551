// Every overridden allocation symbol, called with its edge cases, checking results and errno:
// malloc, calloc, realloc, reallocarray, the aligned forms, usable size, cfree, __libc_*,
// malloc_trim, glibc's introspection (mallinfo2, mallinfo, malloc_stats, malloc_info), every
// operator new/delete, the ceiling, thread-exit flush and fork. One
// source, three binaries (see c_functions.h): inline semantics, link-time override, preload.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "memarena/errors.h"
#include "memarena/host.h"
#include "override/c_functions.h"
#include "platform/os.h"
#include "support/resident_pages.h"

namespace memarena::testing {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

const CFunctions& F() { return Functions(); }

bool IsAligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

memarena_stats Stats() {
  memarena_stats s{};
  EXPECT_EQ(F().get_stats(&s), 0);
  return s;
}

// Fills, then checks, the first `size` bytes: the block is really usable and private.
void FillAndCheck(void* p, std::size_t size, unsigned char value) {
  ASSERT_NE(p, nullptr);
  auto* bytes = static_cast<unsigned char*>(p);
  std::memset(bytes, value, size);
  for (std::size_t i = 0; i < size; i += 1 + size / 64) ASSERT_EQ(bytes[i], value);
  if (size != 0) {
    ASSERT_EQ(bytes[size - 1], value);
  }
}

// valloc and pvalloc (or glibc's __libc_ names for them): page aligned, pvalloc rounded up
// to whole pages, its overflow ENOMEM, and every block freed by memarena's free.
void CheckVallocAndPvalloc(void* (*valloc)(std::size_t), void* (*pvalloc)(std::size_t)) {
  const std::size_t page = platform::PageSize();
  void* v = valloc(10);
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(IsAligned(v, page));
  void* pv = pvalloc(page + 1);
  ASSERT_NE(pv, nullptr);
  EXPECT_TRUE(IsAligned(pv, page));
  EXPECT_GE(F().malloc_usable_size(pv), 2 * page) << "pvalloc rounds up to whole pages";
  FillAndCheck(pv, 2 * page, 3);
  void* pv0 = pvalloc(0);
  ASSERT_NE(pv0, nullptr);
  EXPECT_GE(F().malloc_usable_size(pv0), page);
  errno = 0;
  EXPECT_EQ(pvalloc(SIZE_MAX - 10), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  for (void* p : {v, pv, pv0}) F().free(p);
}

TEST(DropinSymbols, MallocGivesAlignedUsableDistinctBlocks) {
  std::vector<void*> blocks;
  for (std::size_t size : {0, 1, 8, 15, 16, 17, 100, 1000, 4096, 70000, 300000, 3000000}) {
    void* p = F().malloc(size);
    ASSERT_NE(p, nullptr) << "malloc(" << size << ") in " << F().mode << " mode";
    EXPECT_TRUE(IsAligned(p, 16)) << size;
    EXPECT_GE(F().malloc_usable_size(p), size);
    FillAndCheck(p, size, static_cast<unsigned char>(size));
    blocks.push_back(p);
  }
  void* zero_a = F().malloc(0);
  void* zero_b = F().malloc(0);
  EXPECT_NE(zero_a, zero_b) << "malloc(0) returns unique pointers";
  F().free(zero_a);
  F().free(zero_b);
  for (void* p : blocks) F().free(p);
  F().free(nullptr);
  EXPECT_EQ(F().malloc_usable_size(nullptr), 0u);
}

TEST(DropinSymbols, MallocFailureIsNullWithEnomem) {
  for (std::size_t size : {SIZE_MAX, SIZE_MAX / 2, std::size_t{1} << 62}) {
    errno = 0;
    EXPECT_EQ(F().malloc(size), nullptr) << size;
    EXPECT_EQ(errno, ENOMEM) << size;
  }
}

TEST(DropinSymbols, CallocZeroesRecycledMemoryAndRejectsOverflow) {
  for (std::size_t size : {24, 512, 5000, 400000}) {
    void* dirty = F().malloc(size);
    std::memset(dirty, 0xAB, size);
    F().free(dirty);
    auto* p = static_cast<unsigned char*>(F().calloc(1, size));
    ASSERT_NE(p, nullptr);
    for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(p[i], 0) << "calloc(" << size << ") at " << i;
    F().free(p);
  }
  errno = 0;
  EXPECT_EQ(F().calloc(SIZE_MAX / 2, 3), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  errno = 0;
  EXPECT_EQ(F().calloc(std::size_t{1} << 33, std::size_t{1} << 33), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  void* empty = F().calloc(0, 16);
  EXPECT_NE(empty, nullptr);
  F().free(empty);
}

// calloc of a large block on pages fresh from the OS leaves them unwritten (host::ZeroNew),
// as glibc's calloc of a chunk it maps does: numpy.zeros of a large array costs no RSS until
// it is written. At most the first huge page is faulted in (the huge-page watch times it).
// CallocZeroesRecycledMemoryAndRejectsOverflow checks recycled pages are filled.
TEST(DropinSymbols, CallocOfFreshPagesLeavesThemOutOfRss) {
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  F().malloc_trim(0);  // the free spans earlier tests left go back: the block's pages are fresh
  auto* p = static_cast<unsigned char*>(F().calloc(1, kBytes));
  ASSERT_NE(p, nullptr);
  EXPECT_LE(platform::ResidentBytesIn(p, kBytes), std::size_t{4} << 20);
  for (std::size_t i = 0; i < kBytes; i += 4096 * 97) ASSERT_EQ(p[i], 0) << "at " << i;
  EXPECT_EQ(p[kBytes - 1], 0);
  F().free(p);
}

TEST(DropinSymbols, ReallocCoversEveryEdgeCase) {
  // NULL acts as malloc.
  auto* p = static_cast<char*>(F().realloc(nullptr, 100));
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 100; ++i) p[i] = static_cast<char>(i);
  // Same size and a small shrink keep the block.
  EXPECT_EQ(F().realloc(p, 100), p);
  EXPECT_EQ(F().realloc(p, 90), p);
  // Growth through small and large sizes keeps the contents.
  for (std::size_t size : {1000, 100000, 1000000, 5000000}) {
    p = static_cast<char*>(F().realloc(p, size));
    ASSERT_NE(p, nullptr);
    EXPECT_GE(F().malloc_usable_size(p), size);
    for (int i = 0; i < 90; ++i) ASSERT_EQ(p[i], static_cast<char>(i)) << size;
  }
  // A big shrink moves to a smaller block and keeps the prefix.
  p = static_cast<char*>(F().realloc(p, 50));
  ASSERT_NE(p, nullptr);
  EXPECT_LT(F().malloc_usable_size(p), 1000u);
  for (int i = 0; i < 50; ++i) ASSERT_EQ(p[i], static_cast<char>(i));
  // Failure returns NULL with ENOMEM and leaves the old block valid and unchanged.
  errno = 0;
  EXPECT_EQ(F().realloc(p, SIZE_MAX / 2), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  for (int i = 0; i < 50; ++i) ASSERT_EQ(p[i], static_cast<char>(i));
  // Size 0 frees the block and returns NULL (glibc's behaviour).
  const memarena_stats before = Stats();
  EXPECT_EQ(F().realloc(p, 0), nullptr);
  EXPECT_GT(Stats().num_frees, before.num_frees);
}

TEST(DropinSymbols, ReallocGrowingByStepsKeepsContents) {
  char* p = nullptr;
  std::size_t size = 0;
  while (size < 3 * kMiB) {
    const std::size_t grown = size + 4000;
    p = static_cast<char*>(F().realloc(p, grown));
    ASSERT_NE(p, nullptr);
    std::memset(p + size, static_cast<int>(size / 4000 % 251), grown - size);
    size = grown;
  }
  for (std::size_t i = 0; i < size; i += 4000) ASSERT_EQ(p[i], static_cast<char>(i / 4000 % 251));
  F().free(p);
}

// A large block whose following pages are free grows there (no copy), with realloc's
// headroom: the 8 MiB block freed on the emptied heap is the only committed free span, so
// the 1 MiB block takes its front and has 7 MiB of free pages after it.
TEST(DropinSymbols, ReallocGrowsALargeBlockInPlaceWhenThePagesAfterItAreFree) {
  F().release_unused_spans();
  void* room = F().malloc(8 * kMiB);
  F().free(room);
  auto* p = static_cast<char*>(F().malloc(kMiB));
  ASSERT_EQ(p, room) << "the block did not take the freed span's front";
  std::memset(p, 0x5a, kMiB);
  auto* grown = static_cast<char*>(F().realloc(p, kMiB + 4000));
  ASSERT_EQ(grown, p) << "the block moved";
  EXPECT_EQ(F().malloc_usable_size(grown), kMiB + kMiB / 2) << "the headroom";
  for (std::size_t i = 0; i < kMiB; i += 4096) ASSERT_EQ(grown[i], 0x5a) << i;
  std::memset(grown, 0x6b, kMiB + kMiB / 2);
  void* after = F().malloc(kMiB);  // carved right after the grown block
  EXPECT_EQ(after, grown + kMiB + kMiB / 2);
  // Now the pages after it are in use: it moves, and keeps its contents.
  auto* moved = static_cast<char*>(F().realloc(grown, 2 * kMiB));
  ASSERT_NE(moved, nullptr);
  EXPECT_NE(moved, grown);
  for (std::size_t i = 0; i < kMiB + kMiB / 2; i += 4096) ASSERT_EQ(moved[i], 0x6b) << i;
  F().free(after);
  F().free(moved);
}

TEST(DropinSymbols, ReallocarrayChecksOverflowAndKeepsTheBlock) {
  auto* p = static_cast<int*>(F().reallocarray(nullptr, 10, sizeof(int)));
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 10; ++i) p[i] = i;
  p = static_cast<int*>(F().reallocarray(p, 1000, sizeof(int)));
  ASSERT_NE(p, nullptr);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(p[i], i);
  errno = 0;
  EXPECT_EQ(F().reallocarray(p, SIZE_MAX / 2, 4), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(p[i], i);
  F().free(p);
}

TEST(DropinSymbols, AlignedAllocHonoursPowersOfTwoAndRejectsOthers) {
  for (std::size_t alignment = 1; alignment <= 2 * kMiB; alignment *= 2) {
    void* p = F().aligned_alloc(alignment, 3 * alignment);
    ASSERT_NE(p, nullptr) << alignment;
    EXPECT_TRUE(IsAligned(p, alignment)) << alignment;
    FillAndCheck(p, 3 * alignment, 7);
    F().free(p);
  }
  for (std::size_t bad : {0, 3, 24, 1000}) {
    errno = 0;
    EXPECT_EQ(F().aligned_alloc(bad, 64), nullptr) << bad;
    EXPECT_EQ(errno, EINVAL) << bad;
  }
}

TEST(DropinSymbols, PosixMemalignReturnsErrorsWithoutTouchingErrnoOrOutput) {
  for (std::size_t alignment = sizeof(void*); alignment <= kMiB; alignment *= 4) {
    void* p = nullptr;
    errno = 1234;
    ASSERT_EQ(F().posix_memalign(&p, alignment, 1000), 0) << alignment;
    EXPECT_EQ(errno, 1234);
    EXPECT_TRUE(IsAligned(p, alignment)) << alignment;
    FillAndCheck(p, 1000, 9);
    F().free(p);
  }
  void* sentinel = reinterpret_cast<void*>(std::uintptr_t{0x1234});
  void* out = sentinel;
  errno = 1234;
  EXPECT_EQ(F().posix_memalign(&out, 4, 64), EINVAL) << "not a multiple of sizeof(void*)";
  EXPECT_EQ(F().posix_memalign(&out, 24, 64), EINVAL) << "not a power of two";
  EXPECT_EQ(F().posix_memalign(&out, 0, 64), EINVAL);
  EXPECT_EQ(F().posix_memalign(&out, 64, SIZE_MAX / 2), ENOMEM);
  EXPECT_EQ(errno, 1234) << "posix_memalign reports through its result only";
  EXPECT_EQ(out, sentinel) << "the output is untouched on failure";
  ASSERT_EQ(F().posix_memalign(&out, 64, 0), 0);
  EXPECT_NE(out, sentinel);
  F().free(out);
}

TEST(DropinSymbols, MemalignVallocPvallocFollowGlibc) {
  void* small = F().memalign(8, 100);
  ASSERT_NE(small, nullptr);
  EXPECT_TRUE(IsAligned(small, 16));
  void* rounded = F().memalign(48, 100);  // not a power of two: rounded up to 64
  ASSERT_NE(rounded, nullptr);
  EXPECT_TRUE(IsAligned(rounded, 64));
  void* big = F().memalign(64 * 1024, 10);
  EXPECT_TRUE(IsAligned(big, 64 * 1024));
  errno = 0;
  EXPECT_EQ(F().memalign(SIZE_MAX, 10), nullptr);
  EXPECT_EQ(errno, EINVAL);
  for (void* p : {small, rounded, big}) F().free(p);

  CheckVallocAndPvalloc(F().valloc, F().pvalloc);
}

TEST(DropinSymbols, CfreeAndLibcEntryPointsWork) {
  void* a = F().libc_malloc(200);
  FillAndCheck(a, 200, 1);
  auto* z = static_cast<unsigned char*>(F().libc_calloc(10, 10));
  ASSERT_NE(z, nullptr);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(z[i], 0);
  a = F().libc_realloc(a, 5000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(static_cast<unsigned char*>(a)[199], 1);
  void* m = F().libc_memalign(256, 10);
  EXPECT_TRUE(IsAligned(m, 256));
  // glibc exports __libc_valloc and __libc_pvalloc too: their blocks must be memarena's,
  // or free would take them for foreign blocks.
  CheckVallocAndPvalloc(F().libc_valloc, F().libc_pvalloc);
  const memarena_stats before = Stats();
  EXPECT_EQ(static_cast<std::size_t>(F().libc_mallinfo().uordblks), before.bytes_in_use);
  F().libc_free(a);
  F().cfree(z);
  F().libc_free(m);
  EXPECT_GE(Stats().num_frees, before.num_frees + 3);
}

TEST(DropinSymbols, EveryOperatorNewAndDeleteForm) {
  for (bool array : {false, true}) {
    for (std::size_t alignment : {std::size_t{0}, std::size_t{32}, std::size_t{4096}}) {
      for (int form = 0; form < 3; ++form) {
        void* p = F().new_object(100, alignment, array);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(IsAligned(p, alignment == 0 ? 16 : alignment));
        FillAndCheck(p, 100, 5);
        void* q = F().new_nothrow(100, alignment, array);
        ASSERT_NE(q, nullptr);
        EXPECT_TRUE(IsAligned(q, alignment == 0 ? 16 : alignment));
        const memarena_stats before = Stats();
        F().delete_object(p, 100, alignment, array, form);
        F().delete_object(q, 100, alignment, array, form);
        EXPECT_GE(Stats().num_frees, before.num_frees + 2)
            << "array " << array << " alignment " << alignment << " form " << form;
      }
    }
  }
}

TEST(DropinSymbols, NewThrowsBadAllocAndNothrowReturnsNull) {
  for (bool array : {false, true}) {
    for (std::size_t alignment : {std::size_t{0}, std::size_t{64}}) {
      EXPECT_THROW(F().new_object(SIZE_MAX / 2, alignment, array), std::bad_alloc);
      EXPECT_EQ(F().new_nothrow(SIZE_MAX / 2, alignment, array), nullptr);
    }
  }
}

int g_handler_calls = 0;
void CountingHandlerThatGivesUp() {
  ++g_handler_calls;
  std::set_new_handler(nullptr);  // the next failure throws
}

TEST(DropinSymbols, NewCallsTheNewHandlerBeforeFailing) {
  g_handler_calls = 0;
  std::set_new_handler(&CountingHandlerThatGivesUp);
  EXPECT_THROW(F().new_object(SIZE_MAX / 2, 0, false), std::bad_alloc);
  EXPECT_EQ(g_handler_calls, 1);
  std::set_new_handler(&CountingHandlerThatGivesUp);
  EXPECT_EQ(F().new_nothrow(SIZE_MAX / 2, 0, false), nullptr);
  EXPECT_EQ(g_handler_calls, 2);
  std::set_new_handler(nullptr);
}

// Records std::uncaught_exceptions() when destroyed: 1 while new's exception unwinds it.
struct UnwindWitness {
  int* seen;
  ~UnwindWitness() { *seen = std::uncaught_exceptions(); }
};

// Under LD_PRELOAD the library carries its own copy of libstdc++; new's exception must still
// be the program's: caught by its catch, counted by its runtime, carrying the diagnostic.
TEST(DropinSymbols, NewsExceptionIsTheProgramsOwnBadAllocWithTheDiagnostic) {
  for (bool array : {false, true}) {
    for (std::size_t alignment : {std::size_t{0}, std::size_t{64}}) {
      int during_unwind = -1;
      int inside_catch = -1;
      std::string what;
      try {
        UnwindWitness witness{&during_unwind};
        F().new_object(SIZE_MAX / 2, alignment, array);
      } catch (const std::bad_alloc& e) {
        inside_catch = std::uncaught_exceptions();
        what = e.what();
      }
      EXPECT_EQ(during_unwind, 1) << "array " << array << " alignment " << alignment;
      EXPECT_EQ(inside_catch, 0);
      EXPECT_EQ(std::uncaught_exceptions(), 0);
      // The diagnostic's advice for a size no block can span.
      EXPECT_NE(what.find("Check how the size and alignment were computed"), std::string::npos)
          << what;
    }
  }
  // Rethrown from the catch and caught again, as std::exception this time.
  bool caught_again = false;
  try {
    try {
      F().new_object(SIZE_MAX / 2, 0, false);
    } catch (const std::bad_alloc&) {
      throw;
    }
  } catch (const std::exception& e) {
    caught_again = std::uncaught_exceptions() == 0 && std::string(e.what()).find("memarena") !=
                                                         std::string::npos;
  }
  EXPECT_TRUE(caught_again);
  EXPECT_EQ(std::uncaught_exceptions(), 0);
}

struct HandlerError {
  int code;
};
int g_throwing_handler_calls = 0;
void HandlerThatThrowsItsOwnType() {
  ++g_throwing_handler_calls;
  throw HandlerError{42};
}
void HandlerThatThrowsBadAlloc() {
  ++g_throwing_handler_calls;
  throw std::bad_alloc();
}

// The program's new_handler is called, and what it throws passes out of new unchanged; the
// nothrow forms turn a std::bad_alloc from the handler into nullptr.
TEST(DropinSymbols, ANewHandlerThatThrowsIsThePrograms) {
  g_throwing_handler_calls = 0;
  std::set_new_handler(&HandlerThatThrowsItsOwnType);
  int code = 0;
  try {
    F().new_object(SIZE_MAX / 2, 0, false);
  } catch (const HandlerError& e) {
    code = e.code;
  }
  EXPECT_EQ(code, 42);
  EXPECT_EQ(g_throwing_handler_calls, 1);
  EXPECT_EQ(std::uncaught_exceptions(), 0);

  std::set_new_handler(&HandlerThatThrowsBadAlloc);
  for (std::size_t alignment : {std::size_t{0}, std::size_t{64}}) {
    EXPECT_EQ(F().new_nothrow(SIZE_MAX / 2, alignment, false), nullptr);
  }
  EXPECT_EQ(g_throwing_handler_calls, 3);
  EXPECT_EQ(std::uncaught_exceptions(), 0);
  std::set_new_handler(nullptr);
  // Everything still works afterwards.
  void* p = F().new_object(64, 0, false);
  ASSERT_NE(p, nullptr);
  F().delete_object(p, 64, 0, false, 0);
}

TEST(DropinSymbols, CeilingGivesNullAndBadAllocThenRecovers) {
  const memarena_stats start = Stats();
  const std::size_t ceiling = start.bytes_held + 64 * kMiB;
  ASSERT_EQ(F().set_ceiling(ceiling), 1);
  EXPECT_EQ(Stats().limit_bytes, ceiling);
  // No gtest assertion while at the ceiling: its messages allocate too.
  std::vector<void*> blocks;
  blocks.reserve(1024);
  int malloc_errno = 0;
  for (int i = 0; i < 1024; ++i) {
    errno = 0;
    void* p = F().malloc(kMiB);
    if (p == nullptr) {
      malloc_errno = errno;
      break;
    }
    std::memset(p, 1, 4096);
    blocks.push_back(p);
  }
  bool threw = false;
  try {
    F().new_object(8 * kMiB, 0, false);
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  void* nothrow = F().new_nothrow(8 * kMiB, 0, false);
  const memarena_stats at_ceiling = Stats();
  for (void* p : blocks) F().free(p);
  void* after = F().malloc(8 * kMiB);
  const bool recovered = after != nullptr;
  F().free(after);
  ASSERT_EQ(F().set_ceiling(0), 1);

  EXPECT_LT(blocks.size(), 1024u) << "the ceiling stopped malloc";
  EXPECT_GE(blocks.size(), 32u);
  EXPECT_EQ(malloc_errno, ENOMEM);
  EXPECT_TRUE(threw) << "operator new throws std::bad_alloc at the ceiling";
  EXPECT_EQ(nothrow, nullptr);
  EXPECT_LE(at_ceiling.bytes_held, ceiling);
  EXPECT_GT(at_ceiling.num_ooms, start.num_ooms);
  EXPECT_TRUE(recovered) << "allocation works again after freeing";
}

// A live 1 MiB block right after a live 4 MiB one, so that the 4 MiB one cannot grow in
// place. Where the blocks land depends on the holes earlier tests left (a shuffled order
// put the first 1 MiB block in a hole elsewhere), so 1 MiB blocks are taken until one lands
// right after, best fit filling the holes first, and a new 4 MiB block is tried when none
// does. Every other block goes into `spares`, live until the caller frees them.
std::pair<void*, void*> BlockWithLiveNeighbour(std::vector<void*>& spares) {
  for (int blocks = 0; blocks < 8; ++blocks) {
    void* block = F().malloc(4 * kMiB);
    if (block == nullptr) break;
    for (int tries = 0; tries < 32; ++tries) {
      void* neighbour = F().malloc(kMiB);
      if (neighbour == nullptr) break;
      if (neighbour == static_cast<char*>(block) + 4 * kMiB) return {block, neighbour};
      spares.push_back(neighbour);
    }
    spares.push_back(block);
  }
  return {nullptr, nullptr};
}

TEST(DropinSymbols, ReallocHeadroomThatDoesNotFitUnderTheCeilingIsNoOutOfMemory) {
  std::vector<void*> spares;
  const auto [block, neighbour] = BlockWithLiveNeighbour(spares);
  F().release_unused_spans();
  const memarena_stats start = Stats();
  // Room for a 5 MiB copy, not for the 7.5 MiB one with 50% headroom.
  const std::size_t ceiling = start.bytes_held + 5 * kMiB + kMiB / 2;
  ASSERT_EQ(F().set_ceiling(ceiling), 1);
  void* grown = block != nullptr ? F().realloc(block, 5 * kMiB) : nullptr;
  const std::size_t usable = grown != nullptr ? F().malloc_usable_size(grown) : 0;
  const memarena_stats after = Stats();
  F().free(grown != nullptr ? grown : block);
  F().free(neighbour);
  for (void* spare : spares) F().free(spare);
  ASSERT_EQ(F().set_ceiling(0), 1);
  ASSERT_NE(block, nullptr) << "no 1 MiB block landed right after a 4 MiB one";
  ASSERT_NE(grown, nullptr) << "the exact size fits under the ceiling";
  EXPECT_NE(grown, block) << "the block grew in place: the move is not tested";
  EXPECT_GE(usable, 5 * kMiB);
  EXPECT_EQ(after.num_ooms, start.num_ooms) << "the refused headroom counted as an OOM";
}

TEST(DropinSymbols, MallocTrimGivesMemoryBack) {
  std::vector<testing::Block> blocks;
  std::size_t total = 0;
  for (std::size_t i = 0; total < 96 * kMiB; ++i) {
    const std::size_t size = (i % 3 == 0) ? 300000 : 64 + (i * 97) % 20000;
    void* p = F().malloc(size);
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, size);
    blocks.push_back({p, size});
    total += size;
  }
  // Residency of the blocks' own pages (mincore), not process RSS, which a sanitizer's
  // shadow memory inflates. Taken before the frees: without a ceiling the heap already
  // returns free spans beyond a bound while they are freed, and malloc_trim the rest.
  const std::size_t resident_before = testing::ResidentBytesOf(blocks);
  for (const testing::Block& b : blocks) F().free(const_cast<void*>(b.ptr));
  EXPECT_EQ(F().malloc_trim(0), 1) << "something was released";
  const std::size_t resident_after = testing::ResidentBytesOf(blocks);
  EXPECT_GE(resident_before, total * 9 / 10) << "the blocks were not resident";
  EXPECT_LT(resident_after + total / 2, resident_before)
      << "resident " << resident_before << " -> " << resident_after << " after freeing "
      << total << " bytes";
}

// mallinfo2 reads memarena's heap: glibc's own, which the drop-in leaves unused, reads 0.
TEST(DropinIntrospection, Mallinfo2ReportsTheHeapInUseAndHeld) {
  const struct mallinfo2 before = F().mallinfo2();
  std::vector<void*> blocks;
  for (int i = 0; i < 12; ++i) blocks.push_back(F().malloc(kMiB));
  const memarena_stats stats = Stats();
  const struct mallinfo2 during = F().mallinfo2();
  EXPECT_EQ(during.uordblks, stats.bytes_in_use) << F().mode << " mode";
  EXPECT_EQ(during.arena, stats.bytes_held);
  EXPECT_GE(during.uordblks, before.uordblks + 12 * kMiB);
  EXPECT_EQ(during.fordblks, during.arena - during.uordblks);
  EXPECT_LE(during.fsmblks + during.keepcost, during.fordblks)
      << "the caches' objects and the free spans are parts of held-not-in-use";
  EXPECT_EQ(during.hblkhd, 0u) << "no block is mapped apart from held";
  for (void* p : blocks) F().free(p);
  const struct mallinfo2 after = F().mallinfo2();
  EXPECT_LE(after.uordblks + 12 * kMiB, during.uordblks);
  EXPECT_GE(after.keepcost, kMiB) << "the freed megabytes are free spans malloc_trim returns";
}

TEST(DropinIntrospection, MallinfoIsMallinfo2InInts) {
  const struct mallinfo2 wide = F().mallinfo2();
  const struct mallinfo narrow = F().mallinfo();
  ASSERT_LT(wide.arena, std::size_t{INT_MAX}) << "the test heap is small";
  EXPECT_EQ(static_cast<std::size_t>(narrow.arena), wide.arena);
  EXPECT_EQ(static_cast<std::size_t>(narrow.uordblks), wide.uordblks);
  EXPECT_EQ(static_cast<std::size_t>(narrow.fordblks), wide.fordblks);
  EXPECT_EQ(static_cast<std::size_t>(narrow.keepcost), wide.keepcost);
}

TEST(DropinIntrospection, MallocStatsPrintsMemarenasStatsOnStderr) {
  void* p = F().malloc(3 * kMiB);
  ::testing::internal::CaptureStderr();
  F().malloc_stats();
  const std::string text = ::testing::internal::GetCapturedStderr();
  F().free(p);
  EXPECT_NE(text.find("memarena stats: host"), std::string::npos) << text;
  EXPECT_NE(text.find("in use"), std::string::npos) << text;
  EXPECT_EQ(text.find("Arena 0"), std::string::npos) << "glibc's arenas: " << text;
}

// The total named `type` in malloc_info's XML, or -1.
long long XmlTotal(const std::string& xml, const std::string& element, const std::string& type) {
  const std::string key = "<" + element + " type=\"" + type + "\" size=\"";
  const std::size_t at = xml.find(key);
  if (at == std::string::npos) return -1;
  return std::stoll(xml.substr(at + key.size()));
}

TEST(DropinIntrospection, MallocInfoWritesTheHeapAsXml) {
  void* p = F().malloc(5 * kMiB);
  // A stream over a buffer of the test's own: writing to it allocates nothing, so the
  // stats read right after are the heap malloc_info described.
  char buffer[4096] = {};
  std::FILE* stream = fmemopen(buffer, sizeof buffer, "w");
  ASSERT_NE(stream, nullptr);
  ASSERT_EQ(std::setvbuf(stream, nullptr, _IONBF, 0), 0);
  EXPECT_EQ(F().malloc_info(0, stream), 0);
  const memarena_stats stats = Stats();
  ASSERT_EQ(std::fclose(stream), 0);
  const std::string xml(buffer);
  F().free(p);
  EXPECT_EQ(xml.rfind("<malloc version=\"1\" allocator=\"memarena\">\n", 0), 0u) << xml;
  EXPECT_NE(xml.find("</malloc>\n"), std::string::npos) << xml;
  EXPECT_GE(XmlTotal(xml, "total", "in_use"), static_cast<long long>(5 * kMiB)) << xml;
  EXPECT_EQ(XmlTotal(xml, "system", "current"), static_cast<long long>(stats.bytes_held)) << xml;
  EXPECT_EQ(XmlTotal(xml, "aspace", "total"), static_cast<long long>(stats.bytes_held)) << xml;
}

TEST(DropinIntrospection, MallocInfoRejectsOptionsAndANullStream) {
  errno = 0;
  EXPECT_EQ(F().malloc_info(1, stdout), -1) << "glibc defines no option";
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(F().malloc_info(0, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(DropinSymbols, ThreadExitFlushesTheThreadCache) {
  F().release_unused_spans();
  const memarena_stats before = Stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      std::vector<void*> blocks;
      for (int i = 0; i < 3000; ++i) blocks.push_back(F().malloc(1000));
      for (void* p : blocks) F().free(p);  // all of it lands in this thread's cache
    });
  }
  for (std::thread& t : threads) t.join();
  // Cached objects of exited threads would keep their spans busy; flushed, they are free.
  F().release_unused_spans();
  const memarena_stats after = Stats();
  EXPECT_LE(after.bytes_held, before.bytes_held + 2 * kMiB)
      << "held " << before.bytes_held << " -> " << after.bytes_held;
}

// Waits for `pid` for up to 20 s; a child stuck on a lock taken before fork times out.
int WaitWithTimeout(pid_t pid) {
  for (int i = 0; i < 2000; ++i) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

TEST(DropinSymbols, ChildCanAllocateAfterForkWhileOtherThreadsAllocate) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer does not support fork() while other threads run";
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  GTEST_SKIP() << "ThreadSanitizer does not support fork() while other threads run";
#endif
#endif
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&stop, t] {
      std::vector<void*> live(64, nullptr);
      for (std::size_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        void*& slot = live[i % live.size()];
        F().free(slot);
        slot = F().malloc((i * 131 + static_cast<std::size_t>(t)) % (i % 50 == 0 ? 400000 : 2000));
      }
      for (void* p : live) F().free(p);
    });
  }
  int failures = 0;
  for (int round = 0; round < 30; ++round) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<void*> blocks;
      for (std::size_t i = 0; i < 2000; ++i) blocks.push_back(F().malloc(i % 7 == 0 ? 300000 : i));
      for (void* p : blocks) F().free(p);
      void* aligned = F().aligned_alloc(4096, 10000);
      F().free(aligned);
      _exit(aligned != nullptr ? 0 : 1);
    }
    if (WaitWithTimeout(pid) != 0) ++failures;
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures, 0) << "children that deadlocked or failed to allocate";
}

// Allocates the largest blocks that still fit, then smaller and smaller ones down to the
// smallest class, until the heap has no room left for any size: every class's cached
// objects and every free page are taken. Keeps the first (largest) block's size.
bool FillTheHeapToItsCeiling(std::vector<void*>& blocks, std::size_t& largest) {
  largest = 0;
  // Steps of 1/16 above 2 KiB hit every class (8 per doubling); below, every multiple of 16.
  for (std::size_t size = 64 * kMiB; size >= 16;
       size = size > 2048 ? size - size / 16 : (size - 1) / 16 * 16) {
    while (void* p = F().malloc(size)) {
      if (blocks.size() == blocks.capacity()) return false;  // would allocate: give up
      if (largest == 0) largest = size;
      blocks.push_back(p);
    }
  }
  return true;
}

void* g_reserve = nullptr;
int g_freeing_handler_calls = 0;
void HandlerThatFreesTheReserve() {
  ++g_freeing_handler_calls;
  F().free(g_reserve);
  g_reserve = nullptr;
  std::set_new_handler(nullptr);
}

// What a child at a full ceiling found; 0 when everything held.
enum FullCeilingResult : int {
  kAllHeld = 0,
  kCouldNotFill = 10,
  kNewDidNotThrow,
  kWhatLacksTheKnob,
  kNothrowNotNull,
  kHandlerNotHonoured,
  kAllocateWhatLacksTheRequest,
};

FullCeilingResult NewAtAFullCeiling() {
  std::vector<void*> blocks;
  blocks.reserve(std::size_t{1} << 18);
  if (F().set_ceiling(Stats().bytes_held + 32 * kMiB) != 1) return kCouldNotFill;
  std::size_t largest = 0;
  if (!FillTheHeapToItsCeiling(blocks, largest) || largest == 0) return kCouldNotFill;
  // The diagnostic names the knob; building it and the exception object must need no heap
  // (libstdc++'s emergency pool serves the object when malloc fails).
  for (std::size_t size : {8 * kMiB, std::size_t{640}, std::size_t{16}}) {
    bool threw = false;
    try {
      F().new_object(size, 0, false);
    } catch (const std::bad_alloc& e) {
      threw = true;
      if (std::strstr(e.what(), "MEMARENA_CONF=ceiling:SIZE") == nullptr) return kWhatLacksTheKnob;
    }
    if (!threw) return kNewDidNotThrow;
    if (F().new_nothrow(size, 0, false) != nullptr) return kNothrowNotNull;
  }
#if !defined(MEMARENA_TEST_PRELOADED)  // HostAllocator() is the preloaded heap only in-process
  // Allocator::Allocate's OutOfMemory names the caller's request, not a ~650 B diagnostic
  // string the full heap could not hold.
  try {
    memarena::HostAllocator().Allocate(8 * kMiB);
    return kNewDidNotThrow;
  } catch (const memarena::OutOfMemory& e) {
    if (std::strstr(e.what(), "host could not allocate 8.00 MiB") == nullptr) {
      return kAllocateWhatLacksTheRequest;
    }
  }
#endif
  // The program's new_handler runs before the failure: it frees the largest block, and the
  // retry then fits.
  g_reserve = blocks.front();
  std::set_new_handler(&HandlerThatFreesTheReserve);
  void* retried = nullptr;
  try {
    retried = F().new_object(largest, 0, false);
  } catch (const std::bad_alloc&) {
  }
  std::set_new_handler(nullptr);
  if (retried == nullptr || g_freeing_handler_calls != 1) return kHandlerNotHonoured;
  return kAllHeld;
}

// At a ceiling with no room at all for any size, operator new still throws a bad_alloc that
// explains itself, nothrow new returns null and the new_handler is honoured; the process is
// not terminated. In a child, so the parent's heap keeps no ceiling and no filled blocks.
TEST(DropinSymbols, NewAtACeilingWithNoRoomLeftThrowsTheDiagnostic) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(NewAtAFullCeiling());
  const int status = WaitWithTimeout(pid);
  EXPECT_NE(status, kCouldNotFill) << "the heap could not be filled to its ceiling";
  EXPECT_NE(status, kNewDidNotThrow) << "operator new found room: the heap was not full";
  EXPECT_NE(status, kWhatLacksTheKnob) << "what() does not name MEMARENA_CONF=ceiling:SIZE";
  EXPECT_NE(status, kNothrowNotNull) << "nothrow new did not return nullptr";
  EXPECT_NE(status, kHandlerNotHonoured) << "the new_handler's freed memory was not retried";
  EXPECT_NE(status, kAllocateWhatLacksTheRequest)
      << "HostAllocator().Allocate(8 MiB)'s what() does not name the 8.00 MiB request";
  EXPECT_EQ(status, 0) << "the child ended with status " << status
                       << " (128 + signal when killed: 134 is SIGABRT, std::terminate)";
}

#if !defined(MEMARENA_TEST_INLINE)
// The exported names bind to memarena, not glibc: each symbol lives in the same object (the
// test executable or libmemarena_malloc.so) as the C API.
TEST(DropinSymbols, EverySymbolResolvesToMemarena) {
  Dl_info api{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(F().get_stats), &api), 0);
  const char* const names[] = {
      "malloc", "free", "calloc", "realloc", "reallocarray", "aligned_alloc", "posix_memalign",
      "memalign", "valloc", "pvalloc", "malloc_usable_size", "cfree", "malloc_trim",
      "mallinfo2", "mallinfo", "malloc_stats", "malloc_info",
      "__libc_malloc", "__libc_calloc", "__libc_realloc", "__libc_free", "__libc_memalign",
      "__libc_valloc", "__libc_pvalloc", "__libc_mallinfo",
      "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
      "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t",
      "_ZnamSt11align_val_tRKSt9nothrow_t", "_ZdlPv", "_ZdaPv", "_ZdlPvRKSt9nothrow_t",
      "_ZdaPvRKSt9nothrow_t", "_ZdlPvm", "_ZdaPvm", "_ZdlPvSt11align_val_t",
      "_ZdaPvSt11align_val_t", "_ZdlPvSt11align_val_tRKSt9nothrow_t",
      "_ZdaPvSt11align_val_tRKSt9nothrow_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t"};
  for (const char* name : names) {
    void* symbol = dlsym(RTLD_DEFAULT, name);
    ASSERT_NE(symbol, nullptr) << name;
    Dl_info info{};
    ASSERT_NE(dladdr(symbol, &info), 0) << name;
    EXPECT_EQ(info.dli_fbase, api.dli_fbase)
        << name << " binds to " << info.dli_fname << ", not to " << api.dli_fname;
  }
}
#endif

}  // namespace
}  // namespace memarena::testing
