// The CPU convolution kernels through oneDNN 2.6 (float32 and bfloat16), plus
// register_conv_cpu(). Built only when oneDNN is found. float64 — which oneDNN has no
// convolution for — and any geometry oneDNN rejects go to the im2col fallback
// (conv_fallback.h); bfloat16 goes there too (through float32) when oneDNN would run it with
// its reference code, which is slower than that.
//
// bfloat16: every operand is bf16 (the front end converts bias and weights), oneDNN
// accumulates in float and rounds each result once; on AVX512-BF16 CPUs (Zen 4) it runs its
// jit/brgemm bf16 kernels.
//
// Note [oneDNN convolution layouts]
// Activations reach oneDNN through memory descriptors carrying the tensors' own strides
// (NCHW or NHWC), so nothing is reordered on the way in or out: with NHWC oneDNN runs its
// brgemm/jit kernels directly, with NCHW its gemm-based ones. Weights are described with
// format_tag::any and reordered (a small copy) into whatever blocked layout the chosen
// implementation prefers; weight gradients come back the same way.
//
// Note [Winograd convolutions]
// oneDNN 2.6 carries Winograd F(4x4, 3x3) kernels for float32 on AVX-512 (jit_wino_4x3) that
// run a 3x3 stride-1 convolution's forward and input gradient in far fewer multiplications:
// on ResNet-18's CIFAR layers at batch 128, one thread, forward 29 / 26 / 18 / 19 ms against
// 52 / 46 / 42 / 84 ms for the direct NHWC kernels (64, 128, 256, 512 channels), the input
// gradient likewise; their weight gradient gains little and stays direct. They read and write
// oneDNN's blocked activation layout only, so the activations are reordered in and out around
// the call (4.5 + 2.0 ms at 64 channels, far less deeper in), which the gain covers many times,
// a few images at a time (winograd_chunk), which bounds the extra memory those buffers take.
// Their rounding error is larger than a direct convolution's: relative RMS error against
// float64 1e-6 instead of 2e-7 (max 3e-6 of the output's scale), as cuDNN's TF32 default for
// convolutions trades far more. set_cpu_winograd(false) (or IGNIS_CPU_WINOGRAD=0) keeps
// every convolution direct. Taken for groups 1, 3x3, stride 1, dilation 1, padding 1 on
// every side and a map of at least 4x4: float32 from 64 input and output channels, and bf16
// without a bias from 256 (computed in float32: the reorders widen the operands exactly and
// round the result to bf16 once), where it beats oneDNN's bf16 kernels (forward 19.3 against
// 30.9 ms at 512 channels of 4x4, input gradient 19.7 against 28.2 at 256 of 8x8; at 64 and
// 128 channels the bf16 kernels are faster); not on a CPU whose bf16 kernels run on AMX
// tiles, with many times the multiply rate. Anything oneDNN declines runs direct.
//
// Note [oneDNN primitive cache]
// Building a primitive descriptor costs far more than a small convolution, so primitives are
// kept in a process-wide map keyed by direction, shapes, strides and parameters; a training
// loop builds each one once. Primitives run with a user scratchpad (taken from the caching
// allocator each call), which also makes one primitive safe to execute from several threads.
#include <algorithm>
#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/allocator.h"
#include "core/tensor_impl.h"
#include "cpu/conv_fallback.h"
#include "cpu/depthwise_conv.h"
#include "ignis/autograd.h"
#include "ignis/ops.h"  // cpu_winograd
#include "ops/nn_common.h"
#include "ops/nn_kernels.h"

namespace ignis::cpu {

namespace {

using detail::Conv2dParams;
using detail::Pair2;
using dnnl::memory;
using tag = memory::format_tag;

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}
dnnl::stream& cpu_stream() {
  thread_local dnnl::stream s(cpu_engine());
  return s;
}

/// A buffer from the caching allocator for the duration of one call.
class Buffer {
 public:
  explicit Buffer(size_t bytes) : bytes_(bytes) {
    if (bytes_) ptr_ = detail::cpu_allocator().allocate(bytes_);
  }
  ~Buffer() {
    if (ptr_) detail::cpu_allocator().deallocate(ptr_, bytes_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return ptr_; }

 private:
  size_t bytes_;
  void* ptr_ = nullptr;
};

memory::data_type dt(DType t) {
  return t == kBFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
}

memory::desc md_of(const Tensor& t) {
  return memory::desc(memory::dims(t.sizes()), dt(t.dtype()), memory::dims(t.strides()));
}

/// The user's weight [O, C/g, kH, kW], split into groups when g > 1.
memory::dims weight_dims(const Tensor& w, int64_t groups) {
  if (groups == 1) return memory::dims(w.sizes());
  return {groups, w.size(0) / groups, w.size(1), w.size(2), w.size(3)};
}
/// The user's weight as it lies in memory (contiguous or channels-last: its own strides), so
/// the reorder into oneDNN's blocked layout reads it directly.
memory::desc weight_user_md(const Tensor& w, int64_t groups) {
  memory::dims strides(w.strides());
  if (groups > 1) strides.insert(strides.begin(), strides[0] * (w.size(0) / groups));
  return memory::desc(weight_dims(w, groups), dt(w.dtype()), strides);
}
memory::desc weight_any_md(
    const Tensor& w, int64_t groups, memory::data_type type = memory::data_type::undef) {
  const memory::data_type t = type == memory::data_type::undef ? dt(w.dtype()) : type;
  return memory::desc(weight_dims(w, groups), t, tag::any);
}

/// oneDNN's view of the geometry (dilation counted from 0). A negative end padding (from a
/// transposed convolution's output_padding) is raised to 0 when that leaves the output size
/// unchanged under oneDNN's floor division, which holds whenever output_padding < stride.
struct DnnlGeometry {
  memory::dims strides, dilates, pad_l, pad_r;
};
DnnlGeometry dnnl_geometry(const Tensor& in, const Tensor& w, const Conv2dParams& p) {
  DnnlGeometry g;
  for (int i = 0; i < 2; ++i) {
    g.strides.push_back(p.stride[i]);
    g.dilates.push_back(p.dilation[i] - 1);
    g.pad_l.push_back(p.padding[i]);
    int64_t pe = p.padding_end[i];
    if (pe < 0) {
      const int64_t span = p.dilation[i] * (w.size(2 + i) - 1) + 1;
      const int64_t rem = (in.size(2 + i) + p.padding[i] + pe - span) % p.stride[i];
      if (pe + (p.stride[i] - 1 - rem) >= 0) pe = 0;
    }
    g.pad_r.push_back(pe);
  }
  return g;
}

std::string key_of(const char* kind, std::initializer_list<const Tensor*> ts,
                   const Conv2dParams& p, bool bias) {
  std::string k = kind;
  for (const Tensor* t : ts) {
    for (int64_t s : t->sizes()) k += ',' + std::to_string(s);
    k += '/';
    for (int64_t s : t->strides()) k += ',' + std::to_string(s);
    k += dtype_name(t->dtype());
    k += ';';
  }
  for (int i = 0; i < 2; ++i)
    k += fmt::format("|{},{},{},{}", p.stride[i], p.padding[i], p.padding_end[i], p.dilation[i]);
  k += fmt::format("|g{}|b{}", p.groups, int(bias));
  return k;
}

/// A cached primitive with what executing it needs: the weights' layout chosen by oneDNN and
/// the reorder between it and the user's layout (empty when they agree); for the Winograd
/// kernels (blocked activations) also the activation read (argument act_in) reordered in and
/// the one written (act_out) reordered out.
struct Entry {
  dnnl::primitive prim;
  memory::desc weights_md, scratch_md;
  std::optional<dnnl::reorder> weight_reorder;
  int act_in = 0, act_out = 0;
  memory::desc act_in_md{}, act_out_md{};
  std::optional<dnnl::reorder> act_reorder_in{}, act_reorder_out{};
};

std::mutex cache_mutex;
std::unordered_map<std::string, std::shared_ptr<const Entry>> cache;

/// The cached entry for key, built by make() on a miss; null when oneDNN rejects the case.
template <class Make>
std::shared_ptr<const Entry> lookup(const std::string& key, const Make& make) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  std::shared_ptr<const Entry> e;
  try {
    e = std::make_shared<const Entry>(make());
  } catch (const dnnl::error&) {
    e = nullptr;  // unsupported here: remembered, so the fallback is chosen at once next time
  }
  std::lock_guard<std::mutex> lock(cache_mutex);
  return cache.emplace(key, e).first->second;
}

/// bf16 cases that oneDNN would run with its reference code are declined (the float32
/// fallback is faster); lookup() remembers that as "unsupported".
template <class PD>
const PD& optimised(const PD& pd, const Tensor& t) {
  if (t.dtype() == kBFloat16 && std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
    throw dnnl::error(dnnl_unimplemented, "reference implementation only");
  return pd;
}

dnnl::primitive_attr scratch_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// How a convolution runs: direct on the tensors' own layouts, or Winograd on blocked
/// activations (Note [Winograd convolutions]).
enum class Algo { Direct, Winograd };

/// The type a convolution of t computes in: t's own, or float32 for Winograd (whose kernels
/// are float32 only; bf16 operands are widened exactly by the reorders in, the results
/// rounded to bf16 by the reorder out).
memory::data_type compute_dt(const Tensor& t, Algo algo) {
  return algo == Algo::Direct ? dt(t.dtype()) : memory::data_type::f32;
}

/// t's memory descriptor for algo: its own strides, or "any" (the layout oneDNN prefers).
memory::desc act_md(const Tensor& t, Algo algo) {
  if (algo == Algo::Direct) return md_of(t);
  return memory::desc(memory::dims(t.sizes()), compute_dt(t, algo), tag::any);
}
dnnl::algorithm dnnl_algorithm(Algo algo) {
  return algo == Algo::Direct ? dnnl::algorithm::convolution_direct
                              : dnnl::algorithm::convolution_winograd;
}

/// With relu, the ReLU is a post-op: applied to each output before it is stored.
dnnl::convolution_forward::primitive_desc forward_pd(
    const Tensor& in,
    const Tensor& w,
    bool bias,
    const Tensor& out,
    const Conv2dParams& p,
    bool relu = false,
    Algo algo = Algo::Direct) {
  const DnnlGeometry g = dnnl_geometry(in, w, p);
  const memory::desc bias_md =
      bias ? memory::desc({w.size(0)}, compute_dt(w, algo), tag::x) : memory::desc();
  dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_training,
      dnnl_algorithm(algo),
      act_md(in, algo),
      weight_any_md(w, p.groups, compute_dt(w, algo)),
      bias_md,
      act_md(out, algo),
      g.strides,
      g.dilates,
      g.pad_l,
      g.pad_r);
  dnnl::primitive_attr attr = scratch_attr();
  if (relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  return dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
}

Entry make_entry(dnnl::primitive prim, const memory::desc& wmd, const memory::desc& smd,
                 const memory::desc& user_wmd, bool to_user) {
  Entry e{std::move(prim), wmd, smd, std::nullopt};
  if (wmd != user_wmd)
    e.weight_reorder = to_user ? dnnl::reorder(dnnl::reorder::primitive_desc(
                                     cpu_engine(), wmd, cpu_engine(), user_wmd))
                               : dnnl::reorder(dnnl::reorder::primitive_desc(
                                     cpu_engine(), user_wmd, cpu_engine(), wmd));
  return e;
}

/// e with its activations reordered between the user's tensors (`in`, `out`) and the
/// primitive's layouts (`in_md`, `out_md`), for arguments in_arg and out_arg.
Entry with_blocked_activations(
    Entry e,
    int in_arg,
    const Tensor& in,
    const memory::desc& in_md,
    int out_arg,
    const Tensor& out,
    const memory::desc& out_md) {
  e.act_in = in_arg;
  e.act_out = out_arg;
  e.act_in_md = in_md;
  e.act_out_md = out_md;
  e.act_reorder_in =
      dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), md_of(in), cpu_engine(), in_md));
  e.act_reorder_out =
      dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), out_md, cpu_engine(), md_of(out)));
  return e;
}

memory mem(const memory::desc& md, const Tensor& t) {
  return memory(md, cpu_engine(), t.data_ptr());
}

/// The user's weights reordered into a primitive's layout, kept for the calls that follow with
/// the same layout: the chunks of one Winograd convolution reorder the weights once.
struct KeptWeights {
  memory::desc md;
  std::optional<Buffer> buf;
};

/// Runs e.prim with the weights in oneDNN's layout: the user's weights are reordered in
/// before (`weights_in`; with `kept`, only when kept holds no copy in e's layout) or the
/// primitive's weight gradient reordered out after.
void run(
    const Entry& e,
    std::unordered_map<int, memory> args,
    int weight_arg,
    const Tensor& user_w,
    int64_t groups,
    bool weights_in,
    KeptWeights* kept = nullptr) {
  dnnl::stream& s = cpu_stream();
  memory user = mem(weight_user_md(user_w, groups), user_w);
  std::optional<Buffer> own;
  std::optional<Buffer>& wbuf = kept ? kept->buf : own;
  const bool reuse = kept && wbuf && kept->md == e.weights_md;
  if (e.weight_reorder && !reuse) wbuf.emplace(e.weights_md.get_size());
  memory inner = e.weight_reorder ? memory(e.weights_md, cpu_engine(), wbuf->get()) : user;
  if (e.weight_reorder && weights_in && !reuse) e.weight_reorder->execute(s, user, inner);
  if (kept && e.weight_reorder) kept->md = e.weights_md;
  args.emplace(weight_arg, inner);
  // Blocked activations (Winograd): the input reordered into a buffer, the output written to
  // another and reordered into the user's tensor after.
  Buffer act_in(e.act_reorder_in ? e.act_in_md.get_size() : 0);
  Buffer act_out(e.act_reorder_in ? e.act_out_md.get_size() : 0);
  std::optional<memory> user_out;
  if (e.act_reorder_in) {
    memory blocked_in(e.act_in_md, cpu_engine(), act_in.get());
    e.act_reorder_in->execute(s, args.at(e.act_in), blocked_in);
    args.at(e.act_in) = blocked_in;
    user_out = args.at(e.act_out);
    args.at(e.act_out) = memory(e.act_out_md, cpu_engine(), act_out.get());
  }
  Buffer scratch(e.scratch_md.get_size());
  args.emplace(DNNL_ARG_SCRATCHPAD, memory(e.scratch_md, cpu_engine(), scratch.get()));
  e.prim.execute(s, args);
  if (e.weight_reorder && !weights_in) e.weight_reorder->execute(s, inner, user);
  if (user_out) e.act_reorder_out->execute(s, args.at(e.act_out), *user_out);
  s.wait();
}

// ---------------------------------------------------------------------------------------------
// The fallback for what oneDNN declines; bf16 runs it in float32 and rounds once.

Tensor as_float(const Tensor& t) {
  return t.defined() ? detail::to_layout(t, kFloat32, detail::is_channels_last(t)) : t;
}
Tensor float_like(const Tensor& t) {
  return t.defined() ? detail::empty_in_layout(t.sizes(), kFloat32, t.device(),
                                               detail::is_channels_last(t))
                     : t;
}
void copy_back(const Tensor& dst, const Tensor& src) {
  if (!dst.defined()) return;
  NoGradGuard no_grad;
  Tensor(dst).copy_(src);  // a handle to the same storage
}

void forward_fallback(const Tensor& in, const Tensor& w, const Tensor& bias, const Tensor& out,
                      const Conv2dParams& p) {
  if (in.dtype() != kBFloat16) return conv2d_forward_fallback(in, w, bias, out, p);
  const Tensor o = float_like(out);
  conv2d_forward_fallback(as_float(in), as_float(w), as_float(bias), o, p);
  copy_back(out, o);
}

void backward_input_fallback(const Tensor& go, const Tensor& w, const Tensor& gi,
                             const Conv2dParams& p) {
  if (go.dtype() != kBFloat16) return conv2d_backward_input_fallback(go, w, gi, p);
  const Tensor g = float_like(gi);
  conv2d_backward_input_fallback(as_float(go), as_float(w), g, p);
  copy_back(gi, g);
}

void backward_weight_fallback(const Tensor& go, const Tensor& in, const Tensor& gw,
                              const Tensor& gb, const Conv2dParams& p) {
  if (in.dtype() != kBFloat16) return conv2d_backward_weight_fallback(go, in, gw, gb, p);
  const Tensor w = float_like(gw), b = float_like(gb);
  conv2d_backward_weight_fallback(as_float(go), as_float(in), w, b, p);
  copy_back(gw, w);
  copy_back(gb, b);
}

// ---------------------------------------------------------------------------------------------

/// With relu, returns false (and writes nothing) when oneDNN declines the fused case; the
/// plain convolution falls back to our own kernel instead.
bool forward_dnnl(const Tensor& in, const Tensor& w, const Tensor& bias, const Tensor& out,
                  const Conv2dParams& p, bool relu = false) {
  const auto e = lookup(key_of(relu ? "fwd_relu" : "fwd", {&in, &w, &out}, p, bias.defined()), [&] {
    auto pd = forward_pd(in, w, bias.defined(), out, p, relu);
    optimised(pd, in);
    return make_entry(dnnl::convolution_forward(pd), pd.weights_desc(), pd.scratchpad_desc(),
                      weight_user_md(w, p.groups), false);
  });
  if (!e && relu) return false;
  if (!e) {
    forward_fallback(in, w, bias, out, p);
    return true;
  }
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(md_of(in), in)},
                                       {DNNL_ARG_DST, mem(md_of(out), out)}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, mem(md_of(bias), bias));
  run(*e, std::move(args), DNNL_ARG_WEIGHTS, w, p.groups, true);
  return true;
}

/// Whether oneDNN runs its bf16 convolutions on AMX tiles, whose bf16 peak (1024
/// multiply-adds a cycle a core, by Intel's figures; not measured here) is 32 times the
/// AVX-512 float32 peak the Winograd kernels run at, far more than the 4 times fewer
/// multiplications of F(4x4, 3x3) make up for.
bool bf16_convolutions_on_amx() {
  static const bool amx = dnnl::get_effective_cpu_isa() == dnnl::cpu_isa::avx512_core_amx;
  return amx;
}

/// Whether this convolution may take the Winograd kernels (Note [Winograd convolutions]);
/// `in` is the input, or the input gradient for the backward pass. float32 from 64 channels;
/// bf16 (computed in float32) from 256, where it beats oneDNN's AVX-512 bf16 kernels, and
/// without a bias (which would have to be widened too); never for bf16 on AMX.
bool winograd_fits(const Tensor& in, const Tensor& w, const Conv2dParams& p, bool bias) {
  constexpr Pair2 kOne{1, 1};
  const bool bf16 = in.dtype() == kBFloat16 && !bias && !bf16_convolutions_on_amx();
  const int64_t min_channels = in.dtype() == kFloat32 ? 64 : bf16 ? 256 : 0;
  return min_channels > 0 && cpu_winograd() && p.groups == 1 && w.size(2) == 3 && w.size(3) == 3 &&
         w.size(0) >= min_channels && w.size(1) >= min_channels && in.size(2) >= 4 &&
         in.size(3) >= 4 && p.stride == kOne && p.dilation == kOne && p.padding == kOne &&
         p.padding_end == kOne;
}

/// Images per Winograd call: the blocked copies and the transforms' buffers grow with the
/// batch (about 2 MB an image at 64 channels of 32x32), so a batch goes in chunks of about
/// kWinogradChunkBytes of input: 16 such images, a whole batch of 128 at 512 channels of 4x4.
/// Measured on ResNet-18 at batch 128, one thread (images/s and peak MB of training, then of
/// inference): whole batches 69.3 / 1132 and 275 / 672; 8 MB 70.3 / 1096 and 270 / 540;
/// 4 MB 70.8 / 1064 and 282 / 492; 2 MB 65.8 / 1040 and 253 / 464.
constexpr int64_t kWinogradChunkBytes = int64_t(4) << 20;
int64_t winograd_chunk(const Tensor& in) {
  // The blocked copies are float32 whatever the input's type.
  const int64_t per_image = in.numel() / std::max<int64_t>(in.size(0), 1) * int64_t(sizeof(float));
  return std::clamp<int64_t>(
      kWinogradChunkBytes / std::max<int64_t>(per_image, 1), 1, std::max<int64_t>(in.size(0), 1));
}

/// Images [b0, b0 + n) of t: a view with t's strides.
Tensor batch_slice(const Tensor& t, int64_t b0, int64_t n) {
  Shape sizes = t.sizes();
  sizes[0] = n;
  return detail::make_view(t, sizes, t.strides(), t.storage_offset() + b0 * t.stride(0));
}

/// Runs chunk(in_slice, out_slice) over the batch, winograd_chunk(in) images at a time.
/// Returns false (nothing written) when oneDNN declines the first chunk; a later one it
/// declines (a shorter tail) runs direct(in_slice, out_slice).
template <class Chunk, class Direct>
bool winograd_in_chunks(
    const Tensor& in, const Tensor& out, const Chunk& chunk, const Direct& direct) {
  const int64_t N = in.size(0), nb = winograd_chunk(in);
  for (int64_t b0 = 0; b0 < N; b0 += nb) {
    const int64_t n = std::min(nb, N - b0);
    const Tensor i = batch_slice(in, b0, n), o = batch_slice(out, b0, n);
    if (chunk(i, o)) continue;
    if (b0 == 0) return false;
    direct(i, o);
  }
  return true;
}

/// The Winograd forward; false (nothing written) when oneDNN declines the case.
bool forward_winograd(
    const Tensor& in,
    const Tensor& w,
    const Tensor& bias,
    const Tensor& out,
    const Conv2dParams& p,
    KeptWeights& kept) {
  const auto e = lookup(key_of("fwd_wino", {&in, &w, &out}, p, bias.defined()), [&] {
    auto pd = forward_pd(in, w, bias.defined(), out, p, false, Algo::Winograd);
    return with_blocked_activations(
        make_entry(
            dnnl::convolution_forward(pd),
            pd.weights_desc(),
            pd.scratchpad_desc(),
            weight_user_md(w, p.groups),
            false),
        DNNL_ARG_SRC,
        in,
        pd.src_desc(),
        DNNL_ARG_DST,
        out,
        pd.dst_desc());
  });
  if (!e) return false;
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, mem(md_of(in), in)}, {DNNL_ARG_DST, mem(md_of(out), out)}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, mem(md_of(bias), bias));
  run(*e, std::move(args), DNNL_ARG_WEIGHTS, w, p.groups, true, &kept);
  return true;
}

/// The Winograd input gradient; false (nothing written) when oneDNN declines the case.
bool backward_input_winograd(
    const Tensor& go, const Tensor& w, const Tensor& gi, const Conv2dParams& p, KeptWeights& kept) {
  const auto e = lookup(key_of("bwd_data_wino", {&go, &w, &gi}, p, false), [&] {
    const DnnlGeometry g = dnnl_geometry(gi, w, p);
    dnnl::convolution_backward_data::desc d(
        dnnl::algorithm::convolution_winograd,
        act_md(gi, Algo::Winograd),
        weight_any_md(w, p.groups, compute_dt(w, Algo::Winograd)),
        act_md(go, Algo::Winograd),
        g.strides,
        g.dilates,
        g.pad_l,
        g.pad_r);
    auto hint = forward_pd(gi, w, false, go, p, false, Algo::Winograd);
    dnnl::convolution_backward_data::primitive_desc pd(d, scratch_attr(), cpu_engine(), hint);
    return with_blocked_activations(
        make_entry(
            dnnl::convolution_backward_data(pd),
            pd.weights_desc(),
            pd.scratchpad_desc(),
            weight_user_md(w, p.groups),
            false),
        DNNL_ARG_DIFF_DST,
        go,
        pd.diff_dst_desc(),
        DNNL_ARG_DIFF_SRC,
        gi,
        pd.diff_src_desc());
  });
  if (!e) return false;
  run(*e,
      {{DNNL_ARG_DIFF_DST, mem(md_of(go), go)}, {DNNL_ARG_DIFF_SRC, mem(md_of(gi), gi)}},
      DNNL_ARG_WEIGHTS,
      w,
      p.groups,
      true,
      &kept);
  return true;
}

void backward_input_dnnl(const Tensor& go, const Tensor& w, const Tensor& gi,
                         const Conv2dParams& p) {
  const auto e = lookup(key_of("bwd_data", {&go, &w, &gi}, p, false), [&] {
    const DnnlGeometry g = dnnl_geometry(gi, w, p);
    dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, md_of(gi),
                                            weight_any_md(w, p.groups), md_of(go), g.strides,
                                            g.dilates, g.pad_l, g.pad_r);
    auto hint = forward_pd(gi, w, false, go, p);
    dnnl::convolution_backward_data::primitive_desc pd(d, scratch_attr(), cpu_engine(), hint);
    optimised(pd, go);
    return make_entry(dnnl::convolution_backward_data(pd), pd.weights_desc(),
                      pd.scratchpad_desc(), weight_user_md(w, p.groups), false);
  });
  if (!e) return backward_input_fallback(go, w, gi, p);
  run(*e, {{DNNL_ARG_DIFF_DST, mem(md_of(go), go)}, {DNNL_ARG_DIFF_SRC, mem(md_of(gi), gi)}},
      DNNL_ARG_WEIGHTS, w, p.groups, true);
}

void backward_weight_dnnl(const Tensor& go, const Tensor& in, const Tensor& gw,
                          const Tensor& gb, const Conv2dParams& p) {
  const auto e = lookup(key_of("bwd_weights", {&go, &in, &gw}, p, gb.defined()), [&] {
    const DnnlGeometry g = dnnl_geometry(in, gw, p);
    const memory::desc bias_md =
        gb.defined() ? memory::desc({gw.size(0)}, dt(gb.dtype()), tag::x) : memory::desc();
    dnnl::convolution_backward_weights::desc d(
        dnnl::algorithm::convolution_direct, md_of(in), weight_any_md(gw, p.groups), bias_md,
        md_of(go), g.strides, g.dilates, g.pad_l, g.pad_r);
    auto hint = forward_pd(in, gw, gb.defined(), go, p);
    dnnl::convolution_backward_weights::primitive_desc pd(d, scratch_attr(), cpu_engine(), hint);
    optimised(pd, go);
    return make_entry(dnnl::convolution_backward_weights(pd), pd.diff_weights_desc(),
                      pd.scratchpad_desc(), weight_user_md(gw, p.groups), true);
  });
  if (!e) return backward_weight_fallback(go, in, gw, gb, p);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, mem(md_of(in), in)},
                                       {DNNL_ARG_DIFF_DST, mem(md_of(go), go)}};
  if (gb.defined()) args.emplace(DNNL_ARG_DIFF_BIAS, mem(md_of(gb), gb));
  run(*e, std::move(args), DNNL_ARG_DIFF_WEIGHTS, gw, p.groups, false);
}

/// True when an NCHW convolution between `a` and `b` (input and output, either way round)
/// should run in NHWC: oneDNN 2.6 takes its gemm path for NCHW, its brgemm/jit kernels for
/// NHWC. For ResNet-18's 3x3 layers at batch 128 on AVX-512 (1 thread) the forward runs at
/// 88-92 GFLOP/s in NCHW against 121-132 in NHWC with 128-512 channels; the two layout copies
/// cost 1-10% of the convolution there, but about as much as the gain at 64 channels, hence
/// the threshold.
bool nhwc_pays(const Tensor& a, const Tensor& b) {
  return !detail::is_channels_last(a) && !detail::is_channels_last(b) && a.size(1) >= 128 &&
         b.size(1) >= 128 && a.size(2) * a.size(3) > 1;
}

/// Runs fn(nhwc_a, nhwc_out) with an NHWC copy of `a` and an NHWC buffer for `out`, then
/// copies the buffer into `out`.
template <class Fn>
void via_nhwc(const Tensor& a, const Tensor& out, const Fn& fn) {
  Tensor tmp = detail::empty_in_layout(out.sizes(), out.dtype(), out.device(), true);
  fn(detail::to_layout(a, a.dtype(), true), tmp);
  NoGradGuard no_grad;
  Tensor(out).copy_(tmp);  // a handle to the same storage
}

void conv2d_forward_kernel(const Tensor& in, const Tensor& w, const Tensor& bias,
                           const Tensor& out, const Conv2dParams& p) {
  if (depthwise_direct_fits(in, w, out, p)) return depthwise_forward(in, w, bias, out, p, false);
  if (in.dtype() == kFloat64) return conv2d_forward_fallback(in, w, bias, out, p);
  KeptWeights kept;  // reordered by the first chunk, read by the others
  if (winograd_fits(in, w, p, bias.defined()) &&
      winograd_in_chunks(
          in,
          out,
          [&](const Tensor& i, const Tensor& o) {
            return forward_winograd(i, w, bias, o, p, kept);
          },
          [&](const Tensor& i, const Tensor& o) { forward_dnnl(i, w, bias, o, p); }))
    return;
  if (nhwc_pays(in, out))
    return via_nhwc(in, out, [&](const Tensor& x, const Tensor& y) { forward_dnnl(x, w, bias, y, p); });
  forward_dnnl(in, w, bias, out, p);
}

/// conv2d_forward_kernel with oneDNN's ReLU post-op: the small CNN's conv + ReLU layers
/// write their [N, 32 or 64, 28, 28] outputs once instead of twice (and read them once less).
bool conv2d_relu_forward_kernel(const Tensor& in, const Tensor& w, const Tensor& bias,
                                const Tensor& out, const Conv2dParams& p) {
  if (depthwise_direct_fits(in, w, out, p)) {
    depthwise_forward(in, w, bias, out, p, true);
    return true;
  }
  if (in.dtype() == kFloat64) return false;
  if (!nhwc_pays(in, out)) return forward_dnnl(in, w, bias, out, p, true);
  bool fused = false;
  via_nhwc(in, out, [&](const Tensor& x, const Tensor& y) {
    fused = forward_dnnl(x, w, bias, y, p, true);
  });
  return fused;
}

void conv2d_backward_input_kernel(const Tensor& go, const Tensor& w, const Tensor& gi,
                                  const Conv2dParams& p) {
  if (depthwise_direct_fits(gi, w, go, p)) return depthwise_backward_input(go, w, gi, p);
  if (go.dtype() == kFloat64) return conv2d_backward_input_fallback(go, w, gi, p);
  KeptWeights kept;  // reordered by the first chunk, read by the others
  if (winograd_fits(gi, w, p, false) &&
      winograd_in_chunks(
          go,
          gi,
          [&](const Tensor& g, const Tensor& d) {
            return backward_input_winograd(g, w, d, p, kept);
          },
          [&](const Tensor& g, const Tensor& d) { backward_input_dnnl(g, w, d, p); }))
    return;
  if (nhwc_pays(go, gi))
    return via_nhwc(go, gi, [&](const Tensor& g, const Tensor& d) { backward_input_dnnl(g, w, d, p); });
  backward_input_dnnl(go, w, gi, p);
}

/// oneDNN 2.6's weight gradient from NCHW activations runs its gemm path at a quarter of the
/// speed of its NHWC kernels (51 vs 204 GFLOP/s for ResNet-18's 3x3 64-channel layer on
/// AVX-512), so NCHW activations with enough channels are copied to NHWC first: the two
/// copies cost far less than the difference.
void conv2d_backward_weight_kernel(const Tensor& go, const Tensor& in, const Tensor& gw,
                                   const Tensor& gb, const Conv2dParams& p) {
  if (depthwise_direct_fits(in, gw, go, p)) return depthwise_backward_weight(go, in, gw, gb, p);
  if (in.dtype() == kFloat64) return conv2d_backward_weight_fallback(go, in, gw, gb, p);
  if (!detail::is_channels_last(in) && in.size(1) >= 16 && in.size(2) * in.size(3) > 1)
    return backward_weight_dnnl(detail::to_layout(go, go.dtype(), true),
                                detail::to_layout(in, in.dtype(), true), gw, gb, p);
  backward_weight_dnnl(go, in, gw, gb, p);
}

/// Note [Preferred conv layout] on the CPU: a float32 or bf16 convolution with 32 or more
/// output channels over a spatial map runs channels-last. oneDNN 2.6 runs those with its NHWC
/// brgemm/jit kernels but takes its much slower gemm path for NCHW (the small CNN's 1 -> 32
/// layer at batch 128: 237 ms forward + weight gradient in NCHW against 66 ms in NHWC, in
/// oneDNN's own timing), and copying NCHW activations in and out around each call costs about
/// as much as it gains at 64 channels. So the result is returned channels-last (the
/// elementwise ops after it keep that layout, and the next convolution reads it without a
/// copy); only a network's first such layer converts its input. Grouped convolutions stay
/// NCHW, except bf16 depthwise ones: oneDNN's depthwise 3x3 over [32,128,32,32] took 52 ms
/// forward and backward NCHW (its gradients converted to NHWC and back) and 23-44 ms
/// channels-last, while 2 and 4 groups measured no better, or worse, channels-last. float32
/// depthwise ones stay NCHW, where the direct kernels take them (Note [Direct depthwise
/// convolutions]: 7-9 ms for that convolution at one thread).
bool prefers_channels_last(const detail::ConvLayoutQuery& q) {
  const bool depthwise = q.groups > 1 && q.groups == q.in_channels;
  return ((q.compute == kFloat32 && q.groups == 1) ||
          (q.compute == kBFloat16 && (q.groups == 1 || depthwise))) &&
         q.out_channels >= 32 && q.height * q.width > 1;
}

}  // namespace

void register_conv_cpu() {
  detail::conv2d_prefers_channels_last.set(DeviceType::CPU, prefers_channels_last);
  detail::conv2d_forward_kernel.set(DeviceType::CPU, conv2d_forward_kernel);
  detail::conv2d_relu_forward_kernel.set(DeviceType::CPU, conv2d_relu_forward_kernel);
  detail::conv2d_backward_input_kernel.set(DeviceType::CPU, conv2d_backward_input_kernel);
  detail::conv2d_backward_weight_kernel.set(DeviceType::CPU, conv2d_backward_weight_kernel);
}

}  // namespace ignis::cpu
