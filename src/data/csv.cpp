// A numeric CSV: every cell must parse completely as a number (no silent zeros for "n/a"),
// every row must have the header's column count, and the label column must hold
// non-negative integers.
#include <charconv>
#include <cstdlib>

#include "core/error.h"
#include "data/file_bytes.h"
#include "ignis/data/readers.h"
#include "ignis/ops.h"

namespace ignis::data {

namespace {

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(',', start);
    std::string cell =
        line.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    // Trim spaces so "1, 2" reads like "1,2".
    const size_t b = cell.find_first_not_of(" \t"), e = cell.find_last_not_of(" \t");
    cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return cells;
}

double parse_number(const std::string& cell, const std::string& path, size_t line, size_t col) {
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  IGNIS_CHECK(
      !cell.empty() && end == cell.c_str() + cell.size(),
      IOError,
      "[read_csv] {}: line {}, column {}: expected a number, found '{}'",
      path,
      line,
      col + 1,
      cell);
  return v;
}

}  // namespace

CsvData read_csv(const std::string& path, const std::string& label_column, bool has_header) {
  std::vector<std::string> lines = detail::read_text_lines(path, "read_csv");
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  IGNIS_CHECK(
      lines.size() > (has_header ? 1u : 0u),
      IOError,
      "[read_csv] {}: expected {}, found none",
      path,
      has_header ? "a header and data rows" : "data rows");
  const std::vector<std::string> first = split_commas(lines[0]);
  const int64_t ncols = int64_t(first.size());
  IGNIS_CHECK(
      ncols >= 2, IOError, "[read_csv] {}: expected at least 2 columns, found {}", path, ncols);
  // The label column: a header name, else an integer index (negative counts from the end).
  int64_t label = -1;
  if (has_header)
    for (int64_t c = 0; c < ncols; ++c)
      if (first[size_t(c)] == label_column) label = c;
  if (label < 0) {
    int64_t idx = 0;
    const auto r =
        std::from_chars(label_column.data(), label_column.data() + label_column.size(), idx);
    IGNIS_CHECK(
        r.ec == std::errc() && r.ptr == label_column.data() + label_column.size(),
        ValueError,
        "[read_csv] {}: no label column named '{}'",
        path,
        label_column);
    label = idx < 0 ? idx + ncols : idx;
    IGNIS_CHECK(
        label >= 0 && label < ncols,
        ValueError,
        "[read_csv] {}: label column {} out of range for {} columns",
        path,
        label_column,
        ncols);
  }
  CsvData d;
  for (int64_t c = 0; c < ncols; ++c)
    if (c != label)
      d.feature_names.push_back(has_header ? first[size_t(c)] : "c" + std::to_string(c));
  const size_t first_row = has_header ? 1 : 0;
  const int64_t n = int64_t(lines.size() - first_row), nf = ncols - 1;
  d.features = empty({n, nf}, kFloat32);
  d.labels = empty({n}, kInt64);
  float* feat = d.features.data_ptr<float>();
  int64_t* lab = d.labels.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const size_t line_no = first_row + size_t(i) + 1;
    const auto cells = split_commas(lines[first_row + size_t(i)]);
    IGNIS_CHECK(
        int64_t(cells.size()) == ncols,
        IOError,
        "[read_csv] {}: line {}: expected {} columns, found {}",
        path,
        line_no,
        ncols,
        cells.size());
    int64_t f = 0;
    for (int64_t c = 0; c < ncols; ++c) {
      const double v = parse_number(cells[size_t(c)], path, line_no, size_t(c));
      if (c == label) {
        IGNIS_CHECK(
            // Range first: converting a double beyond int64 to int64 is undefined.
            v >= 0 && v < 0x1p63 && v == double(int64_t(v)),
            IOError,
            "[read_csv] {}: line {}: expected a non-negative integer label, found '{}'",
            path,
            line_no,
            cells[size_t(c)]);
        lab[i] = int64_t(v);
      } else {
        feat[i * nf + f++] = float(v);
      }
    }
  }
  return d;
}

}  // namespace ignis::data
