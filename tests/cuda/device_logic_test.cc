// The GPU backend's logic on the fake device runtime (no GPU needed), one test per row of
// issue 10's table plus the error and merge rules: OOM raises through the C ABI,
// record_stream, empty_cache, bounded events over 200k pairs, per-thread streams, CUDA-graph
// capture with private pools (also two captures at once, routed by PyTorch's stream filter),
// sticky errors, a failing cudaSetDevice, cross-stream merging.
// Each pluggable-ABI test uses its own device, because the ABI keeps one arena per device.
//
// Built twice: device_logic_test on the fake runtime (CI, every sanitizer), and, where nvcc
// is found, device_logic_gpu_test (MEMARENA_DEVICE_LOGIC_ON_GPU) on the real runtime and
// device 0, its streams held by gpu_stream_gate.cu's spin kernel; it skips with the runtime's
// reason without a GPU. The rows that inject failures (sticky errors, a failing cudaSetDevice,
// the memory fraction and expandable rows that need a fresh device) run only on the fake.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cerrno>
#include <cstdlib>
#include <condition_variable>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "memarena/cuda.h"
#include "memarena/errors.h"
#include "stream_control.h"
#ifndef MEMARENA_DEVICE_LOGIC_ON_GPU
#include "fake_stream_control.h"
#endif

namespace memarena::cuda {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

#ifdef MEMARENA_DEVICE_LOGIC_ON_GPU
StreamControl& Control() {
  static StreamControl* control = MakeGpuStreamControl().release();
  return *control;
}
#else
constexpr std::size_t kDeviceBytes = std::size_t{1} << 30;
constexpr int kDevices = 13;

std::shared_ptr<FakeDeviceRuntime> FakeRuntime() {
  static auto runtime = std::make_shared<FakeDeviceRuntime>(kDevices, kDeviceBytes);
  return runtime;
}
// The one fake for the whole binary, installed before any arena exists.
StreamControl& Control() {
  static StreamControl* control = [] {
    SetDeviceRuntime(FakeRuntime());
    return new FakeStreamControl(FakeRuntime(), kDeviceBytes);
  }();
  return *control;
}
FakeDeviceRuntime& Fake() {
  Control();
  return *FakeRuntime();
}
#endif

// Every test skips, with the runtime's reason, when the device cannot be used.
class DeviceLogic : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!Control().Usable(&reason)) GTEST_SKIP() << reason;
  }
};

CUstream_st* Cuda(DeviceStream s) { return reinterpret_cast<CUstream_st*>(s.value); }

DeviceStream NewStream() {
  Control();
  DeviceStream s;
  EXPECT_TRUE(GetDeviceRuntime()->StreamCreate(&s).ok());
  return s;
}

// PyTorch's alloc function type: what CUDAPluggableAllocator calls.
using AllocFn = void* (*)(std::size_t, int, CUstream_st*);

std::string OomMessage(AllocFn alloc, std::size_t size, int device, CUstream_st* stream) {
  try {
    void* p = alloc(size, device, stream);
    ADD_FAILURE() << "allocated " << p << " instead of raising";
  } catch (const std::bad_alloc& e) {
    return e.what();
  }
  return "";
}

memarena_stats Stats(int device) {
  memarena_stats s{};
  EXPECT_EQ(memarena_cuda_get_stats(device, &s), 0);
  return s;
}

// Row 1: torch.empty(2 * total) must raise, carrying the diagnostic, and the process goes on.
TEST_F(DeviceLogic, OutOfMemoryRaisesThroughTheCAbiWithTheDiagnostic) {
  const int kDevice = Control().Device(1);
  const std::size_t twice_the_device = 2 * Control().DeviceTotalBytes();
  const std::uint64_t ooms_before = Stats(kDevice).num_ooms;
  const AllocFn alloc = &memarena_cuda_malloc;
  const std::string what = OomMessage(alloc, twice_the_device, kDevice, nullptr);
  EXPECT_NE(what.find(fmt::format("cannot allocate {} bytes on device {}", twice_the_device, kDevice)),
            std::string::npos) << what;
  EXPECT_NE(what.find("in use"), std::string::npos) << what;
  EXPECT_EQ(what.find("not out of memory"), std::string::npos) << what;
  void* p = memarena_cuda_malloc(kMiB, kDevice, nullptr);
  ASSERT_NE(p, nullptr);
  memarena_cuda_free(p, kMiB, kDevice, nullptr);
  EXPECT_EQ(Stats(kDevice).num_ooms, ooms_before + 1);
}

// Row 2: x.record_stream(s2); del x while s2 still writes it; a new tensor of the same size.
TEST_F(DeviceLogic, RecordStreamKeepsTheBlockUntilTheOtherStreamsWorkCompletes) {
  const int kDevice = Control().Device(2);
  const DeviceStream s1 = NewStream();
  const DeviceStream s2 = NewStream();
  const std::size_t in_use_before = Stats(kDevice).bytes_in_use;
  void* x = memarena_cuda_malloc(kMiB, kDevice, Cuda(s1));
  memarena_cuda_record_stream(x, Cuda(s2));
  Control().Hold(s2);  // s2 still writes x
  memarena_cuda_free(x, kMiB, kDevice, Cuda(s1));
  EXPECT_EQ(Stats(kDevice).bytes_in_use, in_use_before + kMiB) << "x was freed while s2 still used it";
  void* y = memarena_cuda_malloc(kMiB, kDevice, Cuda(s1));
  EXPECT_NE(y, x) << "the new tensor got the block s2 is still writing";
  Control().Release(s2);
  memarena_cuda_free(y, kMiB, kDevice, Cuda(s1));  // also collects finished deferred frees
  EXPECT_EQ(Stats(kDevice).bytes_in_use, in_use_before) << "x never came back after s2 completed";
  void* z = memarena_cuda_malloc(kMiB, kDevice, Cuda(s1));
  // On the fake's fresh device these are the only two free blocks of that size.
  if (Control().fake()) {
    EXPECT_TRUE(z == x || z == y);
  }
  memarena_cuda_free(z, kMiB, kDevice, Cuda(s1));
}

// Row 3: torch.cuda.empty_cache() after freeing a big tensor gives the memory back.
TEST_F(DeviceLogic, EmptyCacheGivesFreedMemoryBackToTheDriver) {
  const int kDevice = Control().Device(3);
  const DeviceStream s = NewStream();
  void* big = memarena_cuda_malloc(256 * kMiB, kDevice, Cuda(s));
  ASSERT_NE(big, nullptr);
  memarena_cuda_free(big, 256 * kMiB, kDevice, Cuda(s));
  const std::size_t before = Control().DeviceBytesInUse();
  const std::size_t held_before = Stats(kDevice).bytes_held;
  memarena_cuda_empty_cache();
  EXPECT_GE(before - Control().DeviceBytesInUse(), 256 * kMiB);
  EXPECT_GE(held_before - Stats(kDevice).bytes_held, 256 * kMiB);
}

// Row 4: 200,000 pairs on one stream create and record no event; another stream's first
// allocation afterwards costs a bounded number of event calls, and release drains.
TEST_F(DeviceLogic, TwoHundredThousandPairsOnOneStreamUseNoEvents) {
  const int kDevice = Control().Device(4);
  const DeviceStream s = NewStream();
  const DeviceStream other = NewStream();
  void* warm = memarena_cuda_malloc(256, kDevice, Cuda(s));  // creates the arena
  memarena_cuda_free(warm, 256, kDevice, Cuda(s));
  const memarena_stats stats_before = Stats(kDevice);
  // The backend's own counts: on the fake they agree with the runtime's (checked below).
  const EventCounters before = GetEventCounters();
#ifndef MEMARENA_DEVICE_LOGIC_ON_GPU
  const FakeDeviceRuntime::Counters fake_before = Fake().counters();
#endif
  for (int i = 0; i < 200000; ++i) {
    void* p = memarena_cuda_malloc(i % 2 == 0 ? 256 : 65536, kDevice, Cuda(s));
    memarena_cuda_free(p, 0, kDevice, Cuda(s));
  }
  const EventCounters after = GetEventCounters();
  EXPECT_EQ(after.created, before.created);
  EXPECT_EQ(after.recorded, before.recorded);
  EXPECT_EQ(after.queried, before.queried);
#ifndef MEMARENA_DEVICE_LOGIC_ON_GPU
  const FakeDeviceRuntime::Counters fake_after = Fake().counters();  // the runtime agrees
  EXPECT_EQ(fake_after.events_created, fake_before.events_created);
  EXPECT_EQ(fake_after.event_records, fake_before.event_records);
  EXPECT_EQ(fake_after.event_queries, fake_before.event_queries);
#endif
  void* q = memarena_cuda_malloc(256, kDevice, Cuda(other));
  const EventCounters crossed = GetEventCounters();
  EXPECT_LE(crossed.recorded - after.recorded, 1u);
  EXPECT_LE(crossed.queried - after.queried, 4u);
  memarena_cuda_free(q, 256, kDevice, Cuda(other));
  const EventCounters end = GetEventCounters();
  EXPECT_LE((end.created - end.destroyed) - (before.created - before.destroyed), 4u);
  const memarena_stats stats = Stats(kDevice);
  EXPECT_EQ(stats.bytes_in_use, stats_before.bytes_in_use);
  EXPECT_EQ(stats.num_allocs - stats_before.num_allocs, 200001u);
  EXPECT_EQ(memarena_cuda_release_unused(kDevice), stats.bytes_held) << "release drained nothing";
}

// Cross-stream traffic while the freeing stream stays busy: events are recycled from a few,
// never one per free.
TEST_F(DeviceLogic, CrossStreamTrafficKeepsEventsBounded) {
  Control();
  auto arena = MakeDeviceArena(0);
  const DeviceStream busy = NewStream();
  const StreamHandle s1 = ToStreamHandle(Cuda(busy));
  const StreamHandle s2 = ToStreamHandle(Cuda(NewStream()));
  Control().Hold(busy);
  const std::uint64_t created_before = GetEventCounters().created;
  for (int i = 0; i < 10000; ++i) {
    void* p = arena->TryAllocateOnStream(4096, 256, s1);
    arena->DeallocateOnStream(p, s1);
    void* q = arena->TryAllocateOnStream(4096, 256, s2);
    ASSERT_NE(q, p) << "stream 2 took a block stream 1 is still using, at pair " << i;
    arena->DeallocateOnStream(q, s2);
  }
  EXPECT_LE(GetEventCounters().created - created_before, 4u);
  Control().Release(busy);
  EXPECT_EQ(arena->GetStats().bytes_in_use, 0u);
  const std::uint64_t extensions = arena->GetStats().num_arena_extensions;
  EXPECT_LE(extensions, 2u) << "the loop kept growing the arena";
  void* reused = arena->TryAllocateOnStream(4096, 256, s2);
  EXPECT_EQ(arena->GetStats().num_arena_extensions, extensions);
  arena->DeallocateOnStream(reused, s2);
}

// Row 5: two threads on cudaStreamPerThread are two streams.
TEST_F(DeviceLogic, PerThreadStreamsOfTwoThreadsAreTwoStreams) {
  const int kDevice = Control().Device(5);
  CUstream_st* const per_thread = Cuda(kPerThreadStream);
  std::mutex mutex;
  std::condition_variable cv;
  bool freed = false;
  bool second_done = false;
  void* first = nullptr;
  StreamHandle first_handle = 0;
  std::thread t1([&] {
    first = memarena_cuda_malloc(kMiB, kDevice, per_thread);
    first_handle = ToStreamHandle(per_thread);
    Control().Hold(kPerThreadStream);  // thread 1's stream still uses the block
    memarena_cuda_free(first, kMiB, kDevice, per_thread);
    std::unique_lock<std::mutex> lock(mutex);
    freed = true;
    cv.notify_all();
    cv.wait(lock, [&] { return second_done; });
    Control().Release(kPerThreadStream);  // only this thread can name its stream
  });
  void* second = nullptr;
  StreamHandle second_handle = 0;
  std::thread t2([&] {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return freed; });
    second = memarena_cuda_malloc(kMiB, kDevice, per_thread);
    second_handle = ToStreamHandle(per_thread);
    memarena_cuda_free(second, kMiB, kDevice, per_thread);
    second_done = true;
    cv.notify_all();
  });
  t1.join();
  t2.join();
  EXPECT_NE(first_handle, second_handle);
  EXPECT_NE(first, second) << "thread 2 got a block thread 1's stream was still using";
}

// Row 6: capture in global mode: no event call that invalidates it, growth works, memory
// freed in the capture stays in the graph's pool, and releasing the graph frees the pool.
TEST_F(DeviceLogic, GraphCaptureStaysValidAndItsPoolIsPrivate) {
  const int kDevice = Control().Device(6);
  constexpr unsigned long long kPool = 42;
  const DeviceStream capturing = NewStream();
  const DeviceStream other = NewStream();
  const DeviceStream third = NewStream();  // created before the capture, as CUDA requires
  // Before the capture: a block freed on a busy stream, so other streams must ask the fence.
  void* busy = memarena_cuda_malloc(4 * kMiB, kDevice, Cuda(other));
  Control().Hold(other);
  memarena_cuda_free(busy, 4 * kMiB, kDevice, Cuda(other));

  memarena_cuda_begin_graph_pool(kDevice, kPool);
  Control().BeginCapture(capturing);
  void* in_graph = memarena_cuda_malloc(4 * kMiB, kDevice, Cuda(capturing));  // grows the pool
  ASSERT_NE(in_graph, nullptr);
  memarena_cuda_free(in_graph, 4 * kMiB, kDevice, Cuda(capturing));
  void* outside = memarena_cuda_malloc(4 * kMiB, kDevice, Cuda(third));
  EXPECT_NE(outside, in_graph) << "a block freed inside the capture went to another stream";
  EXPECT_TRUE(Control().EndCapture(capturing)) << "the allocator invalidated the capture";
  memarena_cuda_end_graph_pool(kDevice, kPool);

  const std::size_t held_with_pool = Stats(kDevice).bytes_held;
  memarena_cuda_release_graph_pool(kDevice, kPool);
  EXPECT_GE(held_with_pool - Stats(kDevice).bytes_held, 4 * kMiB) << "the pool outlived its graph";
  memarena_cuda_free(outside, 4 * kMiB, kDevice, nullptr);
  Control().Release(other);
}

// PyTorch's graph filter: the stream takes part in this graph's capture (cudaStreamGetCaptureInfo
// says active, with the graph's capture id).
// As in PyTorch, the id is known only once the capture began, after the pool's begin.
struct CaptureFilter {
  std::atomic<std::uint64_t> capture_id{0};
};
int IsCapturingInto(void* context, CUstream_st* stream) {
  CaptureStatus status = CaptureStatus::kNone;
  std::uint64_t id = 0;
  GetDeviceRuntime()->StreamCaptureStatus(DeviceStream{reinterpret_cast<std::uintptr_t>(stream)},
                                          &status, &id);
  return status == CaptureStatus::kActive && id == static_cast<CaptureFilter*>(context)->capture_id;
}

// Two captures underway at once, on two threads and two streams, into two pools (PyTorch
// allows it): each stream's blocks land in its own graph's pool, a block freed in one capture
// is not handed to the other, and releasing one graph gives back its pool's memory while the
// other pool's blocks stay in use.
TEST_F(DeviceLogic, ConcurrentCapturesRouteEachStreamToItsOwnPool) {
  const int kDevice = Control().Device(11);
  constexpr unsigned long long kPoolA = 101, kPoolB = 202;
  const DeviceStream sa = NewStream();
  const DeviceStream sb = NewStream();
  CaptureFilter graph_a, graph_b;
  const memarena_stats start = Stats(kDevice);
  std::barrier step(2);
  void* a[2] = {};
  void* b[3] = {};
  bool a_valid = false, b_valid = false;
  std::thread thread_a([&] {
    memarena_cuda_begin_graph_pool_filtered(kDevice, kPoolA, &IsCapturingInto, &graph_a);
    graph_a.capture_id = Control().BeginCapture(sa);
    step.arrive_and_wait();  // both captures underway
    for (void*& p : a) p = memarena_cuda_malloc(4 * kMiB, kDevice, Cuda(sa));
    step.arrive_and_wait();
    memarena_cuda_free(a[0], 4 * kMiB, kDevice, Cuda(sa));  // freed inside A's capture
    step.arrive_and_wait();
    step.arrive_and_wait();  // B allocated after the free
    a_valid = Control().EndCapture(sa);
    memarena_cuda_end_graph_pool(kDevice, kPoolA);
  });
  std::thread thread_b([&] {
    memarena_cuda_begin_graph_pool_filtered(kDevice, kPoolB, &IsCapturingInto, &graph_b);
    graph_b.capture_id = Control().BeginCapture(sb);
    step.arrive_and_wait();
    b[0] = memarena_cuda_malloc(6 * kMiB, kDevice, Cuda(sb));
    b[1] = memarena_cuda_malloc(6 * kMiB, kDevice, Cuda(sb));
    step.arrive_and_wait();
    step.arrive_and_wait();  // A freed a[0]
    b[2] = memarena_cuda_malloc(4 * kMiB, kDevice, Cuda(sb));
    step.arrive_and_wait();
    b_valid = Control().EndCapture(sb);
    memarena_cuda_end_graph_pool(kDevice, kPoolB);
  });
  thread_a.join();
  thread_b.join();
  EXPECT_TRUE(a_valid && b_valid) << "the allocator invalidated a capture";
  EXPECT_NE(b[2], a[0]) << "a block freed in graph A's capture went to graph B";
  EXPECT_EQ(Stats(kDevice).bytes_requested - start.bytes_requested, 20 * kMiB);  // a[1], 3 b

  // Graph A is destroyed and its output freed: its whole pool goes, B's blocks stay in use.
  const std::size_t held_before = Stats(kDevice).bytes_held;
  memarena_cuda_free(a[1], 4 * kMiB, kDevice, Cuda(sa));
  memarena_cuda_release_graph_pool(kDevice, kPoolA);
  const memarena_stats after_a = Stats(kDevice);
  EXPECT_GE(held_before - after_a.bytes_held, 8 * kMiB) << "graph A's blocks were not in pool A";
  EXPECT_EQ(after_a.bytes_requested - start.bytes_requested, 16 * kMiB)
      << "releasing pool A touched pool B's blocks";
  for (void* p : b) memarena_cuda_free(p, 0, kDevice, Cuda(sb));
  memarena_cuda_release_graph_pool(kDevice, kPoolB);
  EXPECT_EQ(Stats(kDevice).bytes_held, start.bytes_held)
      << "a block of a capture landed outside its pool";
}

// torch.cuda.use_mem_pool: a filter that takes one stream routes it to the pool without any
// capture, other streams keep the device's arena; a pool shared by two graphs lives until both
// are released, because graph replays still write its free blocks.
TEST_F(DeviceLogic, FilteredPoolTakesOnlyItsStreamAndLivesUntilItsLastUserIsReleased) {
  const int kDevice = Control().Device(12);
  constexpr unsigned long long kPool = 7;
  const DeviceStream mine = NewStream();
  const DeviceStream other = NewStream();
  struct OneStream {
    DeviceStream stream;
  } only_mine{mine};
  const memarena_cuda_stream_filter is_mine = [](void* context, CUstream_st* s) -> int {
    return static_cast<OneStream*>(context)->stream.value == reinterpret_cast<std::uintptr_t>(s);
  };
  void* outside = memarena_cuda_malloc(kMiB, kDevice, Cuda(other));  // the device's arena
  memarena_cuda_free(outside, kMiB, kDevice, Cuda(other));
  const std::size_t arena_held = Stats(kDevice).bytes_held;

  memarena_cuda_begin_graph_pool_filtered(kDevice, kPool, is_mine, &only_mine);
  void* in_pool = memarena_cuda_malloc(kMiB, kDevice, Cuda(mine));
  void* not_in_pool = memarena_cuda_malloc(kMiB, kDevice, Cuda(other));
  memarena_cuda_end_graph_pool(kDevice, kPool);
  // On the fake's fresh device, `outside` is the arena's only free block of that size.
  if (Control().fake()) {
    EXPECT_EQ(not_in_pool, outside) << "a stream the filter refuses left the device's arena";
  }
  EXPECT_NE(in_pool, outside);
  memarena_cuda_free(not_in_pool, kMiB, kDevice, Cuda(other));
  memarena_cuda_free(in_pool, kMiB, kDevice, Cuda(mine));

  memarena_cuda_begin_graph_pool_filtered(kDevice, kPool, is_mine, &only_mine);  // 2nd user
  memarena_cuda_end_graph_pool(kDevice, kPool);
  memarena_cuda_release_graph_pool(kDevice, kPool);
  EXPECT_GT(Stats(kDevice).bytes_held, arena_held) << "the pool went while a graph still used it";
  memarena_cuda_release_graph_pool(kDevice, kPool);
  EXPECT_EQ(Stats(kDevice).bytes_held, arena_held) << "the pool outlived its last graph";
}

#ifndef MEMARENA_DEVICE_LOGIC_ON_GPU  // the rows that inject failures or need a fresh device
// Only cudaErrorMemoryAllocation is out of memory: a sticky error is reported as such after
// one cudaMalloc, not retried as if memory were short.
TEST_F(DeviceLogic, StickyErrorIsReportedAndNotRetried) {
  constexpr int kDevice = 7;
  Fake().InjectStickyError(kDevice);
  const std::uint64_t calls_before = Fake().counters().malloc_calls;
  const std::string what = OomMessage(&memarena_cuda_malloc, 64 * kMiB, kDevice, nullptr);
  EXPECT_NE(what.find("sticky CUDA error"), std::string::npos) << what;
  EXPECT_NE(what.find("cudaErrorIllegalAddress"), std::string::npos) << what;
  EXPECT_EQ(Fake().counters().malloc_calls - calls_before, 1u);
  OomMessage(&memarena_cuda_malloc, 64 * kMiB, kDevice, nullptr);
  EXPECT_EQ(Fake().counters().malloc_calls - calls_before, 1u) << "retried a dead context";
}

TEST_F(DeviceLogic, FailedSetDeviceIsReported) {
  constexpr int kDevice = 8;
  Fake().FailSetDevice(true);
  const std::string what = OomMessage(&memarena_cuda_malloc, kMiB, kDevice, nullptr);
  Fake().FailSetDevice(false);
  EXPECT_NE(what.find("cudaSetDevice(8) failed"), std::string::npos) << what;
  EXPECT_NE(what.find("cudaErrorInvalidDevice"), std::string::npos) << what;
}

TEST_F(DeviceLogic, StatsAndMemoryFraction) {
  constexpr int kDevice = 9;
  memarena_stats unused{};
  EXPECT_EQ(memarena_cuda_get_stats(kDevice, &unused), 0);
  EXPECT_EQ(unused.bytes_held, 0u);
  EXPECT_EQ(memarena_cuda_get_stats(kDevice, nullptr), EINVAL);
  void* p = memarena_cuda_malloc(3 * kMiB, kDevice, nullptr);
  const memarena_stats s = Stats(kDevice);
  EXPECT_GE(s.bytes_in_use, 3 * kMiB);  // counted at the chunk's size, as ORT does
  EXPECT_EQ(s.bytes_requested, 3 * kMiB);
  EXPECT_GE(s.bytes_held, 3 * kMiB);
  EXPECT_EQ(s.num_allocs, 1u);
  memarena_cuda_free(memarena_cuda_malloc(8 * kMiB, kDevice, nullptr), 8 * kMiB, kDevice, nullptr);
  EXPECT_GE(Stats(kDevice).peak_bytes_in_use, 8 * kMiB);
  memarena_cuda_reset_peak_stats(kDevice);
  EXPECT_LT(Stats(kDevice).peak_bytes_in_use, 8 * kMiB) << "the peak did not restart";
  EXPECT_EQ(memarena_cuda_set_memory_fraction(1.5, kDevice), EINVAL);
  ASSERT_EQ(memarena_cuda_set_memory_fraction(0.05, kDevice), 0);  // ~51 MiB
  const std::string what = OomMessage(&memarena_cuda_malloc, 128 * kMiB, kDevice, nullptr);
  EXPECT_NE(what.find("memory fraction"), std::string::npos) << what;
  memarena_cuda_free(p, 3 * kMiB, kDevice, nullptr);
}

// PyTorch's expandable_segments:True through the ABI: MEMARENA_CUDA_CONF=expandable_segments:1
// builds the device's arena over the virtual-memory source, so blocks come from one growing
// range of committed granules (cuMemCreate), never from cudaMalloc.
TEST_F(DeviceLogic, ExpandableSegmentsInTheConfigGrowOneVirtualRange) {
  constexpr int kDevice = 10;
  Fake();
  const std::uint64_t cuda_mallocs = Fake().counters().malloc_calls;
  ASSERT_EQ(setenv("MEMARENA_CUDA_CONF", "expandable_segments:1", 1), 0);
  void* a = memarena_cuda_malloc(3 * kMiB, kDevice, nullptr);  // creates the device's arena
  ASSERT_EQ(unsetenv("MEMARENA_CUDA_CONF"), 0);
  void* b = memarena_cuda_malloc(5 * kMiB, kDevice, nullptr);
  EXPECT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 3 * kMiB) << "not one range";
  EXPECT_EQ(Fake().counters().malloc_calls, cuda_mallocs);
  // 2 MiB granules: 4 MiB for the first block, then the 4 MiB the free tail lacked.
  EXPECT_EQ(Stats(kDevice).bytes_held, 8 * kMiB);
  EXPECT_EQ(memarena_cuda_set_memory_fraction(0.5, kDevice), ENOTSUP);
  memarena_cuda_free(a, 3 * kMiB, kDevice, nullptr);
  memarena_cuda_free(b, 5 * kMiB, kDevice, nullptr);
  EXPECT_EQ(memarena_cuda_release_unused(kDevice), 8 * kMiB);
  EXPECT_EQ(Stats(kDevice).bytes_held, 0u);
}

#endif  // MEMARENA_DEVICE_LOGIC_ON_GPU

// Free neighbours freed on different streams merge once both streams' work completed.
TEST_F(DeviceLogic, NeighboursFreedOnDifferentStreamsMergeOnceComplete) {
  Control();
  auto arena = MakeDeviceArena(0);
  const DeviceStream s1 = NewStream();
  const DeviceStream s2 = NewStream();
  const DeviceStream s3 = NewStream();
  void* a = arena->TryAllocateOnStream(512 * 1024, 256, ToStreamHandle(Cuda(s1)));
  void* b = arena->TryAllocateOnStream(512 * 1024, 256, ToStreamHandle(Cuda(s2)));
  ASSERT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 512 * 1024);
  Control().Hold(s1);
  Control().Hold(s2);
  arena->DeallocateOnStream(a, ToStreamHandle(Cuda(s1)));
  arena->DeallocateOnStream(b, ToStreamHandle(Cuda(s2)));
  Control().Release(s1);
  Control().Release(s2);
  void* c = arena->TryAllocateOnStream(kMiB, 256, ToStreamHandle(Cuda(s3)));
  EXPECT_EQ(c, a) << "the two halves did not merge";
  EXPECT_EQ(arena->GetStats().num_arena_extensions, 1u);
  arena->DeallocateOnStream(c, ToStreamHandle(Cuda(s3)));
}

// A block freed on a busy stream goes to another stream only after that work completed; its
// own stream reuses it at once.
TEST_F(DeviceLogic, SameStreamReusesAtOnceOtherStreamsWait) {
  Control();
  auto arena = MakeDeviceArena(0);
  const StreamHandle s1 = ToStreamHandle(Cuda(NewStream()));
  const StreamHandle s2 = ToStreamHandle(Cuda(NewStream()));
  void* a = arena->TryAllocateOnStream(kMiB, 256, s1);
  Control().Hold(DeviceStream{s1});
  arena->DeallocateOnStream(a, s1);
  void* on_other = arena->TryAllocateOnStream(2 * kMiB, 256, s2);  // a region of its own
  EXPECT_NE(on_other, a);
  void* on_same = arena->TryAllocateOnStream(kMiB, 256, s1);
  EXPECT_EQ(on_same, a);
  arena->DeallocateOnStream(on_same, s1);
  Control().Release(DeviceStream{s1});
  void* after = arena->TryAllocateOnStream(kMiB, 256, s2);
  EXPECT_EQ(after, a);
  arena->DeallocateOnStream(after, s2);
  arena->DeallocateOnStream(on_other, s2);
}

#ifndef MEMARENA_DEVICE_LOGIC_ON_GPU  // a death test: kept off the GPU
// Issue 9: the device arena treats a pointer it does not own as every allocator does, on
// either free path (with or without a stream): on_invalid_free decides, nothing is freed.
TEST_F(DeviceLogic, AForeignPointerFollowsOnInvalidFree) {
  Fake();
  auto arena = MakeDeviceArena(0);
  const DeviceStream s = NewStream();
  void* mine = arena->TryAllocateOnStream(kMiB, 256, ToStreamHandle(Cuda(s)));
  ASSERT_NE(mine, nullptr);
  int not_device_memory = 0;
  const std::uint64_t before = InvalidFreeCount();
  SetInvalidFreeAction(InvalidFreeAction::kReport);
  ::testing::internal::CaptureStderr();
  arena->Deallocate(&not_device_memory);
  arena->DeallocateOnStream(static_cast<char*>(mine) + 256, ToStreamHandle(Cuda(s)));
  const std::string lines = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(lines.find("invalid free"), std::string::npos) << lines;
  SetInvalidFreeAction(InvalidFreeAction::kIgnore);
  arena->Deallocate(&not_device_memory);
  EXPECT_EQ(InvalidFreeCount(), before + 3);
  EXPECT_EQ(arena->GetStats().num_frees, 0u);
  SetInvalidFreeAction(InvalidFreeAction::kAbort);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(arena->Deallocate(&not_device_memory), "invalid free of .*aborting");
  arena->DeallocateOnStream(mine, ToStreamHandle(Cuda(s)));
  EXPECT_EQ(arena->GetStats().num_frees, 1u);
}
#endif  // MEMARENA_DEVICE_LOGIC_ON_GPU

}  // namespace
}  // namespace memarena::cuda
