//===- loader.cpp - llm.c token-file data loader
//---------------------------===//
//
// Memory-maps an llm.c .bin token file (or uses an in-memory image) and
// serves [B, T] input/target batches sequentially or in a deterministic
// per-epoch shuffled order. See triax_rt.h for the exact contract.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "triax_rt.h"

#include <cinttypes>
#include <cstring>
#include <memory>
#include <new>

using namespace triax::rt;

namespace {

constexpr int32_t kMagic = 20240520;
constexpr int32_t kVersion = 1;
constexpr size_t kHeaderInts = 256;
constexpr size_t kHeaderBytes = kHeaderInts * sizeof(int32_t);

int32_t readI32(const uint8_t *p) {
  uint32_t v = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
               uint32_t(p[3]) << 24;
  int32_t r;
  std::memcpy(&r, &v, sizeof(r));
  return r;
}

uint64_t splitmix64Next(uint64_t &state) {
  state += 0x9E3779B97F4A7C15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

} // namespace

struct trx_loader {
  std::string name;
  MappedFile file;                 // Owns the mapping when opened from a path.
  const uint8_t *tokens = nullptr; // First token byte (maybe unaligned).
  int64_t numTokens = 0;
  int64_t B = 0, T = 0, BT = 0;
  bool shuffle = false;
  uint64_t seed = 0;
  int64_t numBatches = 0;
  uint64_t epoch = 0;
  int64_t next = 0; // Next batch index within the epoch, in [0, numBatches).
  std::vector<uint32_t> perm;

  uint16_t token(int64_t i) const {
    const uint8_t *p = tokens + 2 * i;
    return uint16_t(p[0] | p[1] << 8);
  }

  void makePermutation() {
    if (!shuffle)
      return;
    perm.resize(size_t(numBatches));
    for (int64_t i = 0; i < numBatches; ++i)
      perm[size_t(i)] = uint32_t(i);
    uint64_t state = seed ^ (0x9E3779B97F4A7C15ULL * (epoch + 1));
    for (int64_t i = numBatches - 1; i >= 1; --i) {
      uint64_t j = splitmix64Next(state) % uint64_t(i + 1);
      std::swap(perm[size_t(i)], perm[size_t(j)]);
    }
  }
};

namespace {

/// Validates the header and sizes of a .bin image. Returns a TRX status.
int validate(trx_loader &l, const uint8_t *bytes, size_t n, char *err,
             size_t errlen) {
  const char *name = l.name.c_str();
  if (n < kHeaderBytes)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: truncated: file is %zu bytes, smaller than the %zu-byte "
                "header",
                name, n, kHeaderBytes);
  int32_t magic = readI32(bytes);
  if (magic != kMagic)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: bad magic %" PRId32 " (expected %" PRId32 ")", name, magic,
                kMagic);
  int32_t version = readI32(bytes + 4);
  if (version != kVersion)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: unsupported version %" PRId32 " (expected %" PRId32 ")",
                name, version, kVersion);
  int32_t headerTokens = readI32(bytes + 8);
  if (headerTokens < 0)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: bad token count %" PRId32 " in header", name,
                headerTokens);
  size_t payload = n - kHeaderBytes;
  uint64_t fileTokens = payload / 2;
  if (uint64_t(headerTokens) > fileTokens)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: truncated: header says %" PRId32
                " tokens but file holds %" PRIu64,
                name, headerTokens, fileTokens);
  if (payload != uint64_t(headerTokens) * 2)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: size mismatch: header says %" PRId32
                " tokens (%zu bytes) but file is %zu bytes",
                name, headerTokens, kHeaderBytes + size_t(headerTokens) * 2, n);
  l.tokens = bytes + kHeaderBytes;
  l.numTokens = headerTokens;
  if (l.numTokens < l.BT + 1)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: %" PRId64
                " tokens is fewer than one batch (B*T+1 = %" PRId64 ")",
                name, l.numTokens, l.BT + 1);
  l.numBatches = (l.numTokens - 1) / l.BT;
  return TRX_OK;
}

trx_loader *openCommon(std::unique_ptr<trx_loader> l, const uint8_t *bytes,
                       size_t n, char *err, size_t errlen) {
  if (validate(*l, bytes, n, err, errlen) != TRX_OK)
    return nullptr;
  l->makePermutation();
  return l.release();
}

/// Creates the loader object after checking the batch shape.
std::unique_ptr<trx_loader> create(const char *name, int64_t B, int64_t T,
                                   int shuffle, uint64_t seed, char *err,
                                   size_t errlen) {
  if (B <= 0 || T <= 0) {
    setErr(err, errlen,
           "%s: invalid batch shape B=%" PRId64 ", T=%" PRId64
           " (both must be positive)",
           name, B, T);
    return nullptr;
  }
  // Token counts are int32 in the header, so B*T beyond that never fits.
  if (B > INT32_MAX / T) {
    setErr(err, errlen, "%s: batch B*T = %" PRId64 "*%" PRId64 " is too large",
           name, B, T);
    return nullptr;
  }
  auto l = std::make_unique<trx_loader>();
  l->name = name;
  l->B = B;
  l->T = T;
  l->BT = B * T;
  l->shuffle = shuffle != 0;
  l->seed = seed;
  return l;
}

} // namespace

extern "C" trx_loader *trx_loader_open(const char *path, int64_t B, int64_t T,
                                       int shuffle, uint64_t seed, char *err,
                                       size_t errlen) {
  if (!path || !*path) {
    setErr(err, errlen, "trx_loader_open: no data file path given");
    return nullptr;
  }
  try {
    auto l = create(path, B, T, shuffle, seed, err, errlen);
    if (!l)
      return nullptr;
    if (mapFile(path, l->file, err, errlen) != TRX_OK)
      return nullptr;
    const uint8_t *bytes = l->file.bytes();
    size_t n = l->file.size;
    return openCommon(std::move(l), bytes, n, err, errlen);
  } catch (const std::bad_alloc &) {
    setErr(err, errlen, "%s: out of memory", path);
    return nullptr;
  }
}

extern "C" trx_loader *trx_loader_open_memory(const uint8_t *bytes, size_t n,
                                              const char *name, int64_t B,
                                              int64_t T, int shuffle,
                                              uint64_t seed, char *err,
                                              size_t errlen) {
  if (!name)
    name = "<memory>";
  if (!bytes && n > 0) {
    setErr(err, errlen, "%s: NULL data pointer with size %zu", name, n);
    return nullptr;
  }
  try {
    auto l = create(name, B, T, shuffle, seed, err, errlen);
    if (!l)
      return nullptr;
    return openCommon(std::move(l), bytes, n, err, errlen);
  } catch (const std::bad_alloc &) {
    setErr(err, errlen, "%s: out of memory", name);
    return nullptr;
  }
}

extern "C" int trx_loader_next(trx_loader *l, int32_t *inputs,
                               int32_t *targets) {
  if (!l || !inputs || !targets) {
    setLastError("trx_loader_next: NULL %s",
                 !l ? "loader" : (!inputs ? "inputs" : "targets"));
    return TRX_ERR_ARG;
  }
  int64_t window = l->shuffle ? int64_t(l->perm[size_t(l->next)]) : l->next;
  int64_t start = window * l->BT;
  for (int64_t i = 0; i < l->BT; ++i) {
    inputs[i] = l->token(start + i);
    targets[i] = l->token(start + i + 1);
  }
  // The next window would need pos + B*T + 1 > N tokens: wrap now, so that
  // the state always names the batch that comes next.
  if (++l->next >= l->numBatches) {
    try {
      l->epoch += 1;
      l->next = 0;
      l->makePermutation();
    } catch (const std::bad_alloc &) {
      setLastError("%s: out of memory", l->name.c_str());
      return TRX_ERR_NOMEM;
    }
  }
  return TRX_OK;
}

extern "C" int trx_loader_check_vocab(const trx_loader *l, int64_t vocab,
                                      char *err, size_t errlen) {
  if (!l)
    return fail(TRX_ERR_ARG, err, errlen,
                "trx_loader_check_vocab: NULL loader");
  if (vocab <= 0)
    return fail(TRX_ERR_ARG, err, errlen,
                "%s: invalid vocab size %" PRId64 " (must be positive)",
                l->name.c_str(), vocab);
  for (int64_t i = 0; i < l->numTokens; ++i) {
    uint16_t t = l->token(i);
    if (int64_t(t) >= vocab)
      return fail(TRX_ERR_RANGE, err, errlen,
                  "%s: token %u at index %" PRId64
                  " is out of range for vocab size %" PRId64,
                  l->name.c_str(), unsigned(t), i, vocab);
  }
  return TRX_OK;
}

extern "C" uint64_t trx_loader_state(const trx_loader *l) {
  if (!l)
    return 0;
  return (l->epoch << 32) | uint64_t(l->next);
}

extern "C" int trx_loader_set_state(trx_loader *l, uint64_t state, char *err,
                                    size_t errlen) {
  if (!l)
    return fail(TRX_ERR_ARG, err, errlen, "trx_loader_set_state: NULL loader");
  uint64_t epoch = state >> 32;
  int64_t next = int64_t(state & 0xffffffffULL);
  if (next > l->numBatches)
    return fail(TRX_ERR_ARG, err, errlen,
                "%s: loader state %" PRIu64 " has batch index %" PRId64
                " but an epoch has only %" PRId64
                " batches (different data, B or T?)",
                l->name.c_str(), state, next, l->numBatches);
  if (next == l->numBatches) { // Same position as the start of the next epoch.
    epoch += 1;
    next = 0;
  }
  try {
    bool newEpoch = epoch != l->epoch;
    l->epoch = epoch;
    l->next = next;
    if (newEpoch)
      l->makePermutation();
  } catch (const std::bad_alloc &) {
    return fail(TRX_ERR_NOMEM, err, errlen, "%s: out of memory",
                l->name.c_str());
  }
  return TRX_OK;
}

extern "C" int64_t trx_loader_num_batches(const trx_loader *l) {
  return l ? l->numBatches : 0;
}

extern "C" int64_t trx_loader_num_tokens(const trx_loader *l) {
  return l ? l->numTokens : 0;
}

extern "C" void trx_loader_close(trx_loader *l) { delete l; }
