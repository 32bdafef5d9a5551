// The heap sampler's stack capture: the frame-pointer walk stops at every kind of bad link
// (backward, misaligned, past the stack top, null return) without reading outside the
// stack, and CaptureStack names its callers on a thread's own stack, on a stack the program
// gave the thread, and (through the backtrace fallback) on a coroutine stack.
#include <gtest/gtest.h>
#include <pthread.h>
#include <ucontext.h>

#include <array>
#include <cstdint>
#include <vector>

#include "platform/stack.h"

namespace {

using memarena::platform::CaptureStack;
using memarena::platform::WalkFrameRecords;

// A fake stack of frame records: words[i] is the "next frame" link of a record at i and
// words[i + 1] its return address.
struct FakeStack {
  alignas(16) std::array<std::uintptr_t, 64> words{};
  std::uintptr_t At(std::size_t i) const { return reinterpret_cast<std::uintptr_t>(&words[i]); }
  std::uintptr_t High() const { return At(0) + sizeof(words); }
  void Record(std::size_t i, std::uintptr_t next, std::uintptr_t ret) {
    words[i] = next;
    words[i + 1] = ret;
  }
  std::vector<std::uintptr_t> Walk(std::size_t from, int max = 16) const {
    void* raw[16];
    const int depth = WalkFrameRecords(At(from), High(), raw, max);
    std::vector<std::uintptr_t> out;
    for (int i = 0; i < depth; ++i) out.push_back(reinterpret_cast<std::uintptr_t>(raw[i]));
    return out;
  }
};

TEST(StackWalk, FollowsAnUpwardChainUntilTheNullReturn) {
  FakeStack s;
  s.Record(0, s.At(4), 0x1000);
  s.Record(4, s.At(10), 0x2000);
  s.Record(10, s.At(20), 0x3000);
  s.Record(20, 0, 0);  // the outermost frame: no return address
  EXPECT_EQ(s.Walk(0), (std::vector<std::uintptr_t>{0x1000, 0x2000, 0x3000}));
  EXPECT_EQ(s.Walk(0, 2), (std::vector<std::uintptr_t>{0x1000, 0x2000}));
}

TEST(StackWalk, StopsAtALinkThatPointsBackward) {
  FakeStack s;
  s.Record(4, s.At(10), 0x1000);
  s.Record(10, s.At(2), 0x2000);  // a frame without a frame pointer left garbage below
  s.Record(2, s.At(4), 0x9999);  // a loop the walk would follow if it did not stop
  EXPECT_EQ(s.Walk(4), (std::vector<std::uintptr_t>{0x1000, 0x2000}));
}

TEST(StackWalk, StopsAtAMisalignedLink) {
  FakeStack s;
  s.Record(0, s.At(6) + 3, 0x1000);
  s.Record(6, 0, 0x9999);
  EXPECT_EQ(s.Walk(0), (std::vector<std::uintptr_t>{0x1000}));
}

TEST(StackWalk, NeverReadsARecordThatEndsPastTheStackTop) {
  FakeStack s;
  s.Record(0, s.High() - sizeof(std::uintptr_t), 0x1000);  // half a record left below high
  s.Record(62, 0, 0x9999);
  EXPECT_EQ(s.Walk(0), (std::vector<std::uintptr_t>{0x1000}));
  s.Record(0, s.High() + 4096, 0x1000);  // beyond the stack: another mapping, or none
  EXPECT_EQ(s.Walk(0), (std::vector<std::uintptr_t>{0x1000}));
}

// Three frames of known extent. noinline plus a call after the capture keeps each a frame
// of its own (no tail call); the test is built with frame pointers like the library.
constexpr std::uintptr_t kFunctionBytes = 512;
int g_sink = 0;
struct Captured {
  void* frames[32];
  int depth = 0;
};

[[gnu::noinline]] void Innermost(Captured* out) {
  out->depth = CaptureStack(out->frames, 32);
  g_sink += out->depth;
}
[[gnu::noinline]] void Middle(Captured* out) {
  Innermost(out);
  g_sink += 1;
}
[[gnu::noinline]] void Outer(Captured* out) {
  Middle(out);
  g_sink += 2;
}

bool Within(void* pc, void (*function)(Captured*)) {
  const auto start = reinterpret_cast<std::uintptr_t>(function);
  const auto address = reinterpret_cast<std::uintptr_t>(pc);
  return address > start && address < start + kFunctionBytes;
}

void ExpectCallersInOrder(const Captured& c) {
  ASSERT_GE(c.depth, 3);
  EXPECT_TRUE(Within(c.frames[0], &Innermost)) << c.frames[0];
  EXPECT_TRUE(Within(c.frames[1], &Middle)) << c.frames[1];
  EXPECT_TRUE(Within(c.frames[2], &Outer)) << c.frames[2];
}

TEST(CaptureStack, NamesTheCallersOnTheThreadsOwnStack) {
  Captured c;
  Outer(&c);
  ExpectCallersInOrder(c);
}

TEST(CaptureStack, NamesTheCallersOnAStackTheProgramGaveTheThread) {
  // Room for a sanitizer runtime's share as well (ThreadSanitizer needs about 1 MiB).
  constexpr std::size_t kStackBytes = 4 << 20;
  std::vector<unsigned char> stack(kStackBytes);
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstack(&attr, stack.data(), stack.size()), 0);
  Captured c;
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* arg) -> void* {
                  Outer(static_cast<Captured*>(arg));
                  return nullptr;
                },
                &c),
            0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  ExpectCallersInOrder(c);
}

// A coroutine's stack is not the thread's: the walk declines and backtrace() answers.
ucontext_t g_main_context;
ucontext_t g_coroutine_context;
Captured g_coroutine_capture;
void CoroutineBody() { Outer(&g_coroutine_capture); }

TEST(CaptureStack, FallsBackToBacktraceOnACoroutineStack) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer does not follow swapcontext stack switches";
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  GTEST_SKIP() << "ThreadSanitizer does not follow swapcontext stack switches";
#endif
#endif
  memarena::platform::PrepareStackCapture();
  std::vector<unsigned char> stack(256 * 1024);
  ASSERT_EQ(getcontext(&g_coroutine_context), 0);
  g_coroutine_context.uc_stack.ss_sp = stack.data();
  g_coroutine_context.uc_stack.ss_size = stack.size();
  g_coroutine_context.uc_link = &g_main_context;
  makecontext(&g_coroutine_context, &CoroutineBody, 0);
  ASSERT_EQ(swapcontext(&g_main_context, &g_coroutine_context), 0);
  ExpectCallersInOrder(g_coroutine_capture);
}

}  // namespace
