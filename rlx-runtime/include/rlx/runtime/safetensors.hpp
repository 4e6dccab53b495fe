// safetensors.hpp: reading and writing weights in the safetensors format.
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of JSON header mapping
// each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// data section) plus an optional "__metadata__" string map, then the data section. Every header is
// validated before any tensor is allocated: known dtypes, non-negative shapes, offsets inside the
// data section, end - begin equal to the tensor's byte size, and tensors that neither overlap nor
// leave holes. Anything else is an IoError naming the file, the tensor and the rule it broke.
#pragma once

#include "rlx/ir/error.hpp"
#include "rlx/ir/tensor.hpp"

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rlx::runtime {

/// A file or byte buffer could not be read or written (missing, truncated, corrupt, unsupported).
class IoError : public Error {
public:
  using Error::Error;
};

/// Tensors by name, in name order.
using TensorMap = std::map<std::string, ir::Tensor>;

/// The contents of a safetensors file: its tensors and its "__metadata__" strings.
struct SafetensorsFile {
  TensorMap tensors;
  std::map<std::string, std::string> metadata;
};

/// One tensor's entry in a safetensors header (what the file holds, without reading the data).
struct SafetensorsEntry {
  std::string name;
  ir::Shape shape;    ///< static dims and the element type
  std::int64_t begin; ///< byte offset of the data, relative to the data section
  std::int64_t end;   ///< one past the last byte
};

/// A tensor's bytes seen in place in a memory-mapped safetensors file.
struct MappedTensor {
  ir::Shape shape;                     ///< static dims and the element type
  const std::byte* data = nullptr;     ///< shape.bytes() bytes, aligned for the dtype
  std::shared_ptr<const void> mapping; ///< keeps the file mapped while the view is used
};

/// An open safetensors file whose header has been read and validated: list its tensors, then read
/// only the ones you need, copied (read) or seen in place in the mapped file (map).
class SafetensorsReader {
public:
  /// Opens \p path and validates its header; throws IoError naming the file and the problem.
  explicit SafetensorsReader(const std::filesystem::path& path);
  ~SafetensorsReader();
  SafetensorsReader(SafetensorsReader&&) noexcept;
  SafetensorsReader& operator=(SafetensorsReader&&) noexcept;

  /// Every tensor of the file, in name order.
  const std::vector<SafetensorsEntry>& entries() const;
  /// The entry named \p name, or null.
  const SafetensorsEntry* find(const std::string& name) const;
  /// The "__metadata__" strings.
  const std::map<std::string, std::string>& metadata() const;
  /// Reads the tensor named \p name; throws IoError when there is none or the file is short.
  ir::Tensor read(const std::string& name);
  /// The tensor named \p name seen in place: the file is memory-mapped once (private, read-only)
  /// and the view shares the mapping. \returns nullopt when the tensor's data is not aligned
  /// for its dtype (read() copies it then). Throws IoError when there is no such tensor, the file
  /// cannot be mapped, or a bool tensor holds a byte other than 0 or 1. The file must not be
  /// truncated while a view is used.
  std::optional<MappedTensor> map(const std::string& name);
  /// The file's path as given.
  const std::string& path() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Reads every tensor of the safetensors file at \p path. Throws IoError naming the file and the
/// problem when it is missing, truncated or corrupt.
SafetensorsFile read_safetensors(const std::filesystem::path& path);

/// Parses a whole safetensors file held in memory; \p what names the source in error messages.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes,
                                  const std::string& what = "safetensors buffer");

/// Encodes \p tensors (and \p metadata) as a safetensors file image: the header padded with spaces
/// to a multiple of 8 bytes, then the tensors in name order, back to back.
std::vector<std::byte> encode_safetensors(const TensorMap& tensors,
                                          const std::map<std::string, std::string>& metadata = {});

/// Writes encode_safetensors(tensors, metadata) to \p path; throws IoError when it cannot.
void write_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata = {});

/// The safetensors dtype string of \p t ("F32", "BF16", "BOOL", ...).
std::string safetensors_dtype_name(ir::DType t);

} // namespace rlx::runtime
