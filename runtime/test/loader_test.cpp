//===- loader_test.cpp - Token-file data loader tests
//----------------------===//
//
// Usage:
//   triax-rt-loader-test                       run all checks
//   triax-rt-loader-test make FILE [--tokens K] [--magic M] [--version V]
//                        [--header-tokens N] [--set IDX=VAL]
//       write an llm.c .bin file with K tokens, tok[i] = i % 65536
//   triax-rt-loader-test open FILE B T [--shuffle SEED] [--vocab V]
//       open it (and check the vocab); print a summary, or the error on
//       stderr and exit 1
//   triax-rt-loader-test batches FILE B T N [--shuffle SEED]
//       print the first input and target token of N batches
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "triax_rt.h"

#include <algorithm>
#include <cinttypes>
#include <set>

namespace {

std::vector<uint16_t> iota(size_t n) {
  std::vector<uint16_t> t(n);
  for (size_t i = 0; i < n; ++i)
    t[i] = uint16_t(i % 65536);
  return t;
}

struct Loader {
  trx_loader *l = nullptr;
  explicit Loader(trx_loader *p) : l(p) {}
  ~Loader() { trx_loader_close(l); }
};

/// Index of the window a batch came from (inputs[0] / (B*T) for iota data).
int64_t windowOf(trx_loader *l, int64_t BT) {
  std::vector<int32_t> in(static_cast<size_t>(BT)), tg(static_cast<size_t>(BT));
  CHECK_EQ(trx_loader_next(l, in.data(), tg.data()), TRX_OK);
  return in[0] / BT;
}

void testSequential(const trxtest::TempDir &tmp) {
  // 100 tokens 0..99, B=2, T=4: B*T = 8 and floor((100-1)/8) = 12 batches.
  std::string path = tmp / "seq.bin";
  CHECK(trxtest::writeFileBytes(path, trxtest::makeBin(iota(100))));
  char err[256] = "";
  Loader L(trx_loader_open(path.c_str(), 2, 4, 0, 0, err, sizeof(err)));
  CHECK(L.l != nullptr);
  CHECK_EQ(trx_loader_num_tokens(L.l), int64_t(100));
  CHECK_EQ(trx_loader_num_batches(L.l), int64_t(12));
  int32_t in[8], tg[8];
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int k = 0; k < 12; ++k) {
      CHECK_EQ(trx_loader_state(L.l), (uint64_t(epoch) << 32) | uint64_t(k));
      CHECK_EQ(trx_loader_next(L.l, in, tg), TRX_OK);
      for (int i = 0; i < 8; ++i) {
        CHECK_EQ(in[i], int32_t(8 * k + i));     // tok[pos : pos+B*T]
        CHECK_EQ(tg[i], int32_t(8 * k + i + 1)); // tok[pos+1 : pos+B*T+1]
      }
    }
    // pos = 96: 96 + 8 + 1 > 100, so the next batch wraps to 0.
  }
  CHECK_EQ(trx_loader_state(L.l), (uint64_t(2) << 32) | 0u);

  // Exactly B*T+1 tokens: one batch per epoch; then wrap.
  std::string one = tmp / "one.bin";
  CHECK(trxtest::writeFileBytes(one, trxtest::makeBin(iota(9))));
  Loader L1(trx_loader_open(one.c_str(), 2, 4, 0, 0, err, sizeof(err)));
  CHECK(L1.l != nullptr);
  CHECK_EQ(trx_loader_num_batches(L1.l), int64_t(1));
  for (int rep = 0; rep < 3; ++rep) {
    CHECK_EQ(trx_loader_next(L1.l, in, tg), TRX_OK);
    CHECK_EQ(in[0], 0);
    CHECK_EQ(tg[7], 8);
  }

  // 16 tokens with B*T = 8: window 8 would need token 16, so 1 batch.
  std::string sixteen = tmp / "sixteen.bin";
  CHECK(trxtest::writeFileBytes(sixteen, trxtest::makeBin(iota(16))));
  Loader L2(trx_loader_open(sixteen.c_str(), 1, 8, 0, 0, err, sizeof(err)));
  CHECK_EQ(trx_loader_num_batches(L2.l), int64_t(1));
}

/// The documented permutation, implemented independently of the library.
std::vector<int64_t> referencePermutation(uint64_t seed, uint64_t epoch,
                                          int64_t nb) {
  std::vector<int64_t> p(static_cast<size_t>(nb));
  for (int64_t i = 0; i < nb; ++i)
    p[size_t(i)] = i;
  uint64_t s = seed ^ (0x9E3779B97F4A7C15ULL * (epoch + 1));
  for (int64_t i = nb - 1; i >= 1; --i) {
    s += 0x9E3779B97F4A7C15ULL;
    uint64_t z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    std::swap(p[size_t(i)], p[size_t(z % uint64_t(i + 1))]);
  }
  return p;
}

std::vector<int64_t> order(const std::string &path, uint64_t seed, int epochs) {
  char err[256];
  Loader L(trx_loader_open(path.c_str(), 2, 4, 1, seed, err, sizeof(err)));
  CHECK(L.l != nullptr);
  std::vector<int64_t> o;
  for (int64_t i = 0; i < epochs * trx_loader_num_batches(L.l); ++i)
    o.push_back(windowOf(L.l, 8));
  return o;
}

void testShuffle(const trxtest::TempDir &tmp) {
  // 801 tokens, B*T = 8: 100 windows per epoch.
  std::string path = tmp / "shuf.bin";
  CHECK(trxtest::writeFileBytes(path, trxtest::makeBin(iota(801))));
  std::vector<int64_t> a = order(path, 42, 3);
  std::vector<int64_t> b = order(path, 42, 3);
  std::vector<int64_t> c = order(path, 43, 3);
  CHECK_EQ(a.size(), size_t(300));
  CHECK(a == b); // Same seed, same order.
  CHECK(a != c); // Different seed, different order.
  for (int e = 0; e < 3; ++e) {
    std::vector<int64_t> epoch(a.begin() + 100 * e, a.begin() + 100 * (e + 1));
    CHECK(epoch == referencePermutation(42, uint64_t(e), 100));
    std::set<int64_t> seen(epoch.begin(), epoch.end());
    CHECK_EQ(seen.size(), size_t(100)); // Every window exactly once.
    CHECK_EQ(*seen.begin(), int64_t(0));
    CHECK_EQ(*seen.rbegin(), int64_t(99));
  }
  // A new permutation each epoch.
  CHECK(!std::equal(a.begin(), a.begin() + 100, a.begin() + 100));
  // Not the identity.
  CHECK(referencePermutation(42, 0, 100) != referencePermutation(42, 0, 1));

  // Targets are inputs shifted by one, also when shuffled.
  char err[256];
  Loader L(trx_loader_open(path.c_str(), 2, 4, 1, 7, err, sizeof(err)));
  int32_t in[8], tg[8];
  CHECK_EQ(trx_loader_next(L.l, in, tg), TRX_OK);
  CHECK_EQ(in[0] % 8, 0);
  for (int i = 0; i < 8; ++i)
    CHECK_EQ(tg[i], in[i] + 1);
}

void testState(const trxtest::TempDir &tmp) {
  std::string path = tmp / "state.bin";
  CHECK(trxtest::writeFileBytes(path, trxtest::makeBin(iota(801))));
  char err[256];
  for (int shuffle = 0; shuffle < 2; ++shuffle) {
    // Run 130 batches (into epoch 1), snapshot, run 150 more; a fresh loader
    // restored from the snapshot must produce the same 150 batches.
    Loader A(trx_loader_open(path.c_str(), 2, 4, shuffle, 5, err, sizeof(err)));
    for (int i = 0; i < 130; ++i)
      windowOf(A.l, 8);
    uint64_t st = trx_loader_state(A.l);
    CHECK_EQ(st, (uint64_t(1) << 32) | 30u);
    std::vector<int64_t> rest;
    for (int i = 0; i < 150; ++i)
      rest.push_back(windowOf(A.l, 8));
    Loader B(trx_loader_open(path.c_str(), 2, 4, shuffle, 5, err, sizeof(err)));
    CHECK_EQ(trx_loader_set_state(B.l, st, err, sizeof(err)), TRX_OK);
    CHECK_EQ(trx_loader_state(B.l), st);
    std::vector<int64_t> again;
    for (int i = 0; i < 150; ++i)
      again.push_back(windowOf(B.l, 8));
    CHECK(rest == again);
  }
  Loader C(trx_loader_open(path.c_str(), 2, 4, 0, 0, err, sizeof(err)));
  // Index == num_batches is valid (wraps on the next call).
  CHECK_EQ(trx_loader_set_state(C.l, 100, err, sizeof(err)), TRX_OK);
  CHECK_EQ(windowOf(C.l, 8), int64_t(0));
  CHECK_EQ(trx_loader_state(C.l), (uint64_t(1) << 32) | 1u);
  std::string msg = path + ": loader state 101 has batch index 101 but an "
                           "epoch has only 100 batches (different data, B "
                           "or T?)";
  CHECK_ERR(trx_loader_set_state(C.l, 101, err, sizeof(err)), TRX_ERR_ARG, err,
            msg.c_str());
}

void expectOpenError(const std::string &path, int64_t B, int64_t T,
                     const std::string &msg) {
  char err[256] = "";
  trx_loader *l = trx_loader_open(path.c_str(), B, T, 0, 0, err, sizeof(err));
  CHECK(l == nullptr);
  CHECK_STREQ(err, msg.c_str());
}

void testErrors(const trxtest::TempDir &tmp) {
  // Messages use the path exactly as given.
  if (chdir(tmp.path.c_str()) != 0) {
    perror("chdir");
    exit(1);
  }
  trxtest::writeFileBytes("data.bin", trxtest::makeBin(iota(1000), 12345));
  expectOpenError("data.bin", 4, 64,
                  "data.bin: bad magic 12345 (expected 20240520)");
  trxtest::writeFileBytes("data.bin",
                          trxtest::makeBin(iota(1000), 20240520, 3));
  expectOpenError("data.bin", 4, 64,
                  "data.bin: unsupported version 3 (expected 1)");
  trxtest::writeFileBytes("data.bin",
                          trxtest::makeBin(iota(400), 20240520, 1, 1000));
  expectOpenError(
      "data.bin", 4, 64,
      "data.bin: truncated: header says 1000 tokens but file holds 400");
  trxtest::writeFileBytes("data.bin",
                          trxtest::makeBin(iota(400), 20240520, 1, 300));
  expectOpenError("data.bin", 4, 64,
                  "data.bin: size mismatch: header says 300 tokens (1624 "
                  "bytes) but file is 1824 bytes");
  trxtest::writeFileBytes("data.bin",
                          trxtest::makeBin(iota(0), 20240520, 1, -5));
  expectOpenError("data.bin", 4, 64, "data.bin: bad token count -5 in header");
  trxtest::writeFileBytes("data.bin", trxtest::makeBin(iota(100)));
  expectOpenError("data.bin", 4, 64,
                  "data.bin: 100 tokens is fewer than one batch (B*T+1 = 257)");
  expectOpenError("data.bin", 0, 64,
                  "data.bin: invalid batch shape B=0, T=64 (both must be "
                  "positive)");
  expectOpenError("data.bin", 1 << 20, 1 << 20,
                  "data.bin: batch B*T = 1048576*1048576 is too large");
  trxtest::writeFileBytes("data.bin", "short", 5);
  expectOpenError("data.bin", 4, 64,
                  "data.bin: truncated: file is 5 bytes, smaller than the "
                  "1024-byte header");
  trxtest::writeFileBytes("data.bin", "", 0);
  expectOpenError("data.bin", 4, 64,
                  "data.bin: truncated: file is 0 bytes, smaller than the "
                  "1024-byte header");
  expectOpenError("missing.bin", 4, 64,
                  "missing.bin: cannot open: No such file or directory");
  expectOpenError(".", 4, 64, ".: not a regular file");

  char err[256] = "";
  CHECK(trx_loader_open(nullptr, 1, 1, 0, 0, err, sizeof(err)) == nullptr);
  CHECK_STREQ(err, "trx_loader_open: no data file path given");
  // NULL / zero-sized err buffers are fine.
  CHECK(trx_loader_open("missing.bin", 1, 1, 0, 0, nullptr, 0) == nullptr);
  CHECK(trx_loader_open("missing.bin", 1, 1, 0, 0, err, 0) == nullptr);
  // A small buffer truncates.
  char small[9];
  CHECK(trx_loader_open("missing.bin", 1, 1, 0, 0, small, sizeof(small)) ==
        nullptr);
  CHECK_STREQ(small, "missing.");

  std::vector<uint8_t> img = trxtest::makeBin(iota(10), 7);
  CHECK(trx_loader_open_memory(img.data(), img.size(), "corpus", 1, 4, 0, 0,
                               err, sizeof(err)) == nullptr);
  CHECK_STREQ(err, "corpus: bad magic 7 (expected 20240520)");
  CHECK(trx_loader_open_memory(img.data(), img.size(), nullptr, 1, 4, 0, 0, err,
                               sizeof(err)) == nullptr);
  CHECK_STREQ(err, "<memory>: bad magic 7 (expected 20240520)");
  CHECK(trx_loader_open_memory(nullptr, 10, "corpus", 1, 4, 0, 0, err,
                               sizeof(err)) == nullptr);
  CHECK_STREQ(err, "corpus: NULL data pointer with size 10");

  // NULL handles are reported, not crashes.
  int32_t buf[4];
  CHECK_EQ(trx_loader_next(nullptr, buf, buf), TRX_ERR_ARG);
  CHECK_STREQ(trx_last_error(), "trx_loader_next: NULL loader");
  CHECK_EQ(trx_loader_num_batches(nullptr), int64_t(0));
  CHECK_EQ(trx_loader_state(nullptr), uint64_t(0));
  trx_loader_close(nullptr);
}

void testMemoryAndVocab() {
  // An embedded image at an odd address (no alignment needed).
  std::vector<uint16_t> toks = iota(50);
  toks[37] = 60000;
  std::vector<uint8_t> img = trxtest::makeBin(toks);
  std::vector<uint8_t> shifted(img.size() + 1);
  memcpy(shifted.data() + 1, img.data(), img.size());
  char err[256] = "";
  Loader L(trx_loader_open_memory(shifted.data() + 1, img.size(), "corpus", 1,
                                  5, 0, 0, err, sizeof(err)));
  CHECK(L.l != nullptr);
  CHECK_EQ(trx_loader_num_batches(L.l), int64_t(9)); // floor(49 / 5)
  int32_t in[5], tg[5];
  CHECK_EQ(trx_loader_next(L.l, in, tg), TRX_OK);
  CHECK_EQ(in[4], 4);
  CHECK_EQ(tg[4], 5);
  CHECK_EQ(trx_loader_check_vocab(L.l, 60001, err, sizeof(err)), TRX_OK);
  CHECK_ERR(trx_loader_check_vocab(L.l, 50257, err, sizeof(err)), TRX_ERR_RANGE,
            err,
            "corpus: token 60000 at index 37 is out of range for vocab size "
            "50257");
  CHECK_ERR(trx_loader_check_vocab(L.l, 0, err, sizeof(err)), TRX_ERR_ARG, err,
            "corpus: invalid vocab size 0 (must be positive)");
}

//===----------------------------------------------------------------------===//
// Command-line tools for the lit tests
//===----------------------------------------------------------------------===//

int usage() {
  fprintf(stderr, "usage: triax-rt-loader-test [make|open|batches] ...\n");
  return 2;
}

int64_t toI64(const char *s) { return strtoll(s, nullptr, 10); }

int cmdMake(int argc, char **argv) {
  if (argc < 3)
    return usage();
  int64_t tokens = 1000, magic = 20240520, version = 1,
          headerTokens = INT64_MIN;
  std::vector<std::pair<int64_t, int64_t>> sets;
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string f = argv[i];
    if (f == "--tokens")
      tokens = toI64(argv[i + 1]);
    else if (f == "--magic")
      magic = toI64(argv[i + 1]);
    else if (f == "--version")
      version = toI64(argv[i + 1]);
    else if (f == "--header-tokens")
      headerTokens = toI64(argv[i + 1]);
    else if (f == "--set") {
      const char *eq = strchr(argv[i + 1], '=');
      if (!eq)
        return usage();
      sets.emplace_back(toI64(argv[i + 1]), toI64(eq + 1));
    } else
      return usage();
  }
  std::vector<uint16_t> t = iota(size_t(tokens));
  for (auto &s : sets)
    if (s.first >= 0 && s.first < tokens)
      t[size_t(s.first)] = uint16_t(s.second);
  if (!trxtest::writeFileBytes(argv[2], trxtest::makeBin(t, int32_t(magic),
                                                         int32_t(version),
                                                         headerTokens))) {
    fprintf(stderr, "error: cannot write %s\n", argv[2]);
    return 1;
  }
  return 0;
}

int cmdOpen(int argc, char **argv, bool batches) {
  int fixed = batches ? 6 : 5;
  if (argc < fixed)
    return usage();
  int shuffle = 0;
  uint64_t seed = 0;
  int64_t vocab = 0;
  for (int i = fixed; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--shuffle") == 0) {
      shuffle = 1;
      seed = strtoull(argv[i + 1], nullptr, 10);
    } else if (strcmp(argv[i], "--vocab") == 0) {
      vocab = toI64(argv[i + 1]);
    } else {
      return usage();
    }
  }
  int64_t B = toI64(argv[3]), T = toI64(argv[4]);
  char err[512];
  trx_loader *l =
      trx_loader_open(argv[2], B, T, shuffle, seed, err, sizeof(err));
  if (!l) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  int rc = 0;
  if (vocab && trx_loader_check_vocab(l, vocab, err, sizeof(err)) != TRX_OK) {
    fprintf(stderr, "error: %s\n", err);
    rc = 1;
  } else if (!batches) {
    printf("ok: %" PRId64 " tokens, %" PRId64 " batches of %" PRId64 "x%" PRId64
           "\n",
           trx_loader_num_tokens(l), trx_loader_num_batches(l), B, T);
  } else {
    std::vector<int32_t> in(static_cast<size_t>(B * T)),
        tg(static_cast<size_t>(B * T));
    for (int64_t k = 0; k < toI64(argv[5]); ++k) {
      trx_loader_next(l, in.data(), tg.data());
      printf("batch %" PRId64 ": input[0]=%d target[0]=%d state=%" PRIu64 "\n",
             k, in[0], tg[0], trx_loader_state(l));
    }
  }
  trx_loader_close(l);
  return rc;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2) {
    std::string cmd = argv[1];
    if (cmd == "make")
      return cmdMake(argc, argv);
    if (cmd == "open")
      return cmdOpen(argc, argv, false);
    if (cmd == "batches")
      return cmdOpen(argc, argv, true);
    return usage();
  }
  trxtest::TempDir tmp;
  testSequential(tmp);
  testShuffle(tmp);
  testState(tmp);
  testMemoryAndVocab();
  testErrors(tmp); // Last: changes the working directory.
  trxtest::done("loader");
  return 0;
}
