// attention_block.cpp: FusedAttentionBlock (rlx-fusion's fuse-attention-block) as one kernel
// record: the packed Q / K / V GEMM into planned scratch (bias epilogue; the GEMM provider chosen
// as for MatMulBiasAct, so `--gemm auto` applies), RoPE of the q and k heads in place in that
// buffer, the online-softmax attention reading Q / K / V straight out of the packed projection by
// strides (no Split copy, no head Reshape), its output into scratch as [B, S, H D], then the output
// GEMM (bias epilogue) into the result. Every intermediate lives in the node's planned scratch;
// run() allocates nothing.
#include "../lower.hpp"
#include "../matmul.hpp"
#include "attention_core.hpp"
#include "rlx/ir/error.hpp"

#include <cmath>

namespace rlx::cpu {
namespace {

/// The block's dims, from its operand types.
struct BlockDims {
  std::int64_t b, s, e, h, kvh, d, nt, hd;
};
BlockDims dims_of(const NodeView& n) {
  const auto& a = n.node().attr<ir::FusedAttentionBlockAttrs>();
  auto x = n.in(0).sizes(), w = n.in(1).sizes();
  BlockDims g{};
  g.b = x[0];
  g.s = x[1];
  g.e = x[2];
  g.h = a.num_heads;
  g.kvh = a.num_kv_heads;
  g.nt = a.qkv_transpose_b ? w[0] : w[1];
  g.d = g.nt / (g.h + 2 * g.kvh);
  g.hd = g.h * g.d;
  return g;
}

/// The GEMM of the packed projection (\p out == false) or of the output projection, as
/// MatMulBiasAct would run it: weights that are Params / Constants packed once for oneDNN.
MatMulSpec gemm_spec(const NodeView& n, bool out) {
  const auto& a = n.node().attr<ir::FusedAttentionBlockAttrs>();
  const BlockDims g = dims_of(n);
  MatMulSpec s;
  const std::size_t w = out ? 2 : 1;
  s.a_sizes = out ? std::vector<std::int64_t>{g.b, g.s, g.hd} : n.in(0).sizes();
  s.out_sizes = out ? n.out().sizes() : std::vector<std::int64_t>{g.b, g.s, g.nt};
  s.transpose_b = out ? a.out_transpose_b : a.qkv_transpose_b;
  s.has_bias = out ? a.out_bias : a.qkv_bias;
  s.dtype = n.out().dtype;
  set_weight_operand(s, n, w);
  return s;
}

constexpr std::int64_t kAlign = 64;
std::int64_t aligned(std::int64_t b) {
  return (b + kAlign - 1) / kAlign * kAlign;
}

/// Scratch layout: [packed projection B S Nt][attention output B S H D][QKV GEMM scratch]
/// [output GEMM scratch][per-thread attention slices][padding keep flags B S][keys transposed].
struct BlockScratch {
  std::int64_t proj = 0, attn = 0, gemm_qkv = 0, gemm_out = 0, slice = 0, slices = 0, keep = 0,
               kt = 0;
  std::int64_t total() const { return proj + attn + gemm_qkv + gemm_out + slices + keep + kt; }
};

GemmImpl block_gemm(const NodeView& n) {
  return choose_gemm(gemm_spec(n, false), n.opts, n.threads);
}

BlockScratch block_scratch(const NodeView& n) {
  const BlockDims g = dims_of(n);
  const GemmImpl impl = block_gemm(n);
  BlockScratch s;
  s.proj = aligned(g.b * g.s * g.nt * 4);
  s.attn = aligned(g.b * g.s * g.hd * 4);
  s.gemm_qkv = aligned(matmul_scratch_bytes(gemm_spec(n, false), impl));
  s.gemm_out = aligned(matmul_scratch_bytes(gemm_spec(n, true), impl));
  s.slice = attention_slice_bytes(g.d, g.d, 4);
  s.slices = s.slice * n.threads;
  s.keep = attention_keep_bytes(n.node().attr<ir::FusedAttentionBlockAttrs>().mask, g.b, g.s);
  s.kt = attention_kt_bytes(g.b, g.kvh, g.s, g.d);
  return s;
}

std::int64_t attention_block_scratch(const NodeView& n) {
  return block_scratch(n).total();
}

class AttentionBlockKernel final : public Kernel {
public:
  AttentionBlockKernel(const LowerContext& c, std::unique_ptr<Kernel> qkv,
                       std::unique_ptr<Kernel> out, std::byte* scratch, const BlockScratch& sc)
      : qkv_(std::move(qkv)), out_(std::move(out)) {
    const auto& a = c.node().attr<ir::FusedAttentionBlockAttrs>();
    g_ = dims_of(c);
    proj_ = reinterpret_cast<float*>(scratch);
    auto* attn = reinterpret_cast<float*>(scratch + sc.proj);
    if (a.rope)
      rope_ = RopeTable<float>(a.rope_style, a.rope_n_rot == 0 ? g_.d : a.rope_n_rot,
                               a.rope_position_offset, a.rope_theta, g_.s);
    has_rope_ = a.rope;
    // Q, K, V are the three parts of each [Nt] row of the projection; head h at h * D.
    p_ = {};
    p_.q = proj_;
    p_.k = proj_ + g_.hd;
    p_.v = proj_ + g_.hd + g_.kvh * g_.d;
    p_.o = attn;
    p_.batch = g_.b;
    p_.heads = g_.h;
    p_.kv_heads = g_.kvh;
    p_.sq = p_.sk = g_.s;
    p_.d = p_.dv = g_.d;
    p_.q_b = p_.k_b = p_.v_b = g_.s * g_.nt;
    p_.q_h = p_.k_h = p_.v_h = g_.d;
    p_.q_s = p_.k_s = p_.v_s = g_.nt;
    p_.o_b = g_.s * g_.hd;
    p_.o_h = g_.d;
    p_.o_s = g_.hd;
    p_.scale = a.scale.value_or(1.0 / std::sqrt(static_cast<double>(g_.d)));
    p_.softcap = a.softcap.value_or(0.0);
    p_.mask = a.mask;
    p_.window = a.window;
    p_.shift = 0;
    p_.blocks_per_head = attention_blocks(g_.s);
    slices_ = scratch + sc.proj + sc.attn + sc.gemm_qkv + sc.gemm_out;
    slice_ = sc.slice;
    threads_ = c.threads;
    mask_.bind(c, c.arity() - 1, p_, slices_ + sc.slices);
    kt_ = reinterpret_cast<float*>(slices_ + sc.slices + sc.keep);
  }

  void run(ExecContext& ctx) override {
    qkv_->run(ctx);
    if (has_rope_) {
      // Rows (b, s, head) of the q and k heads, turned in place.
      const std::int64_t heads = g_.h + g_.kvh, rows = g_.b * g_.s * heads;
      parallel_for(ctx, rows, grain_for(g_.d * 4), [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          const std::int64_t bs = r / heads, head = r % heads;
          float* row = proj_ + bs * g_.nt + head * g_.d;
          rope_.rotate(row, row, bs % g_.s);
        }
      });
    }
    mask_.refresh();
    run_attention_f32(ctx, p_, slices_, slice_, threads_, kt_);
    out_->run(ctx);
  }

private:
  std::unique_ptr<Kernel> qkv_, out_;
  BlockDims g_{};
  float* proj_ = nullptr;
  AttnParams<float> p_{};
  RopeTable<float> rope_;
  bool has_rope_ = false;
  std::byte* slices_ = nullptr;
  std::int64_t slice_ = 0;
  float* kt_ = nullptr; ///< the keys transposed per run
  int threads_ = 1;
  AttnMaskInput mask_;
};

std::unique_ptr<Kernel> make_attention_block(const LowerContext& c) {
  const auto& a = c.node().attr<ir::FusedAttentionBlockAttrs>();
  const BlockScratch sc = block_scratch(c);
  std::byte* scratch = c.scratch(sc.total());
  const GemmImpl impl = block_gemm(c);
  MatMulSpec q = gemm_spec(c, false), o = gemm_spec(c, true);
  q.a = c.src(0);
  q.b = c.src(1);
  q.out = scratch;
  o.a = scratch + sc.proj;
  o.b = c.src(2);
  o.out = c.dst();
  std::size_t next = 3;
  if (a.qkv_bias)
    q.bias = c.src(next++);
  if (a.out_bias)
    o.bias = c.src(next++);
  q.packer = o.packer = c.packer;
  auto qk = make_matmul_kernel(q, impl, scratch + sc.proj + sc.attn);
  auto ok = make_matmul_kernel(o, impl, scratch + sc.proj + sc.attn + sc.gemm_qkv);
  std::string note = gemm_choice_note(q, c.opts, c.threads);
  auto k = std::make_unique<AttentionBlockKernel>(c, std::move(qk), std::move(ok), scratch, sc);
  k->set_note(std::move(note));
  return k;
}

/// f32 only (the backend claims the block for f32); the implementation is named for the GEMM
/// provider, which runs both products (the executable sizes that library's pool).
bool accepts_onednn_block(const NodeView& n) {
  return n.out().dtype == ir::DType::f32 && block_gemm(n) == GemmImpl::onednn;
}
bool accepts_openblas_block(const NodeView& n) {
  return n.out().dtype == ir::DType::f32 && block_gemm(n) == GemmImpl::openblas;
}
bool accepts_packed_block(const NodeView& n) {
  return n.out().dtype == ir::DType::f32 && block_gemm(n) == GemmImpl::packed;
}

constexpr KernelImpl kAttentionBlock[] = {
    {"onednn", accepts_onednn_block, attention_block_scratch, make_attention_block},
    {"openblas", accepts_openblas_block, attention_block_scratch, make_attention_block},
    {"packed", accepts_packed_block, attention_block_scratch, make_attention_block}};

} // namespace

std::span<const KernelImpl> attention_block_impls() {
  return kAttentionBlock;
}

} // namespace rlx::cpu
