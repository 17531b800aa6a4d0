// The interp backend behind the jit's Executable interface: converts runtime arguments to
// interpreter slots and runs the blocks on the runtime thread pool.
#include <mutex>

#include "src/tl/interp/interpreter.h"
#include "src/tl/jit/executable.h"
#include "tileops/runtime/thread_pool.h"

namespace tileops::tl {
namespace {

class InterpExecutable final : public Executable {
 public:
  explicit InterpExecutable(Function function) : interpreter_(std::move(function)) {}

  std::int64_t all_cores(const ThreadPool& pool) const override { return pool.num_threads(); }

  void launch(std::int64_t num_blocks, std::span<const Argument> args,
              ThreadPool& pool) const override {
    const Function& f = interpreter_.function();
    std::vector<interp::Slot> slots(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
      interp::Slot& s = slots[i];
      const Argument& a = args[i];
      switch (f.params.at(i).kind) {
        case ParamKind::kGlobalAddress:
          s.pointer = std::get<Pointer>(a).data;
          break;
        case ParamKind::kInt:
          s.buffer.resize(DataType::kInt64, {});
          s.buffer.i[0] = std::get<std::int64_t>(a);
          break;
        case ParamKind::kFloat:
          s.buffer.resize(DataType::kFloat32, {});
          s.buffer.set(0, std::holds_alternative<double>(a)
                              ? std::get<double>(a)
                              : static_cast<double>(std::get<std::int64_t>(a)));
          break;
        case ParamKind::kBool:
          s.buffer.resize(DataType::kBool, {});
          s.buffer.i[0] = std::get<bool>(a) ? 1 : 0;
          break;
      }
    }
    static std::mutex atomic_mutex;  // shared by every launch, so concurrent launches stay atomic
    pool.parallel_for(num_blocks, [&](std::int64_t block) {
      interpreter_.run_block(block, num_blocks, slots, &atomic_mutex);
    });
  }

 private:
  interp::Interpreter interpreter_;
};

}  // namespace

std::shared_ptr<const Executable> make_interp_executable(Function function) {
  return std::make_shared<const InterpExecutable>(std::move(function));
}

}  // namespace tileops::tl
