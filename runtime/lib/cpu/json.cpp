//===- json.cpp - Minimal JSON reader and writer
//---------------------------===//
//
// A strict RFC 8259 parser (recursive descent with a depth limit) and the
// string/number writers used for safetensors headers and state.json. No
// third-party dependency.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

namespace triax::rt::json {

const Value *Value::get(std::string_view key) const {
  if (kind != Kind::Object)
    return nullptr;
  for (const auto &m : members)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

static bool isIntegerLiteral(const std::string &t) {
  return t.find_first_of(".eE") == std::string::npos;
}

bool Value::toInt64(int64_t &out) const {
  if (kind != Kind::Number || !isIntegerLiteral(text))
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  out = v;
  return true;
}

bool Value::toUInt64(uint64_t &out) const {
  if (kind != Kind::Number || !isIntegerLiteral(text) || text[0] == '-')
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long v = strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  out = v;
  return true;
}

bool Value::toDouble(double &out) const {
  if (kind == Kind::Null) {
    out = NAN;
    return true;
  }
  if (kind != Kind::Number)
    return false;
  char *end = nullptr;
  out = strtod(text.c_str(), &end);
  return *end == '\0';
}

bool Value::toFloat(float &out) const {
  if (kind == Kind::Null) {
    out = NAN;
    return true;
  }
  if (kind != Kind::Number)
    return false;
  char *end = nullptr;
  out = strtof(text.c_str(), &end);
  return *end == '\0';
}

namespace {

constexpr int kMaxDepth = 256;

class Parser {
public:
  explicit Parser(std::string_view text) : s(text) {}

  bool run(Value &out, std::string &error) {
    skipWs();
    bool ok = parseValue(out, 0);
    if (ok) {
      skipWs();
      if (pos != s.size())
        ok = fail("unexpected trailing data");
    }
    if (!ok)
      error = "at byte " + std::to_string(errPos) + ": " + msg;
    return ok;
  }

private:
  std::string_view s;
  size_t pos = 0;
  bool failed = false;
  size_t errPos = 0;
  std::string msg;

  bool fail(const std::string &m) {
    if (!failed) {
      failed = true;
      errPos = pos;
      msg = m;
    }
    return false;
  }

  void skipWs() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' ||
                              s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }

  bool literal(const char *word) {
    size_t n = strlen(word);
    if (s.substr(pos, n) != word)
      return fail(std::string("invalid literal (expected '") + word + "')");
    pos += n;
    return true;
  }

  static std::string describe(char c) {
    if (c >= 0x20 && c < 0x7f)
      return std::string("'") + c + "'";
    char buf[16];
    snprintf(buf, sizeof(buf), "byte 0x%02x", unsigned(uint8_t(c)));
    return buf;
  }

  bool parseValue(Value &v, int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (pos >= s.size())
      return fail("unexpected end of input, expected a value");
    char c = s[pos];
    switch (c) {
    case '{':
      return parseObject(v, depth);
    case '[':
      return parseArray(v, depth);
    case '"':
      v.kind = Kind::String;
      return parseString(v.text);
    case 't':
      v.kind = Kind::Bool;
      v.boolean = true;
      return literal("true");
    case 'f':
      v.kind = Kind::Bool;
      v.boolean = false;
      return literal("false");
    case 'n':
      v.kind = Kind::Null;
      return literal("null");
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(v);
      return fail("unexpected " + describe(c) + ", expected a value");
    }
  }

  bool parseObject(Value &v, int depth) {
    v.kind = Kind::Object;
    ++pos; // '{'
    skipWs();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    std::unordered_set<std::string> seen;
    for (;;) {
      skipWs();
      if (pos >= s.size())
        return fail("unexpected end of input in object");
      if (s[pos] != '"')
        return fail("unexpected " + describe(s[pos]) +
                    ", expected a string key");
      size_t keyPos = pos;
      std::string key;
      if (!parseString(key))
        return false;
      if (!seen.insert(key).second) {
        pos = keyPos;
        return fail("duplicate key \"" + key + "\"");
      }
      skipWs();
      if (pos >= s.size() || s[pos] != ':')
        return fail(pos >= s.size()
                        ? "unexpected end of input, expected ':'"
                        : "unexpected " + describe(s[pos]) + ", expected ':'");
      ++pos;
      skipWs();
      v.members.emplace_back(std::move(key), Value());
      if (!parseValue(v.members.back().second, depth + 1))
        return false;
      skipWs();
      if (pos >= s.size())
        return fail("unexpected end of input in object");
      if (s[pos] == ',') {
        ++pos;
        continue;
      }
      if (s[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("unexpected " + describe(s[pos]) + ", expected ',' or '}'");
    }
  }

  bool parseArray(Value &v, int depth) {
    v.kind = Kind::Array;
    ++pos; // '['
    skipWs();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    for (;;) {
      skipWs();
      v.items.emplace_back();
      if (!parseValue(v.items.back(), depth + 1))
        return false;
      skipWs();
      if (pos >= s.size())
        return fail("unexpected end of input in array");
      if (s[pos] == ',') {
        ++pos;
        continue;
      }
      if (s[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("unexpected " + describe(s[pos]) + ", expected ',' or ']'");
    }
  }

  bool parseNumber(Value &v) {
    size_t start = pos;
    auto digit = [&](size_t i) {
      return i < s.size() && s[i] >= '0' && s[i] <= '9';
    };
    if (s[pos] == '-')
      ++pos;
    if (!digit(pos))
      return fail("invalid number: expected a digit");
    if (s[pos] == '0') {
      ++pos;
      if (digit(pos))
        return fail("invalid number: leading zero");
    } else {
      while (digit(pos))
        ++pos;
    }
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      if (!digit(pos))
        return fail("invalid number: expected a digit after '.'");
      while (digit(pos))
        ++pos;
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
        ++pos;
      if (!digit(pos))
        return fail("invalid number: expected a digit in the exponent");
      while (digit(pos))
        ++pos;
    }
    v.kind = Kind::Number;
    v.text.assign(s.substr(start, pos - start));
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
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

  bool hex4(uint32_t &out) {
    if (pos + 4 > s.size())
      return fail("unexpected end of input in \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s[pos + i];
      uint32_t d;
      if (c >= '0' && c <= '9')
        d = uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = uint32_t(c - 'A' + 10);
      else
        return fail("invalid \\u escape");
      out = out * 16 + d;
    }
    pos += 4;
    return true;
  }

  /// Validates one UTF-8 sequence starting at pos and copies it.
  bool utf8(std::string &out) {
    uint8_t c = uint8_t(s[pos]);
    size_t n;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return fail("invalid UTF-8 in string");
    }
    if (pos + n >= s.size())
      return fail("invalid UTF-8 in string");
    for (size_t i = 1; i <= n; ++i) {
      uint8_t cc = uint8_t(s[pos + i]);
      if ((cc & 0xC0) != 0x80)
        return fail("invalid UTF-8 in string");
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return fail("invalid UTF-8 in string");
    out.append(s.substr(pos, n + 1));
    pos += n + 1;
    return true;
  }

  bool parseString(std::string &out) {
    ++pos; // opening quote
    out.clear();
    for (;;) {
      if (pos >= s.size())
        return fail("unterminated string");
      char c = s[pos];
      if (c == '"') {
        ++pos;
        return true;
      }
      if (uint8_t(c) < 0x20)
        return fail("control character in string");
      if (uint8_t(c) >= 0x80) {
        if (!utf8(out))
          return false;
        continue;
      }
      if (c != '\\') {
        out += c;
        ++pos;
        continue;
      }
      ++pos;
      if (pos >= s.size())
        return fail("unterminated string");
      char e = s[pos++];
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
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo;
          if (pos + 2 > s.size() || s[pos] != '\\' || s[pos + 1] != 'u')
            return fail("unpaired surrogate in \\u escape");
          pos += 2;
          if (!hex4(lo))
            return false;
          if (lo < 0xDC00 || lo > 0xDFFF)
            return fail("unpaired surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail("unpaired surrogate in \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --pos;
        return fail("invalid escape " + describe(e) + " in string");
      }
    }
  }
};

} // namespace

bool parse(std::string_view text, Value &out, std::string &error) {
  out = Value();
  Parser p(text);
  return p.run(out, error);
}

void appendString(std::string &out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (uint8_t(c) < 0x20) {
        char buf[8];
        snprintf(buf, sizeof(buf), "\\u%04x", unsigned(uint8_t(c)));
        out += buf;
      } else {
        out += c;
      }
    }
  }
  out += '"';
}

void appendDouble(std::string &out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  snprintf(buf, sizeof(buf), "%.17g", v);
  out += buf;
}

void appendFloat(std::string &out, float v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  snprintf(buf, sizeof(buf), "%.9g", double(v));
  out += buf;
}

bool parseStringMap(std::string_view text,
                    std::vector<std::pair<std::string, std::string>> &out,
                    std::string &error) {
  Value v;
  if (!parse(text, v, error))
    return false;
  if (!v.isObject()) {
    error = "expected a JSON object";
    return false;
  }
  out.clear();
  for (auto &m : v.members) {
    if (!m.second.isString()) {
      error = "value of \"" + m.first + "\" is not a string";
      return false;
    }
    out.emplace_back(m.first, m.second.text);
  }
  return true;
}

} // namespace triax::rt::json
