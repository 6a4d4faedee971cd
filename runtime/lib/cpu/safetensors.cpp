//===- safetensors.cpp - Safetensors reader and crash-safe writer
//----------===//
//
// Reads safetensors files through a read-only memory map after validating
// the whole header, and writes them atomically (temp file, fsync, rename,
// directory fsync).
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "triax_rt.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <new>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

using namespace triax::rt;

std::string triax::rt::shapeStr(int32_t rank, const int64_t *shape) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

namespace {

/// Same bound as the reference implementation: a header over 100 MB is
/// treated as corrupt.
constexpr uint64_t kMaxHeader = 100000000;

int dtypeFromName(const std::string &s) {
  if (s == "F32")
    return TRX_F32;
  if (s == "BF16")
    return TRX_BF16;
  if (s == "I32")
    return TRX_I32;
  if (s == "F16")
    return TRX_F16;
  return -1;
}

/// Byte size of a tensor, or false on a bad description or overflow.
bool byteSize(int32_t dtype, int32_t rank, const int64_t *shape,
              uint64_t &out) {
  size_t es = trx_dtype_size(dtype);
  if (es == 0 || rank < 0 || rank > TRX_MAX_RANK)
    return false;
  uint64_t n = es;
  for (int32_t i = 0; i < rank; ++i) {
    if (shape[i] < 0)
      return false;
    uint64_t d = uint64_t(shape[i]);
    if (d != 0 && n > UINT64_MAX / d)
      return false;
    n *= d;
  }
  out = n;
  return true;
}

struct Entry {
  std::string name;
  int32_t dtype = 0;
  int32_t rank = 0;
  int64_t shape[TRX_MAX_RANK] = {};
  uint64_t begin = 0, end = 0;
};

} // namespace

struct trx_safetensors {
  std::string path;
  MappedFile file;
  const uint8_t *data = nullptr;
  uint64_t dataSize = 0;
  std::vector<Entry> entries;
  std::unordered_map<std::string, size_t> index;
  std::vector<std::pair<std::string, std::string>> metadata;

  void describe(const Entry &e, trx_tensor *out) const {
    out->name = e.name.c_str();
    out->dtype = e.dtype;
    out->rank = e.rank;
    std::memset(out->shape, 0, sizeof(out->shape));
    std::memcpy(out->shape, e.shape, sizeof(int64_t) * size_t(e.rank));
    out->data = data ? data + e.begin : nullptr;
  }
};

extern "C" const char *trx_dtype_name(int32_t dtype) {
  switch (dtype) {
  case TRX_F32:
    return "F32";
  case TRX_BF16:
    return "BF16";
  case TRX_I32:
    return "I32";
  case TRX_F16:
    return "F16";
  default:
    return nullptr;
  }
}

extern "C" size_t trx_dtype_size(int32_t dtype) {
  switch (dtype) {
  case TRX_F32:
  case TRX_I32:
    return 4;
  case TRX_BF16:
  case TRX_F16:
    return 2;
  default:
    return 0;
  }
}

extern "C" int64_t trx_tensor_numel(const trx_tensor *t) {
  if (!t || t->rank < 0 || t->rank > TRX_MAX_RANK)
    return -1;
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; ++i) {
    if (t->shape[i] < 0)
      return -1;
    if (t->shape[i] != 0 && n > INT64_MAX / t->shape[i])
      return -1;
    n *= t->shape[i];
  }
  return n;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

int triax::rt::validateTensors(const char *path, int64_t n,
                               const trx_tensor *tensors,
                               std::vector<uint64_t> &sizes, char *err,
                               size_t errlen) {
  if (n < 0 || (n > 0 && !tensors))
    return fail(TRX_ERR_ARG, err, errlen,
                "%s: invalid tensor list (n = %" PRId64 ")", path, n);
  sizes.assign(size_t(n), 0);
  std::unordered_set<std::string> names;
  for (int64_t i = 0; i < n; ++i) {
    const trx_tensor &t = tensors[i];
    if (!t.name || !*t.name)
      return fail(TRX_ERR_ARG, err, errlen,
                  "%s: tensor #%" PRId64 " has no name", path, i);
    if (std::strcmp(t.name, "__metadata__") == 0)
      return fail(TRX_ERR_ARG, err, errlen,
                  "%s: '__metadata__' is reserved and cannot name a tensor",
                  path);
    if (!names.insert(t.name).second)
      return fail(TRX_ERR_ARG, err, errlen, "%s: duplicate tensor name '%s'",
                  path, t.name);
    if (!trx_dtype_name(t.dtype))
      return fail(TRX_ERR_ARG, err, errlen,
                  "%s: tensor '%s' has unknown dtype %" PRId32, path, t.name,
                  t.dtype);
    if (t.rank < 0 || t.rank > TRX_MAX_RANK)
      return fail(TRX_ERR_ARG, err, errlen,
                  "%s: tensor '%s' has invalid rank %" PRId32
                  " (expected 0..%d)",
                  path, t.name, t.rank, TRX_MAX_RANK);
    if (!byteSize(t.dtype, t.rank, t.shape, sizes[size_t(i)]))
      return fail(TRX_ERR_ARG, err, errlen,
                  "%s: tensor '%s' has invalid shape %s", path, t.name,
                  shapeStr(t.rank, t.shape).c_str());
    if (sizes[size_t(i)] > 0 && !t.data)
      return fail(TRX_ERR_ARG, err, errlen, "%s: tensor '%s' has NULL data",
                  path, t.name);
  }
  return TRX_OK;
}

namespace {

int writeImpl(const char *path, int64_t n, const trx_tensor *tensors,
              const char *metadata, char *err, size_t errlen) {
  if (!path || !*path)
    return fail(TRX_ERR_ARG, err, errlen,
                "trx_safetensors_write: no output path given");
  std::vector<std::pair<std::string, std::string>> meta;
  if (metadata) {
    std::string e;
    if (!json::parseStringMap(metadata, meta, e))
      return fail(TRX_ERR_ARG, err, errlen,
                  "%s: metadata must be a JSON object of string values: %s",
                  path, e.c_str());
  }

  std::vector<uint64_t> sizes;
  int rc = validateTensors(path, n, tensors, sizes, err, errlen);
  if (rc != TRX_OK)
    return rc;
  const size_t count = size_t(n);

  // Data order: 4-byte elements first, then 2-byte ones, keeping the caller's
  // order otherwise, so every tensor is aligned to its element size.
  std::vector<size_t> order(count);
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return trx_dtype_size(tensors[a].dtype) > trx_dtype_size(tensors[b].dtype);
  });
  std::vector<uint64_t> begin(count);
  uint64_t off = 0;
  for (size_t i : order) {
    begin[i] = off;
    off += sizes[i];
  }

  std::string header = "{";
  bool first = true;
  if (!meta.empty()) {
    header += "\"__metadata__\":{";
    for (size_t i = 0; i < meta.size(); ++i) {
      if (i)
        header += ',';
      json::appendString(header, meta[i].first);
      header += ':';
      json::appendString(header, meta[i].second);
    }
    header += '}';
    first = false;
  }
  for (int64_t i = 0; i < n; ++i) {
    const trx_tensor &t = tensors[i];
    if (!first)
      header += ',';
    first = false;
    json::appendString(header, t.name);
    header += ":{\"dtype\":\"";
    header += trx_dtype_name(t.dtype);
    header += "\",\"shape\":[";
    for (int32_t d = 0; d < t.rank; ++d) {
      if (d)
        header += ',';
      header += std::to_string(t.shape[d]);
    }
    header += "],\"data_offsets\":[";
    header += std::to_string(begin[size_t(i)]);
    header += ',';
    header += std::to_string(begin[size_t(i)] + sizes[size_t(i)]);
    header += "]}";
  }
  header += '}';
  while (header.size() % 8 != 0)
    header += ' ';

  std::string target = path;
  std::string dir = dirName(target);
  removeStaleTemps(dir, baseName(target) + ".tmp.");
  std::string tmp = target + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(TRX_ERR_IO, err, errlen, "%s: cannot create %s: %s", path,
                tmp.c_str(), errnoStr(errno).c_str());
  uint8_t len8[8];
  uint64_t hl = header.size();
  for (int i = 0; i < 8; ++i)
    len8[i] = uint8_t(hl >> (8 * i));
  int e = writeAll(fd, len8, sizeof(len8));
  if (e == 0)
    e = writeAll(fd, header.data(), header.size());
  for (size_t k = 0; e == 0 && k < order.size(); ++k)
    if (sizes[order[k]] > 0)
      e = writeAll(fd, tensors[order[k]].data, size_t(sizes[order[k]]));
  const char *what = "write failed";
  if (e == 0 && ::fsync(fd) != 0) {
    e = errno;
    what = "fsync failed";
  }
  if (::close(fd) != 0 && e == 0) {
    e = errno;
    what = "close failed";
  }
  if (e != 0) {
    ::unlink(tmp.c_str());
    return fail(TRX_ERR_IO, err, errlen, "%s: %s: %s", tmp.c_str(), what,
                errnoStr(e).c_str());
  }
  if (::rename(tmp.c_str(), path) != 0) {
    e = errno;
    ::unlink(tmp.c_str());
    return fail(TRX_ERR_IO, err, errlen, "%s: cannot rename %s into place: %s",
                path, tmp.c_str(), errnoStr(e).c_str());
  }
  if ((e = fsyncDir(dir)) != 0)
    return fail(TRX_ERR_IO, err, errlen, "%s: cannot fsync directory: %s",
                dir.c_str(), errnoStr(e).c_str());
  return TRX_OK;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

int parseHeader(trx_safetensors &st, char *err, size_t errlen) {
  const char *path = st.path.c_str();
  size_t size = st.file.size;
  const uint8_t *b = st.file.bytes();
  if (size < 8)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: truncated: file is %zu bytes, too small for the 8-byte "
                "header length",
                path, size);
  uint64_t hl = 0;
  for (int i = 0; i < 8; ++i)
    hl |= uint64_t(b[i]) << (8 * i);
  if (hl > kMaxHeader)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: corrupt: header length %" PRIu64
                " is implausible (limit %" PRIu64 ")",
                path, hl, kMaxHeader);
  if (hl > size - 8)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: truncated: header length %" PRIu64
                " exceeds the %zu bytes after the length field",
                path, hl, size - 8);
  std::string_view text(reinterpret_cast<const char *>(b + 8), size_t(hl));
  json::Value root;
  std::string jerr;
  if (!json::parse(text, root, jerr))
    return fail(TRX_ERR_FORMAT, err, errlen, "%s: corrupt header JSON %s", path,
                jerr.c_str());
  if (!root.isObject())
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: corrupt header: not a JSON object", path);
  st.data = b + 8 + hl;
  st.dataSize = size - 8 - hl;

  for (const auto &m : root.members) {
    const std::string &name = m.first;
    const json::Value &v = m.second;
    if (name == "__metadata__") {
      if (!v.isObject())
        return fail(TRX_ERR_FORMAT, err, errlen,
                    "%s: corrupt header: __metadata__ is not an object", path);
      for (const auto &kv : v.members) {
        if (!kv.second.isString())
          return fail(TRX_ERR_FORMAT, err, errlen,
                      "%s: corrupt header: metadata value of '%s' is not a "
                      "string",
                      path, kv.first.c_str());
        st.metadata.emplace_back(kv.first, kv.second.text);
      }
      continue;
    }
    const char *tn = name.c_str();
    if (!v.isObject())
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: corrupt header: entry '%s' is not an object", path, tn);
    Entry e;
    e.name = name;
    const json::Value *dt = v.get("dtype");
    if (!dt || !dt->isString())
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: corrupt header: tensor '%s' has no dtype string", path,
                  tn);
    e.dtype = dtypeFromName(dt->text);
    if (e.dtype < 0)
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: tensor '%s' has unsupported dtype '%s' (supported: F32, "
                  "BF16, F16, I32)",
                  path, tn, dt->text.c_str());
    const json::Value *sh = v.get("shape");
    if (!sh || !sh->isArray())
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: corrupt header: tensor '%s' has no shape array", path,
                  tn);
    if (sh->items.size() > TRX_MAX_RANK)
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: tensor '%s' has rank %zu, more than the supported %d",
                  path, tn, sh->items.size(), TRX_MAX_RANK);
    e.rank = int32_t(sh->items.size());
    for (size_t d = 0; d < sh->items.size(); ++d)
      if (!sh->items[d].toInt64(e.shape[d]) || e.shape[d] < 0)
        return fail(TRX_ERR_FORMAT, err, errlen,
                    "%s: corrupt header: tensor '%s' has an invalid dimension",
                    path, tn);
    const json::Value *off = v.get("data_offsets");
    if (!off || !off->isArray() || off->items.size() != 2 ||
        !off->items[0].toUInt64(e.begin) || !off->items[1].toUInt64(e.end) ||
        e.begin > e.end)
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: corrupt header: tensor '%s' has invalid data_offsets",
                  path, tn);
    uint64_t bytes;
    if (!byteSize(e.dtype, e.rank, e.shape, bytes))
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: corrupt header: tensor '%s' shape %s overflows", path,
                  tn, shapeStr(e.rank, e.shape).c_str());
    if (e.end - e.begin != bytes)
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: corrupt header: tensor '%s' has data_offsets [%" PRIu64
                  ", %" PRIu64 "] (%" PRIu64 " bytes) but %s %s needs %" PRIu64
                  " bytes",
                  path, tn, e.begin, e.end, e.end - e.begin, dt->text.c_str(),
                  shapeStr(e.rank, e.shape).c_str(), bytes);
    if (e.end > st.dataSize)
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: truncated: tensor '%s' data_offsets [%" PRIu64
                  ", %" PRIu64 "] exceed the %" PRIu64
                  " data bytes in the file",
                  path, tn, e.begin, e.end, st.dataSize);
    st.index.emplace(name, st.entries.size());
    st.entries.push_back(std::move(e));
  }

  // Tensors must not overlap.
  std::vector<const Entry *> sorted;
  for (const Entry &e : st.entries)
    if (e.end > e.begin)
      sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(),
            [](const Entry *a, const Entry *b) { return a->begin < b->begin; });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i]->begin < sorted[i - 1]->end)
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: corrupt header: tensors '%s' and '%s' overlap", path,
                  sorted[i - 1]->name.c_str(), sorted[i]->name.c_str());
  return TRX_OK;
}

} // namespace

extern "C" int trx_safetensors_write(const char *path, int64_t n,
                                     const trx_tensor *tensors,
                                     const char *metadata_json_object_or_null,
                                     char *err, size_t errlen) {
  try {
    return writeImpl(path, n, tensors, metadata_json_object_or_null, err,
                     errlen);
  } catch (const std::bad_alloc &) {
    return fail(TRX_ERR_NOMEM, err, errlen, "%s: out of memory",
                path ? path : "trx_safetensors_write");
  }
}

extern "C" trx_safetensors *trx_safetensors_open(const char *path, char *err,
                                                 size_t errlen) {
  if (!path || !*path) {
    setErr(err, errlen, "trx_safetensors_open: no path given");
    return nullptr;
  }
  try {
    auto st = std::make_unique<trx_safetensors>();
    st->path = path;
    if (mapFile(path, st->file, err, errlen) != TRX_OK)
      return nullptr;
    if (parseHeader(*st, err, errlen) != TRX_OK)
      return nullptr;
    return st.release();
  } catch (const std::bad_alloc &) {
    setErr(err, errlen, "%s: out of memory", path);
    return nullptr;
  }
}

extern "C" int64_t trx_safetensors_count(const trx_safetensors *st) {
  return st ? int64_t(st->entries.size()) : 0;
}

extern "C" int trx_safetensors_get(const trx_safetensors *st, int64_t i,
                                   trx_tensor *out) {
  if (!st || !out)
    return TRX_ERR_ARG;
  if (i < 0 || uint64_t(i) >= st->entries.size())
    return TRX_ERR_NOT_FOUND;
  st->describe(st->entries[size_t(i)], out);
  return TRX_OK;
}

extern "C" int trx_safetensors_find(const trx_safetensors *st, const char *name,
                                    trx_tensor *out) {
  if (!st || !name || !out)
    return TRX_ERR_ARG;
  auto it = st->index.find(name);
  if (it == st->index.end())
    return TRX_ERR_NOT_FOUND;
  st->describe(st->entries[it->second], out);
  return TRX_OK;
}

extern "C" int trx_safetensors_read_into(const trx_safetensors *st,
                                         const char *name, int32_t dtype,
                                         int32_t rank, const int64_t *shape,
                                         void *dst, char *err, size_t errlen) {
  if (!st || !name)
    return fail(TRX_ERR_ARG, err, errlen, "trx_safetensors_read_into: NULL %s",
                !st ? "file" : "name");
  const char *path = st->path.c_str();
  if (rank < 0 || rank > TRX_MAX_RANK || (rank > 0 && !shape))
    return fail(TRX_ERR_ARG, err, errlen,
                "%s: invalid expected rank %" PRId32 " for tensor '%s'", path,
                rank, name);
  if (!trx_dtype_name(dtype))
    return fail(TRX_ERR_ARG, err, errlen,
                "%s: invalid expected dtype %" PRId32 " for tensor '%s'", path,
                dtype, name);
  auto it = st->index.find(name);
  if (it == st->index.end())
    return fail(TRX_ERR_NOT_FOUND, err, errlen, "%s: missing tensor '%s'", path,
                name);
  const Entry &e = st->entries[it->second];
  bool same = e.rank == rank;
  for (int32_t i = 0; same && i < rank; ++i)
    same = e.shape[i] == shape[i];
  if (!same)
    return fail(TRX_ERR_MISMATCH, err, errlen,
                "%s: tensor '%s' has shape %s, expected %s", path, name,
                shapeStr(e.rank, e.shape).c_str(),
                shapeStr(rank, shape).c_str());
  if (e.dtype != dtype)
    return fail(TRX_ERR_MISMATCH, err, errlen,
                "%s: tensor '%s' has dtype %s, expected %s", path, name,
                trx_dtype_name(e.dtype), trx_dtype_name(dtype));
  size_t bytes = size_t(e.end - e.begin);
  if (bytes > 0) {
    if (!dst)
      return fail(TRX_ERR_ARG, err, errlen,
                  "%s: NULL destination for tensor '%s'", path, name);
    std::memcpy(dst, st->data + e.begin, bytes);
  }
  return TRX_OK;
}

extern "C" int trx_safetensors_read_tensors(const trx_safetensors *st,
                                            int64_t n, const trx_tensor *specs,
                                            void *const *dst, int strict,
                                            char *err, size_t errlen) {
  if (!st || n < 0 || (n > 0 && (!specs || !dst)))
    return fail(TRX_ERR_ARG, err, errlen,
                "trx_safetensors_read_tensors: invalid arguments");
  try {
    std::unordered_set<std::string> wanted;
    for (int64_t i = 0; i < n; ++i) {
      if (!specs[i].name)
        return fail(TRX_ERR_ARG, err, errlen,
                    "%s: expected tensor #%" PRId64 " has no name",
                    st->path.c_str(), i);
      int rc = trx_safetensors_read_into(st, specs[i].name, specs[i].dtype,
                                         specs[i].rank, specs[i].shape, dst[i],
                                         err, errlen);
      if (rc != TRX_OK)
        return rc;
      wanted.insert(specs[i].name);
    }
    if (strict)
      for (const Entry &e : st->entries)
        if (!wanted.count(e.name))
          return fail(TRX_ERR_MISMATCH, err, errlen,
                      "%s: unexpected tensor '%s' (not expected by the model)",
                      st->path.c_str(), e.name.c_str());
  } catch (const std::bad_alloc &) {
    return fail(TRX_ERR_NOMEM, err, errlen, "%s: out of memory",
                st->path.c_str());
  }
  return TRX_OK;
}

extern "C" const char *trx_safetensors_metadata(const trx_safetensors *st,
                                                const char *key) {
  if (!st || !key)
    return nullptr;
  for (const auto &kv : st->metadata)
    if (kv.first == key)
      return kv.second.c_str();
  return nullptr;
}

extern "C" void trx_safetensors_close(trx_safetensors *st) { delete st; }
