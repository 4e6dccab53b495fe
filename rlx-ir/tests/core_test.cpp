// core_test.cpp: DType, Shape, Tensor and Graph basics.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"

#include <gtest/gtest.h>

using namespace rlx::ir;

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_name(DType::boolean), "bool");
  EXPECT_EQ(parse_dtype("i64"), DType::i64);
  EXPECT_FALSE(parse_dtype("f17").has_value());
}
