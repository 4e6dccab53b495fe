// dispatch_report.cpp: DispatchReport totals and its text table.
#include "rlx/compile/legalize.hpp"

#include <cstdio>
#include <sstream>

namespace rlx::compile {

DispatchCounts DispatchReport::total() const {
  DispatchCounts t;
  for (const auto& [op, c] : by_op) {
    t.native += c.native;
    t.rewritten += c.rewritten;
    t.unsupported += c.unsupported;
  }
  return t;
}

std::string DispatchReport::str() const {
  std::ostringstream os;
  char line[160];
  os << "dispatch on " << (backend.empty() ? std::string("?") : backend) << ":\n";
  std::snprintf(line, sizeof line, "  %-22s %8s %10s %12s\n", "op", "native", "rewritten",
                "unsupported");
  os << line;
  for (const auto& [op, c] : by_op) {
    std::snprintf(line, sizeof line, "  %-22s %8d %10d %12d\n",
                  std::string(ir::op_name(op)).c_str(), c.native, c.rewritten, c.unsupported);
    os << line;
  }
  const DispatchCounts t = total();
  std::snprintf(line, sizeof line, "  %-22s %8d %10d %12d\n", "total", t.native, t.rewritten,
                t.unsupported);
  os << line;
  for (const auto& n : unsupported_nodes)
    os << "  unsupported: " << n << "\n";
  return os.str();
}

} // namespace rlx::compile
