#pragma once
// Result<T>: the value of a core operation or a typed error with a message.
// Core functions return this instead of throwing; the CLI maps ErrorCode to an
// exit code (cli/exit_codes.cpp) and the server to an HTTP status, each in one place.

#include <string>
#include <utility>
#include <variant>

namespace powerctl {

enum class ErrorCode {
  kInvalidInput,  // bad flags, config or manifest input: the user can fix it (exit 2)
  kNotFound,      // a named file or object does not exist (exit 1)
  kIo,            // filesystem error (exit 1)
  kNetwork,       // connection refused, TLS, timeout (exit 1)
  kApi,           // the Kubernetes API or another server answered with an error (exit 1)
  kForbidden,     // RBAC denied (exit 1)
  kConflict,      // the object exists / was changed by someone else (exit 1)
  kCheckFailed,   // a check found problems (exit 3)
  kInterrupted,   // SIGINT (exit 130)
  kInternal,      // a bug: should not happen (exit 1)
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

inline Error MakeError(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : data_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<Error>(data_); }

 private:
  std::variant<T, Error> data_;
};

// Result<void>: success or an error.
struct Ok {};
using Status = Result<Ok>;
inline Status OkStatus() {
  return Ok{};
}

// Prefixes an error message with context ("reading powerctl.yaml: ...").
inline Error WithContext(Error e, const std::string& context) {
  e.message = context + ": " + e.message;
  return e;
}

}  // namespace powerctl

// Propagates an error from a Result-returning expression.
#define POWERCTL_TRY(var, expr)                          \
  auto var##_result_ = (expr);                           \
  if (!var##_result_.ok()) return var##_result_.error(); \
  auto var = std::move(var##_result_).value()

#define POWERCTL_CHECK_OK(expr)                \
  do {                                         \
    auto status_ = (expr);                     \
    if (!status_.ok()) return status_.error(); \
  } while (0)
