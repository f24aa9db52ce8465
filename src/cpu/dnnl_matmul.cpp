// bfloat16 GEMM through oneDNN 2.6's matmul primitive. On CPUs with AVX512-BF16 (Zen 4,
// Cooper Lake and later) oneDNN runs its brgemm kernels on bf16 operands directly, about twice
// sgemm's rate (1024^3 on one Zen 4 core: 55 against 28 GFLOP/s, measured on a loaded
// machine), with float accumulation and one rounding of each result. Debian 12's OpenBLAS
// 0.3.21 declares cblas_sbgemm but is built without it (the symbol is not exported), so
// oneDNN is the library that does bf16 here.
//
// Operands reach oneDNN through memory descriptors with their own strides (transposed views
// need no copy). Primitives are cached by shape, strides, alpha and beta, as the convolutions'
// are (Note [oneDNN primitive cache] in dnnl_conv.cpp), and run with a user scratchpad from
// the caching allocator.
#include "cpu/dnnl_matmul.h"

#include <cstring>
#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/allocator.h"

namespace ignis::cpu {
namespace {

using detail::GemmArgs;
using detail::GemmMatrix;
using dnnl::memory;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

struct Entry {
  dnnl::matmul prim;
  memory::desc scratch_md;
};

std::mutex cache_mutex;
std::unordered_map<std::string, std::shared_ptr<const Entry>> cache;

/// A matrix (or, with `batch` > 0, a batch of matrices) of bf16 with the operand's strides.
memory::desc md(
    int64_t batch, int64_t batch_stride, int64_t rows, int64_t cols, const GemmMatrix& x) {
  // A stride along a dim of size 1 is never used; oneDNN still checks it, so make it dense.
  const int64_t rs = rows == 1 ? cols * x.col_stride : x.row_stride;
  const int64_t cs = cols == 1 ? 1 : x.col_stride;
  if (batch == 0) return memory::desc({rows, cols}, memory::data_type::bf16, {rs, cs});
  return memory::desc({batch, rows, cols}, memory::data_type::bf16, {batch_stride, rs, cs});
}

/// The cached primitive for this geometry; null when oneDNN would use its reference code.
std::shared_ptr<const Entry> lookup(
    const memory::desc& a, const memory::desc& b, const memory::desc& c, float alpha, float beta) {
  std::string key(reinterpret_cast<const char*>(a.data.dims), sizeof(a.data.dims));
  for (const memory::desc* d : {&a, &b, &c}) {
    key.append(reinterpret_cast<const char*>(d->data.dims), sizeof(d->data.dims));
    key.append(
        reinterpret_cast<const char*>(d->data.format_desc.blocking.strides),
        sizeof(d->data.format_desc.blocking.strides));
  }
  key.append(reinterpret_cast<const char*>(&alpha), sizeof alpha);
  key.append(reinterpret_cast<const char*>(&beta), sizeof beta);
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  std::shared_ptr<const Entry> e;
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (alpha != 1) attr.set_output_scales(0, {alpha});
    if (beta != 0) {
      dnnl::post_ops po;
      po.append_sum(beta);
      attr.set_post_ops(po);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), attr, engine());
    if (std::strncmp(pd.impl_info_str(), "ref", 3) != 0)
      e = std::make_shared<const Entry>(Entry{dnnl::matmul(pd), pd.scratchpad_desc()});
  } catch (const dnnl::error&) {
    e = nullptr;  // remembered: the float32 path is taken at once next time
  }
  std::lock_guard<std::mutex> lock(cache_mutex);
  return cache.emplace(key, e).first->second;
}

void execute(
    const Entry& e,
    const memory::desc& amd,
    const void* a,
    const memory::desc& bmd,
    const void* b,
    const memory::desc& cmd,
    void* c) {
  const size_t bytes = e.scratch_md.get_size();
  void* scratch = bytes ? detail::cpu_allocator().allocate(bytes) : nullptr;
  dnnl::stream& s = stream();
  e.prim.execute(
      s,
      {{DNNL_ARG_SRC, memory(amd, engine(), const_cast<void*>(a))},
       {DNNL_ARG_WEIGHTS, memory(bmd, engine(), const_cast<void*>(b))},
       {DNNL_ARG_DST, memory(cmd, engine(), c)},
       {DNNL_ARG_SCRATCHPAD, memory(e.scratch_md, engine(), scratch)}});
  s.wait();
  if (scratch) detail::cpu_allocator().deallocate(scratch, bytes);
}

}  // namespace

bool dnnl_bf16_gemm(const GemmArgs& g) {
  const float alpha = float(g.alpha.to_double()), beta = float(g.beta.to_double());
  constexpr size_t kElem = 2;  // bytes of a bf16
  // One batch dim that every operand steps through: one 3-D primitive. Shared (stride-0)
  // or several batch dims: the same 2-D primitive once per matrix.
  const bool one_3d =
      g.batch_sizes.size() == 1 && g.a.batch_strides[0] != 0 && g.b.batch_strides[0] != 0;
  const int64_t batch = one_3d ? g.batch_sizes[0] : 0;
  auto stride0 = [&](const GemmMatrix& x) { return one_3d ? x.batch_strides[0] : 0; };
  const memory::desc amd = md(batch, stride0(g.a), g.m, g.k, g.a);
  const memory::desc bmd = md(batch, stride0(g.b), g.k, g.n, g.b);
  const memory::desc cmd = md(batch, stride0(g.c), g.m, g.n, g.c);
  const auto e = lookup(amd, bmd, cmd, alpha, beta);
  if (!e) return false;
  const char* A = static_cast<const char*>(g.a.data);
  const char* B = static_cast<const char*>(g.b.data);
  char* C = static_cast<char*>(g.c.data);
  if (one_3d || g.batch_sizes.empty()) {
    execute(*e, amd, A, bmd, B, cmd, C);
    return true;
  }
  int64_t count = 1;
  for (int64_t s : g.batch_sizes) count *= s;
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, oa = 0, ob = 0, oc = 0;
    for (int64_t d = int64_t(g.batch_sizes.size()) - 1; d >= 0; --d) {
      const int64_t idx = rest % g.batch_sizes[d];
      rest /= g.batch_sizes[d];
      oa += idx * g.a.batch_strides[d];
      ob += idx * g.b.batch_strides[d];
      oc += idx * g.c.batch_strides[d];
    }
    execute(*e, amd, A + oa * kElem, bmd, B + ob * kElem, cmd, C + oc * kElem);
  }
  return true;
}

}  // namespace ignis::cpu
