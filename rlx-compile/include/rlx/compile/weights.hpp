// weights.hpp: WeightRegion, a model's weights held once in host memory, bound by name and read in
// place by every executable of the model (every shape variant, every thread), plus the backends'
// derived copies of them (e.g. GEMM weights repacked into a library's preferred layout).
//
// A weight's plain bytes live at one address for the region's lifetime: either pages of its own
// (anonymous memory, zero until written) or a view into a memory-mapped file (private and
// read-only until written, when the touched pages are copied on write). Kernels are compiled
// against that address, so a weight is updated in place and every executable sees the update.
// A backend that reads a weight only through a derived copy (oneDNN's packed layout) registers
// the copy instead of a plain reader; when no executable reads the plain bytes, drop_unread()
// gives their pages back to the OS, and a later plain reader gets them restored from the copy.
#pragma once

#include "rlx/ir/shape.hpp"
#include "rlx/ir/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

namespace rlx::compile {

/// Anonymous, page-aligned host memory: zero-filled, and committed only where it is touched (an
/// untouched page costs no resident memory). Move-only.
class HostPages {
public:
  HostPages() = default;
  /// Reserves \p bytes (rounded up to whole pages; at least one page). Throws Error when the
  /// system refuses.
  explicit HostPages(std::int64_t bytes);
  ~HostPages();
  HostPages(HostPages&& other) noexcept;
  HostPages& operator=(HostPages&& other) noexcept;
  HostPages(const HostPages&) = delete;
  HostPages& operator=(const HostPages&) = delete;

  /// The first byte (page-aligned), or null when empty.
  std::byte* data() const { return data_; }
  /// The reserved size in bytes (whole pages).
  std::int64_t size() const { return size_; }
  /// Gives every page back to the OS; they read as zero afterwards.
  void discard();

private:
  std::byte* data_ = nullptr;
  std::int64_t size_ = 0;
};

/// The weights of one model, held once and shared by every executable compiled against them.
///
/// Thread safety: every member may be called from any thread. Executables hold use_mutex() shared
/// while they run; write() takes it exclusively, so a weight never changes under a running kernel.
class WeightRegion {
public:
  /// A backend's copy of a weight in a layout of its own, read by kernels instead of the plain
  /// bytes (e.g. oneDNN's packed GEMM weights). Shared by every executable that reads the weight
  /// in that layout.
  struct Derived {
    std::string kind;            ///< the backend and layout family ("onednn-packed")
    std::shared_ptr<void> state; ///< the backend's object holding the copy
    std::int64_t bytes = 0;      ///< memory the copy holds
    /// Recomputes the copy from the weight's plain row-major bytes.
    std::function<void(const std::byte* plain)> refresh;
    /// Writes the weight's plain row-major bytes from the copy (used to restore plain bytes that
    /// were dropped). A copy without it never lets the plain bytes be dropped.
    std::function<void(std::byte* plain)> restore;
  };

  WeightRegion() = default;
  ~WeightRegion();
  WeightRegion(const WeightRegion&) = delete;
  WeightRegion& operator=(const WeightRegion&) = delete;

  // ---- values (the runtime's side) ----------------------------------------------------------

  /// Whether weight \p name exists (was written, adopted or bound by an executable).
  bool contains(const std::string& name) const;
  /// Whether weight \p name holds a value (written or adopted).
  bool is_set(const std::string& name) const;
  /// The weight's static type; throws Error when it does not exist.
  ir::Shape shape(const std::string& name) const;
  /// Names of every weight, in name order.
  std::vector<std::string> names() const;

  /// Sets weight \p name to a copy of \p value (creating it with value's type when new; an
  /// existing weight must have the same type, else Error). Refreshes every derived copy. While no
  /// executable reads the plain bytes and a derived copy can restore them, only the derived
  /// copies are written. Waits for running executables (takes use_mutex() exclusively).
  void write(const std::string& name, const ir::Tensor& value);
  /// Lets weight \p name read its plain bytes in place at \p data (\p shape.bytes() bytes aligned
  /// for its dtype, in a private read-only file mapping kept alive by \p keep). \returns false,
  /// changing nothing, when the weight already has storage (an executable was compiled against
  /// it): the caller then write()s the value instead.
  bool adopt(const std::string& name, const ir::Shape& shape, const std::byte* data,
             std::shared_ptr<const void> keep);
  /// A copy of weight \p name's current value (restored from a derived copy when the plain bytes
  /// were dropped); throws Error when it is not set.
  ir::Tensor read(const std::string& name) const;

  // ---- storage (the backends' side) ---------------------------------------------------------

  /// The stable address of weight \p name's plain bytes, creating the weight (zero, not set) with
  /// type \p shape when new; throws Error when it exists with another type. The bytes are not
  /// guaranteed current: call add_plain_reader() before kernels read them.
  std::byte* storage(const std::string& name, const ir::Shape& shape);
  /// storage(), made writable (a mapped weight's pages become private copies), for an executable
  /// whose kernels update the weight in place (ir::Graph::aliases). The updater must also be a
  /// plain reader (add_plain_reader) so the bytes are never dropped.
  std::byte* storage_for_update(const std::string& name, const ir::Shape& shape);
  /// Tells the region that kernels rewrote weight \p name's plain bytes in place: every derived
  /// copy is refreshed from them. Called by the updating executable after each run, while it holds
  /// use_mutex() shared.
  void updated_in_place(const std::string& name);
  /// Registers \p reader (an executable) as reading weight \p name's plain bytes, restoring them
  /// first when they were dropped.
  void add_plain_reader(const std::string& name, const void* reader);
  /// The derived copies of weight \p name.
  std::vector<std::shared_ptr<Derived>> derived(const std::string& name) const;
  /// Adds derived copy \p d of weight \p name and fills it from the current plain bytes (restored
  /// first when dropped); a weight never set is not filled now but when it is written, so a model
  /// compiled before its weights are loaded prepares each copy once. \p reader reads it (see
  /// use_derived()). While no executable reads the plain bytes and \p d can restore them, they
  /// are dropped at once.
  void add_derived(const std::string& name, std::shared_ptr<Derived> d, const void* reader);
  /// Registers \p reader as reading derived copy \p d of weight \p name.
  void use_derived(const std::string& name, const std::shared_ptr<Derived>& d, const void* reader);
  /// Forgets \p reader (an executable going away). Derived copies nobody reads are freed, unless
  /// one is the weight's only current copy.
  void release(const void* reader);
  /// Drops the plain bytes of every weight no executable reads plainly and that a derived copy can
  /// restore: their pages go back to the OS (a file mapping's pages are re-read from the file).
  void drop_unread();

  // ---- memory ------------------------------------------------------------------------------

  /// Bytes of plain weight values currently held (not dropped), whether owned or mapped.
  std::int64_t plain_bytes() const;
  /// Bytes held by derived copies.
  std::int64_t derived_bytes() const;
  /// Whether weight \p name's plain bytes are held (false once drop_unread() dropped them).
  bool plain_held(const std::string& name) const;
  /// Whether weight \p name's plain bytes lie in a file mapping (adopt()).
  bool mapped(const std::string& name) const;

  /// Held shared by an executable while it runs and exclusively by write().
  std::shared_mutex& use_mutex() const { return use_; }

private:
  struct Entry {
    ir::Shape shape;
    HostPages owned;                  ///< the bytes when the weight owns them
    std::byte* data = nullptr;        ///< the plain bytes (owned.data() or in a mapping)
    std::shared_ptr<const void> keep; ///< keeps a mapping alive
    bool mapped = false;              ///< data lies in a file mapping
    bool mapped_writable = false;     ///< the mapping's pages were made writable (copy on write)
    bool set = false;                 ///< holds a value
    bool valid = true;                ///< the plain bytes are the current value
    bool held = true;                 ///< the plain bytes' pages are held (not dropped)
    std::set<const void*> plain_readers;
    struct Use {
      std::shared_ptr<Derived> copy;
      std::set<const void*> readers;
    };
    std::vector<Use> derived;
  };
  Entry& entry(const std::string& name, const char* who);
  const Entry& entry(const std::string& name, const char* who) const;
  Entry& create(const std::string& name, const ir::Shape& shape, const char* who);
  void ensure_storage(Entry& e);
  void make_current(Entry& e, const std::string& name);
  void make_writable(Entry& e);
  void drop(Entry& e);

  mutable std::mutex mutex_;
  mutable std::shared_mutex use_;
  std::map<std::string, Entry> entries_;
};

} // namespace rlx::compile
