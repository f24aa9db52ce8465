// metrics::ClassificationMetrics against counts worked out here from random predictions: the
// confusion matrix, precision/recall/F1 with empty-class conventions (0, no NaN), macro and
// weighted averages, top-k from logits, streaming equal to one batch, and the report layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>

#include "ignis/metrics.h"
#include "support/test_support.h"

namespace ignis {
namespace {

using metrics::ClassificationMetrics;

constexpr int64_t C = 5;  // class 3 never appears (neither as target nor as prediction)

struct Batch {
  std::vector<int64_t> target, pred;
  std::vector<float> logits;  // [N, C], argmax == pred
};

Batch random_batch(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> cls(0, C - 2);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Batch b;
  for (int64_t i = 0; i < n; ++i) {
    int64_t t = cls(rng), p = cls(rng);
    if (t >= 3) ++t;
    if (p >= 3) ++p;
    b.target.push_back(t);
    b.pred.push_back(p);
    for (int64_t c = 0; c < C; ++c)
      b.logits.push_back(c == p ? 2.f + u(rng) : c == 3 ? -5.f : u(rng));
  }
  return b;
}

TEST(Metrics, AgainstHandCounts) {
  Batch b = random_batch(200, 1);
  ClassificationMetrics m(C);
  m.update(tensor<int64_t>(b.pred), tensor<int64_t>(b.target));

  std::vector<std::vector<int64_t>> cm(C, std::vector<int64_t>(C, 0));
  for (size_t i = 0; i < b.target.size(); ++i) ++cm[b.target[i]][b.pred[i]];
  EXPECT_EQ(testing::values_of(m.confusion_matrix()), [&] {
    std::vector<double> v;
    for (auto& r : cm)
      for (int64_t x : r) v.push_back(static_cast<double>(x));
    return v;
  }());
  EXPECT_EQ(m.confusion_matrix().dtype(), kInt64);

  int64_t correct = 0;
  for (int64_t c = 0; c < C; ++c) correct += cm[c][c];
  EXPECT_DOUBLE_EQ(m.accuracy(), correct / 200.0);

  auto pc = m.per_class();
  auto sup = m.support();
  double mp = 0, mr = 0, mf = 0, wp = 0, wr = 0, wf = 0;
  for (int64_t c = 0; c < C; ++c) {
    int64_t tp = cm[c][c], actual = 0, predicted = 0;
    for (int64_t j = 0; j < C; ++j) actual += cm[c][j], predicted += cm[j][c];
    EXPECT_EQ(sup[c], actual);
    double p = predicted ? double(tp) / predicted : 0, r = actual ? double(tp) / actual : 0;
    double f = p + r > 0 ? 2 * p * r / (p + r) : 0;
    EXPECT_DOUBLE_EQ(pc[c].precision, p) << c;
    EXPECT_DOUBLE_EQ(pc[c].recall, r) << c;
    EXPECT_DOUBLE_EQ(pc[c].f1, f) << c;
    mp += p / C, mr += r / C, mf += f / C;
    wp += p * actual / 200.0, wr += r * actual / 200.0, wf += f * actual / 200.0;
  }
  // The absent class: zeros, not NaN, and it still counts in the macro average.
  EXPECT_EQ(sup[3], 0);
  EXPECT_EQ(pc[3].precision, 0.0);
  EXPECT_EQ(pc[3].recall, 0.0);
  EXPECT_EQ(pc[3].f1, 0.0);
  EXPECT_NEAR(m.macro_average().precision, mp, 1e-12);
  EXPECT_NEAR(m.macro_average().recall, mr, 1e-12);
  EXPECT_NEAR(m.macro_average().f1, mf, 1e-12);
  EXPECT_NEAR(m.weighted_average().precision, wp, 1e-12);
  EXPECT_NEAR(m.weighted_average().recall, wr, 1e-12);
  EXPECT_NEAR(m.weighted_average().f1, wf, 1e-12);
  // Weighted recall is accuracy (sum of tp over all samples).
  EXPECT_NEAR(m.weighted_average().recall, m.accuracy(), 1e-12);
  EXPECT_THROW(m.top_k_accuracy(2), ValueError);  // no logits were given
}

TEST(Metrics, LogitsTopKAndStreaming) {
  Batch b = random_batch(120, 2);
  ClassificationMetrics one(C), streamed(C);
  one.update(tensor<float>(b.logits, Shape{120, C}), tensor<int64_t>(b.target));
  const int64_t cuts[] = {0, 50, 51, 119, 120};  // uneven batches, two of one sample
  for (int i = 0; i + 1 < 5; ++i) {
    int64_t lo = cuts[i], hi = cuts[i + 1];
    std::vector<float> l(b.logits.begin() + lo * C, b.logits.begin() + hi * C);
    std::vector<int64_t> t(b.target.begin() + lo, b.target.begin() + hi);
    streamed.update(tensor<float>(l, Shape{hi - lo, C}), tensor<int64_t>(t));
  }
  EXPECT_TRUE(equal(one.confusion_matrix(), streamed.confusion_matrix()));
  EXPECT_EQ(one.num_samples(), 120);
  EXPECT_EQ(streamed.num_samples(), 120);
  EXPECT_EQ(one.accuracy(), streamed.accuracy());
  EXPECT_EQ(one.format_report(), streamed.format_report());

  // argmax of the logits is pred; top-k counted by ranking each row by hand.
  int64_t correct = 0;
  for (size_t i = 0; i < 120; ++i) correct += b.pred[i] == b.target[i];
  EXPECT_DOUBLE_EQ(one.accuracy(), correct / 120.0);
  for (int64_t k = 1; k <= C + 1; ++k) {
    int64_t hits = 0;
    for (int64_t i = 0; i < 120; ++i) {
      float ts = b.logits[i * C + b.target[i]];
      int64_t ahead = 0;
      for (int64_t c = 0; c < C; ++c) ahead += b.logits[i * C + c] > ts;
      hits += ahead < k;
    }
    EXPECT_DOUBLE_EQ(one.top_k_accuracy(k), hits / 120.0) << k;
    EXPECT_EQ(one.top_k_accuracy(k), streamed.top_k_accuracy(k)) << k;
  }
  EXPECT_DOUBLE_EQ(one.top_k_accuracy(C), 1.0);
  EXPECT_DOUBLE_EQ(one.top_k_accuracy(1), one.accuracy());
}

// Two shards evaluated apart, their counts() summed element-wise and loaded into a third
// object, give what one object fed every sample gives (how ranks combine their evaluations).
TEST(Metrics, SummedCountsOfShardsEqualOnePass) {
  Batch b = random_batch(90, 7);
  ClassificationMetrics whole(C), first(C), second(C), merged(C);
  whole.update(tensor<float>(b.logits, Shape{90, C}), tensor<int64_t>(b.target));
  auto part = [&](ClassificationMetrics& m, int64_t lo, int64_t hi) {
    std::vector<float> l(b.logits.begin() + lo * C, b.logits.begin() + hi * C);
    std::vector<int64_t> t(b.target.begin() + lo, b.target.begin() + hi);
    m.update(tensor<float>(l, Shape{hi - lo, C}), tensor<int64_t>(t));
  };
  part(first, 0, 37);
  part(second, 37, 90);
  std::vector<int64_t> sum = first.counts();
  const std::vector<int64_t> other = second.counts();
  ASSERT_EQ(sum.size(), other.size());
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += other[i];
  merged.set_counts(sum);
  EXPECT_EQ(merged.num_samples(), 90);
  EXPECT_TRUE(equal(whole.confusion_matrix(), merged.confusion_matrix()));
  EXPECT_EQ(whole.top_k_accuracy(2), merged.top_k_accuracy(2));
  EXPECT_EQ(whole.format_report(), merged.format_report());
  sum.pop_back();
  EXPECT_THROW(merged.set_counts(sum), ValueError);
}

TEST(Metrics, TiesAndEmptyAndErrors) {
  ClassificationMetrics m(3);
  EXPECT_EQ(m.accuracy(), 0.0);
  EXPECT_EQ(m.macro_average().f1, 0.0);
  EXPECT_EQ(m.weighted_average().precision, 0.0);
  // All scores equal: argmax is class 0 (first index), target 2 ranks third.
  m.update(tensor<float>({1.f, 1.f, 1.f}, Shape{1, 3}), tensor<int64_t>({2}));
  EXPECT_EQ(m.accuracy(), 0.0);
  EXPECT_EQ(m.top_k_accuracy(2), 0.0);
  EXPECT_EQ(m.top_k_accuracy(3), 1.0);
  EXPECT_EQ(m.confusion_matrix().to(kFloat64).sum().item<double>(), 1.0);
  EXPECT_THROW_MSG(
      m.update(tensor<int64_t>({3}), tensor<int64_t>({0})), IndexError, "out of range");
  EXPECT_THROW_MSG(
      m.update(tensor<int64_t>({0}), tensor<int64_t>({-1})), IndexError, "out of range");
  EXPECT_THROW_MSG(m.update(zeros({2, 4}), tensor<int64_t>({0, 1})), ValueError, "[2, 3]");
  EXPECT_EQ(m.num_samples(), 1);  // failed updates count nothing
  m.reset();
  EXPECT_EQ(m.num_samples(), 0);
}

// A diverged model's NaN scores are ordered as torch.argmax and torch.topk order them: NaN
// above every number (inf too), NaNs tied, ties to the lower index. Worked out by hand:
// [1, NaN, 3] predicts 1 and ranks target 2 second; [NaN, 2, NaN] predicts 0 and ranks
// target 2 second (behind the NaN at 0, ahead of 2); [inf, NaN, 0] predicts 1 and ranks
// target 0 second.
TEST(Metrics, NanScoresRankAsInTorch) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  ClassificationMetrics m(3);
  m.update(
      tensor<float>({1.f, nan, 3.f, nan, 2.f, nan, inf, nan, 0.f}, Shape{3, 3}),
      tensor<int64_t>({2, 2, 0}));
  EXPECT_EQ(
      testing::values_of(m.confusion_matrix()),
      (std::vector<double>{0, 1, 0, 0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(m.top_k_accuracy(1), 0.0);
  EXPECT_EQ(m.top_k_accuracy(2), 1.0);
}

TEST(Metrics, ReportIsAligned) {
  ClassificationMetrics m(3);
  m.update(tensor<int64_t>({0, 1, 1, 2, 0}), tensor<int64_t>({0, 1, 2, 2, 1}));
  std::string r = m.format_report({"cat", "dog", "hippopotamus"});
  std::cout << r;
  EXPECT_NE(r.find("precision"), std::string::npos);
  EXPECT_NE(r.find("macro avg"), std::string::npos);
  EXPECT_NE(r.find("weighted avg"), std::string::npos);
  // Every per-class/average row has the same width; so has every confusion-matrix row.
  std::istringstream in(r);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  size_t table_w = lines[0].size();
  for (const char* lab : {"cat", "dog", "hippopotamus", "macro avg", "weighted avg"}) {
    auto it = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.find(std::string(" ") + lab + " ") != std::string::npos || l.rfind(lab, 0) == 0;
    });
    ASSERT_NE(it, lines.end()) << lab;
    EXPECT_EQ(it->size(), table_w) << *it;
  }
  auto cm_at = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("confusion") != std::string::npos;
  });
  ASSERT_NE(cm_at, lines.end());
  size_t cm_w = (cm_at + 1)->size();
  for (auto it = cm_at + 1; it != lines.end(); ++it) EXPECT_EQ(it->size(), cm_w) << *it;
  // Row "dog" (true 1): one predicted cat... targets 1 at samples 1 and 4 -> preds 1 and 0.
  EXPECT_NE(r.find("         dog   1   1            0"), std::string::npos) << r;
  EXPECT_THROW(m.format_report({"a"}), ValueError);
}

}  // namespace
}  // namespace ignis
