// random_tensor.hpp: a seeded tensor of uniform values, the input of the tests that compare an op
// or a graph with loops written in the test. Link the rlx_ir_testing library and include
// "testing/random_tensor.hpp".
#pragma once

#include "rlx/ir/tensor.hpp"

#include <cstdint>
#include <random>

namespace rlx::ir::testing {

/// A tensor of type \p s with values uniform in [\p lo, \p hi) drawn from mt19937_64(\p seed), in
/// element order (rounded to the dtype): the same (type, seed, range) always gives the same tensor.
inline Tensor uniform_tensor(const Shape& s, std::uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t(s);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, u(rng));
  return t;
}

} // namespace rlx::ir::testing
