// byte_io.cpp: file reading / writing helpers and checked size arithmetic.
#include "byte_io.hpp"

#include <unistd.h>

#include <limits>

namespace rlx::runtime::detail {

InputFile::InputFile(const std::filesystem::path& path) : name_(path.string()) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw IoError("cannot read '" + name_ + "': it is a directory");
  in_.open(path, std::ios::binary);
  if (!in_)
    throw IoError(
        "cannot open '" + name_ + "': " +
        (std::filesystem::exists(path, ec) ? "permission denied or unreadable" : "no such file"));
  in_.seekg(0, std::ios::end);
  size_ = static_cast<std::int64_t>(in_.tellg());
  if (size_ < 0)
    throw IoError("cannot read '" + name_ + "': not a seekable file");
  in_.seekg(0);
}

void InputFile::read(std::int64_t offset, std::byte* dst, std::int64_t n) {
  if (offset < 0 || n < 0 || offset > size_ || n > size_ - offset)
    throw IoError("'" + name_ + "' is truncated: needs bytes [" + std::to_string(offset) + ", " +
                  std::to_string(offset + n) + ") but has " + std::to_string(size_));
  in_.clear();
  in_.seekg(offset);
  in_.read(reinterpret_cast<char*>(dst), n);
  if (in_.gcount() != n)
    throw IoError("read error in '" + name_ + "' at byte " + std::to_string(offset));
}

std::vector<std::byte> InputFile::read_all() {
  std::vector<std::byte> bytes(static_cast<std::size_t>(size_));
  read(0, bytes.data(), size_);
  return bytes;
}

void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  // Written beside the target, then renamed over it: a reader that memory-mapped the old file
  // (SafetensorsReader::map) keeps its pages, where truncating the file in place would fault.
  std::filesystem::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw IoError("cannot write '" + path.string() + "': cannot open for writing");
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw IoError("cannot write '" + path.string() + "': write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw IoError("cannot write '" + path.string() + "': " + ec.message());
  }
}

std::optional<std::int64_t> checked_numel(std::span<const std::int64_t> dims,
                                          std::int64_t elem_size) {
  constexpr std::int64_t limit = std::numeric_limits<std::int64_t>::max();
  std::int64_t n = 1;
  bool zero = false;
  for (std::int64_t d : dims) {
    if (d < 0)
      return std::nullopt;
    if (d == 0)
      zero = true;
  }
  if (zero)
    return 0;
  for (std::int64_t d : dims) {
    if (n > limit / d)
      return std::nullopt;
    n *= d;
  }
  if (n > limit / elem_size)
    return std::nullopt;
  return n;
}

void check_bool_bytes(const ir::Tensor& t, const std::string& what) {
  const auto* p = reinterpret_cast<const unsigned char*>(t.raw());
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (p[i] > 1)
      throw IoError(what + ": bool element " + std::to_string(i) + " holds byte " +
                    std::to_string(p[i]) + " (expected 0 or 1)");
}

std::string dims_str(std::span<const std::int64_t> dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

} // namespace rlx::runtime::detail
