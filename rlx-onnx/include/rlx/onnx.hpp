// onnx.hpp: rlx-onnx, ONNX import and export (`#include <rlx/onnx.hpp>`).
#pragma once

#include "rlx/onnx/error.hpp"
#include "rlx/onnx/export.hpp"
#include "rlx/onnx/import.hpp"
