// memarena::gtest_main: GoogleTest's main with the memory guard installed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "memarena/errors.h"
#include "memarena/testing/gtest_listener.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    memarena::testing::InstallMemoryGuard();
  } catch (const memarena::ConfigError& e) {
    fmt::print(stderr, "memarena gtest guard: {}\n", e.what());
    return 2;
  }
  return RUN_ALL_TESTS();
}
