// The per-thread tracer and the Value/Var handles that talk to it.
#include "src/tl/builder/tracer.h"

#include <algorithm>

namespace tileops::tl {
namespace {

thread_local Tracer* g_active = nullptr;  // per thread: traces never share builder state

}  // namespace

SourceLoc to_loc(const Loc& loc) {
  return SourceLoc{loc.file_name(), static_cast<std::uint32_t>(loc.line_number()),
                   loc.function_name()};
}

Tracer::Tracer(std::string name) {
  function_.name = std::move(name);
  open_.emplace_back();
}

Tracer* Tracer::active() { return g_active; }

Tracer& Tracer::current(const char* construct, const Loc& loc) {
  if (g_active == nullptr) {
    trace_error(ErrorKind::kInvalidArgument, to_loc(loc), construct,
                "called outside a kernel being traced (use it inside a tl::jit kernel body)");
  }
  g_active->check_not_broken();
  return *g_active;
}

void Tracer::check_not_broken() const {
  if (!broken_.empty()) throw Error(ErrorKind::kInvalidArgument, broken_);
}

int Tracer::new_value(Type type) {
  constants_.emplace_back();
  weak_.push_back(false);
  return function_.new_value(std::move(type));
}

std::vector<int> Tracer::append(Op op) {
  check_not_broken();
  std::vector<Type> types = infer_result_types(function_, op);
  op.results.clear();
  for (Type& t : types) op.results.push_back(new_value(std::move(t)));
  std::vector<int> results = op.results;
  open_.back().ops.push_back(std::move(op));
  return results;
}

int Tracer::constant(long double number, DataType dtype, bool weak, const SourceLoc& loc) {
  Op op;
  op.kind = OpKind::kConstant;
  op.loc = loc;
  ConstantAttrs& value = op.as<ConstantAttrs>();
  value.dtype = dtype;
  if (is_floating(dtype)) {
    value.number.value = static_cast<double>(number);
  } else {
    value.integer = dtype == DataType::kBool ? (number != 0) : static_cast<std::int64_t>(number);
    number = static_cast<long double>(value.integer);
  }
  const int id = append1(std::move(op));
  constants_[id] = number;
  weak_[id] = weak;
  return id;
}

Region Tracer::close_region() {
  Region r = std::move(open_.back());
  open_.pop_back();
  return r;
}

Function Tracer::finish() {
  check_not_broken();
  if (open_.size() != 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "tl: a tl::range body was left early (break/return inside a runtime loop)");
  }
  function_.body = std::move(open_[0]);
  open_.clear();
  return std::move(function_);
}

TraceScope::TraceScope(Tracer* tracer) : previous_(g_active) { g_active = tracer; }
TraceScope::~TraceScope() { g_active = previous_; }

// --- Value / Var -----------------------------------------------------------------------------

const Type& Value::type() const {
  Tracer* t = Tracer::active();
  if (t == nullptr || id_ < 0 || id_ >= static_cast<int>(t->function().types.size())) {
    throw Error(ErrorKind::kInvalidArgument,
                "tl: a Value was used outside the kernel trace that made it (or is unset)");
  }
  return t->type_of(id_);
}

int Value::make_constant(long double number, bool is_float, bool is_bool, Loc loc) {
  Tracer& t = Tracer::current("constant", loc);
  const DataType dtype =
      is_bool ? DataType::kBool : (is_float ? DataType::kFloat32 : DataType::kInt64);
  return t.constant(number, dtype, true, to_loc(loc));
}

Var::Var(const Value& initial) : Value(initial) {
  if (Tracer* t = Tracer::active()) t->vars().push_back(this);
}

Var::Var(const Var& other) : Var(static_cast<const Value&>(other)) {}

Var::~Var() {
  if (Tracer* t = Tracer::active()) {
    auto& vars = t->vars();
    vars.erase(std::remove(vars.begin(), vars.end(), this), vars.end());
  }
  forget_var(this);  // open loops and branches that hold it
}

Var& Var::operator=(const Value& value) {
  id_ = value.id();
  return *this;
}

Var& Var::operator=(const Var& other) {
  id_ = other.id();
  return *this;
}

}  // namespace tileops::tl
