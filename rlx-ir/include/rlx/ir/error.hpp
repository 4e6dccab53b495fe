// error.hpp: the exception types every rlx package throws.
#pragma once

#include <stdexcept>
#include <string>

namespace rlx {

/// Base of every error rlx reports: a clear one-line message, never a crash.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

namespace ir {

/// A builder or shape rule rejected its operands or attributes (wrong rank, dtype, size...).
class ShapeError : public Error {
public:
  using Error::Error;
};

/// The verifier found a graph that breaks an IR invariant.
class VerifyError : public Error {
public:
  using Error::Error;
};

/// The text or JSON parser rejected its input; the message names the line/column or JSON path.
class ParseError : public Error {
public:
  using Error::Error;
};

/// A buffer larger than the machine can hold was asked for (see check_allocation in size.hpp).
class AllocationError : public Error {
public:
  using Error::Error;
};

/// The reference interpreter could not evaluate a graph (missing input, unbound symbol...).
class EvalError : public Error {
public:
  using Error::Error;
};

} // namespace ir
} // namespace rlx
