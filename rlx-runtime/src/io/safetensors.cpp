// safetensors.cpp: the safetensors reader (validating every header before allocating) and writer.
#include "rlx/runtime/safetensors.hpp"

#include "byte_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

namespace rlx::runtime {
namespace {

using ir::DType;
using nlohmann::json;

/// Headers larger than this are rejected as corrupt (the reference implementation's limit).
constexpr std::int64_t kMaxHeaderBytes = 100 << 20;

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypes[] = {
    {DType::f32, "F32"},   {DType::f64, "F64"}, {DType::f16, "F16"},
    {DType::bf16, "BF16"}, {DType::i8, "I8"},   {DType::i32, "I32"},
    {DType::i64, "I64"},   {DType::u8, "U8"},   {DType::boolean, "BOOL"},
};
/// Dtypes the format defines that rlx has no element type for.
constexpr const char* kForeignDTypes[] = {"I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2"};

DType parse_dtype_name(const std::string& s, const std::string& where) {
  for (const auto& d : kDTypes)
    if (s == d.name)
      return d.dtype;
  for (const char* f : kForeignDTypes)
    if (s == f)
      throw IoError(where + ": dtype " + s + " is not supported by rlx");
  throw IoError(where + ": unknown dtype \"" + s + "\"");
}

std::uint64_t read_u64_le(const std::byte* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, 8);
  return v;
}

/// Parses and validates a header against a data section of \p data_size bytes. Entries come back
/// sorted by name.
std::vector<SafetensorsEntry> parse_header(std::string_view text, std::int64_t data_size,
                                           const std::string& what,
                                           std::map<std::string, std::string>* metadata) {
  // The callback rejects duplicate tensor names, which a JSON object would silently collapse.
  std::set<std::string> seen;
  std::string duplicate;
  json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && parsed.is_string() &&
        !seen.insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json h = json::parse(text.begin(), text.end(), on_event, /*allow_exceptions=*/false);
  if (h.is_discarded())
    throw IoError(what + ": header is not valid JSON");
  if (!duplicate.empty())
    throw IoError(what + ": tensor '" + duplicate + "' appears twice in the header");
  if (!h.is_object())
    throw IoError(what + ": header is not a JSON object");
  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, v] : h.items()) {
    const std::string where = what + ": tensor '" + name + "'";
    if (name == "__metadata__") {
      if (!v.is_object())
        throw IoError(what + ": __metadata__ is not an object of strings");
      for (const auto& [k, mv] : v.items()) {
        if (!mv.is_string())
          throw IoError(what + ": __metadata__ entry '" + k + "' is not a string");
        if (metadata)
          (*metadata)[k] = mv.get<std::string>();
      }
      continue;
    }
    if (!v.is_object())
      throw IoError(where + ": entry is not an object");
    for (const auto& [k, unused] : v.items()) {
      (void)unused;
      if (k != "dtype" && k != "shape" && k != "data_offsets")
        throw IoError(where + ": unexpected key \"" + k + "\"");
    }
    if (!v.contains("dtype") || !v["dtype"].is_string())
      throw IoError(where + ": missing or non-string \"dtype\"");
    if (!v.contains("shape") || !v["shape"].is_array())
      throw IoError(where + ": missing or non-array \"shape\"");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2)
      throw IoError(where + ": \"data_offsets\" must be an array [begin, end]");
    DType dt = parse_dtype_name(v["dtype"].get<std::string>(), where);
    std::vector<std::int64_t> dims;
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned())
        throw IoError(where + ": shape holds " + d.dump() + " (dims are non-negative integers)");
      auto u = d.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX))
        throw IoError(where + ": dim " + std::to_string(u) + " is too large");
      dims.push_back(static_cast<std::int64_t>(u));
    }
    std::int64_t off[2];
    for (int i = 0; i < 2; ++i) {
      const auto& o = v["data_offsets"][static_cast<std::size_t>(i)];
      if (!o.is_number_unsigned() || o.get<std::uint64_t>() > static_cast<std::uint64_t>(data_size))
        throw IoError(where + ": data_offsets " + v["data_offsets"].dump() +
                      " lie outside the data section of " + std::to_string(data_size) + " bytes");
      off[i] = static_cast<std::int64_t>(o.get<std::uint64_t>());
    }
    if (off[1] < off[0])
      throw IoError(where + ": data_offsets " + v["data_offsets"].dump() +
                    " end before they begin");
    const auto elem = static_cast<std::int64_t>(ir::dtype_size(dt));
    auto numel = detail::checked_numel(dims, elem);
    if (!numel || *numel * elem != off[1] - off[0])
      throw IoError(where + ": shape " + detail::dims_str(dims) + " " +
                    std::string(ir::dtype_name(dt)) + " needs " +
                    (numel ? std::to_string(*numel * elem) : std::string("more")) +
                    " bytes but data_offsets span " + std::to_string(off[1] - off[0]));
    std::vector<ir::Dim> sd(dims.begin(), dims.end());
    entries.push_back({name, ir::Shape(std::move(sd), dt), off[0], off[1]});
  }
  // Tensors must tile the data section: no overlap, no hole.
  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& e : entries)
    by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::int64_t pos = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const auto* e : by_offset) {
    if (e->begin < pos)
      throw IoError(what + ": tensors '" + prev->name + "' and '" + e->name + "' overlap");
    if (e->begin > pos)
      throw IoError(what + ": bytes [" + std::to_string(pos) + ", " + std::to_string(e->begin) +
                    ") of the data section belong to no tensor");
    pos = e->end;
    prev = e;
  }
  if (pos != data_size)
    throw IoError(what + ": bytes [" + std::to_string(pos) + ", " + std::to_string(data_size) +
                  ") of the data section belong to no tensor");
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return entries;
}

/// The header length word, checked against the total size.
std::int64_t header_length(const std::byte* first8, std::int64_t total, const std::string& what) {
  if (total < 8)
    throw IoError(what + " is truncated: " + std::to_string(total) +
                  " bytes, shorter than the 8-byte header length");
  std::uint64_t n = read_u64_le(first8);
  if (n > static_cast<std::uint64_t>(kMaxHeaderBytes))
    throw IoError(what + ": header length " + std::to_string(n) +
                  " is implausible (corrupt file or not safetensors)");
  if (static_cast<std::int64_t>(n) > total - 8)
    throw IoError(what + " is truncated: header length " + std::to_string(n) + " but only " +
                  std::to_string(total - 8) + " bytes follow");
  if (n < 2)
    throw IoError(what + ": header of " + std::to_string(n) + " bytes is too short to be JSON");
  return static_cast<std::int64_t>(n);
}

ir::Tensor make_tensor(const SafetensorsEntry& e, const std::byte* src, const std::string& what) {
  ir::Tensor t(e.shape);
  if (t.nbytes())
    std::memcpy(t.raw(), src, t.nbytes());
  if (t.dtype() == DType::boolean)
    detail::check_bool_bytes(t, what + ": tensor '" + e.name + "'");
  return t;
}

} // namespace

std::string safetensors_dtype_name(DType t) {
  for (const auto& d : kDTypes)
    if (d.dtype == t)
      return d.name;
  throw IoError("safetensors: no dtype name for " + std::string(ir::dtype_name(t)));
}

/// A whole file mapped private and read-only; unmapped when the last view goes.
struct FileMapping {
  void* base = MAP_FAILED;
  std::size_t size = 0;
  ~FileMapping() {
    if (base != MAP_FAILED)
      ::munmap(base, size);
  }
};

std::shared_ptr<const FileMapping> map_file(const std::string& path, std::int64_t size,
                                            const std::string& what) {
  auto m = std::make_shared<FileMapping>();
  if (size <= 0)
    return m;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw IoError(what + ": cannot open for mapping: " + std::strerror(errno));
  m->size = static_cast<std::size_t>(size);
  m->base = ::mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (m->base == MAP_FAILED)
    throw IoError(what + ": cannot map the file: " + std::strerror(err));
  return m;
}

struct SafetensorsReader::Impl {
  detail::InputFile file;
  std::string what;
  std::string path;
  std::shared_ptr<const FileMapping> mapping; ///< made by the first map()
  std::int64_t data_start = 0;
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;

  explicit Impl(const std::filesystem::path& p)
      : file(p), what("'" + file.name() + "'"), path(p.string()) {
    std::byte len[8] = {};
    if (file.size() >= 8)
      file.read(0, len, 8);
    const std::int64_t n = header_length(len, file.size(), what);
    std::string header(static_cast<std::size_t>(n), '\0');
    file.read(8, reinterpret_cast<std::byte*>(header.data()), n);
    data_start = 8 + n;
    entries = parse_header(header, file.size() - data_start, what, &metadata);
  }
};

SafetensorsReader::SafetensorsReader(const std::filesystem::path& path)
    : impl_(std::make_unique<Impl>(path)) {}
SafetensorsReader::~SafetensorsReader() = default;
SafetensorsReader::SafetensorsReader(SafetensorsReader&&) noexcept = default;
SafetensorsReader& SafetensorsReader::operator=(SafetensorsReader&&) noexcept = default;

const std::vector<SafetensorsEntry>& SafetensorsReader::entries() const {
  return impl_->entries;
}

const SafetensorsEntry* SafetensorsReader::find(const std::string& name) const {
  auto it =
      std::lower_bound(impl_->entries.begin(), impl_->entries.end(), name,
                       [](const SafetensorsEntry& e, const std::string& n) { return e.name < n; });
  return it != impl_->entries.end() && it->name == name ? &*it : nullptr;
}

const std::map<std::string, std::string>& SafetensorsReader::metadata() const {
  return impl_->metadata;
}

const std::string& SafetensorsReader::path() const {
  return impl_->file.name();
}

ir::Tensor SafetensorsReader::read(const std::string& name) {
  const SafetensorsEntry* e = find(name);
  if (!e)
    throw IoError(impl_->what + " has no tensor '" + name + "'");
  ir::Tensor t(e->shape);
  impl_->file.read(impl_->data_start + e->begin, t.raw(), e->end - e->begin);
  if (t.dtype() == DType::boolean)
    detail::check_bool_bytes(t, impl_->what + ": tensor '" + name + "'");
  return t;
}

std::optional<MappedTensor> SafetensorsReader::map(const std::string& name) {
  const SafetensorsEntry* e = find(name);
  if (!e)
    throw IoError(impl_->what + " has no tensor '" + name + "'");
  const std::int64_t at = impl_->data_start + e->begin;
  if (at % static_cast<std::int64_t>(ir::dtype_size(e->shape.dtype)) != 0)
    return std::nullopt; // misaligned for its dtype: read() copies it
  if (!impl_->mapping)
    impl_->mapping = map_file(impl_->path, impl_->file.size(), impl_->what);
  MappedTensor t;
  t.shape = e->shape;
  t.mapping = impl_->mapping;
  if (e->end > e->begin)
    t.data = static_cast<const std::byte*>(impl_->mapping->base) + at;
  if (t.shape.dtype == DType::boolean)
    for (std::int64_t i = 0; i < e->end - e->begin; ++i)
      if (static_cast<unsigned char>(t.data[i]) > 1)
        throw IoError(impl_->what + ": tensor '" + name + "': bool element " + std::to_string(i) +
                      " holds byte " + std::to_string(static_cast<unsigned char>(t.data[i])) +
                      " (expected 0 or 1)");
  return t;
}

SafetensorsFile read_safetensors(const std::filesystem::path& path) {
  SafetensorsReader r(path);
  SafetensorsFile out;
  out.metadata = r.metadata();
  for (const auto& e : r.entries())
    out.tensors.emplace(e.name, r.read(e.name));
  return out;
}

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::string& what) {
  const auto total = static_cast<std::int64_t>(bytes.size());
  std::int64_t n = header_length(bytes.data(), total, what);
  std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8),
                          static_cast<std::size_t>(n));
  SafetensorsFile out;
  const std::byte* data = bytes.data() + 8 + n;
  for (const auto& e : parse_header(header, total - 8 - n, what, &out.metadata))
    out.tensors.emplace(e.name, make_tensor(e, data + e.begin, what));
  return out;
}

std::vector<std::byte> encode_safetensors(const TensorMap& tensors,
                                          const std::map<std::string, std::string>& metadata) {
  json h = json::object();
  if (!metadata.empty())
    h["__metadata__"] = metadata;
  std::int64_t pos = 0;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__")
      throw IoError("safetensors: a tensor may not be named __metadata__");
    if (t.empty() && t.numel() != 0)
      throw IoError("safetensors: tensor '" + name + "' has no data");
    auto n = static_cast<std::int64_t>(t.nbytes());
    h[name] = {{"dtype", safetensors_dtype_name(t.dtype())},
               {"shape", t.shape().sizes()},
               {"data_offsets", {pos, pos + n}}};
    pos += n;
  }
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');
  std::vector<std::byte> out(8 + header.size() + static_cast<std::size_t>(pos));
  const std::uint64_t len = header.size();
  std::memcpy(out.data(), &len, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  std::byte* dst = out.data() + 8 + header.size();
  for (const auto& [name, t] : tensors) {
    if (t.nbytes())
      std::memcpy(dst, t.raw(), t.nbytes());
    dst += t.nbytes();
  }
  return out;
}

void write_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata) {
  detail::write_file(path, encode_safetensors(tensors, metadata));
}

} // namespace rlx::runtime
