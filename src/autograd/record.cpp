// Recording ops into the graph: see record.h.
#include "autograd/record.h"

#include <span>

#include "core/error.h"
#include "ignis/ops.h"

namespace ignis::detail {

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

namespace {
void record_saving(const char* op, const std::vector<Tensor>& outputs,
                   const std::vector<Tensor>& inputs, const SaveSpec* saved_begin,
                   size_t saved_count, BackwardFn backward) {
  const std::span<const SaveSpec> saved(saved_begin, saved_count);
  auto node = std::make_shared<FunctionNode>();
  node->op = op;
  node->backward = std::move(backward);
  node->num_outputs = uint32_t(outputs.size());
  // Every vector sized once: growing them one push at a time cost a reallocation each, a
  // visible share of a small model's step.
  node->next_edges.reserve(inputs.size());
  node->inputs.reserve(inputs.size());
  node->outputs.reserve(outputs.size());
  node->saved.reserve(saved.size());
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      node->next_edges.emplace_back();
      node->inputs.emplace_back();
      continue;
    }
    node->next_edges.push_back(gradient_edge(t));
    node->inputs.push_back({t.sizes(), t.dtype()});
  }
  for (const Tensor& o : outputs) node->outputs.push_back({o.sizes(), o.dtype(), o.device()});
  for (const SaveSpec& s : saved) {
    SavedTensor st;
    if (s.tensor && s.tensor->defined()) {
      st.version = s.tensor->version();
      if (s.is_output) {
        // The output's meta will point at this node: keep only its data (no cycle).
        st.data = make_view(*s.tensor, s.tensor->sizes(), s.tensor->strides(), s.tensor->storage_offset());
        st.is_output = true;
        st.requires_grad = is_floating(s.tensor->dtype());
        for (uint32_t i = 0; i < outputs.size(); ++i)
          if (outputs[i].impl() == s.tensor->impl()) st.output_nr = i;
      } else {
        st.data = *s.tensor;
      }
    }
    node->saved.push_back(std::move(st));
  }
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    if (!is_floating(outputs[i].dtype())) continue;  // integer outputs (indices) get no grad
    AutogradMeta& m = autograd_meta(outputs[i]);
    m.grad_fn = node;
    m.output_nr = i;
  }
}
}  // namespace

void record(const char* op, const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
            std::initializer_list<SaveSpec> saved, BackwardFn backward) {
  record_saving(op, outputs, inputs, saved.begin(), saved.size(), std::move(backward));
}

void record(const char* op, const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
            const std::vector<SaveSpec>& saved, BackwardFn backward) {
  record_saving(op, outputs, inputs, saved.data(), saved.size(), std::move(backward));
}


Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.sizes() == shape) return grad;
  const int64_t lead = grad.dim() - int64_t(shape.size());
  Shape dims;
  for (int64_t d = 0; d < grad.dim(); ++d)
    if (d < lead || (shape[size_t(d - lead)] == 1 && grad.size(d) != 1)) dims.push_back(d);
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return r.reshape(shape);
}

void mark_differentiable_view(const Tensor& view) {
  if (auto* m = autograd_meta_if(view)) m->is_differentiable_view = true;
}

Tensor& inplace_with_autograd(Tensor& x, const char* op,
                              const std::function<Tensor(const Tensor&)> & out_of_place) {
  AutogradMeta* m = autograd_meta_if(x);
  IGNIS_CHECK(!(x.is_leaf() && x.requires_grad()), ValueError,
              "[{}_] a leaf tensor that requires grad cannot be modified in place (use it "
              "inside ignis::NoGradGuard, e.g. for parameter updates, or work on a clone())",
              op);
  IGNIS_CHECK(!(m && m->is_differentiable_view), NotImplementedError,
              "[{}_] in-place modification of a view of a tensor that requires grad is not "
              "supported; clone() the view first",
              op);
  // Snapshot x (recorded as an identity of its history), compute out of place, write back.
  Tensor before = x.requires_grad() ? x.clone() : x;
  Tensor result = out_of_place(before);
  {
    GradModeScope no_grad(false);
    x.copy_(result);
  }
  AutogradMeta& xm = autograd_meta(x);
  if (AutogradMeta* rm = autograd_meta_if(result); rm && rm->grad_fn) {
    xm.grad_fn = rm->grad_fn;
    xm.output_nr = rm->output_nr;
  } else {
    xm.grad_fn = nullptr;  // x no longer depends on anything that requires grad
  }
  return x;
}

}  // namespace ignis::detail
