// reduce.cpp: reference kernels of the reductions: Reduce, Softmax, LogSoftmax, ArgMax and
// SoftmaxCrossEntropy.
#include "kernels.hpp"

#include <cmath>
#include <limits>

namespace rlx::ir::reference::kernels {
namespace {

/// Sizes of a tensor viewed as [outer, axis, inner] around axis \p ax.
struct AxisSplit {
  std::int64_t outer, axis, inner;
};
AxisSplit split_at(const Sizes& s, std::size_t ax) {
  return {product(s, 0, ax), s[ax], product(s, ax + 1, s.size())};
}

/// true when \p v should replace the running maximum \p best: NaN wins over everything and the
/// first NaN stays.
template <ComputeType T> bool beats_max(T v, T best) {
  if constexpr (std::is_same_v<T, double>) {
    if (std::isnan(best))
      return false;
    if (std::isnan(v))
      return true;
  }
  return v > best;
}
template <ComputeType T> bool beats_min(T v, T best) {
  if constexpr (std::is_same_v<T, double>) {
    if (std::isnan(best))
      return false;
    if (std::isnan(v))
      return true;
  }
  return v < best;
}

/// Softmax (or log-softmax) of every lane along the axis, in double.
Tensor softmax_along(const Node& node, const Shape& out, const Tensor& x, bool log) {
  Sizes sizes = x.shape().sizes();
  AxisSplit s = split_at(sizes, axis_of(node.attr<AxisAttrs>().axis, sizes.size(), "softmax"));
  auto v = load_f64(x);
  std::vector<double> r(v.size());
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](std::int64_t j) {
        return static_cast<std::size_t>((o * s.axis + j) * s.inner + i);
      };
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < s.axis; ++j)
        m = std::max(m, v[at(j)]);
      double sum = 0;
      for (std::int64_t j = 0; j < s.axis; ++j)
        sum += std::exp(v[at(j)] - m);
      for (std::int64_t j = 0; j < s.axis; ++j)
        r[at(j)] = log ? v[at(j)] - m - std::log(sum) : std::exp(v[at(j)] - m) / sum;
    }
  return store_f64(out, r);
}

} // namespace

RLX_REFERENCE_KERNEL(Reduce) {
  const auto& a = node.attr<ReduceAttrs>();
  Sizes si = in[0].shape().sizes();
  std::vector<char> reduced(si.size(), a.axes.empty() ? 1 : 0);
  for (auto x : a.axes)
    reduced[axis_of(x, si.size(), "reduce")] = 1;
  // Output stride of every input axis (0 for a reduced one); the kept axes keep their order.
  Sizes kept;
  for (std::size_t d = 0; d < si.size(); ++d)
    if (!reduced[d])
      kept.push_back(si[d]);
  Sizes kept_strides = contiguous_strides(kept);
  Sizes ostride(si.size(), 0);
  std::int64_t count = 1;
  for (std::size_t d = 0, k = 0; d < si.size(); ++d) {
    if (reduced[d])
      count *= si[d];
    else
      ostride[d] = kept_strides[k++];
  }
  if ((a.op == ReduceOp::max || a.op == ReduceOp::min) && count == 0 && out.numel() > 0)
    fail("reduce " + std::string(enum_names(a.op)[static_cast<std::size_t>(a.op)]) +
         " over an empty axis of " + in[0].shape().str());

  return with_compute_type(in[0].dtype(), [&]<class T>(T) {
    auto v = load<T>(in[0]);
    auto n = static_cast<std::size_t>(out.numel());
    std::vector<T> acc(n, a.op == ReduceOp::prod ? T{1} : T{0});
    std::vector<char> seen(n, 0);
    std::size_t i = 0;
    for_each_index(si, [&](const Sizes& idx) {
      std::int64_t o = 0;
      for (std::size_t d = 0; d < idx.size(); ++d)
        o += idx[d] * ostride[d];
      T x = v[i++];
      T& r = acc[static_cast<std::size_t>(o)];
      switch (a.op) {
      case ReduceOp::sum:
      case ReduceOp::mean:
        r = add<T>(r, x);
        break;
      case ReduceOp::prod:
        r = mul<T>(r, x);
        break;
      case ReduceOp::max:
        if (!seen[static_cast<std::size_t>(o)] || beats_max(x, r))
          r = x;
        break;
      case ReduceOp::min:
        if (!seen[static_cast<std::size_t>(o)] || beats_min(x, r))
          r = x;
        break;
      }
      seen[static_cast<std::size_t>(o)] = 1;
    });
    if constexpr (std::is_same_v<T, double>)
      if (a.op == ReduceOp::mean)
        for (auto& r : acc)
          r /= static_cast<double>(count); // an empty mean is 0 / 0 = NaN
    return store<T>(out, acc);
  });
}

RLX_REFERENCE_KERNEL(Softmax) {
  return softmax_along(node, out, in[0], false);
}

RLX_REFERENCE_KERNEL(LogSoftmax) {
  return softmax_along(node, out, in[0], true);
}

RLX_REFERENCE_KERNEL(ArgMax) {
  Sizes sizes = in[0].shape().sizes();
  AxisSplit s = split_at(sizes, axis_of(node.attr<ArgMaxAttrs>().axis, sizes.size(), "argmax"));
  if (s.axis == 0 && s.outer * s.inner > 0)
    fail("argmax over an empty axis of " + in[0].shape().str());
  return with_compute_type(in[0].dtype(), [&]<class T>(T) {
    auto v = load<T>(in[0]);
    std::vector<std::int64_t> r(static_cast<std::size_t>(s.outer * s.inner));
    for (std::int64_t o = 0; o < s.outer; ++o)
      for (std::int64_t i = 0; i < s.inner; ++i) {
        auto at = [&](std::int64_t j) {
          return v[static_cast<std::size_t>((o * s.axis + j) * s.inner + i)];
        };
        std::int64_t best = 0;
        for (std::int64_t j = 1; j < s.axis; ++j)
          if (beats_max(at(j), at(best)))
            best = j;
        r[static_cast<std::size_t>(o * s.inner + i)] = best;
      }
    return store_i64(out, r);
  });
}

RLX_REFERENCE_KERNEL(SoftmaxCrossEntropy) {
  Sizes sizes = in[0].shape().sizes();
  std::int64_t rows = sizes[0], classes = sizes[1];
  auto logits = load_f64(in[0]);
  auto labels = load_i64(in[1]);
  std::vector<double> loss(static_cast<std::size_t>(rows));
  for (std::int64_t n = 0; n < rows; ++n) {
    std::int64_t label = labels[static_cast<std::size_t>(n)];
    if (label < 0 || label >= classes)
      fail("softmax_cross_entropy: label " + std::to_string(label) + " of row " +
           std::to_string(n) + " is out of range [0, " + std::to_string(classes) + ")");
    const double* row = logits.data() + n * classes;
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t c = 0; c < classes; ++c)
      m = std::max(m, row[c]);
    double sum = 0;
    for (std::int64_t c = 0; c < classes; ++c)
      sum += std::exp(row[c] - m);
    loss[static_cast<std::size_t>(n)] = m + std::log(sum) - row[label];
  }
  return store_f64(out, loss);
}

} // namespace rlx::ir::reference::kernels
