// The docs' key tables are generated from the config rows (one row per key: name, value,
// default, meaning): this test fails when a table in docs/ differs from what the rows give.
// Regenerate with: MEMARENA_UPDATE_DOCS=1 build/tests/common/config_docs_test
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "arena/arena_config_rows.h"
#include "common/config_table.h"
#include "common/memarena_conf.h"

namespace memarena {
namespace {

constexpr std::string_view kEnd = "<!-- end of generated table -->\n";

std::string BeginMarker(std::string_view table) {
  return fmt::format("<!-- generated from the {} rows; MEMARENA_UPDATE_DOCS=1 "
                     "build/tests/common/config_docs_test rewrites it -->\n", table);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Compares the table after `table`'s marker in docs/`doc` with `generated`; with
// MEMARENA_UPDATE_DOCS=1 it writes `generated` there instead.
void ExpectDocTable(const std::string& doc, std::string_view table, const std::string& generated) {
  const std::string path = std::string(MEMARENA_SOURCE_DIR) + "/docs/" + doc;
  std::string text = ReadFile(path);
  const std::string begin_marker = BeginMarker(table);
  const std::size_t begin = text.find(begin_marker);
  ASSERT_NE(begin, std::string::npos) << path << " lacks the marker line " << begin_marker;
  const std::size_t start = begin + begin_marker.size();
  const std::size_t end = text.find(kEnd, start);
  ASSERT_NE(end, std::string::npos) << path << ": no " << kEnd << " after " << begin_marker;
  const char* update = std::getenv("MEMARENA_UPDATE_DOCS");
  if (update != nullptr && std::string_view(update) == "1") {
    text.replace(start, end - start, generated);
    std::ofstream(path) << text;
    return;
  }
  EXPECT_EQ(text.substr(start, end - start), generated)
      << path << ": the " << table << " table differs from the rows; run "
      << "MEMARENA_UPDATE_DOCS=1 build/tests/common/config_docs_test";
}

TEST(ConfigDocs, MemarenaConfHostTableMatchesTheRows) {
  ExpectDocTable("dropin.md", "HostConfig", common::ConfigDocTable(common::HostRows()));
}

TEST(ConfigDocs, MemarenaConfDropinTableMatchesTheRows) {
  ExpectDocTable("dropin.md", "DropinConfig", common::ConfigDocTable(common::DropinRows()));
}

TEST(ConfigDocs, ArenaConfigTableMatchesTheRows) {
  ExpectDocTable("arena.md", "ArenaConfig", common::ConfigDocTable(arena::ArenaRows()));
}

}  // namespace
}  // namespace memarena
