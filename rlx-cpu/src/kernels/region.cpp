// region.cpp: the ElementwiseRegion kernel, one generated loop for a fused chain of elementwise
// ops.
//
// At compile time the region's body is turned into a flat program: one instruction per body op,
// each reading and writing tile registers (float[kTile] in the node's per-thread scratch). At run
// time the iteration space (the body outputs' dims, row-major) is cut into tiles; each tile loads
// the operands that are broadcast (or bool) into registers, runs every instruction as a vectorised
// loop over the tile, and stores the results. Contiguous f32 operands are read in place and f32
// results are written in place, so each operand is read once and each result written once, with no
// intermediate round trip through memory. Values are computed in f32; bool values (Compare, a
// Cast to bool, bool operands) are carried as 0 / 1 floats and stored as bytes.
#include "../binary_math.hpp"
#include "../broadcast.hpp"
#include "../lower.hpp"
#include "../simd.hpp"
#include "../unary_math.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace rlx::cpu {
namespace {

using ir::DType;
using ir::NodeId;
using ir::OpKind;

/// Elements per tile: 2 KiB per register, so a program's registers stay in L1 / L2.
constexpr std::int64_t kTile = 512;

/// One body op over a tile: dst[i] = op(a[i], b[i], c[i]).
struct Instr {
  OpKind op;
  ir::CmpOp cmp = ir::CmpOp::eq; ///< Compare's predicate
  bool to_bool = false;          ///< Cast to bool (tests != 0); other casts are copies
  int dst = -1;                  ///< value written
  int a = -1, b = -1, c = -1;    ///< values read (-1 = none)
};

/// A value read from memory at the start of each tile (a broadcast or non-f32 operand, or a body
/// constant): gathered through its broadcast plan into the value's register.
struct Load {
  int value;
  DType dtype;        ///< f32 or bool
  std::size_t source; ///< index into sources (operand) or constants
  bool constant;      ///< true: from the kernel's own copy of a body constant
  BroadcastPlan plan; ///< the source's element strides over the iteration space
  /// Every element reads the same source element (a scalar): gathered once per task into a
  /// register that no other value reuses.
  bool uniform = false;
};

/// A result stored at the end of each tile from its value's register.
struct Store {
  int value;
  std::size_t output; ///< body output index (tuple part)
  DType dtype;        ///< f32 or bool
};

/// Where a value lives during a tile.
struct Home {
  enum Kind : std::uint8_t { reg, operand, output } kind = reg;
  int index = -1; ///< register, operand or output index
};

/// The compiled body: instructions, homes of values, loads and stores, register count.
struct Program {
  std::vector<std::int64_t> dims; ///< the iteration space
  std::int64_t numel = 1;
  std::vector<Instr> code;
  std::vector<Home> homes; ///< per value (body node id)
  std::vector<Load> loads;
  std::vector<Store> stores;
  std::vector<std::vector<float>> constants; ///< body constants, converted to f32
  int registers = 0;
};

bool region_dtype(DType t) {
  return t == DType::f32 || t == DType::boolean;
}

/// Why the loop cannot run \p body (empty when it can).
std::string unsupported(const ir::Graph& body) {
  for (NodeId id : body.ids()) {
    const ir::Node& n = body.node(id);
    if (!n.shape.is_static())
      return ir::describe(body, id) + " has symbolic dims";
    if (!region_dtype(n.shape.dtype))
      return ir::describe(body, id) + " is " + std::string(ir::dtype_name(n.shape.dtype));
    if (n.shape.rank() > 16)
      return ir::describe(body, id) + " has rank above 16";
  }
  return {};
}

Program compile_body(const ir::Graph& body) {
  Program p;
  const ir::Shape& first = body.shape(body.outputs()[0]);
  p.dims = first.sizes();
  p.numel = first.numel();
  p.homes.assign(body.size(), Home{});

  // Last reader of every value, in body order (outputs live to the end).
  std::vector<std::uint32_t> last_use(body.size(), 0);
  for (NodeId id : body.ids())
    for (NodeId in : body.node(id).inputs)
      last_use[in.v] = id.v;
  for (NodeId o : body.outputs())
    last_use[o.v] = static_cast<std::uint32_t>(body.size());

  // Results: an f32 output computed by an op is written in place (its first listing); bool
  // outputs and repeated listings are stored from a register.
  std::vector<int> direct_output(body.size(), -1);
  for (std::size_t i = 0; i < body.outputs().size(); ++i) {
    NodeId o = body.outputs()[i];
    if (body.shape(o).dtype == DType::f32 && direct_output[o.v] < 0)
      direct_output[o.v] = static_cast<int>(i);
    else
      p.stores.push_back({static_cast<int>(o.v), i, body.shape(o).dtype});
  }

  std::vector<int> free_regs;
  auto take_reg = [&] {
    if (!free_regs.empty()) {
      int r = free_regs.back();
      free_regs.pop_back();
      return r;
    }
    return p.registers++;
  };
  // Loads run at the start of every tile, before any instruction, so their registers are taken
  // first; each is freed after its last reader like any other value's, except a uniform load's.
  std::vector<bool> pinned(body.size(), false);
  std::size_t next_input = 0;
  for (NodeId id : body.ids()) {
    const ir::Node& n = body.node(id);
    if (n.op != OpKind::Input && n.op != OpKind::Constant)
      continue;
    const ir::Shape& s = n.shape;
    const bool constant = n.op == OpKind::Constant;
    const std::size_t source = constant ? p.constants.size() : next_input++;
    if (!constant && s.dtype == DType::f32 && s.numel() == p.numel) {
      p.homes[id.v] = {Home::operand, static_cast<int>(source)}; // read in place
      continue;
    }
    if (constant) {
      const ir::Tensor& t = n.attr<ir::ConstantAttrs>().value;
      std::vector<float> vals(static_cast<std::size_t>(t.numel()));
      for (std::int64_t i = 0; i < t.numel(); ++i)
        vals[static_cast<std::size_t>(i)] = static_cast<float>(t.get_f64(i));
      p.constants.push_back(std::move(vals));
    }
    std::vector<std::vector<std::int64_t>> ins{s.sizes()};
    Load l{static_cast<int>(id.v), constant ? DType::f32 : s.dtype, source, constant,
           plan_broadcast(p.dims, ins)};
    l.uniform = std::all_of(l.plan.strides[0].begin(), l.plan.strides[0].end(),
                            [](std::int64_t st) { return st == 0; });
    p.homes[id.v] = {Home::reg, take_reg()};
    if (l.uniform)
      pinned[id.v] = true; // filled once per task: its register is never reused
    p.loads.push_back(std::move(l));
  }
  for (NodeId id : body.ids()) {
    const ir::Node& n = body.node(id);
    if (n.op == OpKind::Input || n.op == OpKind::Constant)
      continue;
    Instr in{n.op};
    if (n.op == OpKind::Compare)
      in.cmp = n.attr<ir::CompareAttrs>().op;
    if (n.op == OpKind::Cast)
      in.to_bool = n.attr<ir::CastAttrs>().to == DType::boolean;
    int* slots[3] = {&in.a, &in.b, &in.c};
    for (std::size_t k = 0; k < n.inputs.size() && k < 3; ++k)
      *slots[k] = static_cast<int>(n.inputs[k].v);
    // Registers of operands read here for the last time are free for the result (an elementwise
    // instruction may write the register it reads).
    for (NodeId o : n.inputs)
      if (last_use[o.v] == id.v && p.homes[o.v].kind == Home::reg && !pinned[o.v] &&
          std::count(free_regs.begin(), free_regs.end(), p.homes[o.v].index) == 0)
        free_regs.push_back(p.homes[o.v].index);
    if (direct_output[id.v] >= 0)
      p.homes[id.v] = {Home::output, direct_output[id.v]};
    else
      p.homes[id.v] = {Home::reg, take_reg()};
    in.dst = static_cast<int>(id.v);
    p.code.push_back(in);
  }
  return p;
}

/// Clones of run_instr per ISA, picked at load time. They name ISA extensions rather than an
/// -march level (RLX_CPU_MULTIVERSION's "arch=x86-64-v3"): GCC never inlines a function compiled
/// for another arch, so the per-element math callables would stay out-of-line calls. The loops
/// over simd::exp / tanh / erf vectorise only with -fno-trapping-math (rlx-cpu's CMakeLists).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RLX_REGION_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RLX_REGION_MULTIVERSION
#endif

/// Runs one instruction over \p n elements, vectorised for the machine it runs on.
RLX_REGION_MULTIVERSION void run_instr(const Instr& in, float* y, const float* a, const float* b,
                                       const float* c, std::int64_t n) {
  switch (in.op) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Pow:
  case OpKind::Maximum:
  case OpKind::Minimum:
    with_binary<float>(in.op, [&](auto f) {
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i)
        y[i] = f(a[i], b[i]);
    });
    return;
  case OpKind::Compare: {
    auto cmp = [&](auto f) {
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i)
        y[i] = f(a[i], b[i]) ? 1.0f : 0.0f;
    };
    switch (in.cmp) {
    case ir::CmpOp::eq:
      return cmp([](float p, float q) { return p == q; });
    case ir::CmpOp::ne:
      return cmp([](float p, float q) { return p != q; });
    case ir::CmpOp::lt:
      return cmp([](float p, float q) { return p < q; });
    case ir::CmpOp::le:
      return cmp([](float p, float q) { return p <= q; });
    case ir::CmpOp::gt:
      return cmp([](float p, float q) { return p > q; });
    case ir::CmpOp::ge:
      return cmp([](float p, float q) { return p >= q; });
    }
    return;
  }
  case OpKind::Where:
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i)
      y[i] = a[i] != 0.0f ? b[i] : c[i];
    return;
  case OpKind::SwiGlu: // silu(gate) * up
    with_unary<float>(OpKind::Silu, [&](auto f) {
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i)
        y[i] = f(a[i]) * b[i];
    });
    return;
  case OpKind::Cast:
    if (in.to_bool) {
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i)
        y[i] = a[i] != 0.0f ? 1.0f : 0.0f; // NaN != 0: true, as the reference
      return;
    }
    [[fallthrough]];
  case OpKind::Expand: // every value spans the iteration space already: a copy
    if (y != a)
      std::memcpy(y, a, static_cast<std::size_t>(n) * sizeof(float));
    return;
  default:
    with_unary<float>(in.op, [&](auto f) {
#pragma omp simd
      for (std::int64_t i = 0; i < n; ++i)
        y[i] = f(a[i]);
    });
    return;
  }
}

/// The source element offset of flat index \p begin of the iteration space under \p plan; its
/// multi-index goes to \p idx (rank entries).
std::int64_t locate(const BroadcastPlan& plan, std::int64_t begin, std::int64_t* idx) {
  const auto& st = plan.strides[0];
  std::int64_t rest = begin, off = 0;
  for (std::size_t d = plan.dims.size(); d-- > 0;) {
    idx[d] = rest % plan.dims[d];
    rest /= plan.dims[d];
    off += idx[d] * st[d];
  }
  return off;
}

/// Gathers \p len elements of the iteration space from flat index \p begin: element i reads
/// \p src at the broadcast offset of begin + i under \p plan, converted to float.
template <class T>
void gather(const BroadcastPlan& plan, const T* src, std::int64_t begin, std::int64_t len,
            float* out) {
  const std::size_t rank = plan.dims.size();
  const auto& st = plan.strides[0];
  std::int64_t idx[16];
  std::int64_t off = locate(plan, begin, idx);
  const std::int64_t inner = plan.dims[rank - 1], s = st[rank - 1];
  std::int64_t i = 0;
  while (i < len) {
    const std::int64_t run = std::min(inner - idx[rank - 1], len - i);
    if (s == 0) {
      const float v = static_cast<float>(src[off]);
      std::fill(out + i, out + i + run, v);
    } else if (s == 1 && std::is_same_v<T, float>) {
      std::memcpy(out + i, src + off, static_cast<std::size_t>(run) * sizeof(float));
    } else {
      for (std::int64_t k = 0; k < run; ++k)
        out[i + k] = static_cast<float>(src[off + k * s]);
    }
    i += run;
    off += run * s;
    idx[rank - 1] += run;
    for (std::size_t d = rank - 1; idx[d] == plan.dims[d] && d > 0; --d) {
      off -= plan.dims[d] * st[d];
      idx[d] = 0;
      ++idx[d - 1];
      off += st[d - 1];
    }
  }
}

/// Bytes of one task's slot of the node's scratch: the registers, then a pointer per value.
std::int64_t slot_bytes(const Program& p) {
  const auto bytes = static_cast<std::int64_t>(p.registers) * kTile * sizeof(float) +
                     static_cast<std::int64_t>(p.homes.size() * sizeof(const float*));
  return (bytes + 63) / 64 * 64;
}

class RegionKernel final : public Kernel {
public:
  RegionKernel(Program p, std::vector<const std::byte*> operands, std::vector<std::byte*> outputs,
               std::byte* scratch)
      : p_(std::move(p)), operands_(std::move(operands)), outputs_(std::move(outputs)),
        scratch_(scratch), slot_(slot_bytes(p_)) {}

  void run(ExecContext& ctx) override {
    const std::int64_t tiles = (p_.numel + kTile - 1) / kTile;
    const auto work = static_cast<std::int64_t>(p_.code.size() + p_.loads.size() + 1) * kTile;
    parallel_for_slots(
        ctx, tiles, grain_for(work), [&](std::int64_t t0, std::int64_t t1, int slot) {
          std::byte* base = scratch_ + static_cast<std::ptrdiff_t>(slot) * slot_;
          auto* regs = reinterpret_cast<float*>(base);
          auto** ptr = reinterpret_cast<const float**>(
              base + static_cast<std::ptrdiff_t>(p_.registers) * kTile * sizeof(float));
          for (std::size_t v = 0; v < p_.homes.size(); ++v)
            ptr[v] = regs + static_cast<std::ptrdiff_t>(p_.homes[v].index) * kTile;
          for (const Load& l : p_.loads) // scalars: once per task
            if (l.uniform)
              load(l, regs, 0, std::min(kTile, p_.numel));
          for (std::int64_t t = t0; t < t1; ++t)
            tile(regs, ptr, t * kTile, std::min(kTile, p_.numel - t * kTile));
        });
  }

private:
  Program p_;
  std::vector<const std::byte*> operands_;
  std::vector<std::byte*> outputs_;
  std::byte* scratch_;
  std::int64_t slot_;

  float* reg(float* regs, int v) const {
    return regs + static_cast<std::ptrdiff_t>(p_.homes[static_cast<std::size_t>(v)].index) * kTile;
  }

  /// Gathers load \p l for the tile at \p begin into its register.
  void load(const Load& l, float* regs, std::int64_t begin, std::int64_t len) const {
    float* dst = reg(regs, l.value);
    if (l.constant)
      gather(l.plan, p_.constants[l.source].data(), begin, len, dst);
    else if (l.dtype == DType::f32)
      gather(l.plan, reinterpret_cast<const float*>(operands_[l.source]), begin, len, dst);
    else
      gather(l.plan, reinterpret_cast<const std::uint8_t*>(operands_[l.source]), begin, len, dst);
  }

  /// Where load \p l's tile at \p begin can be read in place (an f32 source whose elements for
  /// the whole tile are contiguous, as a [C] row under a [N, C] region when the tile stays in one
  /// row), or nullptr.
  const float* in_place(const Load& l, std::int64_t begin, std::int64_t len) const {
    if (l.dtype != DType::f32 || l.plan.strides[0].back() != 1)
      return nullptr;
    std::int64_t idx[16];
    const std::int64_t off = locate(l.plan, begin, idx);
    if (l.plan.dims.back() - idx[l.plan.dims.size() - 1] < len)
      return nullptr;
    const float* src = l.constant ? p_.constants[l.source].data()
                                  : reinterpret_cast<const float*>(operands_[l.source]);
    return src + off;
  }

  void tile(float* regs, const float** ptr, std::int64_t begin, std::int64_t len) const {
    for (std::size_t v = 0; v < p_.homes.size(); ++v) {
      const Home& h = p_.homes[v];
      if (h.kind == Home::operand)
        ptr[v] =
            reinterpret_cast<const float*>(operands_[static_cast<std::size_t>(h.index)]) + begin;
      else if (h.kind == Home::output)
        ptr[v] =
            reinterpret_cast<const float*>(outputs_[static_cast<std::size_t>(h.index)]) + begin;
    }
    for (const Load& l : p_.loads) {
      if (l.uniform)
        continue;
      const auto v = static_cast<std::size_t>(l.value);
      if (const float* direct = in_place(l, begin, len)) {
        ptr[v] = direct;
      } else {
        ptr[v] = reg(regs, l.value);
        load(l, regs, begin, len);
      }
    }
    auto at = [&](int v) { return v >= 0 ? ptr[static_cast<std::size_t>(v)] : nullptr; };
    for (const Instr& in : p_.code)
      run_instr(in, const_cast<float*>(at(in.dst)), at(in.a), at(in.b), at(in.c), len);
    for (const Store& s : p_.stores) {
      const float* v = at(s.value);
      if (s.dtype == DType::f32) {
        std::memcpy(reinterpret_cast<float*>(outputs_[s.output]) + begin, v,
                    static_cast<std::size_t>(len) * sizeof(float));
      } else {
        auto* o = reinterpret_cast<std::uint8_t*>(outputs_[s.output]) + begin;
        for (std::int64_t i = 0; i < len; ++i)
          o[i] = v[i] != 0.0f ? 1 : 0;
      }
    }
  }
};

const ir::Graph& body_of(const NodeView& n) {
  return *n.node().attr<ir::RegionAttrs>().body;
}

bool accepts_region(const NodeView& n) {
  return unsupported(body_of(n)).empty();
}

std::int64_t region_scratch(const NodeView& n) {
  return static_cast<std::int64_t>(std::max(n.threads, 1)) * slot_bytes(compile_body(body_of(n)));
}

std::unique_ptr<Kernel> make_region(const LowerContext& c) {
  const ir::Graph& body = body_of(c);
  Program p = compile_body(body);
  std::vector<const std::byte*> operands;
  for (std::size_t i = 0; i < c.arity(); ++i)
    operands.push_back(c.src(i));
  std::vector<std::byte*> outputs;
  if (c.out().is_tuple()) {
    for (std::size_t i = 0; i < c.out().parts.size(); ++i)
      outputs.push_back(c.dst() + c.out().part_offset(static_cast<std::int64_t>(i)));
  } else {
    outputs.push_back(c.dst());
  }
  std::byte* scratch = c.scratch(region_scratch(c));
  return std::make_unique<RegionKernel>(std::move(p), std::move(operands), std::move(outputs),
                                        scratch);
}

constexpr KernelImpl kRegion[] = {{"tbb", accepts_region, region_scratch, make_region}};

} // namespace

std::span<const KernelImpl> region_impls() {
  return kRegion;
}

} // namespace rlx::cpu
