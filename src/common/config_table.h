// One row per config key (after mimalloc's options table): name, value form, help and the
// parser/printer of the field it sets. The parser, the --help text and the docs tables are
// all generated from the rows; the default is the field's initializer, printed by the row.
#pragma once

#include <fmt/format.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/config_parser.h"
#include "memarena/errors.h"

namespace memarena::common {

template <class Config>
struct ConfigRow {
  std::string_view key;
  std::string_view form;  // the value, as --help shows it: SIZE, 0|1, PATH, ...
  std::string_view help;  // what the key does, one sentence
  // Parses `value` into the field; throws ConfigError naming `key` and what is allowed.
  void (*apply)(Config& config, std::string_view key, std::string_view value);
  // The field's value as it would be written in the string (the default, for the docs).
  std::string (*show)(const Config& config);
};

// The row of `Field` (a pointer to a member of Config) whose value `Parse(key, value)`
// reads and `Show(value)` writes back.
template <auto Field>
struct FieldOf;
template <class Config, class T, T Config::*Field>
struct FieldOf<Field> {
  using ConfigType = Config;
  using Type = T;
};

template <auto Field, auto Parse, auto Show>
constexpr ConfigRow<typename FieldOf<Field>::ConfigType> Row(std::string_view key,
                                                            std::string_view form,
                                                            std::string_view help) {
  using Config = typename FieldOf<Field>::ConfigType;
  return {key, form, help,
          [](Config& c, std::string_view k, std::string_view v) { c.*Field = Parse(k, v); },
          [](const Config& c) { return Show(c.*Field); }};
}

// Value printers for Row, the inverses of the Parse* helpers.
std::string ShowSize(std::size_t bytes);
std::string ShowBool(bool value);
std::string ShowText(const std::string& text);  // "(none)" when empty
std::string ParseText(std::string_view key, std::string_view value);

// The rows of the common value types: a size (B..TiB suffixes), 0|1, a file path.
template <auto Field>
constexpr auto SizeRow(std::string_view key, std::string_view help) {
  return Row<Field, ParseSize, ShowSize>(key, "SIZE", help);
}
template <auto Field>
constexpr auto BoolRow(std::string_view key, std::string_view help) {
  return Row<Field, ParseBool, ShowBool>(key, "0|1", help);
}
template <auto Field>
constexpr auto PathRow(std::string_view key, std::string_view help) {
  return Row<Field, ParseText, ShowText>(key, "PATH", help);
}

std::string ShowNumber(double value);

// One key:value item of a settings string. `has_value` is false for "key" and "key:".
struct Setting {
  std::string_view key;
  std::string_view value;
  bool has_value = false;
};

// Splits `text` on ',' into settings (spaces around either part are ignored; '=' is accepted
// in place of ':'); empty items are skipped.
std::vector<Setting> SplitSettings(std::string_view text);

// The message for a key that no table of the string knows, listing `allowed_keys`.
std::string UnknownKeyMessage(std::string_view what, std::string_view key,
                              std::string_view allowed_keys);
// The message for "key" or "key:" without a value.
std::string MissingValueMessage(std::string_view what, std::string_view key,
                                std::string_view form, std::string_view help);

// "ceiling, release_threshold_ratio, ..." for messages.
template <class Config>
std::string ListKeys(std::span<const ConfigRow<Config>> rows) {
  std::string out;
  for (const ConfigRow<Config>& row : rows) out += fmt::format("{}{}", out.empty() ? "" : ", ", row.key);
  return out;
}

template <class Config>
const ConfigRow<Config>* FindRow(std::span<const ConfigRow<Config>> rows, std::string_view key) {
  for (const ConfigRow<Config>& row : rows) {
    if (row.key == key) return &row;
  }
  return nullptr;
}

// Applies one setting through its row. A missing or bad value adds one message (naming
// `what`, the key and what is allowed) to `errors` and leaves the field alone.
template <class Config>
void ApplySetting(const ConfigRow<Config>& row, const Setting& setting, std::string_view what,
                  Config& config, std::vector<std::string>& errors) {
  if (!setting.has_value) {
    errors.push_back(MissingValueMessage(what, row.key, row.form, row.help));
    return;
  }
  try {
    row.apply(config, row.key, setting.value);
  } catch (const ConfigError& e) {
    errors.push_back(fmt::format("{}: {}", what, e.what()));
  }
}

// Applies every setting of `text` through `rows`. A bad one does not stop the others: each
// unknown key, missing value or bad value adds one message to the result, and every valid
// key still applies.
template <class Config>
std::vector<std::string> ApplySettings(std::string_view text,
                                       std::span<const ConfigRow<Config>> rows,
                                       std::string_view what, Config& config) {
  std::vector<std::string> errors;
  for (const Setting& setting : SplitSettings(text)) {
    if (const ConfigRow<Config>* row = FindRow(rows, setting.key)) {
      ApplySetting(*row, setting, what, config, errors);
    } else {
      errors.push_back(UnknownKeyMessage(what, setting.key, ListKeys(rows)));
    }
  }
  return errors;
}

// Throws one ConfigError carrying every message, one per line, when there is any.
void ThrowIfAny(const std::vector<std::string>& errors);

// --help lines: "  key:FORM   help (default D)".
template <class Config>
std::string ConfigHelpLines(std::span<const ConfigRow<Config>> rows) {
  const Config defaults{};
  std::string out;
  for (const ConfigRow<Config>& row : rows) {
    out += fmt::format("  {:<34} {} (default {})\n", fmt::format("{}:{}", row.key, row.form),
                       row.help, row.show(defaults));
  }
  return out;
}

// `text` for a markdown table cell: '|' escaped, since it would end the cell.
std::string MarkdownCell(std::string_view text);

// The docs table (markdown): | key | value | default | meaning |.
template <class Config>
std::string ConfigDocTable(std::span<const ConfigRow<Config>> rows) {
  const Config defaults{};
  std::string out = "| key | value | default | meaning |\n|---|---|---|---|\n";
  for (const ConfigRow<Config>& row : rows) {
    out += fmt::format("| `{}` | `{}` | `{}` | {} |\n", row.key, MarkdownCell(row.form),
                       MarkdownCell(row.show(defaults)), MarkdownCell(row.help));
  }
  return out;
}

}  // namespace memarena::common
