#include "tileops/ops/registry.h"

#include <algorithm>

#include "src/ops/framework/builtin_implementations.h"
#include "tileops/core/error.h"

namespace tileops::ops {

const std::vector<Implementation>& implementations() {
  static const std::vector<Implementation> all = [] {
    std::vector<Implementation> list;
    register_cpu_implementations(list);
    std::sort(list.begin(), list.end(), [](const Implementation& a, const Implementation& b) {
      return std::tie(a.op, a.device, a.index) < std::tie(b.op, b.device, b.index);
    });
    for (std::size_t i = 1; i < list.size(); ++i) {
      if (list[i].op == list[i - 1].op && list[i].device == list[i - 1].device &&
          list[i].index == list[i - 1].index) {
        throw_internal_error("registry", "duplicate implementation index for " + list[i].op);
      }
    }
    return list;
  }();
  return all;
}

std::vector<int> active_implementation_indices(std::string_view op, DeviceType device) {
  std::vector<int> indices;
  for (const Implementation& impl : implementations()) {
    if (impl.op == op && impl.device == device) indices.push_back(impl.index);
  }
  return indices;
}

std::vector<std::string> active_implementation_names(std::string_view op, DeviceType device) {
  std::vector<std::string> names;
  for (const Implementation& impl : implementations()) {
    if (impl.op == op && impl.device == device) names.push_back(impl.name);
  }
  return names;
}

std::vector<std::string> registered_operators() {
  std::vector<std::string> names;
  for (const Implementation& impl : implementations()) {
    if (names.empty() || names.back() != impl.op) names.push_back(impl.op);
  }
  return names;
}

const Implementation& find_implementation(const Problem& problem, int index) {
  const Device device = problem.device();
  for (const Implementation& impl : implementations()) {
    if (impl.op == problem.op && impl.device == device.type && impl.index == index) return impl;
  }
  std::string available;
  for (int i : active_implementation_indices(problem.op, device.type)) {
    available += (available.empty() ? "" : ", ") + std::to_string(i);
  }
  throw Error(ErrorKind::kUnsupported, std::string(problem.op) + ": no implementation with index " +
                                           std::to_string(index) + " on " + device.to_string() +
                                           " (available: {" + available + "})");
}

void check_stream(const Problem& problem, const Context& ctx) {
  if (ctx.stream != nullptr && problem.device().type == DeviceType::kCpu) {
    throw_argument_error(ErrorKind::kInvalidArgument, problem.op, "stream",
                         "no stream (null) for CPU tensors", "a stream handle");
  }
}

void run_problem(const Problem& problem, std::span<const Tensor> tensors, const Context& ctx) {
  check_stream(problem, ctx);
  cached_operator(problem, ctx.implementation_index)->run(tensors, ctx);
}

}  // namespace tileops::ops
