// SPDX-License-Identifier: Apache-2.0
#pragma once
// A value or the reason there is none. libstdc++ 12 has no std::expected, and the topology code must
// never let an exception escape into NCCL's process, so parsers and loaders return this instead.
#include <optional>
#include <string>
#include <utility>

namespace symmem {

template <class T>
class Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}  // NOLINT: implicit, so `return topology;` reads well
  static Expected failure(std::string error) {
    Expected e;
    e.error_ = std::move(error);
    return e;
  }

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }
  // Empty when ok(); otherwise "file:line: what was expected, what was found".
  const std::string& error() const { return error_; }

 private:
  Expected() = default;
  std::optional<T> value_;
  std::string error_;
};

}  // namespace symmem
