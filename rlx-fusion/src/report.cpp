// report.cpp: FusionReport and MissReason names.
#include "rlx/fusion/report.hpp"

#include <sstream>

namespace rlx::fusion {

std::string_view miss_reason_name(MissReason r) {
  switch (r) {
  case MissReason::multiple_consumers:
    return "multiple_consumers";
  case MissReason::shape_mismatch:
    return "shape_mismatch";
  case MissReason::dtype_mismatch:
    return "dtype_mismatch";
  case MissReason::not_claimed:
    return "not_claimed";
  case MissReason::attribute_mismatch:
    return "attribute_mismatch";
  case MissReason::operand_mismatch:
    return "operand_mismatch";
  case MissReason::is_graph_output:
    return "is_graph_output";
  case MissReason::not_profitable:
    return "not_profitable";
  case MissReason::limit_exceeded:
    return "limit_exceeded";
  case MissReason::would_create_cycle:
    return "would_create_cycle";
  }
  return "unknown";
}

void FusionReport::record_applied(std::string_view pattern, int n) {
  applied[std::string(pattern)] += n;
}

void FusionReport::record_missed(MissedFusion m) {
  missed.push_back(std::move(m));
}

void FusionReport::merge(const FusionReport& other) {
  for (const auto& [name, n] : other.applied)
    applied[name] += n;
  missed.insert(missed.end(), other.missed.begin(), other.missed.end());
}

int FusionReport::total_applied() const {
  int n = 0;
  for (const auto& [name, c] : applied)
    n += c;
  return n;
}

std::string FusionReport::str() const {
  std::ostringstream os;
  os << "fusion: " << total_applied() << " applied, " << missed.size() << " missed\n";
  for (const auto& [name, n] : applied)
    os << "  applied " << name << " x" << n << "\n";
  for (const auto& m : missed) {
    os << "  missed  " << m.pattern << " at " << m.node << ": " << miss_reason_name(m.reason);
    if (!m.detail.empty())
      os << " (" << m.detail << ")";
    os << "\n";
  }
  return os.str();
}

} // namespace rlx::fusion
