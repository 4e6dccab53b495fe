// byte_io.hpp: small helpers the file formats share: reading files and checked size arithmetic.
#pragma once

#include "rlx/runtime/safetensors.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rlx::runtime::detail {

static_assert(std::endian::native == std::endian::little,
              "rlx's file formats are little-endian; a big-endian host needs byte swapping here");

/// An open input file with its size, for reading ranges with clear errors.
class InputFile {
public:
  /// Opens \p path; throws IoError naming it when it cannot be opened.
  explicit InputFile(const std::filesystem::path& path);
  std::int64_t size() const { return size_; }
  /// Reads \p n bytes at \p offset into \p dst; throws IoError when the file is shorter.
  void read(std::int64_t offset, std::byte* dst, std::int64_t n);
  /// Reads the whole file.
  std::vector<std::byte> read_all();
  const std::string& name() const { return name_; }

private:
  std::ifstream in_;
  std::int64_t size_ = 0;
  std::string name_;
};

/// Writes \p bytes to \p path (replacing it); throws IoError naming the path on failure.
void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes);

/// The product of \p dims, or nullopt when a dim is negative or the byte size (the product times
/// \p elem_size) overflows int64, so corrupt sizes are caught before anything is allocated.
std::optional<std::int64_t> checked_numel(std::span<const std::int64_t> dims,
                                          std::int64_t elem_size);

/// Throws IoError when a bool tensor holds a byte other than 0 or 1.
void check_bool_bytes(const ir::Tensor& t, const std::string& what);

/// "[2, 3]" for messages.
std::string dims_str(std::span<const std::int64_t> dims);

} // namespace rlx::runtime::detail
