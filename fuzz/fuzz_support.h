// What every fuzz target shares: the fuzzer's bytes as a real file. The bytes go into one
// memfd (an anonymous in-memory file) that each run rewrites, and the reader opens it by its
// /proc/self/fd path, so the production reader runs unchanged (open, size, read) at memory
// speed and nothing touches the disk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ignis::fuzz {

/// Replaces the memfd's contents with data[0, size) and returns a path that opens it.
std::string as_file(const uint8_t* data, size_t size);

/// The same, under the name `relative` (e.g. "run/config.json") inside a private temporary
/// directory that is removed at exit: for readers that go by the file's name or look for it
/// in a directory. The name is a symlink to the memfd, made once per name.
std::string as_named_file(const uint8_t* data, size_t size, const std::string& relative);

}  // namespace ignis::fuzz
