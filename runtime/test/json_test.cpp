//===- json_test.cpp - Tests of the runtime's internal JSON parser
//---------===//
//
// Usage: triax-rt-json-test       run all checks
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "internal.h"

#include <cmath>
#include <random>

using namespace triax::rt;

namespace {

json::Value parseOk(const std::string &text) {
  json::Value v;
  std::string err;
  bool ok = json::parse(text, v, err);
  if (!ok)
    trxtest::failed(__FILE__, __LINE__,
                    "parse of '" + text + "' failed: " + err);
  return v;
}

std::string parseErr(const std::string &text) {
  json::Value v;
  std::string err;
  if (json::parse(text, v, err))
    trxtest::failed(__FILE__, __LINE__, "parse of '" + text + "' succeeded");
  return err;
}

void testValues() {
  json::Value v = parseOk(
      " {\"a\": [1, -2.5e3, true, false, null], \"b\": {\"c\": \"d\"}} \n");
  CHECK(v.isObject());
  CHECK_EQ(v.members.size(), size_t(2));
  const json::Value *a = v.get("a");
  CHECK(a && a->isArray() && a->items.size() == 5);
  int64_t i = 0;
  CHECK(a->items[0].toInt64(i));
  CHECK_EQ(i, int64_t(1));
  double d = 0;
  CHECK(!a->items[1].toInt64(i)); // Not an integer literal.
  CHECK(a->items[1].toDouble(d));
  CHECK_EQ(d, -2500.0);
  CHECK(a->items[2].kind == json::Kind::Bool && a->items[2].boolean);
  CHECK(a->items[3].kind == json::Kind::Bool && !a->items[3].boolean);
  CHECK(a->items[4].kind == json::Kind::Null);
  CHECK(a->items[4].toDouble(d) && std::isnan(d));
  CHECK_EQ(v.get("b")->get("c")->text, std::string("d"));
  CHECK(v.get("zz") == nullptr);

  // 64-bit integers are exact.
  json::Value big = parseOk("[18446744073709551615, -9223372036854775808, "
                            "18446744073709551616]");
  uint64_t u = 0;
  CHECK(big.items[0].toUInt64(u));
  CHECK_EQ(u, UINT64_MAX);
  CHECK(!big.items[0].toInt64(i)); // Out of int64 range.
  CHECK(big.items[1].toInt64(i));
  CHECK_EQ(i, INT64_MIN);
  CHECK(!big.items[1].toUInt64(u));
  CHECK(!big.items[2].toUInt64(u)); // 2^64 overflows.

  // Float round trip through appendFloat.
  for (float f : {0.1f, 6e-4f, 3.14159274f, 1e-30f, -123456.789f}) {
    std::string s;
    json::appendFloat(s, f);
    float back = 0;
    CHECK(parseOk(s).toFloat(back));
    CHECK_EQ(back, f);
  }
  std::string s;
  json::appendFloat(s, NAN);
  CHECK_EQ(s, std::string("null"));
}

void testStrings() {
  json::Value v =
      parseOk(R"(["a\"b\\c\/d\b\f\n\r\t", "\u00e9\u4e2d\ud83d\ude00", "é"])");
  CHECK_EQ(v.items[0].text, std::string("a\"b\\c/d\b\f\n\r\t"));
  CHECK_EQ(v.items[1].text,
           std::string("\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80"));
  CHECK_EQ(v.items[2].text, std::string("\xc3\xa9"));

  // Writer round trip, including control characters.
  std::string raw = std::string("q\"\\\n\x01 z\xc3\xa9", 9);
  std::string out;
  json::appendString(out, raw);
  CHECK_EQ(out, std::string("\"q\\\"\\\\\\n\\u0001 z\xc3\xa9\""));
  CHECK_EQ(parseOk(out).text, raw);
}

void testErrors() {
  CHECK_EQ(parseErr(""), std::string("at byte 0: unexpected end of input, "
                                     "expected a value"));
  CHECK_EQ(parseErr("{\"a\":1,}"),
           std::string("at byte 7: unexpected '}', expected a string key"));
  CHECK_EQ(parseErr("{\"a\" 1}"),
           std::string("at byte 5: unexpected '1', expected ':'"));
  CHECK_EQ(parseErr("{\"a\":1,\"a\":2}"),
           std::string("at byte 7: duplicate key \"a\""));
  CHECK_EQ(parseErr("[1 2]"),
           std::string("at byte 3: unexpected '2', expected ',' or ']'"));
  CHECK_EQ(parseErr("{} x"),
           std::string("at byte 3: unexpected trailing data"));
  CHECK_EQ(parseErr("\"abc"), std::string("at byte 4: unterminated string"));
  CHECK_EQ(parseErr("01"), std::string("at byte 1: invalid number: leading "
                                       "zero"));
  CHECK_EQ(parseErr("1."), std::string("at byte 2: invalid number: expected "
                                       "a digit after '.'"));
  CHECK_EQ(parseErr("tru"),
           std::string("at byte 0: invalid literal (expected 'true')"));
  CHECK_EQ(parseErr("\"\\x\""),
           std::string("at byte 2: invalid escape 'x' in string"));
  CHECK_EQ(parseErr("\"\\ud800\""),
           std::string("at byte 7: unpaired surrogate in \\u escape"));
  CHECK_EQ(parseErr(std::string("\"a\tb\"")),
           std::string("at byte 2: control character in string"));
  CHECK_EQ(parseErr("\"\xff\""),
           std::string("at byte 1: invalid UTF-8 in string"));
  CHECK_EQ(parseErr("\"\xc0\x80\""), // Overlong NUL.
           std::string("at byte 1: invalid UTF-8 in string"));
  CHECK_EQ(parseErr(std::string("\0", 1)),
           std::string("at byte 0: unexpected byte 0x00, expected a value"));

  // Deep nesting is an error, not a stack overflow.
  std::string deep(100000, '[');
  CHECK(parseErr(deep).find("nesting deeper than 256") != std::string::npos);
  std::string ok(200, '[');
  ok += std::string(200, ']');
  parseOk(ok);

  std::vector<std::pair<std::string, std::string>> m;
  std::string err;
  CHECK(json::parseStringMap("{\"k\":\"v\",\"x\":\"\"}", m, err));
  CHECK_EQ(m.size(), size_t(2));
  CHECK(!json::parseStringMap("{\"k\":1}", m, err));
  CHECK_EQ(err, std::string("value of \"k\" is not a string"));
  CHECK(!json::parseStringMap("[]", m, err));
  CHECK_EQ(err, std::string("expected a JSON object"));
}

/// Random short inputs over the JSON alphabet: the parser accepts or rejects
/// each one with a positioned message, never crashes (run under ASan/UBSan).
void testFuzz() {
  const char alphabet[] = "{}[]\":,0123456789-+.eE tfnrulase\\/bu\x01\x80\xc3"
                          "\xa9\xff";
  std::mt19937 rng(7);
  int ok = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string text;
    size_t len = rng() % 24;
    for (size_t i = 0; i < len; ++i)
      text += alphabet[rng() % (sizeof(alphabet) - 1)];
    json::Value v;
    std::string err;
    if (json::parse(text, v, err)) {
      ++ok;
    } else if (err.rfind("at byte ", 0) != 0) {
      trxtest::failed(__FILE__, __LINE__, "bad message: " + err);
    }
  }
  CHECK(ok > 0);
}

void testPaths() {
  CHECK_EQ(dirName("a/b/c"), std::string("a/b"));
  CHECK_EQ(dirName("c"), std::string("."));
  CHECK_EQ(dirName("/c"), std::string("/"));
  CHECK_EQ(dirName("a//b/"), std::string("a"));
  CHECK_EQ(baseName("a/b/c"), std::string("c"));
  CHECK_EQ(joinPath("a/", "b"), std::string("a/b"));
  CHECK_EQ(joinPath("a", "b"), std::string("a/b"));
}

} // namespace

int main() {
  testValues();
  testStrings();
  testErrors();
  testFuzz();
  testPaths();
  trxtest::done("json");
  return 0;
}
