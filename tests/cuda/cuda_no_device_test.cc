// The CUDA backend on a machine without a usable device: every entry point reports the
// runtime's reason or returns nullptr; nothing crashes. Skips where a device exists.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "memarena/cuda.h"

namespace memarena {
namespace {

class NoDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount(&reason_) > 0) GTEST_SKIP() << "a CUDA device is present";
  }
  std::string reason_;
};

TEST_F(NoDevice, DeviceCountGivesTheRuntimesReason) {
  EXPECT_FALSE(reason_.empty());
}

TEST_F(NoDevice, FactoriesThrowNamingTheDeviceAndTheReason) {
  for (auto make : {+[] { cuda::MakeDeviceArena(0); }, +[] { cuda::MakeDeviceMemorySource(0); },
                    +[] { cuda::MakeEventFence(0); }}) {
    try {
      make();
      FAIL() << "a factory succeeded without a device";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("device 0"), std::string::npos) << what;
      EXPECT_NE(what.find(reason_), std::string::npos) << what;
    }
  }
}

// PyTorch never checks the returned pointer, so an unusable device must raise, naming it.
TEST_F(NoDevice, PluggableAbiRaisesNamingTheDeviceAndIgnoresFrees) {
  for (int device : {0, -1, 1000}) {
    try {
      void* p = memarena_cuda_malloc(4096, device, nullptr);
      ADD_FAILURE() << "device " << device << " returned " << p;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("device {}", device)), std::string::npos)
          << e.what();
    }
  }
  memarena_cuda_free(nullptr, 0, 0, nullptr);
  EXPECT_EQ(memarena_cuda_release_unused(0), 0u);
  memarena_cuda_empty_cache();
  memarena_stats stats{};
  EXPECT_EQ(memarena_cuda_get_stats(0, &stats), 0);
  EXPECT_EQ(stats.bytes_held, 0u);
}

TEST(CudaStreams, HandlesKeepTheDefaultStreamApartFromNoStream) {
  EXPECT_NE(cuda::ToStreamHandle(nullptr), StreamHandle{0});
  EXPECT_NE(cuda::ToStreamHandle(nullptr),
            cuda::ToStreamHandle(reinterpret_cast<CUstream_st*>(0x2)));
}

}  // namespace
}  // namespace memarena
