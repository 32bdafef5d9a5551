// ReplaceFileContents: the target changes only as a whole. A write that fails leaves the old
// file and no temporary behind; one that succeeds replaces it.
#include "common/replace_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "platform/os.h"
#include "support/read_file.h"

namespace memarena::common {
namespace {

using memarena::testing::ReadFile;

TEST(ReplaceFileContents, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const std::string dir = ::testing::TempDir() + "memarena_replace_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string target = dir + "/profile";
  ReplaceFileContents(target, "test", [](int fd) { return platform::WriteAll(fd, "old\n", 4); });
  EXPECT_EQ(ReadFile(target), "old\n");

  try {
    ReplaceFileContents(target, "WriteTest", [](int fd) {
      platform::WriteAll(fd, "half", 4);  // a writer that gives up midway
      return false;
    });
    ADD_FAILURE() << "a failed write did not throw";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("WriteTest: cannot write '" + target + ".tmp."), std::string::npos)
        << what;
    // A writer that fails without errno still gets a reason (EIO), never a rename.
    EXPECT_NE(what.find(": Input/output error"), std::string::npos) << what;
  }
  EXPECT_EQ(ReadFile(target), "old\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir),
                          std::filesystem::directory_iterator()),
            1)
      << "the temporary was left behind";

  ReplaceFileContents(target, "test", [](int fd) { return platform::WriteAll(fd, "new\n", 4); });
  EXPECT_EQ(ReadFile(target), "new\n");
  std::filesystem::remove_all(dir);
}

TEST(ReplaceFileContents, AnUncreatableTemporaryNamesIt) {
  try {
    ReplaceFileContents("/nonexistent-dir/profile", "WriteTest", [](int) { return true; });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("WriteTest: cannot create '/nonexistent-dir/profile.tmp."),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace memarena::common
