// The one exception type of tileops. Messages name the operator, the argument, what was
// expected and what was given: "rms_norm: argument 'weight': expected shape [4096], got [4095]".
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace tileops {

enum class ErrorKind {
  kInvalidArgument,  // bad shape, rank, value, stride, aliasing (Python: ValueError)
  kInvalidType,      // wrong dtype (Python: TypeError)
  kUnsupported,      // valid request this build/device cannot serve (NotImplementedError)
  kOutOfMemory,
  kCompileError,
  kInternal,  // a bug in tileops (RuntimeError)
};

std::string_view name_of(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message);

  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Throws Error with "<op>: argument '<arg>': expected <expected>, got <actual>".
[[noreturn]] void throw_argument_error(ErrorKind kind, std::string_view op, std::string_view arg,
                                       std::string_view expected, std::string_view actual);

// Throws an Internal error; for conditions that only a tileops bug can produce.
[[noreturn]] void throw_internal_error(std::string_view where, std::string_view what);

}  // namespace tileops
