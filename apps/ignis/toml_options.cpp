// A reader for the flat TOML of config files (toml_options.h), after TOML 1.0: the whole text
// is checked as UTF-8 first; then one line at a time: blank, a comment, or `key = value`
// with an optional comment after it.
#include "toml_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>

namespace ignis_cli {
namespace {

using nlohmann::json;

/// The code point of the UTF-8 sequence at text[i] and its length, or {-1, 0} when the bytes
/// there are not valid UTF-8 (truncated, overlong, a surrogate, past U+10FFFF).
std::pair<int32_t, size_t> decode_utf8(const std::string& text, size_t i) {
  const auto b0 = uint8_t(text[i]);
  if (b0 < 0x80) return {b0, 1};
  const size_t n = b0 >= 0xF0 && b0 <= 0xF4 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC2 && b0 < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > text.size()) return {-1, 0};
  int32_t cp = b0 & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < n; ++k) {
    const auto b = uint8_t(text[i + k]);
    if ((b & 0xC0) != 0x80) return {-1, 0};
    cp = (cp << 6) | (b & 0x3F);
  }
  const int32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {-1, 0};
  return {cp, n};
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

/// Control characters TOML allows in no string or comment (tab is allowed).
bool forbidden_control(int32_t cp) { return (cp < 0x20 && cp != '\t') || cp == 0x7F; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }
/// The characters of a bare key (ASCII only, whatever the locale).
bool is_bare_key_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-';
}

class Reader {
 public:
  explicit Reader(const std::string& text) : s_(text) {}

  json read() {
    check_utf8();
    json out = json::object();
    while (i_ < s_.size()) {
      skip_blanks();
      if (at_line_end()) {
        finish_line();
        continue;
      }
      if (peek() == '[')
        fail("a table header; the options of 'ignis train' are top-level keys (key = value lines)");
      const int key_line = line_;
      const std::string key = read_key();
      skip_blanks();
      if (peek() == '.')
        fail(fmt::format(
            "the dotted key '{}.…' makes a table; the options of 'ignis train' are "
            "top-level keys",
            key));
      if (peek() != '=')
        fail(fmt::format("not valid TOML: expected '=' after the key '{}', {}", key, found()));
      ++i_;
      skip_blanks();
      json value = read_value(key);
      if (out.contains(key))
        fail(fmt::format("not valid TOML: the key '{}' is given twice", key), key_line);
      out[key] = std::move(value);
      skip_blanks();
      if (!at_line_end())
        fail(fmt::format(
            "not valid TOML: unexpected text after the value of '{}', {}", key, found()));
      finish_line();
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what, int line = 0) const {
    throw TomlError(line > 0 ? line : line_, what);
  }

  char peek(size_t ahead = 0) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : '\0'; }

  /// What stands at the read position, for messages: "found 'x'", "found U+0407", "found the
  /// end of the line".
  std::string found() const {
    if (i_ >= s_.size() || s_[i_] == '\n' || s_[i_] == '\r') return "found the end of the line";
    const auto [cp, n] = decode_utf8(s_, i_);
    if (cp >= 0x21 && cp < 0x7F) return fmt::format("found '{}'", char(cp));
    return fmt::format("found U+{:04X}", cp);
  }

  void check_utf8() {
    int line = 1;
    for (size_t i = 0; i < s_.size();) {
      const auto [cp, n] = decode_utf8(s_, i);
      if (cp < 0)
        throw TomlError(line, "not valid UTF-8 (a TOML file must be); fix the file's encoding");
      if (cp == '\n') ++line;
      i += n;
    }
  }

  void skip_blanks() {
    while (peek() == ' ' || peek() == '\t') ++i_;
  }
  bool at_line_end() const {
    return i_ >= s_.size() || peek() == '\n' || peek() == '#' ||
           (peek() == '\r' && peek(1) == '\n');
  }
  /// Skips a comment, then the newline (\n or \r\n) or the end of the text.
  void finish_line() {
    if (peek() == '#') {
      ++i_;
      while (i_ < s_.size() && peek() != '\n' && !(peek() == '\r' && peek(1) == '\n')) {
        const auto [cp, n] = decode_utf8(s_, i_);
        if (forbidden_control(cp))
          fail(fmt::format("not valid TOML: the control character U+{:04X} in a comment", cp));
        i_ += n;
      }
    }
    if (peek() == '\r') ++i_;
    if (peek() == '\n') {
      ++i_;
      ++line_;
    } else if (i_ < s_.size()) {
      fail(fmt::format("not valid TOML: {} where the line should end", found()));
    }
  }

  std::string read_key() {
    if (peek() == '"') return read_basic_string();
    if (peek() == '\'') return read_literal_string();
    const size_t start = i_;
    while (is_bare_key_char(peek())) ++i_;
    if (i_ == start)
      fail(fmt::format(
          "not valid TOML: expected a key (letters, digits, '_' and '-', or a quoted "
          "string), {}",
          found()));
    return s_.substr(start, i_ - start);
  }

  json read_value(const std::string& key) {
    const char c = peek();
    if (c == '"' || c == '\'') {
      if (peek(1) == c && peek(2) == c)
        fail(fmt::format("the value of '{}' is a multi-line string; write it on one line", key));
      return c == '"' ? read_basic_string() : read_literal_string();
    }
    if (c == '[' || c == '{')
      fail(fmt::format(
          "the value of '{}' is {}; an option takes a number, a string or "
          "true/false",
          key,
          c == '[' ? "an array" : "an inline table"));
    if (at_line_end()) fail(fmt::format("not valid TOML: expected a value after '{} ='", key));
    // A bare token: a boolean, a number, or a date/time (refused).
    const size_t start = i_;
    while (i_ < s_.size() && (is_bare_key_char(peek()) ||
                              std::string_view("+.:").find(peek()) != std::string_view::npos))
      ++i_;
    const std::string token = s_.substr(start, i_ - start);
    if (token == "true") return true;
    if (token == "false") return false;
    if (token.find(':') != std::string::npos ||
        (token.size() >= 5 && is_digit(token[0]) && is_digit(token[3]) && token[4] == '-'))
      fail(fmt::format(
          "the value of '{}' is a date or time; an option takes a number, a string "
          "or true/false",
          key));
    return read_number(key, token);
  }

  /// TOML's integers (decimal, 0x, 0o, 0b) and floats (with inf and nan); '_' only between
  /// digits, no leading zeros.
  json read_number(const std::string& key, const std::string& token) {
    const auto bad = [&](const char* why) {
      fail(fmt::format(
          "not valid TOML: '{}' (the value of '{}') is not a number: {}", token, key, why));
    };
    if (token.empty()) bad("nothing there");
    size_t p = 0;
    const bool negative = token[0] == '-';
    if (token[0] == '+' || token[0] == '-') p = 1;
    const std::string body = token.substr(p);
    if (body == "inf" || body == "nan")
      return body == "inf" ? (negative ? -std::numeric_limits<double>::infinity()
                                       : std::numeric_limits<double>::infinity())
                           : std::numeric_limits<double>::quiet_NaN();
    // Digits without their underscores, each '_' checked to sit between two digits.
    const auto strip = [&](const std::string& t, auto is_digit_of) {
      std::string d;
      for (size_t k = 0; k < t.size(); ++k) {
        if (t[k] == '_') {
          if (k == 0 || k + 1 == t.size() || !is_digit_of(t[k - 1]) || !is_digit_of(t[k + 1]))
            bad("'_' must stand between two digits");
          continue;
        }
        d += t[k];
      }
      return d;
    };
    if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'o' || body[1] == 'b')) {
      if (p != 0) bad("a hexadecimal, octal or binary integer takes no sign");
      const int base = body[1] == 'x' ? 16 : body[1] == 'o' ? 8 : 2;
      const auto digit_of = [base](char ch) {
        const int v = is_digit(ch)               ? ch - '0'
                      : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
                      : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
                                                 : 99;
        return v < base;
      };
      const std::string digits = strip(body.substr(2), digit_of);
      for (char ch : digits)
        if (!digit_of(ch)) bad("a digit outside its base");
      uint64_t v = 0;
      const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
      if (r.ec != std::errc() || v > uint64_t(std::numeric_limits<int64_t>::max()))
        bad("out of the range of a 64-bit integer");
      return int64_t(v);
    }
    const std::string digits = strip(body, is_digit);
    // The integer part: digits, no leading zero (but "0" itself).
    size_t k = 0;
    while (k < digits.size() && is_digit(digits[k])) ++k;
    if (k == 0) bad("expected a digit");
    if (digits[0] == '0' && k > 1) bad("leading zeros are not allowed");
    bool is_float = false;
    if (k < digits.size() && digits[k] == '.') {
      is_float = true;
      const size_t f = ++k;
      while (k < digits.size() && is_digit(digits[k])) ++k;
      if (k == f) bad("a digit must follow the decimal point");
    }
    if (k < digits.size() && (digits[k] == 'e' || digits[k] == 'E')) {
      is_float = true;
      ++k;
      if (k < digits.size() && (digits[k] == '+' || digits[k] == '-')) ++k;
      const size_t e = k;
      while (k < digits.size() && is_digit(digits[k])) ++k;
      if (k == e) bad("the exponent needs digits");
    }
    if (k != digits.size()) bad("unexpected characters");
    const std::string text = (negative ? "-" : "") + digits;
    if (is_float) {
      double v = 0;
      const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
      if (r.ec != std::errc()) bad("out of the range of a double");
      return v;
    }
    int64_t v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc()) bad("out of the range of a 64-bit integer");
    return v;
  }

  /// A "..." string with TOML's escapes; the read position is on the opening quote.
  std::string read_basic_string() {
    std::string out;
    ++i_;
    while (true) {
      if (i_ >= s_.size() || peek() == '\n' || peek() == '\r')
        fail("not valid TOML: a string is not closed on its line");
      const char c = peek();
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c == '\\') {
        const char e = peek(1);
        i_ += 2;
        switch (e) {
          case 'b':
            out += '\b';
            continue;
          case 't':
            out += '\t';
            continue;
          case 'n':
            out += '\n';
            continue;
          case 'f':
            out += '\f';
            continue;
          case 'r':
            out += '\r';
            continue;
          case '"':
            out += '"';
            continue;
          case '\\':
            out += '\\';
            continue;
          case 'u':
          case 'U': {
            const size_t n = e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            const auto r =
                std::from_chars(s_.data() + i_, s_.data() + std::min(s_.size(), i_ + n), cp, 16);
            if (r.ec != std::errc() || r.ptr != s_.data() + i_ + n || cp > 0x10FFFF ||
                (cp >= 0xD800 && cp <= 0xDFFF))
              fail(fmt::format(
                  "not valid TOML: \\{} must be followed by {} hexadecimal digits of a "
                  "Unicode scalar value",
                  e,
                  n));
            append_utf8(out, cp);
            i_ += n;
            continue;
          }
          default:
            --i_;  // point at the escaped character
            fail(fmt::format(
                "not valid TOML: the escape '\\' followed by {} is not one of TOML's",
                found().substr(6)));
        }
      }
      const auto [cp, n] = decode_utf8(s_, i_);
      if (forbidden_control(cp))
        fail(fmt::format(
            "not valid TOML: the control character U+{:04X} in a string (write it "
            "as an escape)",
            cp));
      out.append(s_, i_, n);
      i_ += n;
    }
  }

  /// A '...' string, taken as written; the read position is on the opening quote.
  std::string read_literal_string() {
    const size_t start = ++i_;
    while (true) {
      if (i_ >= s_.size() || peek() == '\n' || peek() == '\r')
        fail("not valid TOML: a string is not closed on its line");
      if (peek() == '\'') return s_.substr(start, i_++ - start);
      const auto [cp, n] = decode_utf8(s_, i_);
      if (forbidden_control(cp))
        fail(fmt::format("not valid TOML: the control character U+{:04X} in a string", cp));
      i_ += n;
    }
  }

  const std::string& s_;
  size_t i_ = 0;
  int line_ = 1;
};

}  // namespace

json parse_toml_options(const std::string& text) { return Reader(text).read(); }

}  // namespace ignis_cli
