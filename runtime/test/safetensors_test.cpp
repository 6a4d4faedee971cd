//===- safetensors_test.cpp - Safetensors reader/writer tests
//--------------===//
//
// Usage:
//   triax-rt-safetensors-test                 run all checks
//   triax-rt-safetensors-test write FILE      write a sample model file:
//       wte.weight F32 [256, 64], ln_f.bias BF16 [64], step I32 []
//   triax-rt-safetensors-test list FILE       open and list the tensors
//   triax-rt-safetensors-test read FILE NAME DTYPE D0,D1,...
//       read one tensor with the expected dtype and shape ("-" = rank 0)
//   triax-rt-safetensors-test truncate FILE N keep the first N bytes
//   triax-rt-safetensors-test poke FILE OFFSET TEXT
//       overwrite bytes at OFFSET with TEXT (to corrupt a header)
// Errors go to stderr as "error: <message>" with exit status 1.
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "internal.h"
#include "triax_rt.h"

#include <cinttypes>
#include <cmath>
#include <random>

namespace {

struct File {
  trx_safetensors *st = nullptr;
  explicit File(trx_safetensors *p) : st(p) {}
  ~File() { trx_safetensors_close(st); }
};

trx_tensor tensor(const char *name, int32_t dtype,
                  std::initializer_list<int64_t> shape, const void *data) {
  trx_tensor t{};
  t.name = name;
  t.dtype = dtype;
  t.rank = int32_t(shape.size());
  int i = 0;
  for (int64_t d : shape)
    t.shape[i++] = d;
  t.data = data;
  return t;
}

uint64_t headerLength(const std::vector<uint8_t> &b) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(b[size_t(i)]) << (8 * i);
  return n;
}

void testRoundTrip(const trxtest::TempDir &tmp) {
  std::mt19937 rng(123);
  // F32 with special values: -0, denormal, inf, NaN with a payload.
  std::vector<uint32_t> f32(3 * 5);
  for (auto &v : f32)
    v = rng();
  f32[0] = 0x80000000u; // -0
  f32[1] = 0x00000001u; // smallest denormal
  f32[2] = 0x7f800000u; // +inf
  f32[3] = 0x7fc12345u; // NaN with payload
  std::vector<uint16_t> bf16(7);
  for (auto &v : bf16)
    v = uint16_t(rng());
  int32_t scalar = -123456789;
  std::vector<int32_t> i32(2 * 1 * 1 * 1 * 1 * 1 * 1 * 3);
  for (auto &v : i32)
    v = int32_t(rng());

  trx_tensor ts[] = {
      tensor("bias", TRX_BF16, {7}, bf16.data()),
      tensor("w", TRX_F32, {3, 5}, f32.data()),
      tensor("step", TRX_I32, {}, &scalar),
      tensor("empty", TRX_F32, {0, 4}, nullptr),
      tensor("rank8", TRX_I32, {2, 1, 1, 1, 1, 1, 1, 3}, i32.data()),
      tensor("name \"quoted\" \xc3\xa9", TRX_F32, {1}, f32.data()),
  };
  std::string path = tmp / "rt.safetensors";
  char err[512] = "";
  CHECK_EQ(trx_safetensors_write(path.c_str(), 6, ts,
                                 "{\"format\":\"pt\",\"note\":\"a\\nb\"}", err,
                                 sizeof(err)),
           TRX_OK);
  CHECK(!trxtest::fileExists(path + ".tmp." + std::to_string(getpid())));

  // Layout: 8-byte length, header padded to a multiple of 8 with spaces.
  std::vector<uint8_t> bytes = trxtest::readFileBytes(path);
  uint64_t hl = headerLength(bytes);
  CHECK_EQ(hl % 8, uint64_t(0));
  CHECK_EQ(bytes.size(), size_t(8 + hl + 7 * 2 + 15 * 4 + 4 + 0 + 6 * 4 + 4));
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + long(hl));
  CHECK(header.find("{\"__metadata__\":{\"format\":\"pt\"") == 0);
  CHECK(header.find("\"w\":{\"dtype\":\"F32\",\"shape\":[3,5],"
                    "\"data_offsets\":[0,60]}") != std::string::npos);
  // 4-byte dtypes first, the BF16 tensor last.
  CHECK(header.find("\"bias\":{\"dtype\":\"BF16\",\"shape\":[7],"
                    "\"data_offsets\":[92,106]}") != std::string::npos);
  CHECK(header.find("\"step\":{\"dtype\":\"I32\",\"shape\":[],"
                    "\"data_offsets\":[60,64]}") != std::string::npos);

  File F(trx_safetensors_open(path.c_str(), err, sizeof(err)));
  CHECK(F.st != nullptr);
  CHECK_EQ(trx_safetensors_count(F.st), int64_t(6));
  CHECK_STREQ(trx_safetensors_metadata(F.st, "format"), "pt");
  CHECK_STREQ(trx_safetensors_metadata(F.st, "note"), "a\nb");
  CHECK(trx_safetensors_metadata(F.st, "absent") == nullptr);

  for (int i = 0; i < 6; ++i) {
    trx_tensor got{};
    CHECK_EQ(trx_safetensors_get(F.st, i, &got), TRX_OK);
    CHECK_STREQ(got.name, ts[i].name); // Header order = caller's order.
    CHECK_EQ(got.dtype, ts[i].dtype);
    CHECK_EQ(got.rank, ts[i].rank);
    for (int d = 0; d < got.rank; ++d)
      CHECK_EQ(got.shape[d], ts[i].shape[d]);
    size_t bytesN = size_t(trx_tensor_numel(&got)) * trx_dtype_size(got.dtype);
    CHECK_EQ(reinterpret_cast<uintptr_t>(got.data) % trx_dtype_size(got.dtype),
             uintptr_t(0));
    if (bytesN)
      CHECK(memcmp(got.data, ts[i].data, bytesN) == 0); // Bit-exact.
  }
  trx_tensor dummy;
  CHECK_EQ(trx_safetensors_get(F.st, 6, &dummy), TRX_ERR_NOT_FOUND);
  CHECK_EQ(trx_safetensors_get(F.st, -1, &dummy), TRX_ERR_NOT_FOUND);

  std::vector<uint32_t> back(15);
  int64_t shape[] = {3, 5};
  CHECK_EQ(trx_safetensors_read_into(F.st, "w", TRX_F32, 2, shape, back.data(),
                                     err, sizeof(err)),
           TRX_OK);
  CHECK(back == f32);
  int32_t s = 0;
  CHECK_EQ(trx_safetensors_read_into(F.st, "step", TRX_I32, 0, nullptr, &s, err,
                                     sizeof(err)),
           TRX_OK);
  CHECK_EQ(s, scalar);

  // read_tensors: strict rejects files with extra tensors.
  trx_tensor spec = tensor("w", TRX_F32, {3, 5}, nullptr);
  void *dst[] = {back.data()};
  CHECK_EQ(
      trx_safetensors_read_tensors(F.st, 1, &spec, dst, 0, err, sizeof(err)),
      TRX_OK);
  std::string msg = path + ": unexpected tensor 'bias' (not expected by the "
                           "model)";
  CHECK_ERR(
      trx_safetensors_read_tensors(F.st, 1, &spec, dst, 1, err, sizeof(err)),
      TRX_ERR_MISMATCH, err, msg.c_str());

  // Overwriting an existing file works (rename over it).
  CHECK_EQ(
      trx_safetensors_write(path.c_str(), 1, &ts[1], nullptr, err, sizeof(err)),
      TRX_OK);
  File G(trx_safetensors_open(path.c_str(), err, sizeof(err)));
  CHECK_EQ(trx_safetensors_count(G.st), int64_t(1));
  CHECK(trx_safetensors_metadata(G.st, "format") == nullptr);

  // An empty file (no tensors, no metadata) is valid: "{}" + 6 spaces.
  std::string empty = tmp / "empty.safetensors";
  CHECK_EQ(trx_safetensors_write(empty.c_str(), 0, nullptr, nullptr, err,
                                 sizeof(err)),
           TRX_OK);
  CHECK_EQ(trxtest::readFileBytes(empty).size(), size_t(16));
  File E(trx_safetensors_open(empty.c_str(), err, sizeof(err)));
  CHECK(E.st != nullptr);
  CHECK_EQ(trx_safetensors_count(E.st), int64_t(0));
}

/// A file assembled by hand the way other writers lay it out (different key
/// order, whitespace, metadata last, no padding).
void testForeignFile(const trxtest::TempDir &tmp) {
  std::string hdr = "{ \"b\" : {\"data_offsets\": [8, 12], \"shape\": [1], "
                    "\"dtype\": \"I32\"},\n \"a\": {\"dtype\": \"F32\", "
                    "\"shape\": [2], \"data_offsets\": [0, 8]}, "
                    "\"__metadata__\": {\"k\": \"v\"} }";
  std::vector<uint8_t> b(8);
  uint64_t n = hdr.size();
  for (int i = 0; i < 8; ++i)
    b[size_t(i)] = uint8_t(n >> (8 * i));
  b.insert(b.end(), hdr.begin(), hdr.end());
  float a[2] = {1.5f, -2.0f};
  int32_t bb = 77;
  const uint8_t *pa = reinterpret_cast<const uint8_t *>(a);
  const uint8_t *pb = reinterpret_cast<const uint8_t *>(&bb);
  b.insert(b.end(), pa, pa + 8);
  b.insert(b.end(), pb, pb + 4);
  std::string path = tmp / "foreign.safetensors";
  CHECK(trxtest::writeFileBytes(path, b));
  char err[512] = "";
  File F(trx_safetensors_open(path.c_str(), err, sizeof(err)));
  CHECK(F.st != nullptr);
  CHECK_STREQ(trx_safetensors_metadata(F.st, "k"), "v");
  trx_tensor t{};
  CHECK_EQ(trx_safetensors_find(F.st, "a", &t), TRX_OK);
  float ga[2];
  memcpy(ga, t.data, 8);
  CHECK_EQ(ga[1], -2.0f);
  CHECK_EQ(trx_safetensors_find(F.st, "b", &t), TRX_OK);
  int32_t gb;
  memcpy(&gb, t.data, 4);
  CHECK_EQ(gb, 77);
  CHECK_EQ(trx_safetensors_find(F.st, "c", &t), TRX_ERR_NOT_FOUND);
}

/// Writes `header` (raw JSON) followed by `data` bytes and returns the open
/// error.
std::string openError(const trxtest::TempDir &tmp, const std::string &header,
                      size_t dataBytes, int64_t lengthOverride = -1) {
  std::vector<uint8_t> b(8);
  uint64_t n = lengthOverride >= 0 ? uint64_t(lengthOverride) : header.size();
  for (int i = 0; i < 8; ++i)
    b[size_t(i)] = uint8_t(n >> (8 * i));
  b.insert(b.end(), header.begin(), header.end());
  b.resize(b.size() + dataBytes);
  std::string path = tmp / "bad.safetensors";
  trxtest::writeFileBytes(path, b);
  char err[512] = "";
  trx_safetensors *st = trx_safetensors_open(path.c_str(), err, sizeof(err));
  CHECK(st == nullptr);
  std::string e = err;
  std::string prefix = path + ": ";
  CHECK_EQ(e.substr(0, prefix.size()), prefix);
  return e.substr(prefix.size());
}

void testReadErrors(const trxtest::TempDir &tmp) {
  // Sample file, then break it in different ways.
  std::vector<float> w(256 * 64, 0.5f);
  trx_tensor t = tensor("wte.weight", TRX_F32, {256, 64}, w.data());
  std::string path = tmp / "model.safetensors";
  char err[512] = "";
  CHECK_EQ(
      trx_safetensors_write(path.c_str(), 1, &t, nullptr, err, sizeof(err)),
      TRX_OK);
  {
    File F(trx_safetensors_open(path.c_str(), err, sizeof(err)));
    CHECK(F.st != nullptr);
    int64_t want[] = {256, 128};
    std::string msg = path + ": tensor 'wte.weight' has shape [256, 64], "
                             "expected [256, 128]";
    CHECK_ERR(trx_safetensors_read_into(F.st, "wte.weight", TRX_F32, 2, want,
                                        w.data(), err, sizeof(err)),
              TRX_ERR_MISMATCH, err, msg.c_str());
    int64_t want1[] = {256};
    msg = path + ": tensor 'wte.weight' has shape [256, 64], expected [256]";
    CHECK_ERR(trx_safetensors_read_into(F.st, "wte.weight", TRX_F32, 1, want1,
                                        w.data(), err, sizeof(err)),
              TRX_ERR_MISMATCH, err, msg.c_str());
    int64_t same[] = {256, 64};
    msg = path + ": tensor 'wte.weight' has dtype F32, expected BF16";
    CHECK_ERR(trx_safetensors_read_into(F.st, "wte.weight", TRX_BF16, 2, same,
                                        w.data(), err, sizeof(err)),
              TRX_ERR_MISMATCH, err, msg.c_str());
    msg = path + ": missing tensor 'h.0.attn.q.weight'";
    CHECK_ERR(trx_safetensors_read_into(F.st, "h.0.attn.q.weight", TRX_F32, 2,
                                        same, w.data(), err, sizeof(err)),
              TRX_ERR_NOT_FOUND, err, msg.c_str());
    msg = path + ": invalid expected dtype 9 for tensor 'wte.weight'";
    CHECK_ERR(trx_safetensors_read_into(F.st, "wte.weight", 9, 2, same,
                                        w.data(), err, sizeof(err)),
              TRX_ERR_ARG, err, msg.c_str());
  }

  // Truncations: the data, the header, the length field.
  std::vector<uint8_t> full = trxtest::readFileBytes(path);
  uint64_t hl = headerLength(full);
  std::string cut = tmp / "cut.safetensors";
  trxtest::writeFileBytes(cut, full.data(), full.size() - 1);
  std::string msg = cut + ": truncated: tensor 'wte.weight' data_offsets [0, "
                          "65536] exceed the 65535 data bytes in the file";
  CHECK(trx_safetensors_open(cut.c_str(), err, sizeof(err)) == nullptr);
  CHECK_STREQ(err, msg.c_str());
  trxtest::writeFileBytes(cut, full.data(), size_t(8 + hl / 2));
  msg = cut + ": truncated: header length " + std::to_string(hl) +
        " exceeds the " + std::to_string(hl / 2) +
        " bytes after the length field";
  CHECK(trx_safetensors_open(cut.c_str(), err, sizeof(err)) == nullptr);
  CHECK_STREQ(err, msg.c_str());
  trxtest::writeFileBytes(cut, full.data(), 5);
  msg = cut + ": truncated: file is 5 bytes, too small for the 8-byte header "
              "length";
  CHECK(trx_safetensors_open(cut.c_str(), err, sizeof(err)) == nullptr);
  CHECK_STREQ(err, msg.c_str());
  trxtest::writeFileBytes(cut, full.data(), 0);
  CHECK(trx_safetensors_open(cut.c_str(), err, sizeof(err)) == nullptr);
  msg = tmp / "nope.safetensors";
  CHECK(trx_safetensors_open(msg.c_str(), err, sizeof(err)) == nullptr);
  CHECK_STREQ(err, (msg + ": cannot open: No such file or directory").c_str());

  // Corrupt headers.
  CHECK_EQ(openError(tmp, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],", 0),
           std::string("corrupt header JSON at byte 32: unexpected end of "
                       "input in object"));
  CHECK_EQ(openError(tmp, "[1, 2]", 0),
           std::string("corrupt header: not a JSON object"));
  CHECK_EQ(openError(tmp,
                     "{\"a\":{\"dtype\":\"F64\",\"shape\":[1],"
                     "\"data_offsets\":[0,8]}}",
                     8),
           std::string("tensor 'a' has unsupported dtype 'F64' (supported: "
                       "F32, BF16, F16, I32)"));
  CHECK_EQ(openError(tmp,
                     "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],"
                     "\"data_offsets\":[0,8]}}",
                     8),
           std::string("corrupt header: tensor 'a' has data_offsets [0, 8] (8 "
                       "bytes) but F32 [3] needs 12 bytes"));
  CHECK_EQ(openError(tmp,
                     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                     "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\","
                     "\"shape\":[1],\"data_offsets\":[4,8]}}",
                     8),
           std::string("corrupt header: tensors 'a' and 'b' overlap"));
  CHECK_EQ(openError(tmp,
                     "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],"
                     "\"data_offsets\":[0,0]}}",
                     0),
           std::string("corrupt header: tensor 'a' has an invalid dimension"));
  CHECK_EQ(openError(tmp,
                     "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                     "\"data_offsets\":[4,0]}}",
                     4),
           std::string("corrupt header: tensor 'a' has invalid data_offsets"));
  CHECK_EQ(openError(tmp, "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4),
           std::string("corrupt header: tensor 'a' has no dtype string"));
  CHECK_EQ(
      openError(tmp, "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4),
      std::string("corrupt header: tensor 'a' has no shape array"));
  CHECK_EQ(openError(tmp, "{\"a\":5}", 0),
           std::string("corrupt header: entry 'a' is not an object"));
  CHECK_EQ(openError(tmp, "{\"__metadata__\":{\"k\":1}}", 0),
           std::string("corrupt header: metadata value of 'k' is not a "
                       "string"));
  CHECK_EQ(openError(tmp,
                     "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                     "\"data_offsets\":[0,4]}}",
                     4),
           std::string("tensor 'a' has rank 9, more than the supported 8"));
  CHECK_EQ(openError(tmp,
                     "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,"
                     "4294967296],\"data_offsets\":[0,4]}}",
                     4),
           std::string("corrupt header: tensor 'a' shape [4294967296, "
                       "4294967296] overflows"));
  CHECK_EQ(openError(tmp, "{}", 0, 200000000),
           std::string("corrupt: header length 200000000 is implausible "
                       "(limit 100000000)"));
  CHECK_EQ(openError(tmp, "{\"a\":1,\"a\":2}", 0),
           std::string("corrupt header JSON at byte 7: duplicate key \"a\""));

  // NULL handles.
  trx_tensor out;
  CHECK_EQ(trx_safetensors_find(nullptr, "a", &out), TRX_ERR_ARG);
  CHECK_EQ(trx_safetensors_count(nullptr), int64_t(0));
  CHECK(trx_safetensors_metadata(nullptr, "a") == nullptr);
  CHECK_EQ(trx_safetensors_read_into(nullptr, "a", TRX_F32, 0, nullptr, nullptr,
                                     err, sizeof(err)),
           TRX_ERR_ARG);
  trx_safetensors_close(nullptr);
}

void testWriteErrors(const trxtest::TempDir &tmp) {
  std::string path = tmp / "w.safetensors";
  float x[4] = {1, 2, 3, 4};
  char err[512] = "";
  auto expect = [&](int n, const trx_tensor *ts, const char *meta,
                    const std::string &msg) {
    CHECK_EQ(trx_safetensors_write(path.c_str(), n, ts, meta, err, sizeof(err)),
             TRX_ERR_ARG);
    CHECK_STREQ(err, (path + ": " + msg).c_str());
  };
  trx_tensor two[] = {tensor("a", TRX_F32, {4}, x),
                      tensor("a", TRX_F32, {4}, x)};
  expect(2, two, nullptr, "duplicate tensor name 'a'");
  trx_tensor t = tensor("a", 7, {4}, x);
  expect(1, &t, nullptr, "tensor 'a' has unknown dtype 7");
  t = tensor("a", TRX_F32, {4}, x);
  t.rank = 9;
  expect(1, &t, nullptr, "tensor 'a' has invalid rank 9 (expected 0..8)");
  t = tensor("a", TRX_F32, {2, -2}, x);
  expect(1, &t, nullptr, "tensor 'a' has invalid shape [2, -2]");
  t = tensor("a", TRX_F32, {4}, nullptr);
  expect(1, &t, nullptr, "tensor 'a' has NULL data");
  t = tensor("", TRX_F32, {4}, x);
  expect(1, &t, nullptr, "tensor #0 has no name");
  t = tensor("__metadata__", TRX_F32, {4}, x);
  expect(1, &t, nullptr, "'__metadata__' is reserved and cannot name a tensor");
  t = tensor("a", TRX_F32, {4}, x);
  expect(1, &t, "{\"k\":2}",
         "metadata must be a JSON object of string values: value of \"k\" is "
         "not a string");
  expect(1, &t, "{bad",
         "metadata must be a JSON object of string values: at byte 1: "
         "unexpected 'b', expected a string key");
  expect(-1, &t, nullptr, "invalid tensor list (n = -1)");
  CHECK(!trxtest::fileExists(path)); // Nothing written on validation errors.

  std::string noDir = tmp / "no/such/dir/x.safetensors";
  CHECK_EQ(
      trx_safetensors_write(noDir.c_str(), 1, &t, nullptr, err, sizeof(err)),
      TRX_ERR_IO);
  std::string msg = noDir + ": cannot create " + noDir + ".tmp." +
                    std::to_string(getpid()) + ": No such file or directory";
  CHECK_STREQ(err, msg.c_str());
  CHECK_EQ(trx_safetensors_write(nullptr, 1, &t, nullptr, err, sizeof(err)),
           TRX_ERR_ARG);
  CHECK_STREQ(err, "trx_safetensors_write: no output path given");
}

/// Thousands of randomly damaged copies of a valid file (bytes changed in the
/// header, truncations): each open must either fail with a message or give
/// tensors that lie inside the file. Run under ASan/UBSan this also proves
/// the reader never reads out of bounds.
void testCorruptionFuzz(const trxtest::TempDir &tmp) {
  std::vector<float> w(24, 1.0f);
  std::vector<uint16_t> b(10, 7);
  int32_t sc = 5;
  trx_tensor ts[] = {tensor("a.weight", TRX_F32, {4, 6}, w.data()),
                     tensor("b", TRX_BF16, {10}, b.data()),
                     tensor("s", TRX_I32, {}, &sc)};
  std::string path = tmp / "fuzz.safetensors";
  char err[512];
  CHECK_EQ(trx_safetensors_write(path.c_str(), 3, ts, "{\"k\":\"v\"}", err,
                                 sizeof(err)),
           TRX_OK);
  const std::vector<uint8_t> good = trxtest::readFileBytes(path);
  const size_t headerEnd = size_t(8 + headerLength(good));
  const char alphabet[] = "{}[]\":,0123456789-.eE \\uFabcdst\x00\x80\xff";
  std::mt19937 rng(2024);
  int opened = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> bad = good;
    int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % headerEnd;
      bad[pos] = rng() % 2 ? uint8_t(alphabet[rng() % (sizeof(alphabet) - 1)])
                           : uint8_t(rng());
    }
    if (rng() % 4 == 0)
      bad.resize(rng() % bad.size());
    trxtest::writeFileBytes(path, bad);
    trx_safetensors *st = trx_safetensors_open(path.c_str(), err, sizeof(err));
    if (!st) {
      ++rejected;
      CHECK(err[0] != '\0');
      continue;
    }
    ++opened;
    std::vector<uint8_t> sink;
    for (int64_t i = 0; i < trx_safetensors_count(st); ++i) {
      trx_tensor t;
      CHECK_EQ(trx_safetensors_get(st, i, &t), TRX_OK);
      size_t n = size_t(trx_tensor_numel(&t)) * trx_dtype_size(t.dtype);
      const uint8_t *p = static_cast<const uint8_t *>(t.data);
      sink.assign(p, p + n); // Must stay inside the mapping.
    }
    trx_safetensors_close(st);
  }
  CHECK(rejected > 0);
  CHECK(opened + rejected == 3000);
}

//===----------------------------------------------------------------------===//
// Command-line tools for the lit tests
//===----------------------------------------------------------------------===//

int usage() {
  fprintf(stderr, "usage: triax-rt-safetensors-test "
                  "[write|list|read|truncate|poke] ...\n");
  return 2;
}

int dtypeOf(const std::string &s) {
  if (s == "F32")
    return TRX_F32;
  if (s == "BF16")
    return TRX_BF16;
  if (s == "I32")
    return TRX_I32;
  return -1;
}

int cmdWrite(const char *path) {
  std::vector<float> wte(256 * 64);
  for (size_t i = 0; i < wte.size(); ++i)
    wte[i] = float(i) * 0.25f;
  std::vector<uint16_t> bias(64, 0x3f80); // 1.0 in BF16
  int32_t step = 100;
  trx_tensor ts[] = {tensor("wte.weight", TRX_F32, {256, 64}, wte.data()),
                     tensor("ln_f.bias", TRX_BF16, {64}, bias.data()),
                     tensor("step", TRX_I32, {}, &step)};
  char err[512];
  if (trx_safetensors_write(path, 3, ts, "{\"format\":\"pt\"}", err,
                            sizeof(err)) != TRX_OK) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  return 0;
}

int cmdList(const char *path) {
  char err[512];
  trx_safetensors *st = trx_safetensors_open(path, err, sizeof(err));
  if (!st) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  for (int64_t i = 0; i < trx_safetensors_count(st); ++i) {
    trx_tensor t;
    trx_safetensors_get(st, i, &t);
    printf("%s %s [", t.name, trx_dtype_name(t.dtype));
    for (int d = 0; d < t.rank; ++d)
      printf(d ? ", %" PRId64 : "%" PRId64, t.shape[d]);
    printf("]\n");
  }
  trx_safetensors_close(st);
  return 0;
}

int cmdRead(const char *path, const char *name, const char *dtype,
            const char *shapeArg) {
  std::vector<int64_t> shape;
  if (strcmp(shapeArg, "-") != 0) {
    const char *p = shapeArg;
    while (*p) {
      char *end;
      shape.push_back(strtoll(p, &end, 10));
      p = *end == ',' ? end + 1 : end;
      if (end == p && *p)
        return usage();
    }
  }
  char err[512];
  trx_safetensors *st = trx_safetensors_open(path, err, sizeof(err));
  if (!st) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d < 0 ? 0 : d;
  std::vector<uint8_t> dst(size_t(n) * 4 + 4);
  int rc =
      trx_safetensors_read_into(st, name, dtypeOf(dtype), int32_t(shape.size()),
                                shape.data(), dst.data(), err, sizeof(err));
  trx_safetensors_close(st);
  if (rc != TRX_OK) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  printf("ok: read %s\n", name);
  return 0;
}

int cmdTruncate(const char *path, const char *n) {
  std::vector<uint8_t> b = trxtest::readFileBytes(path);
  size_t keep = size_t(strtoull(n, nullptr, 10));
  if (keep < b.size())
    b.resize(keep);
  return trxtest::writeFileBytes(path, b) ? 0 : 1;
}

int cmdPoke(const char *path, const char *off, const char *text) {
  std::vector<uint8_t> b = trxtest::readFileBytes(path);
  size_t o = size_t(strtoull(off, nullptr, 10));
  size_t len = strlen(text);
  if (o + len > b.size())
    return usage();
  memcpy(b.data() + o, text, len);
  return trxtest::writeFileBytes(path, b) ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2) {
    std::string cmd = argv[1];
    if (cmd == "write" && argc == 3)
      return cmdWrite(argv[2]);
    if (cmd == "list" && argc == 3)
      return cmdList(argv[2]);
    if (cmd == "read" && argc == 6)
      return cmdRead(argv[2], argv[3], argv[4], argv[5]);
    if (cmd == "truncate" && argc == 4)
      return cmdTruncate(argv[2], argv[3]);
    if (cmd == "poke" && argc == 5)
      return cmdPoke(argv[2], argv[3], argv[4]);
    return usage();
  }
  trxtest::TempDir tmp;
  testRoundTrip(tmp);
  testForeignFile(tmp);
  testReadErrors(tmp);
  testWriteErrors(tmp);
  testCorruptionFuzz(tmp);
  trxtest::done("safetensors");
  return 0;
}
