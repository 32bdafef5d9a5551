// HostConfig: the host heap's rows of MEMARENA_CONF, and the public parse, help and docs
// tables built on the whole table (host and drop-in rows).
#include <fmt/format.h>

#include <array>

#include "common/memarena_conf.h"
#include "memarena/config.h"
#include "memarena/config_docs.h"
#include "memarena/errors.h"
#include "platform/os.h"

namespace memarena {
namespace {

InvalidFreeAction ParseInvalidFreeAction(std::string_view key, std::string_view value) {
  if (value == "abort") return InvalidFreeAction::kAbort;
  if (value == "report") return InvalidFreeAction::kReport;
  if (value == "ignore") return InvalidFreeAction::kIgnore;
  throw ConfigError(fmt::format("bad value '{}' for key '{}': expected abort, report or ignore",
                                value, key));
}

std::string ShowInvalidFreeAction(InvalidFreeAction action) {
  return action == InvalidFreeAction::kAbort    ? "abort"
         : action == InvalidFreeAction::kReport ? "report"
                                                : "ignore";
}

double ParseReleaseRatio(std::string_view key, std::string_view value) {
  return common::ParseRatio(key, value, 0.0, 1.0);
}

using common::Row;
constexpr std::array kHostRows = {
    common::SizeRow<&HostConfig::ceiling>(
        "ceiling", "limit on held bytes, e.g. 8GiB (0 = unlimited); past it malloc "
        "returns NULL with ENOMEM and new throws std::bad_alloc"),
    Row<&HostConfig::release_threshold_ratio, ParseReleaseRatio, common::ShowNumber>(
        "release_threshold_ratio", "R", "give free spans back once held crosses R x ceiling, "
        "0 < R <= 1"),
    common::SizeRow<&HostConfig::thread_cache_bytes>(
        "thread_cache_bytes", "bytes all thread caches together may keep: each thread's "
        "budget grows from this pool as it needs"),
    common::SizeRow<&HostConfig::release_keep>(
        "release_keep", "free spans ReleaseUnusedSpans() and malloc_trim keep "
        "committed: a warm working set that counts against the ceiling (0 = release all)"),
    common::BoolRow<&HostConfig::huge_pages>(
        "huge_pages", "fresh pages come as transparent huge pages: large blocks ask for them "
        "on the whole 2 MiB pages inside them, and past 64 MiB held smaller requests commit "
        "whole 2 MiB pages; one page fault per 2 MiB instead of 512, while huge pages prove "
        "cheap: two first faults slower than 2 ms and than the same 2 MiB in 4 KiB faults, "
        "with fewer than 8 fast ones between, switch them off; freed pages taken again "
        "move with mremap only while huge pages are off, since a move splits them (0 = 4 KiB "
        "pages only)"),
    Row<&HostConfig::on_invalid_free, ParseInvalidFreeAction, ShowInvalidFreeAction>(
        "on_invalid_free", "abort|report|ignore", "double, interior or foreign free: abort "
        "with a message, print it and carry on, or carry on"),
};

}  // namespace

namespace common {
std::span<const ConfigRow<HostConfig>> HostRows() { return kHostRows; }
}  // namespace common

HostConfig HostConfig::Parse(std::string_view text) {
  std::vector<std::string> errors;
  const common::MemarenaConf conf = common::ParseMemarenaConf(text, errors);
  common::ThrowIfAny(errors);
  return conf.host;
}

HostConfig HostConfig::FromEnvironment() {
  const char* text = platform::GetEnv("MEMARENA_CONF");
  return text == nullptr ? HostConfig{} : Parse(text);
}

std::string HostConfigHelp() {
  return fmt::format(
      "MEMARENA_CONF=key:value,... with keys:\n{}drop-in (LD_PRELOAD=libmemarena_malloc.so or "
      "the link-time override) keys:\n{}SIZE takes B, K/KiB, M/MiB, G/GiB or T/TiB.",
      common::ConfigHelpLines(common::HostRows()), common::ConfigHelpLines(common::DropinRows()));
}

std::string HostConfigDocTable() { return common::ConfigDocTable(common::HostRows()); }

std::string DropinConfigDocTable() { return common::ConfigDocTable(common::DropinRows()); }

}  // namespace memarena
