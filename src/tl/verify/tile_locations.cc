// TileLocation hints (ir.h) checked against how each located tile is used. On Ascend a tile in
// L0A/L0B can only be read by the cube unit as its left/right operand, L1 only stages cube
// operands, L0C holds the cube's accumulator (read back by a store or the next matmul_acc), and
// BT holds a matmul's bias; using such a tile in vector code there is a kernel bug, so it is an
// error here too, although the CPU backends would compute it. UB (the vector unit's buffer) and
// FB (no CPU meaning) take any use. Casts, transposes and reshapes pass a tile on: their uses are
// checked in its place. Loop inits and branch results are accepted as they are (not followed).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/tl/verify/infer.h"

namespace tileops::tl {
namespace {

struct Use {
  const Op* op;
  std::size_t operand;
};
using Uses = std::map<int, std::vector<Use>>;

TileLocation location_of(const Op& load) { return load.as<LoadAttrs>().location; }
bool accumulates(const Op& matmul) { return matmul.as<MatmulAttrs>().accumulate; }

void collect(const Region& region, Uses& uses, std::vector<const Op*>& loads) {
  for (const Op& op : region.ops) {
    for (std::size_t i = 0; i < op.operands.size(); ++i) uses[op.operands[i]].push_back({&op, i});
    if (op.kind == OpKind::kLoad && location_of(op) != TileLocation::kAny) loads.push_back(&op);
    for (const Region& nested : op.regions) collect(nested, uses, loads);
  }
}

bool forwards(const Op& op) {
  return op.kind == OpKind::kCast || op.kind == OpKind::kTranspose || op.kind == OpKind::kReshape ||
         op.kind == OpKind::kBroadcast;
}

// Matmul operands: 0 left, 1 right, 2 the accumulator (matmul_acc) or the bias (matmul).
bool allowed(TileLocation location, const Op& op, std::size_t operand) {
  if (op.kind == OpKind::kFor) return operand >= 3;  // a loop-carried init
  const bool matmul = op.kind == OpKind::kMatmul;
  switch (location) {
    case TileLocation::kL0A:
      return matmul && operand == 0;
    case TileLocation::kL0B:
      return matmul && operand == 1;
    case TileLocation::kL1:
      return matmul && operand <= 1;
    case TileLocation::kL0C:
      return (matmul && operand == 2 && accumulates(op)) ||
             (op.kind == OpKind::kStore && operand == 0);
    case TileLocation::kBT:
      return matmul && operand == 2 && !accumulates(op);
    default:
      return true;
  }
}

const char* expectation(TileLocation location) {
  switch (location) {
    case TileLocation::kL0A:
      return "only the left operand of a matmul";
    case TileLocation::kL0B:
      return "only the right operand of a matmul";
    case TileLocation::kL1:
      return "only an operand of a matmul";
    case TileLocation::kL0C:
      return "only a matmul accumulator (matmul_acc's acc) or stored";
    default:
      return "only the bias of a matmul";
  }
}

std::string role(const Op& op, std::size_t operand) {
  if (op.kind == OpKind::kMatmul) {
    static const char* const kRoles[] = {"the left operand", "the right operand", "the bias"};
    if (operand == 2 && accumulates(op)) return "the accumulator of matmul_acc";
    return std::string(kRoles[operand < 3 ? operand : 2]) + " of a matmul";
  }
  return "operand " + std::to_string(operand + 1) + " of '" + construct_name(op) + "'";
}

void check(const Op& load, int value, const Uses& uses, int depth) {
  const auto it = uses.find(value);
  if (it == uses.end() || depth > 64) return;
  for (const Use& use : it->second) {
    if (forwards(*use.op)) {
      for (int r : use.op->results) check(load, r, uses, depth + 1);
      continue;
    }
    if (allowed(location_of(load), *use.op, use.operand)) continue;
    trace_error(ErrorKind::kInvalidArgument, use.op->loc, construct_name(*use.op),
                std::string("the tile loaded with location=TileLocation.") +
                    name_of(location_of(load)) + " at " + load.loc.to_string() + " may be " +
                    expectation(location_of(load)) + "; here it is " + role(*use.op, use.operand));
  }
}

}  // namespace

void verify_tile_locations(const Function& function) {
  Uses uses;
  std::vector<const Op*> loads;
  collect(function.body, uses, loads);
  for (const Op* load : loads) {
    const TileLocation location = location_of(*load);
    if (location == TileLocation::kUB || location == TileLocation::kFB) continue;
    check(*load, load->results.at(0), uses, 0);
  }
}

}  // namespace tileops::tl
