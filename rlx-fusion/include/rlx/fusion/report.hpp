// report.hpp: the fusion report, what fused and what was missed and why.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::fusion {

/// Why a recognisable pattern did not rewrite (the fusion report's vocabulary).
enum class MissReason : std::uint8_t {
  multiple_consumers, ///< an inner node of the pattern has other users (fusing would duplicate
                      ///< work)
  shape_mismatch,     ///< operand shapes the fused op cannot take (rank, broadcast, layout)
  dtype_mismatch,     ///< a dtype the fused op does not take, or operands of different dtypes
  not_claimed,        ///< the backend does not claim the fused op (or not for this dtype)
  attribute_mismatch, ///< an attribute the fused op cannot express (axis, flag, constant value)
  operand_mismatch,   ///< an operand is not the op or value the pattern needs
  is_graph_output,    ///< an inner node of the pattern is a graph output and must stay materialised
  not_profitable,     ///< the rewrite is legal but the benefit gate rejected it
  limit_exceeded,     ///< the fused op would exceed a FusionLimits cap (ops, inputs per region)
  would_create_cycle, ///< grouping would make a path leave the fused op and re-enter it
};

/// \returns the snake_case name of \p r ("multiple_consumers").
std::string_view miss_reason_name(MissReason r);

/// One recognisable pattern instance that did not rewrite.
struct MissedFusion {
  std::string pattern; ///< pattern name ("matmul_bias_act")
  std::string node;    ///< the root node, as rlx::ir::describe() names it
  MissReason reason;
  std::string detail; ///< one line: which operand, which shapes, which attribute
};

/// What the fusion passes of one compile did.
struct FusionReport {
  std::map<std::string, int> applied; ///< pattern name → rewrites applied
  std::vector<MissedFusion> missed;   ///< every recognisable pattern that did not apply

  /// Counts one applied rewrite of \p pattern.
  void record_applied(std::string_view pattern, int n = 1);
  /// Records a missed rewrite.
  void record_missed(MissedFusion m);
  /// Merges \p other into this report.
  void merge(const FusionReport& other);
  /// Total rewrites applied over every pattern.
  int total_applied() const;
  /// A human-readable summary: one line per applied pattern, one per miss.
  std::string str() const;
};

} // namespace rlx::fusion
