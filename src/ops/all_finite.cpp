// all_finite: whether a whole list of tensors (a model's gradients, a step's loss) holds no
// inf or NaN, as one device flag. The per-tensor way, logical_and(all(isfinite(g))) for each
// g, costs three kernels and a full-size bool temporary per tensor; here the dense tensors of
// each dtype go to one multi-tensor pass (non_finite_check_kernel) that clears one bool flag,
// the result itself, and only tensors of other layouts take the per-tensor ops.
#include <map>

#include "core/error.h"
#include "core/memory_format.h"
#include "core/tensor_impl.h"
#include "ignis/ops.h"
#include "ops/optim_kernels.h"

namespace ignis {

Tensor all_finite(const std::vector<Tensor>& tensors) {
  std::optional<Device> device;
  for (size_t i = 0; i < tensors.size(); ++i) {
    IGNIS_CHECK(tensors[i].defined(), ValueError, "[all_finite] tensor {} is undefined", i);
    const Device d = tensors[i].device();
    if (!device) device = d;
    IGNIS_CHECK(
        d == *device,
        DeviceError,
        "[all_finite] every tensor must be on one device: tensor 0 is on {}, tensor {} on {}",
        device->str(),
        i,
        d.str());
  }
  if (!device) return full({}, true, {kBool, Device::cpu()});
  // Cleared by any pass that meets an inf or NaN.
  Tensor finite = full({}, true, {kBool, *device});
  std::map<DType, detail::NonFiniteCheckArgs> groups;
  std::optional<Tensor> strided_ok;  // the tensors the kernel cannot walk as one run
  const bool has_kernel = detail::non_finite_check_kernel.has(device->type);
  for (const Tensor& t : tensors) {
    if (!is_floating(t.dtype()) || t.numel() == 0) continue;  // integers are always finite
    if (!has_kernel || !detail::is_non_overlapping_and_dense(t.sizes(), t.strides())) {
      const Tensor ok = all(isfinite(t));
      strided_ok = strided_ok ? logical_and(*strided_ok, ok) : ok;
      continue;
    }
    detail::NonFiniteCheckArgs& g = groups[t.dtype()];
    g.dtype = t.dtype();
    g.data.push_back(t.data_ptr());
    g.numel.push_back(t.numel());
    g.finite = finite.data_ptr<bool>();
  }
  for (const auto& [dtype, args] : groups) detail::non_finite_check_kernel.get(*device)(args);
  return strided_ok ? logical_and(finite, *strided_ok) : finite;
}

}  // namespace ignis
