// topk.cpp: TopK, the k largest (or smallest) entries along an axis and their indices, written
// into the two parts of the tuple's one planned buffer (Shape::part_offset). Each line along the
// axis is a lane; lanes run in parallel, each a partial sort of (value, index) pairs.
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace rlx::cpu {
namespace {

/// Orders (value, index) pairs as the op's output: largest first (or smallest first), NaN above
/// every number, equal values (and NaNs) by the lower index. A strict total order, so a partial
/// sort gives exactly the reference's stable-sort prefix.
template <class A> struct Before {
  bool largest;
  bool operator()(const std::pair<A, std::int64_t>& p, const std::pair<A, std::int64_t>& q) const {
    if constexpr (std::is_floating_point_v<A>) {
      const bool pn = std::isnan(p.first), qn = std::isnan(q.first);
      if (pn || qn) {
        if (pn && qn)
          return p.second < q.second;
        return largest ? pn : qn; // NaN is the greatest
      }
    }
    if (p.first != q.first)
      return largest ? p.first > q.first : p.first < q.first;
    return p.second < q.second;
  }
};

template <class T> class TopKKernel final : public Kernel {
public:
  using A = compute_t<T>;
  explicit TopKKernel(const LowerContext& c)
      : x_(reinterpret_cast<const T*>(c.src(0))), v_(reinterpret_cast<T*>(c.dst())),
        i_(reinterpret_cast<std::int64_t*>(c.dst() + c.out().part_offset(1))) {
    const auto& a = c.node().attr<ir::TopKAttrs>();
    auto s = c.in(0).sizes();
    auto ax = static_cast<std::size_t>(ir::normalize_axis(a.axis, s.size(), "topk"));
    for (std::size_t d = 0; d < s.size(); ++d) {
      if (d < ax)
        outer_ *= s[d];
      else if (d == ax)
        axis_ = s[d];
      else
        inner_ *= s[d];
    }
    k_ = a.k;
    largest_ = a.largest;
  }
  void run(ExecContext& ctx) override {
    if (k_ == 0)
      return;
    parallel_for(ctx, outer_ * inner_, grain_for(axis_ * 4), [&](std::int64_t b, std::int64_t e) {
      std::vector<std::pair<A, std::int64_t>> line(static_cast<std::size_t>(axis_));
      const Before<A> before{largest_};
      for (std::int64_t lane = b; lane < e; ++lane) {
        const std::int64_t o = lane / inner_, i = lane % inner_;
        const T* x = x_ + o * axis_ * inner_ + i;
        for (std::int64_t j = 0; j < axis_; ++j)
          line[static_cast<std::size_t>(j)] = {to_compute<T>(x[j * inner_]), j};
        std::partial_sort(line.begin(), line.begin() + k_, line.end(), before);
        T* v = v_ + o * k_ * inner_ + i;
        std::int64_t* idx = i_ + o * k_ * inner_ + i;
        for (std::int64_t j = 0; j < k_; ++j) {
          const std::int64_t src = line[static_cast<std::size_t>(j)].second;
          v[j * inner_] = x[src * inner_]; // the stored value, bit for bit
          idx[j * inner_] = src;
        }
      }
    });
  }

private:
  const T* x_;
  T* v_;
  std::int64_t* i_;
  std::int64_t outer_ = 1, axis_ = 1, inner_ = 1, k_ = 0;
  bool largest_ = true;
};

std::unique_ptr<Kernel> make_topk(const LowerContext& c) {
  return visit_dtype(c.in(0).dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (std::is_same_v<T, bool>)
      throw Error("rlx-cpu: " + c.what() + ": topk on bool");
    else
      return std::make_unique<TopKKernel<T>>(c);
  });
}

constexpr KernelImpl kTopK[] = {{"tbb", accept_all, nullptr, make_topk}};

} // namespace

std::span<const KernelImpl> topk_impls() {
  return kTopK;
}

} // namespace rlx::cpu
