// nn::Module: registration, traversal, device/dtype moves, state dicts and the printed summary.
// Layers are in layers.cpp and containers.cpp.
#include "ignis/nn/module.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <ostream>
#include <typeinfo>
#include <unordered_set>

#include "core/error.h"
#include "core/shape.h"
#include "core/tensor_impl.h"
#include "ignis/autograd.h"

namespace ignis::nn {
using detail::shape_str;

// ---- StateDict --------------------------------------------------------------------------------
StateDict::StateDict(std::initializer_list<Item> items) {
  for (const auto& [k, v] : items) insert(k, v);
}

void StateDict::insert(const std::string& key, Tensor value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    items_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(key, items_.size());
  items_.emplace_back(key, std::move(value));
}

const Tensor& StateDict::at(const std::string& key) const {
  auto it = index_.find(key);
  IGNIS_CHECK(it != index_.end(), ValueError, "[StateDict] no key '{}'", key);
  return items_[it->second].second;
}

Tensor& StateDict::at(const std::string& key) {
  return const_cast<Tensor&>(static_cast<const StateDict&>(*this).at(key));
}

bool StateDict::erase(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  items_.erase(items_.begin() + int64_t(it->second));
  index_.clear();
  for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
  return true;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  for (const auto& item : items_) out.push_back(item.first);
  return out;
}

// ---- registration ---------------------------------------------------------------------------
Module::Module(Module* parent, std::string name) {
  if (parent) parent->register_module(name, this);
}

Module::~Module() {
  // Children owned elsewhere must not point back at a dead parent; a child destroyed first
  // removed itself (Note [Module registration by pointer]).
  for (auto& [n, child] : children_) child->parent_ = nullptr;
  if (parent_) parent_->unregister_child(this);
}

void Module::check_new_name(const std::string& name, const char* what) const {
  IGNIS_CHECK(!name.empty() && name.find('.') == std::string::npos, ValueError,
              "[{}] invalid name '{}': names must be non-empty and contain no '.'", what, name);
  bool taken = false;
  for (const auto& s : params_) taken |= s.name == name;
  for (const auto& s : buffers_) taken |= s.name == name;
  for (const auto& c : children_) taken |= c.first == name;
  IGNIS_CHECK(!taken, ValueError, "[{}] '{}' is already registered in {}", what, name,
              type_name());
}

void Module::register_parameter(const std::string& name, Tensor* param) {
  check_new_name(name, "register_parameter");
  IGNIS_CHECK(param != nullptr, ValueError, "[register_parameter] null pointer for '{}'", name);
  if (param->defined() && is_floating(param->dtype()) && !param->requires_grad())
    param->requires_grad_(true);
  params_.push_back({name, param, true});
}

void Module::register_buffer(const std::string& name, Tensor* buffer, bool persistent) {
  check_new_name(name, "register_buffer");
  IGNIS_CHECK(buffer != nullptr, ValueError, "[register_buffer] null pointer for '{}'", name);
  buffers_.push_back({name, buffer, persistent});
}

void Module::register_module(const std::string& name, Module* child) {
  check_new_name(name, "register_module");
  IGNIS_CHECK(child != nullptr && child != this, ValueError,
              "[register_module] invalid module for '{}'", name);
  IGNIS_CHECK(child->parent_ == nullptr, ValueError,
              "[register_module] '{}' already belongs to another module", name);
  child->parent_ = this;
  child->name_ = name;
  children_.emplace_back(name, child);
}

void Module::unregister_child(Module* child) {
  std::erase_if(children_, [&](const auto& c) { return c.second == child; });
}

Tensor Module::forward(const Tensor&) {
  throw NotImplementedError(fmt::format(
      "[{}] has no single-input forward(const Tensor&); call its own forward overload",
      type_name()));
}

// ---- traversal ------------------------------------------------------------------------------
std::vector<std::pair<std::string, Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, Module*>> out;
  std::function<void(const std::string&, const Module*)> walk = [&](const std::string& prefix,
                                                                     const Module* m) {
    out.emplace_back(prefix, const_cast<Module*>(m));
    for (const auto& [n, c] : m->children_) walk(prefix.empty() ? n : prefix + "." + n, c);
  };
  walk("", this);
  return out;
}

namespace {
// Parameters or buffers of m (and its descendants when recurse), each tensor once.
template <class Select>
std::vector<std::pair<std::string, Tensor>> named_tensors(const Module& m, bool recurse,
                                                          Select select) {
  std::vector<std::pair<std::string, Tensor>> out;
  std::unordered_set<const void*> seen;
  auto modules = recurse ? m.named_modules()
                         : std::vector<std::pair<std::string, Module*>>{{"", const_cast<Module*>(&m)}};
  // Not a structured binding: clang 14 (the sanitizer builds) cannot capture one in a lambda.
  for (const auto& entry : modules) {
    const std::string& prefix = entry.first;
    select(*entry.second, [&](const std::string& name, const Tensor& t) {
      if (!t.defined() || !seen.insert(t.impl()).second) return;
      out.emplace_back(prefix.empty() ? name : prefix + "." + name, t);
    });
  }
  return out;
}
}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  return named_tensors(*this, recurse, [](const Module& m, auto&& emit) {
    for (const auto& s : m.params_) emit(s.name, *s.tensor);
  });
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  return named_tensors(*this, recurse, [](const Module& m, auto&& emit) {
    for (const auto& s : m.buffers_) emit(s.name, *s.tensor);
  });
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<Module*> Module::children() const {
  std::vector<Module*> out;
  for (const auto& c : children_) out.push_back(c.second);
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::named_children() const { return children_; }

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& c : children_) c.second->apply(fn);
  fn(*this);
}

int64_t Module::num_parameters(bool only_trainable) const {
  int64_t n = 0;
  for (const auto& p : parameters())
    if (!only_trainable || p.requires_grad()) n += p.numel();
  return n;
}

// ---- modes and moves ------------------------------------------------------------------------
Module& Module::train(bool on) {
  training_ = on;
  for (auto& c : children_) c.second->train(on);
  return *this;
}

template <class F>
void Module::for_each_tensor(F&& fn, bool params, bool buffers) {
  for (auto& [prefix, m] : named_modules()) {
    if (params)
      for (auto& s : m->params_) fn(*s.tensor, true);
    if (buffers)
      for (auto& s : m->buffers_) fn(*s.tensor, false);
  }
}

namespace {
// The member tensor replaced by convert(t); a parameter stays a leaf that requires grad, and
// a defined gradient follows it. A tensor shared by several slots is converted once.
template <class Convert>
void replace_tensor(Tensor& t, bool is_param, Convert convert,
                    std::unordered_map<const void*, Tensor>& done) {
  if (!t.defined()) return;
  if (auto it = done.find(t.impl()); it != done.end()) {
    t = it->second;
    return;
  }
  const void* key = t.impl();
  Tensor grad = t.grad();
  Tensor moved = convert(t).detach();
  if (is_param && t.requires_grad()) moved.requires_grad_(true);
  if (grad.defined()) moved.mutable_grad() = convert(grad).detach();
  done.emplace(key, moved);
  t = moved;
}
}  // namespace

Module& Module::to(Device device) {
  NoGradGuard no_grad;
  std::unordered_map<const void*, Tensor> done;
  for_each_tensor(
      [&](Tensor& t, bool is_param) {
        if (t.defined() && t.device() == device) return;
        replace_tensor(t, is_param, [&](const Tensor& x) { return x.to(device); }, done);
      },
      true, true);
  return *this;
}

Module& Module::to(DType dtype) {
  IGNIS_CHECK(is_floating(dtype), DTypeError,
              "[Module.to] expects a floating dtype, got {}", dtype_name(dtype));
  NoGradGuard no_grad;
  std::unordered_map<const void*, Tensor> done;
  for_each_tensor(
      [&](Tensor& t, bool is_param) {
        if (!t.defined() || !is_floating(t.dtype()) || t.dtype() == dtype) return;
        replace_tensor(t, is_param, [&](const Tensor& x) { return x.to(dtype); }, done);
      },
      true, true);
  return *this;
}

namespace {
/// Points t's own TensorImpl at src's storage and strides (PyTorch's `param.data = src`), so
/// every handle to t, an optimizer's included, sees the new layout.
void set_data_in_place(const Tensor& t, const Tensor& src) {
  detail::TensorImpl& impl = *t.impl();
  impl.storage = src.impl()->storage;
  impl.offset = src.impl()->offset;
  impl.strides = src.impl()->strides;
}
}  // namespace

Module& Module::to(MemoryFormat format) {
  if (format == MemoryFormat::preserve) return *this;
  NoGradGuard no_grad;
  std::unordered_set<const void*> done;
  for_each_tensor(
      [&](Tensor& t, bool) {
        // Only 4-D tensors have a channels-last form (conv weights); PyTorch skips the rest.
        if (!t.defined() || t.dim() != 4 || !done.insert(t.impl()).second) return;
        for (const Tensor* x : {static_cast<const Tensor*>(&t), &t.grad()}) {
          if (!x->defined()) continue;
          const Tensor converted = x->to(format);  // x itself when already in format
          if (converted.impl() != x->impl()) set_data_in_place(*x, converted);
        }
      },
      true, true);
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) p.mutable_grad() = Tensor();
    else p.mutable_grad().zero_();
  }
}

// ---- state dicts ----------------------------------------------------------------------------
void Module::collect_state(const std::string& prefix, StateDict& out) const {
  for (const auto& s : params_)
    if (s.tensor->defined()) out.insert(prefix + s.name, s.tensor->detach());
  for (const auto& s : buffers_)
    if (s.persistent && s.tensor->defined()) out.insert(prefix + s.name, s.tensor->detach());
  for (const auto& [n, c] : children_) c->collect_state(prefix + n + ".", out);
}

StateDict Module::state_dict() const {
  StateDict out;
  collect_state("", out);
  return out;
}

LoadStateDictResult Module::load_state_dict(const StateDict& state, bool strict) {
  const StateDict own = state_dict();
  LoadStateDictResult result;
  std::vector<std::string> mismatched;
  for (const auto& [key, t] : own) {
    if (!state.contains(key)) {
      result.missing_keys.push_back(key);
      continue;
    }
    const Tensor& src = state.at(key);
    if (!src.defined() || src.sizes() != t.sizes())
      mismatched.push_back(fmt::format("shape mismatch for {}: checkpoint {}, model {}", key,
                                       src.defined() ? shape_str(src.sizes()) : "undefined",
                                       shape_str(t.sizes())));
  }
  for (const auto& [key, t] : state)
    if (!own.contains(key)) result.unexpected_keys.push_back(key);

  std::vector<std::string> problems;
  if (strict && !result.missing_keys.empty())
    problems.push_back(fmt::format("missing keys: {}", fmt::join(result.missing_keys, ", ")));
  if (strict && !result.unexpected_keys.empty())
    problems.push_back(
        fmt::format("unexpected keys: {}", fmt::join(result.unexpected_keys, ", ")));
  problems.insert(problems.end(), mismatched.begin(), mismatched.end());
  IGNIS_CHECK(problems.empty(), ValueError, "[load_state_dict] {}", fmt::join(problems, "; "));

  NoGradGuard no_grad;
  for (const auto& [key, t] : own) {
    if (!state.contains(key)) continue;
    Tensor dst = t;  // shares data with the member
    dst.copy_(state.at(key));
  }
  return result;
}

// ---- printing -------------------------------------------------------------------------------
std::string Module::type_name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  std::string name = status == 0 && demangled ? demangled.get() : mangled;
  // Drop namespaces ("ignis::nn::Linear" -> "Linear"), but not those inside template arguments.
  const size_t angle = name.find('<');
  const size_t colon = name.rfind("::", angle == std::string::npos ? std::string::npos : angle);
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

// As PyTorch's __repr__: a lone extra_repr stays on the type's line; otherwise the extra
// lines and "(name): child" lines go one per line, indented by two per level.
std::string Module::repr_indented(int indent) const {
  std::vector<std::string> lines;
  const std::string extra = extra_repr();
  if (!extra.empty()) lines.push_back(extra);
  for (const auto& [n, c] : children_) lines.push_back("(" + n + "): " + c->repr_indented(indent + 2));
  std::string out = type_name() + "(";
  if (lines.size() == 1 && children_.empty()) return out + extra + ")";
  if (lines.empty()) return out + ")";
  const std::string pad(indent + 2, ' ');
  for (const auto& l : lines) out += "\n" + pad + l;
  return out + "\n" + std::string(indent, ' ') + ")";
}

std::string Module::repr() const { return repr_indented(0); }

std::string Module::str() const {
  std::string out = repr() + "\n";
  size_t width = 0;
  const auto named = named_parameters();
  for (const auto& [n, p] : named) width = std::max(width, n.size());
  for (const auto& [n, p] : named)
    out += fmt::format("  {:<{}}  {:<16}  {}\n", n, width, shape_str(p.sizes()), p.numel());
  out += fmt::format("Total parameters: {} (trainable: {})", num_parameters(),
                     num_parameters(true));
  return out;
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.str(); }

}  // namespace ignis::nn
