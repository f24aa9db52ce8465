// The safetensors reader. The file is untrusted: the header length, every dtype, shape and
// offset are checked against each other and against the file size *before* any tensor is
// allocated, so a forged size can neither read out of bounds nor make us allocate more than
// the file holds. The tensors' byte ranges must tile the data buffer exactly (sorted, no
// overlap, no gap, nothing after the last one), which is what the writer produces and what
// rules out two names aliasing the same bytes. Data is then read in one sequential pass.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/shape_fits.h"
#include "ignis/io.h"
#include "ignis/ops.h"
#include "io/safetensors_format.h"

namespace ignis {
namespace {

using json = nlohmann::json;

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Reads exactly n bytes or throws (a file that shrinks while being read is caught here).
void read_exact(std::FILE* f, void* dst, size_t n, const std::string& path, const char* what) {
  IGNIS_CHECK(std::fread(dst, 1, n, f) == n, IOError, "[load] '{}': short read of {}", path, what);
}

// A JSON value for an error message, cut short: a forged header can put megabytes into one
// field, and the message should name the problem, not repeat the file.
std::string brief(const json& v) {
  std::string s = v.dump();
  constexpr size_t kMax = 80;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

// A safetensors header nests three levels (header object, tensor entry, shape or offsets
// array); anything deeper is not the format, and refusing it early keeps a forged header of
// deeply nested arrays from driving recursive code (dump, destruction) into the stack limit.
constexpr int kMaxHeaderDepth = 3;

// nlohmann keeps the last of duplicate keys silently; a parser callback sees every key, so
// keep one set of seen keys per open object and refuse a repeat at any depth.
json parse_header(const std::string& text, const std::string& path) {
  std::vector<std::set<std::string>> open;
  std::string duplicate;
  auto cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start || ev == json::parse_event_t::array_start)
      IGNIS_CHECK(
          depth < kMaxHeaderDepth,
          IOError,
          "[load] '{}': header nests deeper than the {} levels of the format",
          path,
          kMaxHeaderDepth);
    if (ev == json::parse_event_t::object_start)
      open.emplace_back();
    else if (ev == json::parse_event_t::object_end)
      open.pop_back();
    else if (ev == json::parse_event_t::key && !open.empty()) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (!open.back().insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  json h;
  try {
    h = json::parse(text, cb);
  } catch (const json::exception& e) {
    throw IOError(fmt::format("[load] '{}': header is not valid JSON: {}", path, e.what()));
  }
  IGNIS_CHECK(
      duplicate.empty(), IOError, "[load] '{}': duplicate key '{}' in header", path, duplicate);
  IGNIS_CHECK(h.is_object(), IOError, "[load] '{}': header is not a JSON object", path);
  return h;
}

uint64_t as_u64(
    const json& v, const std::string& path, const std::string& name, const char* field) {
  IGNIS_CHECK(
      v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0),
      IOError,
      "[load] '{}': tensor '{}': {} must be non-negative integers, got {}",
      path,
      name,
      field,
      brief(v));
  return v.get<uint64_t>();
}

Entry parse_entry(const std::string& name, const json& v, const std::string& path) {
  IGNIS_CHECK(
      v.is_object(), IOError, "[load] '{}': tensor '{}': entry is not an object", path, name);
  for (const char* field : {"dtype", "shape", "data_offsets"})
    IGNIS_CHECK(
        v.contains(field), IOError, "[load] '{}': tensor '{}': missing '{}'", path, name, field);
  IGNIS_CHECK(
      v.size() == 3,
      IOError,
      "[load] '{}': tensor '{}': unexpected fields in {}",
      path,
      name,
      brief(v));
  Entry e{name, DType::Float32, {}, 0, 0};
  const json& dt = v["dtype"];
  auto dtype = dt.is_string() ? io_detail::dtype_from_tag(dt.get<std::string>()) : std::nullopt;
  IGNIS_CHECK(
      dtype.has_value(),
      IOError,
      "[load] '{}': tensor '{}': unknown dtype {}",
      path,
      name,
      brief(dt));
  e.dtype = *dtype;

  const json& shape = v["shape"];
  IGNIS_CHECK(
      shape.is_array(), IOError, "[load] '{}': tensor '{}': shape is not an array", path, name);
  // Sizes are multiplied with overflow checks: a forged shape whose product wraps around
  // could otherwise match small offsets and allocate a tensor bigger than the file. The
  // product of the dims with zeros counted as ones must fit too: it is the outermost stride,
  // so [0, 2^62, 2^62] holds no bytes and still cannot be laid out.
  uint64_t bytes = static_cast<uint64_t>(itemsize(e.dtype));
  bool overflow = false;
  for (const json& d : shape) {
    IGNIS_CHECK(
        d.is_number_integer() && (d.is_number_unsigned() || d.get<int64_t>() >= 0),
        IOError,
        "[load] '{}': tensor '{}': negative or non-integer dim in shape {}",
        path,
        name,
        brief(shape));
    uint64_t s = d.get<uint64_t>();
    IGNIS_CHECK(
        s <= static_cast<uint64_t>(INT64_MAX),
        IOError,
        "[load] '{}': tensor '{}': dim too large in shape {}",
        path,
        name,
        brief(shape));
    e.shape.push_back(static_cast<int64_t>(s));
    overflow = overflow || __builtin_mul_overflow(bytes, s, &bytes);
  }
  IGNIS_CHECK(
      detail::shape_fits(e.shape),
      IOError,
      "[load] '{}': tensor '{}': element count of shape {} overflows int64",
      path,
      name,
      brief(shape));
  IGNIS_CHECK(
      !overflow,
      IOError,
      "[load] '{}': tensor '{}': byte size of shape {} overflows",
      path,
      name,
      brief(shape));

  const json& off = v["data_offsets"];
  IGNIS_CHECK(
      off.is_array() && off.size() == 2,
      IOError,
      "[load] '{}': tensor '{}': data_offsets must be [begin, end], got {}",
      path,
      name,
      brief(off));
  e.begin = as_u64(off[0], path, name, "data_offsets");
  e.end = as_u64(off[1], path, name, "data_offsets");
  IGNIS_CHECK(
      e.begin <= e.end,
      IOError,
      "[load] '{}': tensor '{}': data_offsets begin {} > end {}",
      path,
      name,
      e.begin,
      e.end);
  IGNIS_CHECK(
      e.end - e.begin == bytes,
      IOError,
      "[load] '{}': tensor '{}': shape {} of {} needs {} bytes but data_offsets span {}",
      path,
      name,
      brief(shape),
      io_detail::dtype_tag(e.dtype),
      bytes,
      e.end - e.begin);
  return e;
}

}  // namespace

TensorFile load_file(const std::string& path) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  IGNIS_CHECK(f != nullptr, IOError, "[load] cannot open '{}': {}", path, std::strerror(errno));
  IGNIS_CHECK(std::fseek(f.get(), 0, SEEK_END) == 0, IOError, "[load] cannot seek '{}'", path);
  long end_pos = std::ftell(f.get());
  IGNIS_CHECK(end_pos >= 0, IOError, "[load] cannot size '{}' (not a regular file?)", path);
  std::rewind(f.get());
  const uint64_t file_size = static_cast<uint64_t>(end_pos);
  IGNIS_CHECK(
      file_size >= 8,
      IOError,
      "[load] '{}': file of {} bytes is too short for the 8-byte header length",
      path,
      file_size);

  unsigned char len[8];
  read_exact(f.get(), len, 8, path, "the header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(len[i]) << (8 * i);
  IGNIS_CHECK(
      n <= io_detail::kMaxHeaderBytes,
      IOError,
      "[load] '{}': header length {} exceeds the {} byte limit",
      path,
      n,
      io_detail::kMaxHeaderBytes);
  IGNIS_CHECK(
      n <= file_size - 8,
      IOError,
      "[load] '{}': header length {} is larger than the file ({} bytes)",
      path,
      n,
      file_size);
  std::string text(n, '\0');
  read_exact(f.get(), text.data(), n, path, "the header");
  json header = parse_header(text, path);
  const uint64_t data_size = file_size - 8 - n;

  TensorFile out;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == io_detail::kMetadataKey) {
      IGNIS_CHECK(value.is_object(), IOError, "[load] '{}': __metadata__ is not an object", path);
      for (const auto& [mk, mv] : value.items()) {
        IGNIS_CHECK(
            mv.is_string(),
            IOError,
            "[load] '{}': __metadata__ value for '{}' is not a string",
            path,
            mk);
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(key, value, path));
  }

  // File order is data order; the ranges must tile [0, data_size) exactly.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  for (const Entry& e : entries) {
    IGNIS_CHECK(
        e.end <= data_size,
        IOError,
        "[load] '{}': tensor '{}': data_offsets [{}, {}] out of range of the {}-byte "
        "data buffer",
        path,
        e.name,
        e.begin,
        e.end,
        data_size);
    IGNIS_CHECK(
        e.begin >= pos,
        IOError,
        "[load] '{}': tensor '{}': data_offsets [{}, {}] overlap the previous tensor "
        "(which ends at {})",
        path,
        e.name,
        e.begin,
        e.end,
        pos);
    IGNIS_CHECK(
        e.begin == pos,
        IOError,
        "[load] '{}': tensor '{}': gap in the data buffer between {} and {}",
        path,
        e.name,
        pos,
        e.begin);
    pos = e.end;
  }
  IGNIS_CHECK(
      pos == data_size,
      IOError,
      "[load] '{}': {} bytes of trailing garbage after the data buffer",
      path,
      data_size - pos);

  // Every size is now bounded by the file size, so allocating is safe.
  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, e.dtype);
    size_t bytes = static_cast<size_t>(e.end - e.begin);
    if (bytes > 0) read_exact(f.get(), t.data_ptr(), bytes, path, "tensor data");
    if (e.dtype == DType::Bool) {
      // A byte other than 0/1 is not a valid C++ bool; refuse it rather than carry UB along.
      const auto* b = static_cast<const unsigned char*>(t.data_ptr());
      for (size_t i = 0; i < bytes; ++i)
        IGNIS_CHECK(
            b[i] <= 1,
            IOError,
            "[load] '{}': tensor '{}': BOOL byte {} is {}",
            path,
            e.name,
            i,
            static_cast<int>(b[i]));
    }
    out.tensors.insert(e.name, std::move(t));
  }
  return out;
}

}  // namespace ignis
