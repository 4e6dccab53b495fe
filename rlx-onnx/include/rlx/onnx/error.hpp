// error.hpp: the errors rlx-onnx reports.
#pragma once

#include "rlx/ir/error.hpp"

#include <string>
#include <vector>

namespace rlx::onnx {

/// An ONNX model rlx cannot import: unreadable bytes, an invalid model, or ops / attributes /
/// dtypes rlx does not support. Every problem found is listed at once, one per entry of
/// problems(), each naming the node and its op; what() joins them into one line.
class ImportError : public Error {
public:
  /// An error with the given \p problems (at least one) in model \p model.
  ImportError(const std::string& model, std::vector<std::string> problems,
              std::vector<std::string> needed_inputs = {}, bool unsupported = false);

  /// The problems, one per node / value, in graph order.
  const std::vector<std::string>& problems() const { return problems_; }
  /// Graph inputs whose value must be known at import time (they feed a shape, axes or
  /// other compile-time operand); give them in ImportOptions::input_values.
  const std::vector<std::string>& needed_inputs() const { return needed_inputs_; }
  /// True when every problem is a missing feature of rlx (an op, attribute value or dtype it does
  /// not support) rather than an invalid model.
  bool unsupported() const { return unsupported_; }

private:
  std::vector<std::string> problems_;
  std::vector<std::string> needed_inputs_;
  bool unsupported_ = false;
};

/// A graph rlx cannot export to ONNX (an op without an ONNX spelling, a missing weight...); every
/// problem is listed in the one-line message.
class ExportError : public Error {
public:
  using Error::Error;
};

} // namespace rlx::onnx
