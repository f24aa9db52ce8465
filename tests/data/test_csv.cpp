// read_csv beyond the basics in test_readers.cpp: header detection, class-name labels,
// quoted cells, and each malformed file by the line, column and text its message names.
#include <gtest/gtest.h>

#include "data/data_test_util.h"
#include "ignis/data/readers.h"
#include "support/test_support.h"

namespace ignis::testing {
namespace {

using namespace ignis::data;

TEST(Csv, ClassNameLabelsMapToSortedIndices) {
  TempDir dir;
  const std::string p = dir.path("iris.csv");
  write_text(p, "sepal,petal,species\n5.1,1.4,setosa\n7.0,4.7,versicolor\n6.3,6.0,virginica\n4.9,1.4,setosa\n");
  const CsvData d = read_csv(p, CsvOptions{.label_column = "species"});
  EXPECT_EQ(d.classes, (std::vector<std::string>{"setosa", "versicolor", "virginica"}));
  EXPECT_EQ(d.labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 0}));
  EXPECT_EQ(d.features.sizes(), (Shape{4, 2}));
  EXPECT_EQ(d.features.to_vector<float>(), (std::vector<float>{5.1f, 1.4f, 7.0f, 4.7f, 6.3f, 6.0f, 4.9f, 1.4f}));
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"sepal", "petal"}));
  // Names sort as strings, whatever their order of appearance; one class name among numbers
  // makes the whole column names.
  write_text(p, "b,1\nc,2\na,3\n10,4\n");
  const CsvData n = read_csv(p, CsvOptions{.label_column = "0"});
  EXPECT_EQ(n.classes, (std::vector<std::string>{"10", "a", "b", "c"}));
  EXPECT_EQ(n.labels.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 1, 0}));
  EXPECT_EQ(n.features.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Csv, IntegerLabelsAndTheirClasses) {
  TempDir dir;
  const std::string p = dir.path("a.csv");
  write_text(p, "0.5,3\n1.5,0\n2.5,1\n\n\n");  // trailing blank lines are ignored
  const CsvData d = read_csv(p, CsvOptions{});
  EXPECT_EQ(d.labels.to_vector<int64_t>(), (std::vector<int64_t>{3, 0, 1}));
  EXPECT_EQ(d.classes, (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"c0"}));
}

TEST(Csv, HeaderAutoDetection) {
  TempDir dir;
  const std::string p = dir.path("h.csv");
  // A text cell above a number: a header.
  write_text(p, "x,y,label\n1,2,0\n3,4,1\n");
  CsvData d = read_csv(p, CsvOptions{});
  EXPECT_EQ(d.features.size(0), 2);
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"x", "y"}));
  // A first row whose only text is a class name is data.
  write_text(p, "1,2,cat\n3,4,dog\n");
  d = read_csv(p, CsvOptions{});
  EXPECT_EQ(d.features.size(0), 2);
  EXPECT_EQ(d.classes, (std::vector<std::string>{"cat", "dog"}));
  // Naming the label column implies a header; Absent overrides detection.
  write_text(p, "f,g,label\n1,2,cat\n3,4,dog\n");
  EXPECT_EQ(read_csv(p, CsvOptions{.label_column = "label"}).features.size(0), 2);
  EXPECT_EQ(read_csv(p, CsvOptions{}).features.size(0), 2);
  EXPECT_THROW_MSG(
      read_csv(p, CsvOptions{.header = CsvHeader::Absent}), IOError,
      p + ": line 1, column 1 (c0): expected a number, found 'f'");
  EXPECT_THROW_MSG(
      read_csv(p, CsvOptions{.label_column = "label", .header = CsvHeader::Absent}), ValueError,
      "no label column named 'label' (the file has no header; give an index)");
}

TEST(Csv, QuotedCells) {
  TempDir dir;
  const std::string p = dir.path("q.csv");
  write_text(p, "\"a\",\"b, c\",name\n\" 1.5 \",2,\"New York, \"\"NY\"\"\"\n3,4,Boston\n");
  const CsvData d = read_csv(p, CsvOptions{.label_column = "name"});
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"a", "b, c"}));
  EXPECT_EQ(d.classes, (std::vector<std::string>{"Boston", "New York, \"NY\""}));
  EXPECT_EQ(d.labels.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(d.features.to_vector<float>(), (std::vector<float>{1.5f, 2, 3, 4}));
  write_text(p, "a,b\n\"1,2\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{}), IOError, p + ": line 2, column 1: expected a closing quote");
  write_text(p, "a,b\n\"1\"x,2\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{}), IOError, p + ": line 2, column 1: expected a comma after the quoted cell, found 'x'");
}

TEST(Csv, MalformedFilesNameLineAndColumn) {
  TempDir dir;
  const std::string p = dir.path("bad.csv");
  write_text(p, "x,y,label\n1,2,0\n3,4\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{}), IOError, p + ": line 3: expected 3 columns, found 2 (column 3 (label) missing)");
  write_text(p, "x,y,label\n1,2,0\n3,4,1,9\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{}), IOError, p + ": line 3: expected 3 columns, found 4 (column 4 is extra)");
  write_text(p, "x,y,label\n1,2,0\n\n3,4,1\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{}), IOError, p + ": line 3: expected 3 columns, found 1");
  for (const std::string bad : {"n/a", "", "nan", "1x", "inf"}) {
    write_text(p, "x,y,label\n1,2,0\n3," + bad + ",1\n");
    EXPECT_THROW_MSG(read_csv(p, CsvOptions{}), IOError, p + ": line 3, column 2 (y): expected a number, found '" + bad + "'");
  }
  write_text(p, "x,label\n1,0\n2,-1\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{}), IOError, p + ": line 3, column 2 (label): expected a non-negative integer label or a class name, found '-1'");
  write_text(p, "x,label\n1,0\n2,5000000\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{}), IOError, "expected class indices below 1000000 in column 2 (label), found 5000000");
  write_text(p, "x,label\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{.label_column = "label"}), IOError, p + ": expected data rows after the header, found none");
  write_text(p, "\n\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{}), IOError, p + ": expected a header or data rows, found none");
  write_text(p, "1\n2\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{}), IOError, p + ": expected at least 2 columns, found 1");
  EXPECT_THROW_MSG(read_csv(dir.path("absent.csv"), CsvOptions{}), IOError, dir.path("absent.csv") + ": no such file");
  write_text(p, "1,2\n3,4\n");
  EXPECT_THROW_MSG(read_csv(p, CsvOptions{.label_column = "5"}), ValueError, "label column 5 out of range for 2 columns");
}

}  // namespace
}  // namespace ignis::testing
