// npy.hpp: reading and writing single tensors in NumPy's .npy format.
//
// Supported: format versions 1.0, 2.0 and 3.0, little-endian (or byte-order-free) C-order arrays
// of f32, f64, f16, i8, i32, i64, u8 and bool. A Fortran-order array, a big-endian or unsupported
// dtype (bfloat16 has no NumPy dtype), a malformed header or a truncated file is an IoError naming
// the file and the problem.
#pragma once

#include "rlx/ir/tensor.hpp"
#include "rlx/runtime/safetensors.hpp"

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace rlx::runtime {

/// Reads the .npy file at \p path.
ir::Tensor read_npy(const std::filesystem::path& path);

/// Parses a whole .npy file held in memory; \p what names the source in error messages.
ir::Tensor parse_npy(std::span<const std::byte> bytes, const std::string& what = "npy buffer");

/// Encodes \p t as a .npy file image (version 1.0, or 2.0 when the header needs it; the header is
/// padded so the data starts at a multiple of 64 bytes). Throws IoError for bf16.
std::vector<std::byte> encode_npy(const ir::Tensor& t);

/// Writes encode_npy(t) to \p path.
void write_npy(const std::filesystem::path& path, const ir::Tensor& t);

/// The NumPy dtype descriptor of \p t ("<f4", "|b1", ...); throws IoError for bf16.
std::string npy_descr(ir::DType t);

} // namespace rlx::runtime
