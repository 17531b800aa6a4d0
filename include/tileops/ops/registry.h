// Operator implementations, registered explicitly per (operator, device, index) with a name,
// and the bounded LRU cache of operator instances.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tileops/ops/problem.h"
#include "tileops/runtime/context.h"

namespace tileops::ops {

// An operator implementation specialised for one Problem. It holds the plan (geometry,
// attributes) and never data: the same instance runs any data of that geometry.
class Operator {
 public:
  virtual ~Operator() = default;
  // `tensors` are in the Problem's order; absent optional arguments are default Tensors.
  virtual void run(std::span<const Tensor> tensors, const Context& ctx) const = 0;
};

using OperatorFactory = std::function<std::unique_ptr<Operator>(const Problem&)>;

struct Implementation {
  std::string op;
  DeviceType device = DeviceType::kCpu;
  int index = 0;
  std::string name;  // "native", "tl", "onednn", ...
  OperatorFactory create;
};

// Every implementation compiled into this build (registered on first use).
const std::vector<Implementation>& implementations();

// Indices and names of the implementations of `op` on `device`, ascending by index.
std::vector<int> active_implementation_indices(std::string_view op, DeviceType device);
std::vector<std::string> active_implementation_names(std::string_view op, DeviceType device);
// Names of every operator with at least one implementation.
std::vector<std::string> registered_operators();

// Runs `problem` with the implementation ctx.implementation_index on the problem's device,
// creating or reusing a cached instance. Throws Unsupported naming the available indices.
void run_problem(const Problem& problem, std::span<const Tensor> tensors, const Context& ctx);

// The cached instance for a problem (created on a miss).
std::shared_ptr<const Operator> cached_operator(const Problem& problem, int implementation_index);

// Operator-instance cache controls.
void clear_cache();
std::size_t cache_size();
void set_cache_capacity(std::size_t capacity);  // default 1024; shrinking evicts LRU entries

// Class form shared by every operator: built once for a geometry, then called on data of that
// geometry. Calling it with other geometry raises an error naming the argument.
class PreparedOperator {
 public:
  PreparedOperator(Problem problem, std::vector<std::string_view> argument_names,
                   int implementation_index);
  void run(std::span<const Tensor> tensors, const Context& ctx) const;
  const Problem& problem() const { return problem_; }

 private:
  Problem problem_;
  std::vector<std::string_view> argument_names_;
  std::shared_ptr<const Operator> operator_;
};

}  // namespace tileops::ops
