// CSV of numeric features and a label column (rules in ignis/data/readers.h). Lines are split
// once into cells, the header decided, then every cell parsed with its line and column at
// hand, so each error can say where it is.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/error.h"
#include "data/file_bytes.h"
#include "ignis/data/readers.h"
#include "ignis/ops.h"

namespace ignis::data {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// Cells of one line; a cell starting with '"' runs to the closing quote ("" is a quote).
std::vector<std::string> split_cells(const std::string& line, const std::string& path, size_t line_no) {
  std::vector<std::string> cells;
  size_t i = 0;
  for (;;) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::string cell;
    if (i < line.size() && line[i] == '"') {
      size_t j = i + 1;
      for (;; ++j) {
        IGNIS_CHECK(
            j < line.size(),
            IOError,
            "[read_csv] {}: line {}, column {}: expected a closing quote, found the end of the line",
            path,
            line_no,
            cells.size() + 1);
        if (line[j] == '"') {
          if (j + 1 < line.size() && line[j + 1] == '"') {
            cell.push_back('"');
            ++j;
          } else {
            break;
          }
        } else {
          cell.push_back(line[j]);
        }
      }
      const size_t comma = line.find(',', j + 1);
      const std::string rest = trim(line.substr(j + 1, comma == std::string::npos ? std::string::npos : comma - j - 1));
      IGNIS_CHECK(
          rest.empty(),
          IOError,
          "[read_csv] {}: line {}, column {}: expected a comma after the quoted cell, found '{}'",
          path,
          line_no,
          cells.size() + 1,
          rest);
      cells.push_back(cell);
      if (comma == std::string::npos) break;
      i = comma + 1;
    } else {
      const size_t comma = line.find(',', i);
      cells.push_back(trim(line.substr(i, comma == std::string::npos ? std::string::npos : comma - i)));
      if (comma == std::string::npos) break;
      i = comma + 1;
    }
  }
  return cells;
}

/// The cell as a finite number, or false. Spaces around it (kept inside quotes) do not count.
bool to_number(const std::string& quoted_or_not, double& v) {
  const std::string cell = trim(quoted_or_not);
  if (cell.empty()) return false;
  char* end = nullptr;
  v = std::strtod(cell.c_str(), &end);
  return end == cell.c_str() + cell.size() && std::isfinite(v);
}

bool to_index(const std::string& s, int64_t& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

CsvData read_csv(const std::string& path, const CsvOptions& opt) {
  std::vector<std::string> lines = detail::read_text_lines(path, "read_csv");
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  IGNIS_CHECK(!lines.empty(), IOError, "[read_csv] {}: expected a header or data rows, found none", path);
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < lines.size(); ++i) rows.push_back(split_cells(lines[i], path, i + 1));
  const int64_t ncols = int64_t(rows[0].size());
  IGNIS_CHECK(
      ncols >= 2, IOError, "[read_csv] {}: expected at least 2 columns, found {}", path, ncols);

  int64_t label_index = 0;
  const bool label_by_index = to_index(opt.label_column, label_index);
  bool header = opt.header == CsvHeader::Present;
  if (opt.header == CsvHeader::Auto) {
    header = !label_by_index;
    for (size_t c = 0; !header && rows.size() > 1 && c < rows[0].size() && c < rows[1].size(); ++c) {
      double v;
      header = !to_number(rows[0][c], v) && to_number(rows[1][c], v);
    }
  }
  IGNIS_CHECK(
      rows.size() > (header ? 1u : 0u),
      IOError,
      "[read_csv] {}: expected data rows after the header, found none",
      path);
  // The label column: a header name, else an integer index (negative counts from the end).
  int64_t label = -1;
  if (header)
    for (int64_t c = 0; c < ncols; ++c)
      if (rows[0][size_t(c)] == opt.label_column) label = c;
  if (label < 0) {
    IGNIS_CHECK(
        label_by_index,
        ValueError,
        "[read_csv] {}: no label column named '{}'{}",
        path,
        opt.label_column,
        header ? "" : " (the file has no header; give an index)");
    label = label_index < 0 ? label_index + ncols : label_index;
    IGNIS_CHECK(
        label >= 0 && label < ncols,
        ValueError,
        "[read_csv] {}: label column {} out of range for {} columns",
        path,
        opt.label_column,
        ncols);
  }
  auto column_name = [&](int64_t c) {
    return header ? rows[0][size_t(c)] : fmt::format("c{}", c);
  };
  CsvData d;
  for (int64_t c = 0; c < ncols; ++c)
    if (c != label) d.feature_names.push_back(column_name(c));

  const size_t first = header ? 1 : 0;
  const int64_t n = int64_t(rows.size() - first), nf = ncols - 1;
  d.features = empty({n, nf}, kFloat32);
  float* feat = d.features.data_ptr<float>();
  std::vector<std::string> label_cells(static_cast<size_t>(n));
  bool names = false;  // some label cell is not a number
  for (int64_t i = 0; i < n; ++i) {
    const size_t line_no = first + size_t(i) + 1;
    const auto& cells = rows[first + size_t(i)];
    IGNIS_CHECK(
        int64_t(cells.size()) == ncols,
        IOError,
        "[read_csv] {}: line {}: expected {} columns, found {} ({})",
        path,
        line_no,
        ncols,
        cells.size(),
        int64_t(cells.size()) < ncols
            ? fmt::format("column {} ({}) missing", cells.size() + 1, column_name(int64_t(cells.size())))
            : fmt::format("column {} is extra", ncols + 1));
    int64_t f = 0;
    for (int64_t c = 0; c < ncols; ++c) {
      const std::string& cell = cells[size_t(c)];
      double v = 0;
      const bool numeric = to_number(cell, v);
      if (c == label) {
        label_cells[size_t(i)] = cell;
        names = names || !numeric;
        continue;
      }
      IGNIS_CHECK(
          numeric,
          IOError,
          "[read_csv] {}: line {}, column {} ({}): expected a number, found '{}'",
          path,
          line_no,
          c + 1,
          column_name(c),
          cell);
      feat[i * nf + f++] = float(v);
    }
  }

  d.labels = empty({n}, kInt64);
  int64_t* lab = d.labels.data_ptr<int64_t>();
  if (names) {
    std::map<std::string, int64_t> index;  // sorted names
    for (const auto& s : label_cells) index.emplace(s, 0);
    for (auto& [name, k] : index) {
      k = int64_t(d.classes.size());
      d.classes.push_back(name);
    }
    for (int64_t i = 0; i < n; ++i) lab[i] = index.at(label_cells[size_t(i)]);
    return d;
  }
  int64_t max_label = -1;
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    to_number(label_cells[size_t(i)], v);
    IGNIS_CHECK(
        v >= 0 && v == std::floor(v) && v < 9.0e15,
        IOError,
        "[read_csv] {}: line {}, column {} ({}): expected a non-negative integer label or a "
        "class name, found '{}'",
        path,
        first + size_t(i) + 1,
        label + 1,
        column_name(label),
        label_cells[size_t(i)]);
    lab[i] = int64_t(v);
    max_label = std::max(max_label, lab[i]);
  }
  IGNIS_CHECK(
      max_label < 1000000,
      IOError,
      "[read_csv] {}: expected class indices below 1000000 in column {} ({}), found {}",
      path,
      label + 1,
      column_name(label),
      max_label);
  for (int64_t k = 0; k <= max_label; ++k) d.classes.push_back(std::to_string(k));
  return d;
}

CsvData read_csv(const std::string& path, const std::string& label_column, bool has_header) {
  return read_csv(
      path, CsvOptions{label_column, has_header ? CsvHeader::Present : CsvHeader::Absent});
}

}  // namespace ignis::data
