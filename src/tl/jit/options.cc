// tl::jit options: setting by name (what the Python front-end and launch keywords use),
// validation and the canonical text that enters the cache key.
#include "tileops/core/error.h"
#include "tileops/tl/jit.h"

namespace tileops::tl {
namespace {

template <typename T>
const T& expect(const Options::Setting& value, std::string_view name, const char* what) {
  if (const T* v = std::get_if<T>(&value)) return *v;
  throw_argument_error(ErrorKind::kInvalidType, "tl::jit", name, what, "a value of another type");
}

}  // namespace

Options& Options::set(std::string_view name, const Setting& value) {
  Options next = *this;  // assigned only when valid: a failed set leaves the options unchanged
  next.set_unchecked(name, value);
  next.validate();
  *this = std::move(next);
  return *this;
}

void Options::set_unchecked(std::string_view name, const Setting& value) {
  if (name == "always_compile") {
    always_compile = expect<bool>(value, name, "a bool");
  } else if (name == "opt_level") {
    opt_level = static_cast<int>(expect<std::int64_t>(value, name, "an integer 1..3"));
  } else if (name == "debug") {
    debug = expect<bool>(value, name, "a bool");
  } else if (name == "print_ir") {
    print_ir = expect<bool>(value, name, "a bool");
  } else if (name == "backend") {
    backend = expect<std::string>(value, name, "one of interp, cpu, cuda, auto");
  } else if (name == "dump_dir") {
    dump_dir = expect<std::string>(value, name, "a directory path");
  } else if (name == "fast_math") {
    fast_math = expect<bool>(value, name, "a bool");
  } else if (name == "target") {
    target = expect<std::string>(value, name, "a target name");
  } else {
    throw_argument_error(ErrorKind::kInvalidArgument, "tl::jit", name,
                         "one of always_compile, opt_level, debug, print_ir, backend, dump_dir, "
                         "fast_math, target",
                         "an unknown option name");
  }
}

void Options::validate() const {
  if (opt_level < 1 || opt_level > 3) {
    throw_argument_error(ErrorKind::kInvalidArgument, "tl::jit", "opt_level", "1..3",
                         std::to_string(opt_level));
  }
  if (backend != "auto" && backend != "interp" && backend != "cpu" && backend != "cuda") {
    throw_argument_error(ErrorKind::kInvalidArgument, "tl::jit", "backend",
                         "one of interp, cpu, cuda, auto", "'" + backend + "'");
  }
  if (!target.empty() && !detail::valid_target_name(target)) {
    throw_argument_error(ErrorKind::kInvalidArgument, "tl::jit", "target",
                         "a target name (letters, digits, '.', '_', '+', '-'; at most 64)",
                         "'" + target + "'");
  }
}

std::string Options::key() const {
  return "always_compile=" + std::to_string(always_compile) +
         ";opt_level=" + std::to_string(opt_level) + ";debug=" + std::to_string(debug) +
         ";print_ir=" + std::to_string(print_ir) + ";backend=" + backend + ";dump_dir=" + dump_dir +
         ";fast_math=" + std::to_string(fast_math) + ";target=" + target;
}

namespace detail {

void throw_bad_constexpr(std::size_t index, const char* expected) {
  throw_argument_error(ErrorKind::kInvalidType, "tl::jit", "argument " + std::to_string(index),
                       std::string("ConstExpr of ") + expected, "another kind of value");
}

bool valid_target_name(std::string_view target) {
  if (target.empty() || target.size() > 64) return false;
  for (const char c : target) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && (c != '.' && c != '_' && c != '+' && c != '-')) return false;
  }
  const char first = target[0];
  return first != '.' && first != '_' && first != '+' && first != '-';
}

}  // namespace detail
}  // namespace tileops::tl
