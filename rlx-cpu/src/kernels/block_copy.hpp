// block_copy.hpp (private): the strided block copy that data-movement kernels share (movement.cpp,
// tuple.cpp).
#pragma once

#include "../kernel.hpp"

#include <cstring>

namespace rlx::cpu {

/// Bytes per task of a parallel copy.
inline constexpr std::int64_t kCopyGrainBytes = 4 * kTaskWork;

/// Copies \p rows blocks of \p chunk bytes from src + r * src_stride to dst + r * dst_stride.
class BlockCopy final : public Kernel {
public:
  BlockCopy(const std::byte* src, std::int64_t src_stride, std::byte* dst, std::int64_t dst_stride,
            std::int64_t rows, std::int64_t chunk)
      : src_(src), dst_(dst), src_stride_(src_stride), dst_stride_(dst_stride), rows_(rows),
        chunk_(chunk) {}
  void run(ExecContext& ctx) override {
    parallel_for(ctx, rows_, grain_for(chunk_, kCopyGrainBytes),
                 [&](std::int64_t b, std::int64_t e) {
                   for (std::int64_t r = b; r < e; ++r)
                     std::memcpy(dst_ + r * dst_stride_, src_ + r * src_stride_,
                                 static_cast<std::size_t>(chunk_));
                 });
  }

private:
  const std::byte* src_;
  std::byte* dst_;
  std::int64_t src_stride_, dst_stride_, rows_, chunk_;
};

} // namespace rlx::cpu
