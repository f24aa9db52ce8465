// Tensor's autograd accessors: requires_grad, grad, is_leaf, detach, retain_grad, hooks,
// version. The graph and backward live in engine.cpp.
#include "autograd/meta.h"
#include "autograd/node.h"
#include "core/error.h"
#include "ignis/autograd.h"

namespace ignis {

namespace detail {
AutogradMeta& autograd_meta(const Tensor& t) {
  auto& m = t.impl()->autograd;
  if (!m) m = std::make_shared<AutogradMeta>();
  return *m;
}
}  // namespace detail

using detail::autograd_meta;
using detail::autograd_meta_if;

bool Tensor::requires_grad() const {
  auto* m = autograd_meta_if(*this);
  return m && (m->requires_grad || m->grad_fn);
}

Tensor& Tensor::requires_grad_(bool on) {
  IGNIS_CHECK(defined(), ValueError, "[requires_grad_] undefined tensor");
  if (!on) {
    IGNIS_CHECK(is_leaf(), ValueError,
                "[requires_grad_] cannot stop a non-leaf tensor from requiring grad; use "
                "detach() instead");
    if (auto* m = autograd_meta_if(*this)) m->requires_grad = false;
    return *this;
  }
  IGNIS_CHECK(is_floating(dtype()), ValueError,
              "[requires_grad_] only floating-point tensors can require grad, got {}",
              dtype_name(dtype()));
  autograd_meta(*this).requires_grad = true;
  return *this;
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  auto* m = autograd_meta_if(*this);
  return m ? m->grad : undefined;
}

Tensor& Tensor::mutable_grad() { return autograd_meta(*this).grad; }

bool Tensor::is_leaf() const {
  auto* m = autograd_meta_if(*this);
  return !m || !m->grad_fn;
}

Tensor Tensor::detach() const {
  return detail::make_view(*this, sizes(), strides(), storage_offset());
}

void Tensor::retain_grad() {
  IGNIS_CHECK(requires_grad(), ValueError,
              "[retain_grad] called on a tensor that does not require grad");
  if (is_leaf()) return;
  auto& m = autograd_meta(*this);
  if (m.retains_grad) return;
  m.retains_grad = true;
  auto& node = *m.grad_fn;
  if (node.retained.size() <= m.output_nr) node.retained.resize(m.output_nr + 1);
  node.retained[m.output_nr].push_back(impl()->autograd);
}

int64_t Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) {
  IGNIS_CHECK(requires_grad(), ValueError,
              "[register_hook] cannot register a hook on a tensor that does not require grad");
  auto& m = autograd_meta(*this);
  const int64_t id = m.next_hook_id++;
  if (m.grad_fn) {  // non-leaf: runs on the gradient flowing into its node
    auto& node = *m.grad_fn;
    if (node.pre_hooks.size() <= m.output_nr) node.pre_hooks.resize(m.output_nr + 1);
    node.pre_hooks[m.output_nr].emplace_back(id, std::move(hook));
  } else {
    m.hooks.emplace_back(id, std::move(hook));
  }
  return id;
}

void Tensor::remove_hook(int64_t handle) {
  auto* m = autograd_meta_if(*this);
  if (!m) return;
  auto drop = [&](auto& list) { std::erase_if(list, [&](const auto& h) { return h.first == handle; }); };
  drop(m->hooks);
  if (m->grad_fn && m->output_nr < m->grad_fn->pre_hooks.size()) drop(m->grad_fn->pre_hooks[m->output_nr]);
}

uint64_t Tensor::version() const { return impl()->storage->version.load(std::memory_order_relaxed); }

namespace autograd {
void register_post_accumulate_grad_hook(const Tensor& leaf, std::function<void(Tensor&)> hook) {
  IGNIS_CHECK(leaf.is_leaf() && leaf.requires_grad(), ValueError,
              "[register_post_accumulate_grad_hook] expects a leaf tensor that requires grad");
  autograd_meta(leaf).post_accumulate_hooks.push_back(std::move(hook));
}
}  // namespace autograd

}  // namespace ignis
