// Whole-file reading for the data readers: plain or gzip (zlib detects gzip by content, so a
// .gz name is not required), and a bounds-checked cursor over the bytes so a reader cannot
// read past the end of a short file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ignis::data::detail {

/// The bytes of path, gunzipped when it is gzip. IOError "[op] cannot open <path>: ..." when
/// it is missing, "[op] <path>: corrupt or truncated gzip data" when inflating fails.
std::vector<uint8_t> read_file_bytes(const std::string& path, const char* op);
/// The bytes of path exactly as stored (no gzip inflating): for formats that carry their own
/// compression and are told apart by their first bytes (PNG, JPEG). Same errors as above.
std::vector<uint8_t> read_raw_file_bytes(const std::string& path, const char* op);
/// The lines of a text file (trailing '\r' removed), through read_file_bytes.
std::vector<std::string> read_text_lines(const std::string& path, const char* op);
/// The first existing path of the candidates (tried in order), else the first one.
std::string first_existing(const std::vector<std::string>& candidates);

}  // namespace ignis::data::detail
