// The docs' key tables are generated from the config rows (one row per key: name, value,
// default, meaning): this test fails when a table in docs/ differs from what the rows give,
// or when `memarena config --doc` prints other tables or misses a key.
// Regenerate with: MEMARENA_UPDATE_DOCS=1 build/tests/common/config_docs_test
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "arena/arena_config_rows.h"
#include "common/config_table.h"
#include "common/memarena_conf.h"
#include "memarena/config_docs.h"
#include "support/read_file.h"
#include "tools/subprocess.h"

namespace memarena {
namespace {

constexpr std::string_view kEnd = "<!-- end of generated table -->\n";

std::string BeginMarker(std::string_view table) {
  return fmt::format("<!-- generated from the {} rows; MEMARENA_UPDATE_DOCS=1 "
                     "build/tests/common/config_docs_test rewrites it -->\n", table);
}

using memarena::testing::ReadFile;

// Where `table`'s generated text sits in docs/`doc`: the file's text and the range after the
// marker line; ADD_FAILUREs and returns false when a marker is missing.
struct DocTable {
  std::string path;
  std::string text;
  std::size_t start = 0;
  std::size_t end = 0;
  std::string Table() const { return text.substr(start, end - start); }
};

bool FindDocTable(const std::string& doc, std::string_view table, DocTable& out) {
  out.path = std::string(MEMARENA_SOURCE_DIR) + "/docs/" + doc;
  out.text = ReadFile(out.path);
  const std::string begin_marker = BeginMarker(table);
  const std::size_t begin = out.text.find(begin_marker);
  if (begin == std::string::npos) {
    ADD_FAILURE() << out.path << " lacks the marker line " << begin_marker;
    return false;
  }
  out.start = begin + begin_marker.size();
  out.end = out.text.find(kEnd, out.start);
  if (out.end == std::string::npos) {
    ADD_FAILURE() << out.path << ": no " << kEnd << " after " << begin_marker;
    return false;
  }
  return true;
}

// Compares the table after `table`'s marker in docs/`doc` with `generated`; with
// MEMARENA_UPDATE_DOCS=1 it writes `generated` there instead.
void ExpectDocTable(const std::string& doc, std::string_view table, const std::string& generated) {
  DocTable found;
  if (!FindDocTable(doc, table, found)) return;
  const char* update = std::getenv("MEMARENA_UPDATE_DOCS");
  if (update != nullptr && std::string_view(update) == "1") {
    found.text.replace(found.start, found.end - found.start, generated);
    std::ofstream(found.path) << found.text;
    return;
  }
  EXPECT_EQ(found.Table(), generated)
      << found.path << ": the " << table << " table differs from the rows; run "
      << "MEMARENA_UPDATE_DOCS=1 build/tests/common/config_docs_test";
}

// The three tables: which doc holds each, and the public function that prints it.
struct TableCase {
  const char* doc;
  const char* table;
  std::string (*generate)();
};
constexpr TableCase kTables[] = {
    {"dropin.md", "HostConfig", &HostConfigDocTable},
    {"dropin.md", "DropinConfig", &DropinConfigDocTable},
    {"arena.md", "ArenaConfig", &ArenaConfigDocTable},
};

TEST(ConfigDocs, EveryDocsTableMatchesTheRows) {
  for (const TableCase& c : kTables) {
    SCOPED_TRACE(c.table);
    ExpectDocTable(c.doc, c.table, c.generate());
  }
}

// The public functions print the rows' tables, not something of their own.
TEST(ConfigDocs, ThePublicTablesAreTheRowsTables) {
  EXPECT_EQ(HostConfigDocTable(), common::ConfigDocTable(common::HostRows()));
  EXPECT_EQ(DropinConfigDocTable(), common::ConfigDocTable(common::DropinRows()));
  EXPECT_EQ(ArenaConfigDocTable(), common::ConfigDocTable(arena::ArenaRows()));
}

testing::ProcessResult Cli(std::vector<std::string> args) {
  args.insert(args.begin(), MEMARENA_CLI);
  return testing::RunProcess(args, {"MEMARENA_CONF="});
}

TEST(ConfigDocs, TheCliMarkdownHoldsEachDocsTableVerbatim) {
  const testing::ProcessResult r = Cli({"config", "--doc", "--markdown"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const TableCase& c : kTables) {
    DocTable found;
    if (!FindDocTable(c.doc, c.table, found)) continue;
    EXPECT_NE(r.out.find(found.Table()), std::string::npos)
        << "memarena config --doc --markdown lacks docs/" << c.doc << "'s " << c.table
        << " table:\n" << found.Table() << "\nit printed:\n" << r.out;
  }
}

// Every key of every row table, in the --help form "key:FORM", with its default.
template <class Config>
void ExpectEveryKeyListed(const std::string& out, std::span<const common::ConfigRow<Config>> rows) {
  const Config defaults{};
  ASSERT_FALSE(rows.empty());
  for (const common::ConfigRow<Config>& row : rows) {
    const std::string key = fmt::format("{}:{}", row.key, row.form);
    const std::size_t at = out.find(key);
    ASSERT_NE(at, std::string::npos) << key << " missing from:\n" << out;
    const std::string line = out.substr(at, out.find('\n', at) - at);
    EXPECT_NE(line.find(fmt::format("(default {})", row.show(defaults))), std::string::npos) << line;
  }
}

TEST(ConfigDocs, TheCliTextListsEveryKeyWithItsDefault) {
  const testing::ProcessResult r = Cli({"config", "--doc"});
  ASSERT_EQ(r.status, 0) << r.err;
  ExpectEveryKeyListed(r.out, common::HostRows());
  ExpectEveryKeyListed(r.out, common::DropinRows());
  ExpectEveryKeyListed(r.out, arena::ArenaRows());
}

TEST(ConfigDocs, TheCliWithoutDocIsAUsageError) {
  const testing::ProcessResult r = Cli({"config"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("give --doc"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace memarena
