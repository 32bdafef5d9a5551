// Stats export: JSON fields, Prometheus exposition structure and labels, and the PyTorch /
// ORT name mappings.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "arena/simulated_memory_source.h"
#include "memarena/arena.h"
#include "memarena/export.h"

namespace memarena {
namespace {

AllocatorStats SampleStats() {
  AllocatorStats s;
  s.bytes_in_use = 1000;
  s.bytes_requested = 900;
  s.bytes_held = 4096;
  s.bytes_releasable = 2048;
  s.largest_free_block = 2048;
  s.fragmentation = 0.3;
  s.peak_bytes_in_use = 3000;
  s.peak_bytes_held = 8192;
  s.limit_bytes = 1 << 20;
  s.num_allocs = 7;
  s.num_frees = 5;
  s.num_reserves = 3;
  s.num_releases = 1;
  s.free_spans_by_length[0] = {3, 3 * kFreeSpanBucketBase};
  s.bytes_released = 4096;
  s.num_ooms = 2;
  s.max_alloc_size = 512;
  s.bytes_in_thread_caches = 640;
  s.bytes_in_central_lists = 320;
  s.bytes_uncarved = 160;
  s.bytes_metadata = 1 << 16;
  return s;
}

TEST(StatsToJson, HasEveryFieldUnderItsStatsName) {
  const std::string json = StatsToJson(SampleStats(), "host");
  EXPECT_TRUE(json.starts_with("{\"allocator\":\"host\","));
  for (const char* kv : {"\"bytes_in_use\":1000", "\"bytes_requested\":900", "\"bytes_held\":4096",
                         "\"bytes_releasable\":2048", "\"fragmentation\":0.3",
                         "\"peak_bytes_held\":8192", "\"limit_bytes\":1048576",
                         "\"num_ooms\":2", "\"num_allocs\":7", "\"size_classes\":[]",
                         "\"bytes_in_thread_caches\":640", "\"bytes_in_central_lists\":320",
                         "\"bytes_uncarved\":160",
                         "\"bytes_metadata\":65536"}) {
    EXPECT_NE(json.find(kv), std::string::npos) << kv << " missing in " << json;
  }
  EXPECT_NE(json.find("\"free_spans_by_length\":[{\"min_bytes\":8192,\"spans\":3,\"bytes\":"
                      "24576},{\"min_bytes\":16384,\"spans\":0,\"bytes\":0},"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"min_bytes\":1048576,\"spans\":0,\"bytes\":0}]}"), std::string::npos)
      << json;
  EXPECT_TRUE(json.ends_with("}"));
}

TEST(StatsToJson, EscapesNamesAndListsSizeClasses) {
  AllocatorStats s;
  const std::vector<SizeClassStats> classes = {{16, 10, 4, 96, 48, 32, 16}, {32, 1, 1, 0}};
  const std::string json = StatsToJson(s, "a\"b\\c", classes);
  EXPECT_NE(json.find(R"("allocator":"a\"b\\c")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("size_classes":[{"size":16,"num_allocs":10,"num_frees":4,)"
                      R"("bytes_in_use":96,"bytes_in_thread_caches":48,)"
                      R"("bytes_in_central_lists":32,"bytes_uncarved":16},{"size":32)"),
            std::string::npos)
      << json;
  const NamedStats two[] = {{"x", s, classes}, {"y", s, {}}};
  const std::string array = StatsToJson(two);
  EXPECT_TRUE(array.starts_with("[{\"allocator\":\"x\""));
  EXPECT_NE(array.find("},{\"allocator\":\"y\""), std::string::npos);
}

TEST(StatsToPrometheus, OneHelpAndTypePerFamilyThenOneSamplePerAllocator) {
  const NamedStats all[] = {{"host", SampleStats()}, {"bfc", AllocatorStats{}}};
  const std::string text = StatsToPrometheus(all);
  std::map<std::string, int> help, type, samples;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    ASSERT_FALSE(line.empty());
    if (line.starts_with("# HELP ")) {
      ++help[line.substr(7, line.find(' ', 7) - 7)];
    } else if (line.starts_with("# TYPE ")) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      ++type[name];
      const std::string kind = line.substr(line.rfind(' ') + 1);
      EXPECT_EQ(kind, name.ends_with("_total") ? "counter" : "gauge") << line;
    } else {
      ASSERT_TRUE(line.starts_with("memarena_")) << line;
      const std::string name = line.substr(0, line.find('{'));
      ++samples[name];
      EXPECT_NE(line.find("{allocator=\""), std::string::npos) << line;
    }
  }
  ASSERT_FALSE(help.empty());
  for (const auto& [name, n] : help) {
    EXPECT_EQ(n, 1) << name;
    EXPECT_EQ(type[name], 1) << name;
    // Two allocators; the free-span families have a sample per length bucket of each.
    EXPECT_EQ(samples[name], name.starts_with("memarena_free_span") ? 2 * int{kFreeSpanBuckets} : 2)
        << name;
  }
  EXPECT_NE(text.find("memarena_bytes_held{allocator=\"host\"} 4096\n"), std::string::npos);
  EXPECT_NE(text.find("memarena_ooms_total{allocator=\"host\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("memarena_fragmentation_ratio{allocator=\"host\"} 0.3\n"), std::string::npos);
  // Where held-not-in-use sits, as the exit stats' summary line names it.
  EXPECT_NE(text.find("memarena_thread_cache_bytes{allocator=\"host\"} 640\n"), std::string::npos);
  EXPECT_NE(text.find("memarena_central_list_bytes{allocator=\"host\"} 320\n"), std::string::npos);
  EXPECT_NE(text.find("memarena_central_list_uncarved_bytes{allocator=\"host\"} 160\n"),
            std::string::npos);
  EXPECT_NE(text.find("memarena_metadata_bytes{allocator=\"host\"} 65536\n"), std::string::npos);
  EXPECT_EQ(text.find("size_class"), std::string::npos);  // no size classes: no such family
}

// Nanosecond fields keep their integer in JSON, under their field names, and go out in
// seconds, Prometheus' base unit, as their metric names say.
TEST(StatsToPrometheus, NanosecondFieldsGoOutInSeconds) {
  AllocatorStats s;
  s.huge_page_size = std::size_t{2} << 20;
  s.huge_pages_enabled = true;
  s.huge_page_blocks = 5;
  s.huge_page_fault_bound_nanos = 5'120'000;
  s.huge_page_slow_fault_nanos = 6'500'000;
  const std::string json = StatsToJson(s, "host");
  for (const char* kv : {"\"huge_page_size\":2097152", "\"huge_pages_enabled\":1",
                         "\"huge_page_blocks\":5", "\"huge_page_fault_bound_nanos\":5120000",
                         "\"huge_page_slow_fault_nanos\":6500000"}) {
    EXPECT_NE(json.find(kv), std::string::npos) << kv << " missing in " << json;
  }
  const NamedStats all[] = {{"host", s}};
  const std::string text = StatsToPrometheus(all);
  for (const char* line : {"memarena_huge_page_fault_bound_seconds{allocator=\"host\"} 0.00512\n",
                           "memarena_huge_page_slow_fault_seconds{allocator=\"host\"} 0.0065\n",
                           "memarena_huge_page_blocks_total{allocator=\"host\"} 5\n",
                           "# TYPE memarena_huge_page_slow_fault_seconds gauge\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " missing in " << text;
  }
}

// Every sample of a family typed `counter`, by metric name.
std::map<std::string, double> CounterSamples(const std::string& text) {
  std::map<std::string, bool> is_counter;
  std::map<std::string, double> samples;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string first, second, third;
    words >> first >> second >> third;
    if (first == "#" && second == "TYPE") {
      std::string type;
      words >> type;
      is_counter[third] = type == "counter";
    } else if (!first.empty() && first[0] != '#') {
      const std::string family = first.substr(0, first.find('{'));
      if (is_counter[family]) samples[first] = std::stod(second);
    }
  }
  return samples;
}

// Issue 17: arena_extensions_total went down after a shrink (ORT lowers
// num_arena_extensions when a region goes back). Counters must never decrease.
TEST(StatsToPrometheus, CountersNeverDecreaseAcrossAnArenaShrink) {
  auto source = std::make_shared<arena::SimulatedMemorySource>();
  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  BfcArena arena(source, config);
  void* a = arena.Allocate(1 << 20);
  void* b = arena.Allocate(4 << 20);
  const std::map<std::string, double> before =
      CounterSamples(StatsToPrometheus(arena.GetStats(), "bfc"));
  ASSERT_EQ(before.at("memarena_arena_extensions_total{allocator=\"bfc\"}"), 2.0);
  arena.Deallocate(a);
  arena.Deallocate(b);
  ASSERT_GT(arena.ReleaseUnusedSpans(), 0u);
  const std::string after_text = StatsToPrometheus(arena.GetStats(), "bfc");
  const std::map<std::string, double> after = CounterSamples(after_text);
  ASSERT_EQ(after.size(), before.size());
  for (const auto& [name, value] : before) {
    EXPECT_GE(after.at(name), value) << name << " decreased";
  }
  EXPECT_NE(after_text.find("# TYPE memarena_arena_extensions gauge"), std::string::npos);
  EXPECT_NE(after_text.find("memarena_arena_extensions{allocator=\"bfc\"} 0"), std::string::npos)
      << after_text;
}

TEST(StatsToPrometheus, SizeClassesGetASizeLabel) {
  const NamedStats host{"host", AllocatorStats{}, {{48, 3, 1, 96, 144, 480, 96}}};
  const std::string text = StatsToPrometheus(std::span<const NamedStats>(&host, 1));
  for (const char* line : {
           "memarena_size_class_bytes_in_use{allocator=\"host\",size=\"48\"} 96\n",
           "memarena_size_class_allocs_total{allocator=\"host\",size=\"48\"} 3\n",
           "memarena_size_class_thread_cache_bytes{allocator=\"host\",size=\"48\"} 144\n",
           "memarena_size_class_central_list_bytes{allocator=\"host\",size=\"48\"} 480\n",
           "memarena_size_class_central_list_uncarved_bytes{allocator=\"host\",size=\"48\"} 96\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "missing in\n" << text;
  }
}

// Each free-span bucket is a sample labelled with its shortest length, as JSON's min_bytes.
TEST(StatsToPrometheus, FreeSpansByLengthGetAMinBytesLabel) {
  const std::string text = StatsToPrometheus(SampleStats(), "host");
  for (const char* line : {"# TYPE memarena_free_spans gauge\n",
                           "memarena_free_spans{allocator=\"host\",min_bytes=\"8192\"} 3\n",
                           "memarena_free_span_bytes{allocator=\"host\",min_bytes=\"8192\"} 24576\n",
                           "memarena_free_spans{allocator=\"host\",min_bytes=\"16384\"} 0\n",
                           "memarena_free_spans{allocator=\"host\",min_bytes=\"1048576\"} 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "missing in\n" << text;
  }
  EXPECT_EQ(text.find("min_bytes=\"2097152\""), std::string::npos) << "a ninth bucket";
}

TEST(NameMappings, PyTorchAndOrtKeysCarryTheRightFields) {
  const AllocatorStats s = SampleStats();
  std::map<std::string, std::int64_t> torch;
  for (const auto& [k, v] : PyTorchMemoryStats(s)) torch[k] = v;
  EXPECT_EQ(torch.at("allocated_bytes.all.current"), 1000);
  EXPECT_EQ(torch.at("reserved_bytes.all.current"), 4096);
  EXPECT_EQ(torch.at("reserved_bytes.all.peak"), 8192);
  EXPECT_EQ(torch.at("requested_bytes.all.current"), 900);
  EXPECT_EQ(torch.at("inactive_split_bytes.all.current"), 4096 - 1000 - 2048);
  EXPECT_EQ(torch.at("allocation.all.current"), 2);
  EXPECT_EQ(torch.at("segment.all.current"), 2);
  EXPECT_EQ(torch.at("num_ooms"), 2);
  std::map<std::string, std::int64_t> ort;
  for (const auto& [k, v] : OrtAllocatorStats(s)) ort[k] = v;
  EXPECT_EQ(ort.at("bytes_in_use"), 1000);
  EXPECT_EQ(ort.at("total_allocated_bytes"), 4096);
  EXPECT_EQ(ort.at("max_bytes_in_use"), 3000);
  EXPECT_EQ(ort.at("bytes_limit"), 1 << 20);
  EXPECT_EQ(ort.at("num_reserves"), 3);
  EXPECT_EQ(ort.at("max_alloc_size"), 512);
}

}  // namespace
}  // namespace memarena
