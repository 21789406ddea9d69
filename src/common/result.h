// Result<T>: a value or an Error. gpucloud's layers return these instead of throwing.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gpucloud {

/// What went wrong, in a form that maps to one HTTP status (see http_status()).
enum class ErrorCode {
  kInvalidArgument,   // the caller sent something wrong (400)
  kUnauthenticated,   // missing or wrong credentials (401)
  kPermissionDenied,  // authenticated but not allowed (403)
  kNotFound,          // no such object, or not visible to the caller (404)
  kConflict,          // the object's state does not allow this (409)
  kUnsatisfiable,     // valid, but no node could ever run it (422)
  kTooLarge,          // request body or field above a limit (413)
  kUnavailable,       // try again later (503)
  kInternal,          // a bug or an I/O failure on our side (500)
};

/// The stable machine-readable name of a code, as used in JSON error bodies.
const char* error_code_name(ErrorCode code);

/// The HTTP status a code maps to. This is the only place where that mapping lives.
int http_status(ErrorCode code);

/// An error: a code plus a message that says what was wrong, with what value, and what to do.
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

inline Error invalid(std::string message) {
  return {ErrorCode::kInvalidArgument, std::move(message)};
}
inline Error internal(std::string message) {
  return {ErrorCode::kInternal, std::move(message)};
}
inline Error not_found(std::string message) {
  return {ErrorCode::kNotFound, std::move(message)};
}

/// A value of type T or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit on purpose
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace gpucloud

/// Evaluates a Result-returning expression and returns its error from the enclosing function.
#define GPUCLOUD_TRY(expr)                                               \
  do {                                                                   \
    auto gpucloud_try_result_ = (expr);                                  \
    if (!gpucloud_try_result_.ok()) return gpucloud_try_result_.error(); \
  } while (0)
