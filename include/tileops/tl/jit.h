// tl::jit: a kernel object built from a C++ callable. Each distinct specialisation (ConstExpr
// values, argument dtypes, options) is traced once, verified, run through the pass pipeline and
// prepared for its backend; launches are thread-safe and take their launch options per call.
//
//   auto vadd = tl::jit("vadd", [](tl::GlobalAddress x, tl::GlobalAddress y, tl::GlobalAddress z,
//                                  tl::Int n, tl::ConstExpr<int> tile) { ... });
//   vadd.launch(0, x, y, z, n, 1024);   // core_num 0 = every core
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tileops/core/tensor.h"
#include "tileops/tl/ir.h"
#include "tileops/tl/value.h"

namespace tileops {
class ThreadPool;
}  // namespace tileops

namespace tileops::tl {

struct Options {
  bool always_compile = false;   // re-trace and re-prepare on every launch (bypass the cache)
  int opt_level = 2;             // 1..3
  bool debug = false;            // verify after every pass; locations in printed IR
  bool print_ir = false;         // print the IR to stderr before and after each pass
  std::string backend = "auto";  // interp | cpu | cuda | auto (cpu with a compiler, else interp)
  std::string dump_dir = {};     // write <name>-<hash>.tlir (cpu: also .cc and .so) there;
                                 // empty: $TILEOPS_TL_DUMP_DIR when set
  bool fast_math = false;        // contraction, reciprocals, a cheaper exp (docs/tile-language.md)
  std::string target = {};       // backend target override, e.g. "haswell" or "sm_90": a name of
                                 // letters, digits and . _ + - (cpu: a -march the CPU runs)
  bool run_passes = true;        // false: the traced IR runs as traced (no optimisation passes)
  bool strip_loc = false;        // printed and dumped IR carry no source locations
  bool print_ir_before_all = false;  // print the IR to stderr before each pass (and the last one)
  // Extra arguments for the cpu backend's compiler command line, after tileops' own flags (each
  // one argument, never split or interpreted by a shell): asc2's bisheng_options.
  std::vector<std::string> compiler_args = {};

  // Sets an option by its Python/keyword name; unknown names or bad values are errors.
  using Setting = std::variant<bool, std::int64_t, std::string, std::vector<std::string>>;
  Options& set(std::string_view name, const Setting& value);
  // Throws when a value is out of range or the backend is unknown.
  void validate() const;
  std::string key() const;  // every option, canonical order

 private:
  void set_unchecked(std::string_view name, const Setting& value);
};

// One runtime argument of a launch.
struct Pointer {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
};
using Argument =
    std::variant<Pointer, std::int64_t, double, bool, std::string, std::vector<std::int64_t>>;
// ConstExpr arguments travel as their canonical text (part of the key) plus the typed value.

namespace detail {
class KernelImpl;
struct TraceParam {
  ParamKind kind;
  bool constexpr_param = false;
};
}  // namespace detail

class Kernel {
 public:
  using Body = std::function<void(std::span<const Value> params, std::span<const Argument> args)>;
  Kernel(std::string name, std::vector<detail::TraceParam> params, Body body, Options options);

  // Launches on `core_num` blocks (0 = all cores of the device). Arguments: tileops::Tensor /
  // TensorStorage / typed pointers for GlobalAddress, numbers for Int/Float/Bool and ConstExpr.
  template <typename... Args>
  void launch(std::int64_t core_num, const Args&... args) const {
    const Argument converted[] = {to_argument(args)...};
    launch_arguments(core_num, converted);
  }
  // As launch, with the CPU backends' blocks on `pool` (core_num 0 = its threads) instead of
  // the global pool: an operator runs on the pool of its Context.
  template <typename... Args>
  void launch_on(ThreadPool& pool, std::int64_t core_num, const Args&... args) const {
    const Argument converted[] = {to_argument(args)...};
    launch_arguments(core_num, converted, &pool);
  }
  // pool nullptr = the global pool.
  void launch_arguments(std::int64_t core_num, std::span<const Argument> args,
                        ThreadPool* pool = nullptr) const;

  // The traced IR (after passes) of the specialisation these arguments select.
  std::string ir(std::span<const Argument> args) const;
  template <typename... Args>
  std::string ir_for(const Args&... args) const {
    const Argument converted[] = {to_argument(args)...};
    return ir(converted);
  }
  // Specialisations traced so far (cache entries).
  std::size_t num_specialisations() const;
  const Options& options() const;

 private:
  static Argument to_argument(const Tensor& t) { return Pointer{t.data(), t.dtype()}; }
  static Argument to_argument(const Pointer& p) { return p; }
  static Argument to_argument(const std::string& s) { return s; }
  static Argument to_argument(const std::vector<std::int64_t>& v) { return v; }  // a shape
  static Argument to_argument(const char* s) { return std::string(s); }
  static Argument to_argument(bool b) { return b; }
  static Argument to_argument(DataType d) { return std::string(name_of(d)); }
  template <typename T>
  static Argument to_argument(T* p) {
    return Pointer{const_cast<std::remove_const_t<T>*>(p), dtype_of<std::remove_const_t<T>>()};
  }
  template <Number T>
  static Argument to_argument(T v) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<double>(v);
    } else {
      return static_cast<std::int64_t>(v);
    }
  }
  template <typename T>
  static DataType dtype_of() {
    if constexpr (std::is_same_v<T, float>)
      return DataType::kFloat32;
    else if constexpr (std::is_same_v<T, double>)
      return DataType::kFloat64;
    else if constexpr (std::is_same_v<T, std::int32_t>)
      return DataType::kInt32;
    else if constexpr (std::is_same_v<T, std::int64_t>)
      return DataType::kInt64;
    else if constexpr (std::is_same_v<T, std::int16_t>)
      return DataType::kInt16;
    else if constexpr (std::is_same_v<T, std::int8_t>)
      return DataType::kInt8;
    else if constexpr (std::is_same_v<T, std::uint8_t>)
      return DataType::kUInt8;
    else
      static_assert(sizeof(T) == 0, "pass 16-bit data as tileops::Tensor or tl::Pointer");
  }

  std::shared_ptr<detail::KernelImpl> impl_;
};

namespace detail {

template <typename T>
struct ParamTraits;
template <>
struct ParamTraits<GlobalAddress> {
  static constexpr ParamKind kKind = ParamKind::kGlobalAddress;
  static constexpr bool kConst = false;
};
template <>
struct ParamTraits<Int> {
  static constexpr ParamKind kKind = ParamKind::kInt;
  static constexpr bool kConst = false;
};
template <>
struct ParamTraits<Float> {
  static constexpr ParamKind kKind = ParamKind::kFloat;
  static constexpr bool kConst = false;
};
template <>
struct ParamTraits<Bool> {
  static constexpr ParamKind kKind = ParamKind::kBool;
  static constexpr bool kConst = false;
};
template <typename T>
struct ParamTraits<ConstExpr<T>> {
  static constexpr ParamKind kKind = ParamKind::kInt;
  static constexpr bool kConst = true;
};

[[noreturn]] void throw_bad_constexpr(std::size_t index, const char* expected);
// Whether `target` can be a target name: 1..64 of [A-Za-z0-9._+-], starting with a letter or
// digit (it reaches a compiler's command line).
bool valid_target_name(std::string_view target);

// Converts a launch Argument to the C++ value a ConstExpr<T> parameter receives.
template <typename T>
T constexpr_value(const Argument& arg, std::size_t index) {
  if constexpr (std::is_same_v<T, bool>) {
    if (const auto* b = std::get_if<bool>(&arg)) return *b;
    throw_bad_constexpr(index, "a bool");
  } else if constexpr (std::is_integral_v<T>) {
    if (const auto* i = std::get_if<std::int64_t>(&arg)) return static_cast<T>(*i);
    throw_bad_constexpr(index, "an integer");
  } else if constexpr (std::is_floating_point_v<T>) {
    if (const auto* d = std::get_if<double>(&arg)) return static_cast<T>(*d);
    if (const auto* i = std::get_if<std::int64_t>(&arg)) return static_cast<T>(*i);
    throw_bad_constexpr(index, "a number");
  } else if constexpr (std::is_same_v<T, DataType>) {
    if (const auto* s = std::get_if<std::string>(&arg)) {
      if (auto dtype = parse_data_type(*s)) return *dtype;
    }
    throw_bad_constexpr(index, "a DataType");
  } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
    if (const auto* v = std::get_if<std::vector<std::int64_t>>(&arg)) return *v;
    throw_bad_constexpr(index, "a shape (std::vector<int64_t>)");
  } else {
    static_assert(std::is_same_v<T, std::string>,
                  "ConstExpr of bool, int, float, DataType, string, std::vector<int64_t>");
    if (const auto* s = std::get_if<std::string>(&arg)) return *s;
    throw_bad_constexpr(index, "a string");
  }
}

template <typename P>
P make_param(std::span<const Value> params, std::span<const Argument> args, std::size_t i) {
  using Traits = ParamTraits<P>;
  if constexpr (Traits::kConst) {
    return P{constexpr_value<std::remove_cvref_t<decltype(P::value)>>(args[i], i)};
  } else {
    P p;
    static_cast<Value&>(p) = params[i];
    return p;
  }
}

template <typename F>
struct CallableTraits : CallableTraits<decltype(&F::operator())> {};
template <typename C, typename R, typename... P>
struct CallableTraits<R (C::*)(P...) const> {
  using Params = std::tuple<std::remove_cvref_t<P>...>;
};
template <typename R, typename... P>
struct CallableTraits<R (*)(P...)> {
  using Params = std::tuple<std::remove_cvref_t<P>...>;
};

}  // namespace detail

// Shared objects the cpu backend has compiled in this process (persistent-cache misses and
// always_compile builds); tests and benchmarks count compiles with it.
std::int64_t cpu_compile_count();

template <typename F>
Kernel jit(std::string name, F fn, Options options = {}) {
  using Params = typename detail::CallableTraits<F>::Params;
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    std::vector<detail::TraceParam> params = {
        detail::TraceParam{detail::ParamTraits<std::tuple_element_t<I, Params>>::kKind,
                           detail::ParamTraits<std::tuple_element_t<I, Params>>::kConst}...};
    Kernel::Body body = [fn](std::span<const Value> values, std::span<const Argument> args) {
      fn(detail::make_param<std::tuple_element_t<I, Params>>(values, args, I)...);
    };
    return Kernel(std::move(name), std::move(params), std::move(body), std::move(options));
  }
  (std::make_index_sequence<std::tuple_size_v<Params>>{});
}

}  // namespace tileops::tl
