// memarena as ONNX Runtime's shared allocator, on the real runtime: two sessions on one
// registered arena give the same outputs as ORT alone, share one arena's accounting, hold
// less than two arenas would, and a ceiling fails Run with memarena's diagnostic.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "memarena/memarena.h"
#include "memarena/ort.h"
#include "ort/ort_abi.h"
#include "ort_runtime.h"
#include "tiny_model.h"

namespace memarena::ort {
namespace {

namespace abi = memarena::ort::abi;
using testing::BuildTinyModel;
using testing::Runtime;
using testing::Session;
using testing::TinyModel;
using testing::TinyModelInput;

constexpr std::size_t kWidth = 256;
// Batch sizes of the dynamic dimension, in the order every session runs them.
constexpr std::int64_t kBatches[] = {1, 16, 64, 7};

class OrtSessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto where = testing::LocateRuntime();
    if (!where.skip_reason.empty()) {
      skip_reason_ = new std::string(where.skip_reason);
      return;
    }
    runtime_ = new Runtime(where.library);  // a failure to load a present library is a failure
  }
  static void TearDownTestSuite() {
    delete runtime_;
    runtime_ = nullptr;
  }
  void SetUp() override {
    if (skip_reason_ != nullptr) GTEST_SKIP() << *skip_reason_;
  }

  // Outputs of `model` for every batch of kBatches, one vector per batch.
  static std::vector<std::vector<float>> RunAll(const Session& session) {
    std::vector<std::vector<float>> outputs;
    for (std::int64_t batch : kBatches)
      outputs.push_back(session.Run(TinyModelInput(batch, kWidth), batch));
    return outputs;
  }

  static inline Runtime* runtime_ = nullptr;
  static inline std::string* skip_reason_ = nullptr;
};

// Registers an adapter for the scope of one test: the environment is process-wide.
class Registration {
 public:
  Registration(const Runtime& runtime, OrtAllocatorAdapter& adapter)
      : runtime_(runtime), adapter_(adapter) {
    RegisterSharedAllocator(runtime.api(), runtime.env(), adapter);
  }
  ~Registration() { UnregisterSharedAllocator(runtime_.api(), runtime_.env(), adapter_); }

 private:
  const Runtime& runtime_;
  OrtAllocatorAdapter& adapter_;
};

// kSameAsRequested: held is exactly what the sessions needed at their peak, so comparing
// held bytes measures sharing, not power-of-two rounding.
ArenaConfig TestArenaConfig() {
  const OrtArenaCfgEntry entries[] = {{"arena_extend_strategy", 1}};
  return ArenaConfigFromOrtArenaCfg(entries);
}

TEST_F(OrtSessionTest, RefusesARuntimeOlderThanTheApiVersionAsked) {
  try {
    RequireOrtApi(runtime_->api_base(), 1000);
    FAIL() << "API version 1000 was accepted";
  } catch (const OrtError& error) {
    EXPECT_NE(std::string(error.what()).find("does not provide C API version 1000"),
              std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find(runtime_->version()), std::string::npos)
        << error.what();
  }
}

TEST_F(OrtSessionTest, TwoSessionsShareOneArenaAndMatchOrtsOwnOutputs) {
  const TinyModel model_a = BuildTinyModel(kWidth, 1);
  const TinyModel model_b = BuildTinyModel(kWidth, 2);

  // Reference: ORT's own per-session arena, memarena not involved.
  std::vector<std::vector<float>> expected_a, expected_b;
  {
    Session a(*runtime_, model_a, /*use_env_allocators=*/false);
    Session b(*runtime_, model_b, /*use_env_allocators=*/false);
    expected_a = RunAll(a);
    expected_b = RunAll(b);
  }

  // Two separate memarena arenas, one session each: the sum of their peaks.
  std::size_t separate_peaks = 0;
  for (const TinyModel* model : {&model_a, &model_b}) {
    BfcArena arena(std::make_shared<HostMemorySource>(), TestArenaConfig());
    OrtAllocatorAdapter adapter(runtime_->api(), arena);
    Registration registration(*runtime_, adapter);
    {
      Session session(*runtime_, *model, /*use_env_allocators=*/true);
      RunAll(session);
    }
    separate_peaks += arena.GetStats().peak_bytes_held;
  }

  // One shared arena for both sessions.
  BfcArena arena(std::make_shared<HostMemorySource>(), TestArenaConfig());
  OrtAllocatorAdapter adapter(runtime_->api(), arena);
  Registration registration(*runtime_, adapter);
  {
    Session a(*runtime_, model_a, /*use_env_allocators=*/true);
    const AllocatorStats after_a = arena.GetStats();
    // Session A's weight matrices live in the arena.
    EXPECT_GE(after_a.bytes_in_use, model_a.matrix_bytes);
    Session b(*runtime_, model_b, /*use_env_allocators=*/true);
    const AllocatorStats after_b = arena.GetStats();
    // ... and so do B's, beside A's: one arena holds both sessions' weights.
    EXPECT_GE(after_b.bytes_in_use, model_a.matrix_bytes + model_b.matrix_bytes);
    EXPECT_GT(after_b.num_allocs, after_a.num_allocs);

    // Interleaved runs: each one allocates its activations and output from the same arena.
    for (std::size_t i = 0; i < std::size(kBatches); ++i) {
      const std::int64_t batch = kBatches[i];
      const std::uint64_t before_a = arena.GetStats().num_allocs;
      EXPECT_EQ(a.Run(TinyModelInput(batch, kWidth), batch), expected_a[i]) << "batch " << batch;
      const std::uint64_t before_b = arena.GetStats().num_allocs;
      EXPECT_GT(before_b, before_a) << "session A's run did not allocate from the shared arena";
      EXPECT_EQ(b.Run(TinyModelInput(batch, kWidth), batch), expected_b[i]) << "batch " << batch;
      EXPECT_GT(arena.GetStats().num_allocs, before_b)
          << "session B's run did not allocate from the shared arena";
    }
    // Between runs only the initializers stay in use.
    EXPECT_EQ(arena.GetStats().bytes_in_use, after_b.bytes_in_use);
  }
  const AllocatorStats shared = arena.GetStats();
  EXPECT_EQ(shared.bytes_in_use, 0u) << "the sessions left memory in the arena";
  EXPECT_EQ(shared.num_frees, shared.num_allocs);
  EXPECT_LT(shared.peak_bytes_held, separate_peaks)
      << "one shared arena held " << shared.peak_bytes_held
      << " B at its peak, two separate arenas " << separate_peaks << " B together";
  EXPECT_EQ(adapter.num_failures(), 0u);
  RecordProperty("shared_peak_held", std::to_string(shared.peak_bytes_held));
  RecordProperty("separate_peaks_held", std::to_string(separate_peaks));
}

TEST_F(OrtSessionTest, CeilingBelowTheNeedFailsRunWithMemarenasDiagnosticThenRecovers) {
  const TinyModel model = BuildTinyModel(kWidth, 3);
  constexpr std::int64_t kBatch = 64;
  const auto input = TinyModelInput(kBatch, kWidth);
  std::vector<float> expected;
  {
    Session reference(*runtime_, model, /*use_env_allocators=*/false);
    expected = reference.Run(input, kBatch);
  }

  Allocator& host = HostAllocator();
  OrtAllocatorAdapter adapter(runtime_->api(), host);
  Registration registration(*runtime_, adapter);
  Session session(*runtime_, model, /*use_env_allocators=*/true);
  ASSERT_EQ(session.Run(input, kBatch), expected);

  // A ceiling that keeps the weights but leaves less than one activation of this batch.
  ReleaseUnusedSpans();
  const std::size_t activation = static_cast<std::size_t>(kBatch) * kWidth * sizeof(float);
  const std::size_t ceiling = host.GetStats().bytes_held + activation / 4;
  ASSERT_TRUE(SetCeiling(ceiling));
  const std::uint64_t failures_before = adapter.num_failures();
  try {
    session.Run(input, kBatch);
    SetCeiling(0);
    FAIL() << "Run succeeded under a ceiling of " << ceiling << " B";
  } catch (const OrtError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("memarena: ORT Run"), std::string::npos) << message;
    // memarena's diagnostic, inside ORT's error: what was asked, the limit and the knob.
    EXPECT_NE(message.find("could not allocate"), std::string::npos) << message;
    EXPECT_NE(message.find("limit"), std::string::npos) << message;
    EXPECT_NE(message.find("ceiling"), std::string::npos) << message;
    RecordProperty("ort_error", message);
  }
  EXPECT_GT(adapter.num_failures(), failures_before);

  // Raised ceiling: the same session runs again and gives the same output.
  ASSERT_TRUE(SetCeiling(0));
  EXPECT_EQ(session.Run(input, kBatch), expected);
}

TEST_F(OrtSessionTest, OrtReadsMemarenaStatsUnderItsOwnKeyNames) {
  const TinyModel model = BuildTinyModel(kWidth, 4);
  BfcArena arena(std::make_shared<HostMemorySource>(), TestArenaConfig());
  OrtAllocatorAdapter adapter(runtime_->api(), arena);
  Registration registration(*runtime_, adapter);
  Session session(*runtime_, model, /*use_env_allocators=*/true);
  RunAll(session);

  const OrtApi* api = runtime_->api();
  OrtKeyValuePairs* pairs = nullptr;
  ThrowIfError(api,
               abi::Get<abi::AllocatorGetStatsFn>(api, abi::Entry::kAllocatorGetStats)(
                   adapter.get(), &pairs),
               "AllocatorGetStats");
  ASSERT_NE(pairs, nullptr);
  const auto value = [&](const char* key) {
    const char* text = abi::Get<abi::GetKeyValueFn>(api, abi::Entry::kGetKeyValue)(pairs, key);
    return text == nullptr ? std::string("(missing)") : std::string(text);
  };
  const AllocatorStats stats = arena.GetStats();
  EXPECT_EQ(value("Limit"), "-1");
  EXPECT_EQ(value("InUse"), std::to_string(stats.bytes_in_use));
  EXPECT_EQ(value("TotalAllocated"), std::to_string(stats.bytes_held));
  EXPECT_EQ(value("MaxInUse"), std::to_string(stats.peak_bytes_in_use));
  EXPECT_EQ(value("NumAllocs"), std::to_string(stats.num_allocs));
  EXPECT_EQ(value("NumReserves"), std::to_string(adapter.num_reserves()));
  EXPECT_EQ(value("NumArenaExtensions"), std::to_string(stats.num_arena_extensions));
  EXPECT_EQ(value("NumArenaShrinkages"), std::to_string(stats.num_arena_shrinkages));
  EXPECT_EQ(value("MaxAllocSize"), std::to_string(stats.max_alloc_size));
  EXPECT_EQ(value("memarena.PeakHeld"), std::to_string(stats.peak_bytes_held));
  abi::Get<abi::ReleaseKeyValuePairsFn>(api, abi::Entry::kReleaseKeyValuePairs)(pairs);
  EXPECT_GT(stats.num_allocs, 0u);
  // ORT allocates the initializers (the weight matrices) through Reserve.
  EXPECT_GT(adapter.num_reserves(), 0u);
}

}  // namespace
}  // namespace memarena::ort
