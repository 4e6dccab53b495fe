// norm.cpp: reference kernels of LayerNorm and RmsNorm (over the last axis, in double).
#include "kernels.hpp"

#include <cmath>

namespace rlx::ir::reference::kernels {

RLX_REFERENCE_KERNEL(LayerNorm) {
  // y = (x - mean) / sqrt(var + eps) * gamma (+ beta), var = mean((x - mean)^2) (biased).
  double eps = node.attr<NormAttrs>().eps;
  auto x = load_f64(in[0]);
  auto gamma = load_f64(in[1]);
  std::vector<double> beta = in.size() == 3 ? load_f64(in[2]) : std::vector<double>(gamma.size());
  std::size_t d = gamma.size();
  std::vector<double> y(x.size());
  for (std::size_t row = 0; d > 0 && row < x.size() / d; ++row) {
    const double* xr = x.data() + row * d;
    double mean = 0;
    for (std::size_t i = 0; i < d; ++i)
      mean += xr[i];
    mean /= static_cast<double>(d);
    double var = 0;
    for (std::size_t i = 0; i < d; ++i)
      var += (xr[i] - mean) * (xr[i] - mean);
    var /= static_cast<double>(d);
    double inv = 1.0 / std::sqrt(var + eps);
    for (std::size_t i = 0; i < d; ++i)
      y[row * d + i] = (xr[i] - mean) * inv * gamma[i] + beta[i];
  }
  return store_f64(out, y);
}

RLX_REFERENCE_KERNEL(RmsNorm) {
  // y = x / sqrt(mean(x^2) + eps) * gamma.
  double eps = node.attr<NormAttrs>().eps;
  auto x = load_f64(in[0]);
  auto gamma = load_f64(in[1]);
  std::size_t d = gamma.size();
  std::vector<double> y(x.size());
  for (std::size_t row = 0; d > 0 && row < x.size() / d; ++row) {
    const double* xr = x.data() + row * d;
    double ms = 0;
    for (std::size_t i = 0; i < d; ++i)
      ms += xr[i] * xr[i];
    ms /= static_cast<double>(d);
    double inv = 1.0 / std::sqrt(ms + eps);
    for (std::size_t i = 0; i < d; ++i)
      y[row * d + i] = xr[i] * inv * gamma[i];
  }
  return store_f64(out, y);
}

} // namespace rlx::ir::reference::kernels
