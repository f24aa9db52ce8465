// The part of TOML a config file of `ignis train` uses: top-level `key = value` lines whose
// values are strings, integers, floats or booleans, with comments and blank lines. Written
// here rather than taken from a TOML library because the file comes from the user and is
// parsed before anything else: Debian's toml++ 3.3 reached undefined behaviour on several
// inputs that fuzz_config found (non-ASCII characters after a key, a table header without a
// key). This reader checks every byte itself and refuses, naming the line, what the options
// cannot be: tables, dotted keys, arrays, inline tables, dates and multi-line strings.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace ignis_cli {

/// A TOML document this reader refuses: the 1-based line and what is wrong there.
class TomlError : public std::runtime_error {
 public:
  TomlError(int line, const std::string& what) : std::runtime_error(what), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

/// The document's keys and values as a JSON object (strings, int64 integers, doubles,
/// booleans). Throws TomlError for invalid UTF-8, invalid TOML, a duplicate key, or valid
/// TOML that is not a flat set of options.
nlohmann::json parse_toml_options(const std::string& text);

}  // namespace ignis_cli
