// Shape: the sizes or strides of a tensor, or a list of dimensions. A vector of int64_t with
// std::vector's interface that keeps up to kInline elements in the object itself: every
// tensor carries two of these and almost every op makes a few, and with a heap allocation
// each they were a measurable share of a small model's training step. Longer shapes move to
// the heap. Converts to and from std::vector<int64_t>.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <type_traits>
#include <vector>

namespace ignis {

class Shape {
 public:
  using value_type = int64_t;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = int64_t&;
  using const_reference = const int64_t&;
  using pointer = int64_t*;
  using const_pointer = const int64_t*;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  /// Elements held without a heap allocation (tensors of up to 6 dimensions).
  static constexpr size_t kInline = 6;

  Shape() noexcept = default;
  explicit Shape(size_t n) { resize(n); }
  Shape(size_t n, int64_t value) { assign(n, value); }
  Shape(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  Shape(It first, It last) {
    assign(first, last);
  }
  Shape(const std::vector<int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit
  Shape(const Shape& other) { assign(other.begin(), other.end()); }
  Shape(Shape&& other) noexcept { take(other); }
  ~Shape() { release(); }

  Shape& operator=(const Shape& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  Shape& operator=(Shape&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  Shape& operator=(std::initializer_list<int64_t> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  operator std::vector<int64_t>() const { return {begin(), end()}; }  // NOLINT: implicit

  // ---- access
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return heap_ ? capacity_ : kInline; }
  int64_t* data() noexcept { return heap_ ? heap_ : inline_; }
  const int64_t* data() const noexcept { return heap_ ? heap_ : inline_; }
  int64_t& operator[](size_t i) noexcept { return data()[i]; }
  const int64_t& operator[](size_t i) const noexcept { return data()[i]; }
  int64_t& at(size_t i) { return data()[checked(i)]; }
  const int64_t& at(size_t i) const { return data()[checked(i)]; }
  int64_t& front() noexcept { return data()[0]; }
  const int64_t& front() const noexcept { return data()[0]; }
  int64_t& back() noexcept { return data()[size_ - 1]; }
  const int64_t& back() const noexcept { return data()[size_ - 1]; }

  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  const_iterator cbegin() const noexcept { return begin(); }
  const_iterator cend() const noexcept { return end(); }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

  // ---- changes
  void reserve(size_t n) {
    if (n > capacity()) grow_to(n);
  }
  void clear() noexcept { size_ = 0; }
  void resize(size_t n, int64_t value = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = value;
    size_ = n;
  }
  void assign(size_t n, int64_t value) {
    size_ = 0;
    resize(n, value);
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  void assign(It first, It last) {
    const auto n = size_t(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data());
    size_ = n;
  }
  void assign(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  void push_back(int64_t value) {
    if (size_ == capacity()) grow_to(2 * capacity());
    data()[size_++] = value;
  }
  int64_t& emplace_back(int64_t value) {
    push_back(value);
    return back();
  }
  void pop_back() noexcept { --size_; }
  iterator insert(const_iterator pos, int64_t value) { return insert(pos, size_t(1), value); }
  iterator insert(const_iterator pos, size_t n, int64_t value) {
    const size_t at = open_gap(pos, n);
    std::fill_n(data() + at, n, value);
    return data() + at;
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  iterator insert(const_iterator pos, It first, It last) {
    // Copied first: the range may be part of this shape.
    const Shape values(first, last);
    const size_t at = open_gap(pos, values.size());
    std::copy(values.begin(), values.end(), data() + at);
    return data() + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<int64_t> values) {
    return insert(pos, values.begin(), values.end());
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const size_t at = size_t(first - begin()), n = size_t(last - first);
    std::copy(data() + at + n, end(), data() + at);
    size_ -= n;
    return data() + at;
  }
  void swap(Shape& other) noexcept {
    Shape tmp(std::move(other));
    other = std::move(*this);
    *this = std::move(tmp);
  }

  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const Shape& a, const Shape& b) noexcept { return !(a == b); }
  friend bool operator<(const Shape& a, const Shape& b) noexcept {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  size_t checked(size_t i) const;  // throws std::out_of_range past the end
  void grow_to(size_t n) {
    n = std::max(n, kInline * 2);
    auto* fresh = new int64_t[n];
    std::copy(begin(), end(), fresh);
    delete[] heap_;
    heap_ = fresh;
    capacity_ = n;
  }
  void release() noexcept {
    delete[] heap_;
    heap_ = nullptr;
    capacity_ = 0;
    size_ = 0;
  }
  /// Leaves `other` empty; this one is empty and holds no heap block.
  void take(Shape& other) noexcept {
    size_ = other.size_;
    if (other.heap_) {
      heap_ = other.heap_;
      capacity_ = other.capacity_;
      other.heap_ = nullptr;
      other.capacity_ = 0;
    } else {
      std::copy(other.inline_, other.inline_ + other.size_, inline_);
    }
    other.size_ = 0;
  }
  /// Makes room for n elements at pos; returns pos's index.
  size_t open_gap(const_iterator pos, size_t n) {
    const size_t at = size_t(pos - begin());
    reserve(size_ + n);
    std::copy_backward(data() + at, end(), end() + n);
    size_ += n;
    return at;
  }

  int64_t* heap_ = nullptr;  // null while the elements fit in inline_
  size_t size_ = 0;
  size_t capacity_ = 0;  // of heap_
  int64_t inline_[kInline];
};

inline void swap(Shape& a, Shape& b) noexcept { a.swap(b); }

}  // namespace ignis
