// weights.cpp: HostPages and WeightRegion.
#include "rlx/compile/weights.hpp"

#include "rlx/ir/error.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <utility>

namespace rlx::compile {
namespace {

std::int64_t page_size() {
  static const std::int64_t size = ::sysconf(_SC_PAGESIZE) > 0 ? ::sysconf(_SC_PAGESIZE) : 4096;
  return size;
}

std::uintptr_t round_down(std::uintptr_t v, std::uintptr_t to) {
  return v / to * to;
}
std::uintptr_t round_up(std::uintptr_t v, std::uintptr_t to) {
  return (v + to - 1) / to * to;
}

} // namespace

// ---- HostPages --------------------------------------------------------------------------------

HostPages::HostPages(std::int64_t bytes) {
  if (bytes < 0)
    throw Error("HostPages: negative size " + std::to_string(bytes));
  const auto page = static_cast<std::uintptr_t>(page_size());
  const auto size = round_up(static_cast<std::uintptr_t>(std::max<std::int64_t>(bytes, 1)), page);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error("cannot reserve " + std::to_string(size) + " bytes of host memory");
  data_ = static_cast<std::byte*>(p);
  size_ = static_cast<std::int64_t>(size);
}

HostPages::~HostPages() {
  if (data_)
    ::munmap(data_, static_cast<std::size_t>(size_));
}

HostPages::HostPages(HostPages&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HostPages& HostPages::operator=(HostPages&& other) noexcept {
  if (this != &other) {
    if (data_)
      ::munmap(data_, static_cast<std::size_t>(size_));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void HostPages::discard() {
  if (data_)
    ::madvise(data_, static_cast<std::size_t>(size_), MADV_DONTNEED);
}

// ---- WeightRegion -----------------------------------------------------------------------------

WeightRegion::~WeightRegion() = default;

WeightRegion::Entry& WeightRegion::entry(const std::string& name, const char* who) {
  auto it = entries_.find(name);
  if (it == entries_.end())
    throw Error(std::string(who) + ": no weight named '" + name + "'");
  return it->second;
}

const WeightRegion::Entry& WeightRegion::entry(const std::string& name, const char* who) const {
  return const_cast<WeightRegion*>(this)->entry(name, who);
}

WeightRegion::Entry& WeightRegion::create(const std::string& name, const ir::Shape& shape,
                                          const char* who) {
  if (!shape.is_static())
    throw Error(std::string(who) + ": weight '" + name + "' needs a static type, got " +
                shape.str());
  auto [it, fresh] = entries_.try_emplace(name);
  if (!fresh && it->second.shape != shape)
    throw Error(std::string(who) + ": weight '" + name + "' is " + it->second.shape.str() +
                ", given " + shape.str());
  if (fresh)
    it->second.shape = shape;
  return it->second;
}

void WeightRegion::ensure_storage(Entry& e) {
  if (e.data || e.mapped)
    return;
  e.owned = HostPages(e.shape.bytes());
  e.data = e.owned.data();
}

void WeightRegion::make_writable(Entry& e) {
  if (!e.mapped || e.mapped_writable || e.shape.bytes() == 0)
    return;
  const auto page = static_cast<std::uintptr_t>(page_size());
  const auto begin = round_down(reinterpret_cast<std::uintptr_t>(e.data), page);
  const auto end = round_up(reinterpret_cast<std::uintptr_t>(e.data) +
                                static_cast<std::uintptr_t>(e.shape.bytes()),
                            page);
  // A private mapping: the pages become copies of their own on the first write; the file is
  // never modified.
  if (::mprotect(reinterpret_cast<void*>(begin), end - begin, PROT_READ | PROT_WRITE) != 0)
    throw Error("cannot make the mapped weight writable");
  e.mapped_writable = true;
}

void WeightRegion::make_current(Entry& e, const std::string& name) {
  ensure_storage(e);
  if (e.valid || !e.set) {
    // A weight never set is zero: its own pages read as zero again once given back.
    e.valid = true;
    e.held = true;
    return;
  }
  for (const auto& use : e.derived)
    if (use.copy->restore) {
      make_writable(e);
      use.copy->restore(e.data);
      e.valid = true;
      e.held = true;
      return;
    }
  throw Error("weight '" + name + "': its plain bytes were dropped and no copy can restore them");
}

void WeightRegion::drop(Entry& e) {
  if (!e.held || e.shape.bytes() == 0)
    return;
  if (!e.mapped) {
    e.owned.discard();
    e.valid = false;
  } else {
    // Give back the pages lying wholly inside the tensor (its neighbours keep theirs). Unwritten
    // pages of a private file mapping read back from the file; written ones would not.
    const auto page = static_cast<std::uintptr_t>(page_size());
    const auto begin = round_up(reinterpret_cast<std::uintptr_t>(e.data), page);
    const auto end = round_down(reinterpret_cast<std::uintptr_t>(e.data) +
                                    static_cast<std::uintptr_t>(e.shape.bytes()),
                                page);
    if (end > begin)
      ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    if (e.mapped_writable)
      e.valid = false;
  }
  e.held = false;
}

bool WeightRegion::contains(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return entries_.count(name) > 0;
}

bool WeightRegion::is_set(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  return it != entries_.end() && it->second.set;
}

ir::Shape WeightRegion::shape(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return entry(name, "WeightRegion::shape").shape;
}

std::vector<std::string> WeightRegion::names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_)
    out.push_back(name);
  return out;
}

void WeightRegion::write(const std::string& name, const ir::Tensor& value) {
  if (value.empty() && value.numel() != 0)
    throw Error("write: weight '" + name + "' given an empty tensor");
  std::unique_lock use(use_);
  std::lock_guard lock(mutex_);
  Entry& e = create(name, value.shape(), "write");
  bool restorable = false;
  for (const auto& u : e.derived)
    restorable = restorable || static_cast<bool>(u.copy->restore);
  if (e.plain_readers.empty() && restorable) {
    // Only derived copies are read: update them from the value and leave the plain bytes dropped.
    for (const auto& u : e.derived)
      u.copy->refresh(value.raw());
    drop(e);
    e.valid = false;
  } else {
    ensure_storage(e);
    make_writable(e);
    if (value.nbytes() > 0)
      std::memcpy(e.data, value.raw(), value.nbytes());
    e.valid = true;
    e.held = true;
    for (const auto& u : e.derived)
      u.copy->refresh(e.data);
  }
  e.set = true;
}

bool WeightRegion::adopt(const std::string& name, const ir::Shape& shape, const std::byte* data,
                         std::shared_ptr<const void> keep) {
  std::unique_lock use(use_);
  std::lock_guard lock(mutex_);
  Entry& e = create(name, shape, "adopt");
  if (e.data || e.mapped)
    return false;
  e.data = const_cast<std::byte*>(data);
  e.keep = std::move(keep);
  e.mapped = true;
  e.set = e.valid = e.held = true;
  return true;
}

ir::Tensor WeightRegion::read(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const Entry& e = entry(name, "read");
  if (!e.set)
    throw Error("read: weight '" + name + "' was never set");
  ir::Tensor t(e.shape);
  if (t.nbytes() == 0)
    return t;
  if (e.valid) {
    std::memcpy(t.raw(), e.data, t.nbytes());
    return t;
  }
  for (const auto& use : e.derived)
    if (use.copy->restore) {
      use.copy->restore(t.raw());
      return t;
    }
  throw Error("read: weight '" + name + "' has no current copy");
}

std::byte* WeightRegion::storage(const std::string& name, const ir::Shape& shape) {
  std::lock_guard lock(mutex_);
  Entry& e = create(name, shape, "bind");
  ensure_storage(e);
  return e.data;
}

std::byte* WeightRegion::storage_for_update(const std::string& name, const ir::Shape& shape) {
  std::lock_guard lock(mutex_);
  Entry& e = create(name, shape, "bind for update");
  ensure_storage(e);
  make_writable(e);
  return e.data;
}

void WeightRegion::updated_in_place(const std::string& name) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(name, "updated_in_place");
  e.valid = true;
  e.held = true;
  for (const auto& u : e.derived)
    u.copy->refresh(e.data);
}

void WeightRegion::add_plain_reader(const std::string& name, const void* reader) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(name, "add_plain_reader");
  make_current(e, name);
  e.plain_readers.insert(reader);
}

std::vector<std::shared_ptr<WeightRegion::Derived>>
WeightRegion::derived(const std::string& name) const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Derived>> out;
  auto it = entries_.find(name);
  if (it != entries_.end())
    for (const auto& u : it->second.derived)
      out.push_back(u.copy);
  return out;
}

void WeightRegion::add_derived(const std::string& name, std::shared_ptr<Derived> d,
                               const void* reader) {
  std::lock_guard lock(mutex_);
  Entry& e = entry(name, "add_derived");
  make_current(e, name);
  // A weight never set has no value to prepare yet: its copy is filled when it is written (a
  // model compiled before its weights are loaded prepares each copy once, not twice).
  if (e.set)
    d->refresh(e.data);
  const bool restorable = static_cast<bool>(d->restore);
  e.derived.push_back({std::move(d), {reader}});
  // Give the plain bytes back at once while nothing reads them plainly, so that packing a model
  // never holds two full copies; a plain reader registered later gets them restored.
  if (restorable && e.plain_readers.empty())
    drop(e);
}

void WeightRegion::use_derived(const std::string& name, const std::shared_ptr<Derived>& d,
                               const void* reader) {
  std::lock_guard lock(mutex_);
  for (auto& u : entry(name, "use_derived").derived)
    if (u.copy == d) {
      u.readers.insert(reader);
      return;
    }
  throw Error("use_derived: weight '" + name + "' has no such derived copy");
}

void WeightRegion::release(const void* reader) {
  std::lock_guard lock(mutex_);
  for (auto& [name, e] : entries_) {
    e.plain_readers.erase(reader);
    for (auto& u : e.derived)
      u.readers.erase(reader);
    // Free copies nobody reads, keeping one when the plain bytes are not current.
    for (std::size_t i = 0; i < e.derived.size();) {
      bool last_copy = !e.valid && e.derived.size() == 1;
      if (e.derived[i].readers.empty() && !last_copy)
        e.derived.erase(e.derived.begin() + static_cast<std::ptrdiff_t>(i));
      else
        ++i;
    }
  }
}

void WeightRegion::drop_unread() {
  std::lock_guard lock(mutex_);
  for (auto& [name, e] : entries_) {
    if (!e.plain_readers.empty() || !e.held)
      continue;
    bool restorable = false;
    for (const auto& u : e.derived)
      restorable = restorable || static_cast<bool>(u.copy->restore);
    if (restorable)
      drop(e);
  }
}

std::int64_t WeightRegion::plain_bytes() const {
  std::lock_guard lock(mutex_);
  std::int64_t n = 0;
  for (const auto& [name, e] : entries_)
    if (e.held && (e.data || e.mapped))
      n += e.shape.bytes();
  return n;
}

std::int64_t WeightRegion::derived_bytes() const {
  std::lock_guard lock(mutex_);
  std::int64_t n = 0;
  for (const auto& [name, e] : entries_)
    for (const auto& u : e.derived)
      n += u.copy->bytes;
  return n;
}

bool WeightRegion::plain_held(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return entry(name, "plain_held").held;
}

bool WeightRegion::mapped(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return entry(name, "mapped").mapped;
}

} // namespace rlx::compile
