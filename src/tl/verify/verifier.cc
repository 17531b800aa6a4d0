// The IR verifier: scoping and types of a whole function (see ir.h).
#include <unordered_map>
#include <vector>

#include "src/tl/verify/infer.h"

namespace tileops::tl {
namespace {

class Verifier {
 public:
  explicit Verifier(const Function& f) : f_(f), defined_(f.types.size(), false) {}

  void run() {
    for (const Param& p : f_.params)
      define(p.value, f_.body.ops.empty() ? SourceLoc{} : f_.body.ops[0].loc);
    region(f_.body, {});
  }

 private:
  void define(int id, const SourceLoc& loc) {
    if (id < 0 || id >= static_cast<int>(defined_.size())) {
      trace_error(ErrorKind::kInternal, loc, "verify",
                  "value %" + std::to_string(id) + " has no type");
    }
    if (defined_[id]) {
      trace_error(ErrorKind::kInternal, loc, "verify",
                  "value %" + std::to_string(id) + " defined twice");
    }
    defined_[id] = true;
    live_[id] = true;
  }

  void use(int id, const Op& op) {
    if (id >= 0 && id < static_cast<int>(defined_.size()) && defined_[id] && !live_.count(id)) {
      // A user error, not ours: a value made inside a loop body or branch was kept in a plain
      // variable (C++ tl::Value, a Python name) and used after the region closed.
      trace_error(ErrorKind::kInvalidArgument, op.loc, construct_name(op),
                  "operand %" + std::to_string(id) +
                      " was made inside a range body or if_ branch that has ended; carry values "
                      "out of loops and branches with a tl::Var (Python: tl.Var)");
    }
    if (id < 0 || id >= static_cast<int>(defined_.size()) || !live_.count(id)) {
      trace_error(ErrorKind::kInternal, op.loc, construct_name(op),
                  "operand %" + std::to_string(id) + " is not defined before this op");
    }
  }

  void region(const Region& r, const SourceLoc& loc) {
    const auto saved = live_;
    for (int a : r.args) define(a, loc);
    for (const Op& op : r.ops) {
      for (int id : op.operands) use(id, op);
      for (const Region& nested : op.regions) region(nested, op.loc);
      // Yields of nested regions must be visible inside them: checked while in the region.
      const std::vector<Type> types = infer_result_types(f_, op);
      if (types.size() != op.results.size()) {
        trace_error(ErrorKind::kInternal, op.loc, construct_name(op), "wrong number of results");
      }
      for (std::size_t i = 0; i < types.size(); ++i) {
        define(op.results[i], op.loc);
        if (f_.type_of(op.results[i]) != types[i]) {
          trace_error(ErrorKind::kInternal, op.loc, construct_name(op),
                      "result %" + std::to_string(op.results[i]) + " recorded as " +
                          f_.type_of(op.results[i]).to_string() + ", inferred " +
                          types[i].to_string());
        }
      }
    }
    for (int y : r.yields) {
      if (!live_.count(y)) {
        trace_error(ErrorKind::kInternal, loc, "yield",
                    "value %" + std::to_string(y) + " is not defined");
      }
    }
    live_ = saved;
  }

  const Function& f_;
  std::vector<bool> defined_;
  std::unordered_map<int, bool> live_;
};

}  // namespace

void verify(const Function& function) {
  Verifier(function).run();
  verify_tile_locations(function);
}

}  // namespace tileops::tl
