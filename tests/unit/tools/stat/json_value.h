// SPDX-License-Identifier: Apache-2.0
#pragma once
// Just enough of a JSON reader to check what symmem-stat --json writes: objects, arrays, strings
// (with the escapes it writes), numbers, true, false, null. A document it cannot read is an error
// with the offset, never a guess.
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace symmem::testing {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;  // a string, or a number as written
  std::vector<JsonValue> items;
  std::map<std::string, JsonValue> members;

  const JsonValue& operator[](const std::string& key) const {
    const auto it = members.find(key);
    if (kind != Kind::Object || it == members.end()) throw std::runtime_error("no member " + key);
    return it->second;
  }
  const JsonValue& operator[](size_t i) const {
    if (kind != Kind::Array || i >= items.size()) throw std::runtime_error("no item " + std::to_string(i));
    return items[i];
  }
  bool has(const std::string& key) const { return members.count(key) != 0; }
  uint64_t u64() const { return std::strtoull(text.c_str(), nullptr, 10); }
};

class JsonReader {
 public:
  static JsonValue parse(const std::string& text) {
    JsonReader r(text);
    JsonValue v = r.value();
    r.space();
    if (r.at_ != text.size()) r.fail("text after the document");
    return v;
  }

 private:
  explicit JsonReader(const std::string& t) : t_(t) {}
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("JSON at " + std::to_string(at_) + ": " + why);
  }
  void space() {
    while (at_ < t_.size() && (t_[at_] == ' ' || t_[at_] == '\n' || t_[at_] == '\t' || t_[at_] == '\r')) ++at_;
  }
  char peek() {
    space();
    if (at_ >= t_.size()) fail("unexpected end");
    return t_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected ") + c);
    ++at_;
  }
  bool word(const char* w) {
    const std::string s(w);
    if (t_.compare(at_, s.size(), s) != 0) return false;
    at_ += s.size();
    return true;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (at_ >= t_.size()) fail("unterminated string");
      const char c = t_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = t_[at_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          const unsigned code = static_cast<unsigned>(std::stoul(t_.substr(at_, 4), nullptr, 16));
          at_ += 4;
          if (code < 0x80) {
            out += static_cast<char>(code);
          } else if (code < 0x800) {
            out += static_cast<char>(0xc0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3f));
          } else {
            out += static_cast<char>(0xe0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (code & 0x3f));
          }
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }
  JsonValue value() {
    JsonValue v;
    const char c = peek();
    if (c == '{') {
      v.kind = JsonValue::Kind::Object;
      ++at_;
      if (peek() == '}') return ++at_, v;
      while (true) {
        std::string k = string();
        expect(':');
        v.members[k] = value();
        if (peek() == '}') return ++at_, v;
        expect(',');
      }
    }
    if (c == '[') {
      v.kind = JsonValue::Kind::Array;
      ++at_;
      if (peek() == ']') return ++at_, v;
      while (true) {
        v.items.push_back(value());
        if (peek() == ']') return ++at_, v;
        expect(',');
      }
    }
    if (c == '"') {
      v.kind = JsonValue::Kind::String;
      v.text = string();
      return v;
    }
    if (word("true") || word("false")) {
      v.kind = JsonValue::Kind::Bool;
      v.boolean = t_[at_ - 1] == 'e' && t_[at_ - 2] == 'u';
      return v;
    }
    if (word("null")) return v;
    const size_t from = at_;
    while (at_ < t_.size() && std::string("-+.eE0123456789").find(t_[at_]) != std::string::npos) ++at_;
    if (at_ == from) fail("expected a value");
    v.kind = JsonValue::Kind::Number;
    v.text = t_.substr(from, at_ - from);
    v.number = std::strtod(v.text.c_str(), nullptr);
    return v;
  }

  const std::string& t_;
  size_t at_ = 0;
};

}  // namespace symmem::testing
