// The C expression of one element of a value, as the plan says it is read: from its tile, from a
// 16-bit tile widened where read, from a float32 block of a 64-lane loop, or, for a fused value,
// its op's expression evaluated at that index (recursing over the plan). Pure functions of the
// IR and the plan (codegen_elements.cc): the printer prints them, and the fusion pass measures
// them (a fused expression has a size limit).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "src/tl/cpu/plan.h"

namespace tileops::tl::cpu {

// Concatenation without a temporary per `+` (for code built in loops).
inline std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s.append(p);
  return s;
}

// The name of value `id` in generated code.
inline std::string value_name(int id) { return std::string("v").append(std::to_string(id)); }

// The expression of elementwise op `o` (unary, binary, where) over operand expressions `x`.
std::string elementwise_expr(const Function& f, const Op& o, const std::vector<std::string>& x);
// The expression of cast `o` of the compute-typed operand expression `v`.
std::string cast_expr(const Function& f, const Op& o, const std::string& v);

// In a 64-lane loop (lane q of element base + q): the widened tiles read as float32 blocks
// tl_w_<v>[q] at the lane's index (`index`, that is base + q; plan.h's lane_blocks).
struct LaneBlocks {
  std::string index;
  std::vector<int> tiles;
};

class Elements {
 public:
  Elements(const Function& f, const std::vector<ValuePlan>& plan) : f_(f), plan_(plan) {}
  // Element `index` of value `id` (a scalar ignores the index).
  std::string at(int id, const std::string& index, const LaneBlocks* lanes = nullptr) const;
  // Element `index` of the result of a flat elementwise op or cast `o` (operands through at()).
  std::string of(const Op& o, const std::string& index, const LaneBlocks* lanes = nullptr) const;

 private:
  const Function& f_;
  const std::vector<ValuePlan>& plan_;
};

// The statements filling the float32 blocks of `tiles` for the 64 lanes from element `base`.
std::string lane_block_fills(const Function& f, const std::vector<int>& tiles,
                             const std::string& base);

}  // namespace tileops::tl::cpu
