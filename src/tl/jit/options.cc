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

// Bounds on compiler_args: generous for real flags, small enough to keep keys short.
constexpr std::size_t kMaxCompilerArgs = 64;
constexpr std::size_t kMaxCompilerArgLength = 4096;

// An argument as it appears in an error: quoted, at most 80 characters.
std::string quoted_prefix(const std::string& arg) {
  std::string text(1, '\'');
  text.append(arg, 0, 80);
  text.push_back('\'');
  return text;
}

// Length-prefixed, so that no two argument lists share a key.
std::string compiler_args_key(const std::vector<std::string>& args) {
  std::string k = std::to_string(args.size());
  for (const std::string& arg : args) {
    k += ',';
    k += std::to_string(arg.size());
    k += ':';
    k += arg;
  }
  return k;
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
  } else if (name == "run_passes") {
    run_passes = expect<bool>(value, name, "a bool");
  } else if (name == "strip_loc") {
    strip_loc = expect<bool>(value, name, "a bool");
  } else if (name == "print_ir_before_all") {
    print_ir_before_all = expect<bool>(value, name, "a bool");
  } else if (name == "compiler_args") {
    compiler_args = expect<std::vector<std::string>>(value, name, "a list of strings");
  } else {
    throw_argument_error(ErrorKind::kInvalidArgument, "tl::jit", name,
                         "one of always_compile, opt_level, debug, print_ir, backend, dump_dir, "
                         "fast_math, target, run_passes, strip_loc, print_ir_before_all, "
                         "compiler_args",
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
  // Each argument reaches the compiler as one argv entry: empty ones and NULs cannot.
  if (compiler_args.size() > kMaxCompilerArgs) {
    throw_argument_error(ErrorKind::kInvalidArgument, "tl::jit", "compiler_args",
                         "at most " + std::to_string(kMaxCompilerArgs) + " arguments",
                         std::to_string(compiler_args.size()));
  }
  for (const std::string& arg : compiler_args) {
    if (arg.empty() || arg.size() > kMaxCompilerArgLength || arg.find('\0') != std::string::npos) {
      throw_argument_error(ErrorKind::kInvalidArgument, "tl::jit", "compiler_args",
                           "non-empty arguments of at most " +
                               std::to_string(kMaxCompilerArgLength) + " characters without NUL",
                           quoted_prefix(arg));
    }
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
         ";fast_math=" + std::to_string(fast_math) + ";target=" + target +
         ";run_passes=" + std::to_string(run_passes) + ";strip_loc=" + std::to_string(strip_loc) +
         ";print_ir_before_all=" + std::to_string(print_ir_before_all) +
         ";compiler_args=" + compiler_args_key(compiler_args);
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
