// Running operator tests once per active CPU implementation (native, tl, ...): value-parametrised
// suites take cpu_implementations(op) as a parameter, other tests loop with
// for_each_implementation, which names the implementation in every failure.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tileops/ops/registry.h"
#include "tileops/runtime/context.h"

namespace tileops::testing {

inline std::vector<int> cpu_implementations(std::string_view op) {
  return ops::active_implementation_indices(op, DeviceType::kCpu);
}

inline Context with_implementation(int index, Context ctx = {}) {
  ctx.implementation_index = index;
  return ctx;
}

// body(ctx) once per active implementation of `op`, ctx = base with its implementation_index.
template <typename F>
void for_each_implementation(std::string_view op, F&& body, const Context& base = {}) {
  const std::vector<int> indices = cpu_implementations(op);
  ASSERT_FALSE(indices.empty()) << op;
  for (int index : indices) {
    SCOPED_TRACE(std::string(op) + " implementation " + std::to_string(index));
    body(with_implementation(index, base));
  }
}

}  // namespace tileops::testing
