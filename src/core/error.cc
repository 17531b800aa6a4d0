#include "tileops/core/error.h"

namespace tileops {

std::string_view name_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return "invalid argument";
    case ErrorKind::kInvalidType:
      return "invalid type";
    case ErrorKind::kUnsupported:
      return "unsupported";
    case ErrorKind::kOutOfMemory:
      return "out of memory";
    case ErrorKind::kCompileError:
      return "compile error";
    case ErrorKind::kInternal:
      return "internal error";
  }
  return "unknown";
}

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error(message), kind_(kind) {}

void throw_argument_error(ErrorKind kind, std::string_view op, std::string_view arg,
                          std::string_view expected, std::string_view actual) {
  std::string message;
  message.append(op).append(": argument '").append(arg).append("': expected ");
  message.append(expected).append(", got ").append(actual);
  throw Error(kind, message);
}

void throw_internal_error(std::string_view where, std::string_view what) {
  std::string message("internal error in ");
  message.append(where).append(": ").append(what).append(" (please report this bug)");
  throw Error(ErrorKind::kInternal, message);
}

}  // namespace tileops
