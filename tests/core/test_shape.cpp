// Shape, the small vector behind sizes and strides: every operation against std::vector doing
// the same, across the switch from inline storage to the heap (more than Shape::kInline
// elements) and back through copies and moves.
#include <numeric>
#include <stdexcept>
#include <vector>

#include "support/test_support.h"

namespace ignis {
namespace {

void expect_same(const Shape& s, const std::vector<int64_t>& v) {
  ASSERT_EQ(s.size(), v.size());
  EXPECT_EQ(s.empty(), v.empty());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(s[i], v[i]) << "element " << i;
  EXPECT_EQ(std::vector<int64_t>(s), v);
}

TEST(Shape, ConstructsLikeVector) {
  expect_same(Shape(), {});
  expect_same(Shape(3), {0, 0, 0});
  expect_same(Shape(9, 7), std::vector<int64_t>(9, 7));
  expect_same(Shape{4}, {4});  // one element, as std::vector's braces
  expect_same(Shape{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4, 5, 6, 7, 8});
  const std::vector<int64_t> v{5, 4, 3, 2, 1, 0, -1};
  expect_same(Shape(v), v);
  expect_same(Shape(v.rbegin(), v.rend()), {-1, 0, 1, 2, 3, 4, 5});
}

TEST(Shape, GrowsPastInlineAndKeepsValues) {
  Shape s;
  std::vector<int64_t> v;
  for (int64_t i = 0; i < 40; ++i) {
    s.push_back(i * i);
    v.push_back(i * i);
    expect_same(s, v);
  }
  EXPECT_GE(s.capacity(), s.size());
  s.resize(3);
  v.resize(3);
  expect_same(s, v);
  s.resize(10, -2);
  v.resize(10, -2);
  expect_same(s, v);
  s.pop_back();
  v.pop_back();
  expect_same(s, v);
  s.clear();
  EXPECT_TRUE(s.empty());
}

TEST(Shape, CopiesAndMovesInlineAndHeap) {
  for (size_t n : {size_t(0), size_t(2), Shape::kInline, Shape::kInline + 1, size_t(30)}) {
    SCOPED_TRACE(n);
    std::vector<int64_t> v(n);
    std::iota(v.begin(), v.end(), 10);
    const Shape original(v);
    Shape copy = original;
    expect_same(copy, v);
    if (n > 0) copy[0] = -5;  // changing the copy leaves the original alone
    expect_same(original, v);
    Shape moved = std::move(copy);
    EXPECT_TRUE(copy.empty());  // NOLINT: a moved-from Shape is empty
    Shape assigned{1, 2};
    assigned = original;
    expect_same(assigned, v);
    assigned = std::move(moved);
    EXPECT_EQ(assigned.size(), n);
    Shape self = original;
    self = *&self;
    expect_same(self, v);
    Shape a = original, b{9, 9, 9};
    swap(a, b);
    expect_same(b, v);
    expect_same(a, {9, 9, 9});
  }
}

TEST(Shape, InsertEraseAssignLikeVector) {
  Shape s{1, 2, 3};
  std::vector<int64_t> v{1, 2, 3};
  s.insert(s.begin() + 1, 8);
  v.insert(v.begin() + 1, 8);
  expect_same(s, v);
  s.insert(s.end(), 4, 6);  // four sixes: past the inline capacity
  v.insert(v.end(), 4, 6);
  expect_same(s, v);
  const std::vector<int64_t> more{-1, -2, -3};
  s.insert(s.begin(), more.begin(), more.end());
  v.insert(v.begin(), more.begin(), more.end());
  expect_same(s, v);
  s.insert(s.begin() + 2, s.begin(), s.begin() + 4);  // a range of itself
  const std::vector<int64_t> head(v.begin(), v.begin() + 4);
  v.insert(v.begin() + 2, head.begin(), head.end());
  expect_same(s, v);
  s.erase(s.begin() + 1);
  v.erase(v.begin() + 1);
  expect_same(s, v);
  s.erase(s.begin() + 2, s.begin() + 7);
  v.erase(v.begin() + 2, v.begin() + 7);
  expect_same(s, v);
  s.assign({4, 5});
  expect_same(s, {4, 5});
  s.assign(7, 1);
  expect_same(s, std::vector<int64_t>(7, 1));
  EXPECT_EQ(s.front(), 1);
  EXPECT_EQ(s.back(), 1);
  EXPECT_EQ(s.at(6), 1);
  EXPECT_THROW(s.at(7), std::out_of_range);
}

TEST(Shape, ComparesLikeVector) {
  EXPECT_EQ((Shape{2, 3}), (Shape{2, 3}));
  EXPECT_NE((Shape{2, 3}), (Shape{2, 3, 1}));
  EXPECT_NE((Shape{2, 3}), (Shape{3, 2}));
  EXPECT_EQ(Shape(std::vector<int64_t>(20, 1)), Shape(20, 1));  // heap against heap
  EXPECT_TRUE((Shape{1, 2}) < (Shape{1, 3}));
  EXPECT_TRUE((Shape{1, 2}) < (Shape{1, 2, 0}));
  EXPECT_FALSE((Shape{2}) < (Shape{1, 9}));
  EXPECT_EQ(ones({2, 3}).sizes(), (std::vector<int64_t>{2, 3}));
}

}  // namespace
}  // namespace ignis
