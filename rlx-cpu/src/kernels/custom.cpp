// custom.cpp: Custom ops run their CustomOpRegistry reference kernel. This is the one kernel that
// allocates per run: the registry's kernel takes and returns host tensors.
#include "../lower.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/error.hpp"

#include <cstring>

namespace rlx::cpu {
namespace {

class CustomKernel final : public Kernel {
public:
  explicit CustomKernel(const LowerContext& c)
      : attrs_(c.node().attr<ir::CustomAttrs>()), out_(c.out()), dst_(c.dst()), what_(c.what()) {
    def_ = ir::CustomOpRegistry::global().find(attrs_.name);
    if (!def_)
      throw Error("rlx-cpu: " + what_ + ": custom op '" + attrs_.name + "' is not registered");
    for (std::size_t i = 0; i < c.arity(); ++i)
      operands_.push_back({c.in(i), c.src(i)});
  }
  void run(ExecContext&) override {
    std::vector<ir::Tensor> args;
    args.reserve(operands_.size());
    for (const auto& [shape, ptr] : operands_) {
      ir::Tensor t(shape);
      std::memcpy(t.raw(), ptr, t.nbytes());
      args.push_back(std::move(t));
    }
    ir::Tensor r = def_->reference(args, attrs_, out_);
    if (r.shape() != out_)
      throw Error("rlx-cpu: " + what_ + ": custom op '" + attrs_.name + "' returned " +
                  r.shape().str() + ", expected " + out_.str());
    std::memcpy(dst_, r.raw(), r.nbytes());
  }

private:
  ir::CustomAttrs attrs_;
  ir::Shape out_;
  std::byte* dst_;
  std::string what_;
  const ir::CustomOpDef* def_ = nullptr;
  std::vector<std::pair<ir::Shape, const std::byte*>> operands_;
};

std::unique_ptr<Kernel> make_custom(const LowerContext& c) {
  return std::make_unique<CustomKernel>(c);
}

constexpr KernelImpl kCustom[] = {{"reference", accept_all, nullptr, make_custom}};

} // namespace

std::span<const KernelImpl> custom_impls() {
  return kCustom;
}

} // namespace rlx::cpu
