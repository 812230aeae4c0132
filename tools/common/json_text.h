// SPDX-License-Identifier: Apache-2.0
#pragma once
// JSON as the tools write it (symmem-stat --json, symmem-report's live-stats.json): one document built
// in order, on one line, with commas and quoting done here so that a caller cannot forget either.
//
//   JsonWriter j;
//   j.beginObject().key("pid").value(int64_t{42}).key("program").value("python3").endObject();
//   j.text()  // {"pid":42,"program":"python3"}
//
// Strings are written as valid UTF-8 whatever the input holds: control characters escaped, a byte
// that is not part of a valid UTF-8 sequence replaced by U+FFFD. A number that is not finite is null.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace symmem {

// `text` as a JSON string literal, quotes included.
std::string jsonString(std::string_view text);
// `text` with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD.
std::string withValidUtf8(std::string_view text);

class JsonWriter {
 public:
  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  // The next member's name (inside an object only; its value follows).
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(uint64_t n);
  JsonWriter& value(int64_t n);
  JsonWriter& value(int n) { return value(static_cast<int64_t>(n)); }
  JsonWriter& value(bool b);
  // At most `decimals` digits after the point, trailing zeros dropped: 2.5, 0.125, 3.
  JsonWriter& value(double x, int decimals = 3);
  JsonWriter& value(std::optional<double> x, int decimals = 3);
  JsonWriter& null();

  const std::string& text() const { return out_; }

 private:
  void separate();  // the comma before a value or a key, where one is due
  std::string out_;
  std::vector<bool> empty_;  // per open object or array: nothing written in it yet
  bool afterKey_ = false;
};

// `x` with at most `decimals` digits after the point, trailing zeros (and a bare point) dropped;
// "-0" is written "0".
std::string decimalText(double x, int decimals);

}  // namespace symmem
