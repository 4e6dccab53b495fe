// npy.cpp: the .npy reader (a small parser for the header's Python dict literal) and writer.
#include "rlx/runtime/npy.hpp"

#include "byte_io.hpp"

#include <cctype>
#include <cstring>

namespace rlx::runtime {
namespace {

using ir::DType;

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

/// What the header dict says.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
};

/// A recursive-descent parser of the header dict: {'descr': '<f4', 'fortran_order': False,
/// 'shape': (2, 3), }. Only the literal forms NumPy writes are accepted.
class HeaderParser {
public:
  HeaderParser(std::string_view text, std::string what) : s_(text), what_(std::move(what)) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (!peek('}')) {
      std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        h.descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      if (!peek('}'))
        expect(',');
    }
    expect('}');
    skip_ws();
    if (pos_ != s_.size())
      fail("trailing characters after the header dict");
    if (!have_descr || !have_order || !have_shape)
      fail("header lacks one of 'descr', 'fortran_order', 'shape'");
    return h;
  }

private:
  [[noreturn]] void fail(const std::string& why) const {
    throw IoError(what_ + ": malformed npy header (" + why + ")");
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c))
      fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string_literal() {
    skip_ws();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      fail("expected a quoted string");
    char q = s_[pos_++];
    std::size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos)
      fail("unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_ws();
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> out;
    expect('(');
    while (!peek(')')) {
      skip_ws();
      std::int64_t v = 0;
      std::size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (v > (INT64_MAX - 9) / 10)
          fail("dimension too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (pos_ == start)
        fail("expected a non-negative integer dimension");
      if (pos_ < s_.size() && s_[pos_] == 'L') // Python 2 long suffix
        ++pos_;
      out.push_back(v);
      if (!peek(')'))
        expect(',');
    }
    expect(')');
    return out;
  }

  std::string_view s_;
  std::string what_;
  std::size_t pos_ = 0;
};

struct Descr {
  DType dtype;
  const char* descr;
};
constexpr Descr kDescrs[] = {
    {DType::f32, "<f4"}, {DType::f64, "<f8"}, {DType::f16, "<f2"}, {DType::i8, "|i1"},
    {DType::i32, "<i4"}, {DType::i64, "<i8"}, {DType::u8, "|u1"},  {DType::boolean, "|b1"},
};

DType parse_descr(std::string d, const std::string& what) {
  if (d.size() >= 2 && d[0] == '>' && d.substr(1) != "i1" && d.substr(1) != "u1" &&
      d.substr(1) != "b1")
    throw IoError(what + ": big-endian npy data ('" + d + "') is not supported");
  if (!d.empty() && (d[0] == '=' || d[0] == '<' || d[0] == '|' || d[0] == '>')) {
    std::string body = d.substr(1);
    for (const auto& e : kDescrs)
      if (body == std::string(e.descr).substr(1))
        return e.dtype;
  }
  throw IoError(what + ": unsupported npy dtype '" + d +
                "' (rlx reads f2/f4/f8, i1/i4/i8, u1 and b1)");
}

std::uint32_t read_le(const std::byte* p, std::size_t n) {
  std::uint32_t v = 0;
  std::memcpy(&v, p, n);
  return v;
}

/// Where the header dict and the data of an npy image lie.
struct Prefix {
  std::int64_t header_start; ///< first byte of the header dict
  std::int64_t data_start;   ///< first byte of the data
};

/// Reads the fixed prefix of an npy image of \p total bytes.
Prefix read_prefix(std::span<const std::byte> bytes, const std::string& what) {
  const auto total = static_cast<std::int64_t>(bytes.size());
  if (total < 10)
    throw IoError(what + " is truncated: " + std::to_string(total) +
                  " bytes, shorter than an npy prefix");
  if (std::memcmp(bytes.data(), kMagic, kMagicLen) != 0)
    throw IoError(what + ": not an npy file (bad magic)");
  const auto major = static_cast<int>(bytes[6]);
  if (major < 1 || major > 3)
    throw IoError(what + ": unsupported npy format version " + std::to_string(major));
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  const std::int64_t header_start = 8 + static_cast<std::int64_t>(len_bytes);
  if (total < header_start)
    throw IoError(what + " is truncated inside the npy prefix");
  const std::int64_t hlen = read_le(bytes.data() + 8, len_bytes);
  if (hlen > total - header_start)
    throw IoError(what + " is truncated: header length " + std::to_string(hlen) + " but only " +
                  std::to_string(total - header_start) + " bytes follow");
  return {header_start, header_start + hlen};
}

ir::Tensor tensor_for(const NpyHeader& h, std::int64_t data_bytes, const std::string& what) {
  if (h.fortran_order)
    throw IoError(what + ": Fortran-order npy arrays are not supported (save with C order)");
  DType dt = parse_descr(h.descr, what);
  const auto elem = static_cast<std::int64_t>(ir::dtype_size(dt));
  auto numel = detail::checked_numel(h.shape, elem);
  if (!numel || *numel * elem != data_bytes)
    throw IoError(what + ": shape " + detail::dims_str(h.shape) + " " +
                  std::string(ir::dtype_name(dt)) + " needs " +
                  (numel ? std::to_string(*numel * elem) : std::string("more")) +
                  " data bytes but the file has " + std::to_string(data_bytes) +
                  (numel && *numel * elem > data_bytes ? " (truncated)" : ""));
  return ir::Tensor(ir::Shape::of(h.shape, dt));
}

ir::Tensor parse_image(std::span<const std::byte> bytes, const std::string& what) {
  const Prefix p = read_prefix(bytes, what);
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + p.header_start),
                        static_cast<std::size_t>(p.data_start - p.header_start));
  NpyHeader h = HeaderParser(text, what).parse();
  ir::Tensor t = tensor_for(h, static_cast<std::int64_t>(bytes.size()) - p.data_start, what);
  if (t.nbytes())
    std::memcpy(t.raw(), bytes.data() + p.data_start, t.nbytes());
  if (t.dtype() == DType::boolean)
    detail::check_bool_bytes(t, what);
  return t;
}

} // namespace

std::string npy_descr(DType t) {
  for (const auto& e : kDescrs)
    if (e.dtype == t)
      return e.descr;
  throw IoError("npy has no " + std::string(ir::dtype_name(t)) +
                " dtype; cast the tensor to f32 or use safetensors");
}

ir::Tensor parse_npy(std::span<const std::byte> bytes, const std::string& what) {
  return parse_image(bytes, what);
}

ir::Tensor read_npy(const std::filesystem::path& path) {
  detail::InputFile f(path);
  return parse_image(f.read_all(), "'" + f.name() + "'");
}

std::vector<std::byte> encode_npy(const ir::Tensor& t) {
  std::string dict = "{'descr': '" + npy_descr(t.dtype()) + "', 'fortran_order': False, 'shape': (";
  const auto sizes = t.shape().sizes();
  for (std::size_t i = 0; i < sizes.size(); ++i)
    dict += (i ? ", " : "") + std::to_string(sizes[i]);
  dict += sizes.size() == 1 ? ",), }" : "), }"; // a 1-tuple is written "(3,)"
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  std::size_t hlen = dict.size() + 1;
  hlen += (64 - (prefix + hlen) % 64) % 64;
  dict.append(hlen - dict.size() - 1, ' ');
  dict += '\n';
  std::vector<std::byte> out(prefix + hlen + t.nbytes());
  std::memcpy(out.data(), kMagic, kMagicLen);
  out[6] = std::byte{static_cast<unsigned char>(v2 ? 2 : 1)};
  out[7] = std::byte{0};
  const auto len = static_cast<std::uint32_t>(hlen);
  std::memcpy(out.data() + 8, &len, v2 ? 4 : 2);
  std::memcpy(out.data() + prefix, dict.data(), dict.size());
  if (t.nbytes())
    std::memcpy(out.data() + prefix + hlen, t.raw(), t.nbytes());
  return out;
}

void write_npy(const std::filesystem::path& path, const ir::Tensor& t) {
  detail::write_file(path, encode_npy(t));
}

} // namespace rlx::runtime
