//===- ckpt.cpp - Crash-safe checkpoint directories
//------------------------===//
//
// Implements the step-directory protocol described in triax_rt.h: write into
// "step-XXXXXXXX.tmp-<pid>", fsync everything, rename into place, then
// atomically replace the "latest" pointer. Readers only ever see complete
// step directories.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "triax_rt.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <new>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

using namespace triax::rt;

bool triax::rt::isDir(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool triax::rt::isFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

namespace {

constexpr const char *kStateFormat = "triax-ckpt";
constexpr int64_t kStateVersion = 1;
constexpr const char *kModelFile = "model.safetensors";
constexpr const char *kOptimFile = "optim.safetensors";
constexpr const char *kStateFile = "state.json";
constexpr const char *kLatestFile = "latest";
constexpr const char *kLockFile = ".lock";

std::string stepName(int64_t step) {
  char buf[32];
  snprintf(buf, sizeof(buf), "step-%08" PRId64, step);
  return buf;
}

/// Parses "step-NNNNNNNN" (8 or more digits, nothing after). Returns the step
/// or -1.
int64_t parseStepName(const char *name) {
  if (std::strncmp(name, "step-", 5) != 0)
    return -1;
  const char *p = name + 5;
  size_t digits = 0;
  int64_t v = 0;
  for (; p[digits] >= '0' && p[digits] <= '9'; ++digits) {
    if (v > (INT64_MAX - 9) / 10)
      return -1;
    v = v * 10 + (p[digits] - '0');
  }
  if (digits < 8 || p[digits] != '\0')
    return -1;
  return v;
}

/// Removes a flat directory written by this module (files only). Best effort.
void removeFlatDir(const std::string &dir) {
  if (DIR *d = ::opendir(dir.c_str())) {
    while (struct dirent *ent = ::readdir(d)) {
      if (std::strcmp(ent->d_name, ".") == 0 ||
          std::strcmp(ent->d_name, "..") == 0)
        continue;
      ::unlink(joinPath(dir, ent->d_name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

/// mkdir -p. Returns 0 or an errno value.
int makeDirs(const std::string &path) {
  if (isDir(path))
    return 0;
  std::string parent = dirName(path);
  if (parent != path && parent != "." && parent != "/") {
    int e = makeDirs(parent);
    if (e != 0)
      return e;
  }
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    return errno;
  return isDir(path) ? 0 : ENOTDIR;
}

/// Atomically exchanges two paths (Linux renameat2 RENAME_EXCHANGE).
/// Returns 0 or an errno value.
int exchangePaths(const std::string &a, const std::string &b) {
#if defined(__linux__) && defined(SYS_renameat2)
  constexpr unsigned kRenameExchange = 1u << 1; // RENAME_EXCHANGE
  if (::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(),
                kRenameExchange) == 0)
    return 0;
  return errno;
#else
  (void)a;
  (void)b;
  return ENOSYS;
#endif
}

/// Removes leftovers ("*.tmp-<pid>", "*.old-<pid>", "latest.tmp.<pid>") of
/// writers that are no longer running. Best effort.
void removeStale(const std::string &dir) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  std::vector<std::string> victims;
  pid_t self = ::getpid();
  while (struct dirent *ent = ::readdir(d)) {
    const char *name = ent->d_name;
    const char *mark = nullptr;
    if (std::strncmp(name, "step-", 5) == 0) {
      mark = std::strstr(name, ".tmp-");
      if (!mark)
        mark = std::strstr(name, ".old-");
      if (mark)
        mark += 5;
    } else if (std::strncmp(name, "latest.tmp.", 11) == 0) {
      mark = name + 11;
    }
    if (!mark || !*mark)
      continue;
    char *end = nullptr;
    long pid = std::strtol(mark, &end, 10);
    if (*end != '\0' || pid <= 0 || pid > INT_MAX || pid_t(pid) == self)
      continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH)
      continue; // Still running (or not ours to judge).
    victims.push_back(name);
  }
  ::closedir(d);
  for (const std::string &v : victims) {
    std::string p = joinPath(dir, v);
    if (isDir(p))
      removeFlatDir(p);
    else
      ::unlink(p.c_str());
  }
}

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `n` bytes,
/// continuing from `crc` (0 to start): eight bytes a step through eight
/// tables (slicing-by-8).
uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t n) {
  static const auto tables = [] {
    std::array<std::array<uint32_t, 256>, 8> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int k = 1; k < 8; ++k)
        t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    return t;
  }();
  crc = ~crc;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    w ^= crc; // little-endian hosts (x86-64, aarch64)
    crc = tables[7][w & 0xFF] ^ tables[6][(w >> 8) & 0xFF] ^
          tables[5][(w >> 16) & 0xFF] ^ tables[4][(w >> 24) & 0xFF] ^
          tables[3][(w >> 32) & 0xFF] ^ tables[2][(w >> 40) & 0xFF] ^
          tables[1][(w >> 48) & 0xFF] ^ tables[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--)
    crc = (crc >> 8) ^ tables[0][(crc ^ *p++) & 0xFF];
  return ~crc;
}

/// "crc32c:xxxxxxxx" of the file at `path`, or "" with the error in err.
std::string fileChecksum(const std::string &path, char *err, size_t errlen) {
  MappedFile file;
  if (mapFile(path, file, err, errlen) != TRX_OK)
    return "";
  char text[32];
  std::snprintf(text, sizeof(text), "crc32c:%08x",
                crc32c(0, file.bytes(), file.size));
  return text;
}

/// The files a checkpoint lists checksums of (state.json "checksums").
constexpr const char *kCheckedFiles[] = {kModelFile, kOptimFile};

std::string
stateJson(const trx_ckpt_state &s,
          const std::vector<std::pair<std::string, std::string>> &extra,
          const std::vector<std::pair<std::string, std::string>> &checksums) {
  std::string j = "{\n  \"format\": ";
  json::appendString(j, kStateFormat);
  j += ",\n  \"version\": " + std::to_string(kStateVersion);
  j += ",\n  \"step\": " + std::to_string(s.step);
  j += ",\n  \"total_steps\": " + std::to_string(s.total_steps);
  j += ",\n  \"seed\": " + std::to_string(s.seed);
  j += ",\n  \"loader_state\": " + std::to_string(s.loader_state);
  j += ",\n  \"rng_state\": " + std::to_string(s.rng_state);
  j += ",\n  \"lr_max\": ";
  json::appendFloat(j, s.lr_max);
  j += ",\n  \"min_lr_ratio\": ";
  json::appendFloat(j, s.min_lr_ratio);
  j += ",\n  \"warmup\": " + std::to_string(s.warmup);
  j += ",\n  \"lr_schedule\": ";
  json::appendString(j,
                     s.lr_schedule == TRX_LR_CONSTANT ? "constant" : "cosine");
  j += ",\n  \"loss\": ";
  json::appendFloat(j, s.loss);
  // {"key": "value", ...}, one member a line.
  auto appendStrings =
      [&](const std::vector<std::pair<std::string, std::string>> &members) {
        j += "{";
        for (size_t i = 0; i < members.size(); ++i) {
          j += i ? ",\n    " : "\n    ";
          json::appendString(j, members[i].first);
          j += ": ";
          json::appendString(j, members[i].second);
        }
        j += members.empty() ? "}" : "\n  }";
      };
  j += ",\n  \"checksums\": ";
  appendStrings(checksums);
  j += ",\n  \"extra\": ";
  appendStrings(extra);
  j += "\n}\n";
  return j;
}

int saveImpl(const char *ckptDir, const trx_ckpt_state *state, int64_t n,
             const trx_tensor *params, const float *const *expAvg,
             const float *const *expAvgSq, const char *extraJson,
             const std::vector<std::pair<std::string, std::string>> &files,
             char *err, size_t errlen) {
  if (!ckptDir || !*ckptDir)
    return fail(TRX_ERR_ARG, err, errlen,
                "trx_ckpt_save: no checkpoint "
                "directory given");
  if (!state)
    return fail(TRX_ERR_ARG, err, errlen, "%s: NULL checkpoint state", ckptDir);
  if (state->step < 0)
    return fail(TRX_ERR_ARG, err, errlen,
                "%s: invalid checkpoint step %" PRId64, ckptDir, state->step);
  std::vector<uint64_t> sizes;
  int rc = validateTensors(ckptDir, n, params, sizes, err, errlen);
  if (rc != TRX_OK)
    return rc;
  if ((expAvg == nullptr) != (expAvgSq == nullptr))
    return fail(TRX_ERR_ARG, err, errlen,
                "%s: exp_avg and exp_avg_sq must both be given or both be NULL",
                ckptDir);
  std::vector<std::pair<std::string, std::string>> extra;
  if (extraJson) {
    std::string e;
    if (!json::parseStringMap(extraJson, extra, e))
      return fail(TRX_ERR_ARG, err, errlen,
                  "%s: extra state must be a JSON object of string values: %s",
                  ckptDir, e.c_str());
  }

  // Optimizer tensors: "<name>.exp_avg" / "<name>.exp_avg_sq", F32.
  std::vector<std::string> optNames;
  std::vector<trx_tensor> optim;
  if (expAvg) {
    optNames.reserve(size_t(2 * n));
    for (int64_t i = 0; i < n; ++i) {
      if (sizes[size_t(i)] > 0 && (!expAvg[i] || !expAvgSq[i]))
        return fail(TRX_ERR_ARG, err, errlen,
                    "%s: NULL optimizer state for parameter '%s'", ckptDir,
                    params[i].name);
      optNames.push_back(std::string(params[i].name) + ".exp_avg");
      optNames.push_back(std::string(params[i].name) + ".exp_avg_sq");
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int k = 0; k < 2; ++k) {
        trx_tensor t = params[i];
        t.name = optNames[size_t(2 * i + k)].c_str();
        t.dtype = TRX_F32;
        t.data = k == 0 ? static_cast<const void *>(expAvg[i])
                        : static_cast<const void *>(expAvgSq[i]);
        optim.push_back(t);
      }
    }
  }

  rc = trx_ckpt_check_writable(ckptDir, err, errlen);
  if (rc != TRX_OK)
    return rc;
  std::string dir = ckptDir;
  removeStale(dir);

  std::string name = stepName(state->step);
  std::string finalDir = joinPath(dir, name);
  std::string tmpDir = finalDir + ".tmp-" + std::to_string(::getpid());
  if (isDir(tmpDir))
    removeFlatDir(tmpDir);
  if (::mkdir(tmpDir.c_str(), 0755) != 0)
    return fail(TRX_ERR_IO, err, errlen, "%s: cannot create directory: %s",
                tmpDir.c_str(), errnoStr(errno).c_str());

  std::string meta =
      "{\"format\":\"triax\",\"step\":\"" + std::to_string(state->step) + "\"}";
  rc = trx_safetensors_write(joinPath(tmpDir, kModelFile).c_str(), n, params,
                             meta.c_str(), err, errlen);
  if (rc == TRX_OK)
    rc = trx_safetensors_write(joinPath(tmpDir, kOptimFile).c_str(),
                               int64_t(optim.size()), optim.data(),
                               meta.c_str(), err, errlen);
  // Files the caller adds (transformers' config.json), in the same
  // directory: they appear with the checkpoint or not at all.
  for (const auto &[file, content] : files)
    if (rc == TRX_OK)
      rc = atomicWriteFile(joinPath(tmpDir, file), content, err, errlen);
  // Each data file's checksum goes into state.json, written last: a
  // checkpoint changed after it was written is refused on load.
  std::vector<std::pair<std::string, std::string>> checksums;
  for (const char *file : kCheckedFiles) {
    if (rc != TRX_OK)
      break;
    std::string sum = fileChecksum(joinPath(tmpDir, file), err, errlen);
    if (sum.empty())
      rc = TRX_ERR_IO;
    else
      checksums.push_back({file, sum});
  }
  if (rc == TRX_OK)
    rc = atomicWriteFile(joinPath(tmpDir, kStateFile),
                         stateJson(*state, extra, checksums), err, errlen);
  int e;
  if (rc == TRX_OK && (e = fsyncDir(tmpDir)) != 0)
    rc = fail(TRX_ERR_IO, err, errlen, "%s: cannot fsync directory: %s",
              tmpDir.c_str(), errnoStr(e).c_str());
  if (rc != TRX_OK) {
    removeFlatDir(tmpDir);
    return rc;
  }

  // Move the finished directory into place.
  if (!isDir(finalDir)) {
    if (::rename(tmpDir.c_str(), finalDir.c_str()) != 0) {
      e = errno;
      removeFlatDir(tmpDir);
      return fail(TRX_ERR_IO, err, errlen,
                  "%s: cannot rename %s into place: %s", finalDir.c_str(),
                  tmpDir.c_str(), errnoStr(e).c_str());
    }
  } else if ((e = exchangePaths(tmpDir, finalDir)) == 0) {
    removeFlatDir(tmpDir); // Now holds the replaced checkpoint.
  } else {
    // No atomic exchange: move the old one aside first. A crash in between
    // leaves "latest" pointing at a missing directory, which
    // trx_ckpt_latest() handles by falling back to a scan.
    std::string oldDir = finalDir + ".old-" + std::to_string(::getpid());
    if (isDir(oldDir))
      removeFlatDir(oldDir);
    if (::rename(finalDir.c_str(), oldDir.c_str()) != 0 ||
        ::rename(tmpDir.c_str(), finalDir.c_str()) != 0) {
      e = errno;
      removeFlatDir(tmpDir);
      return fail(TRX_ERR_IO, err, errlen, "%s: cannot replace: %s",
                  finalDir.c_str(), errnoStr(e).c_str());
    }
    removeFlatDir(oldDir);
  }
  if ((e = fsyncDir(dir)) != 0)
    return fail(TRX_ERR_IO, err, errlen, "%s: cannot fsync directory: %s",
                dir.c_str(), errnoStr(e).c_str());
  return atomicWriteFile(joinPath(dir, kLatestFile), name + "\n", err, errlen);
}

/// `text` without its trailing newlines, carriage returns and spaces.
std::string trimLineEnd(std::string text) {
  while (!text.empty() &&
         (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

/// The step directory `latest` names; false when there is no readable
/// `latest`.
bool readLatest(const std::string &dir, std::string &pointer) {
  if (readFile(joinPath(dir, kLatestFile), pointer) != 0)
    return false;
  pointer = trimLineEnd(pointer);
  return true;
}

bool completeStepDir(const std::string &path) {
  return isDir(path) && isFile(joinPath(path, kModelFile)) &&
         isFile(joinPath(path, kStateFile));
}

} // namespace

extern "C" int trx_ckpt_check_writable(const char *ckpt_dir, char *err,
                                       size_t errlen) {
  if (!ckpt_dir || !*ckpt_dir)
    return fail(TRX_ERR_ARG, err, errlen, "no checkpoint directory given");
  try {
    std::string dir = ckpt_dir;
    struct stat st;
    if (::stat(ckpt_dir, &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        return fail(TRX_ERR_IO, err, errlen, "%s: not a directory", ckpt_dir);
    } else {
      if (errno != ENOENT)
        return fail(TRX_ERR_IO, err, errlen, "%s: cannot access: %s", ckpt_dir,
                    errnoStr(errno).c_str());
      int e = makeDirs(dir);
      if (e != 0)
        return fail(TRX_ERR_IO, err, errlen, "%s: cannot create directory: %s",
                    ckpt_dir, errnoStr(e).c_str());
    }
    std::string probe =
        joinPath(dir, ".trx-write-probe." + std::to_string(::getpid()));
    int fd =
        ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      return fail(TRX_ERR_IO, err, errlen, "%s: not writable: %s", ckpt_dir,
                  errnoStr(errno).c_str());
    int e = writeAll(fd, "x", 1);
    ::close(fd);
    ::unlink(probe.c_str());
    if (e != 0)
      return fail(TRX_ERR_IO, err, errlen, "%s: not writable: %s", ckpt_dir,
                  errnoStr(e).c_str());
  } catch (const std::bad_alloc &) {
    return fail(TRX_ERR_NOMEM, err, errlen, "%s: out of memory", ckpt_dir);
  }
  return TRX_OK;
}

extern "C" int trx_ckpt_lock(const char *ckpt_dir, char *err, size_t errlen) {
  if (!ckpt_dir || !*ckpt_dir)
    return fail(TRX_ERR_ARG, err, errlen, "no checkpoint directory given");
  // The directories this process holds (their lock files stay open, so the
  // locks last until it exits).
  static std::vector<std::string> held;
  try {
    std::string path = joinPath(ckpt_dir, kLockFile);
    for (const std::string &p : held)
      if (p == path)
        return TRX_OK;
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return fail(TRX_ERR_IO, err, errlen, "%s: cannot create %s: %s", ckpt_dir,
                  path.c_str(), errnoStr(errno).c_str());
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      char owner[256] = {0};
      ssize_t got = ::pread(fd, owner, sizeof(owner) - 1, 0);
      ::close(fd);
      std::string who =
          trimLineEnd(got > 0 ? std::string(owner, size_t(got)) : "");
      if (e != EWOULDBLOCK)
        return fail(TRX_ERR_IO, err, errlen, "%s: cannot lock %s: %s", ckpt_dir,
                    path.c_str(), errnoStr(e).c_str());
      return fail(TRX_ERR_IO, err, errlen,
                  "%s: in use by another run (%s); give each run its own "
                  "--ckpt-dir",
                  ckpt_dir, who.empty() ? "owner unknown" : who.c_str());
    }
    char host[256] = "unknown";
    ::gethostname(host, sizeof(host) - 1);
    std::string me = "host " + std::string(host) + " pid " +
                     std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
      int e = errno;
      ::close(fd);
      return fail(TRX_ERR_IO, err, errlen, "%s: cannot write %s: %s", ckpt_dir,
                  path.c_str(), errnoStr(e).c_str());
    }
    held.push_back(path);
  } catch (const std::bad_alloc &) {
    return fail(TRX_ERR_NOMEM, err, errlen, "%s: out of memory", ckpt_dir);
  }
  return TRX_OK;
}

int triax::rt::saveCheckpoint(
    const char *ckptDir, const trx_ckpt_state *state, int64_t n,
    const trx_tensor *params, const float *const *expAvg,
    const float *const *expAvgSq, const char *extraJson,
    const std::vector<std::pair<std::string, std::string>> &files, char *err,
    size_t errlen) {
  try {
    return saveImpl(ckptDir, state, n, params, expAvg, expAvgSq, extraJson,
                    files, err, errlen);
  } catch (const std::bad_alloc &) {
    return fail(TRX_ERR_NOMEM, err, errlen, "%s: out of memory",
                ckptDir ? ckptDir : "trx_ckpt_save");
  }
}

extern "C" int trx_ckpt_save(const char *ckpt_dir, const trx_ckpt_state *state,
                             int64_t n, const trx_tensor *params,
                             const float *const *exp_avg,
                             const float *const *exp_avg_sq,
                             const char *extra_json_object_or_null, char *err,
                             size_t errlen) {
  return saveCheckpoint(ckpt_dir, state, n, params, exp_avg, exp_avg_sq,
                        extra_json_object_or_null, {}, err, errlen);
}

extern "C" int trx_ckpt_latest(const char *ckpt_dir, char *buf, size_t len,
                               char *err, size_t errlen) {
  if (buf && len > 0)
    buf[0] = '\0';
  if (!ckpt_dir || !*ckpt_dir)
    return fail(TRX_ERR_ARG, err, errlen, "no checkpoint directory given");
  if (!buf || len == 0)
    return fail(TRX_ERR_ARG, err, errlen, "%s: no output buffer", ckpt_dir);
  try {
    std::string dir = ckpt_dir;
    if (!isDir(dir))
      return fail(isFile(dir) ? TRX_ERR_IO : TRX_ERR_NOT_FOUND, err, errlen,
                  "%s: %s", ckpt_dir,
                  isFile(dir) ? "not a directory"
                              : "no checkpoint (directory does not exist)");
    std::string chosen;
    std::string pointer;
    if (readLatest(dir, pointer)) {
      if (parseStepName(pointer.c_str()) >= 0 &&
          completeStepDir(joinPath(dir, pointer)))
        chosen = pointer;
    }
    if (chosen.empty()) {
      DIR *d = ::opendir(ckpt_dir);
      if (!d)
        return fail(TRX_ERR_IO, err, errlen, "%s: cannot read directory: %s",
                    ckpt_dir, errnoStr(errno).c_str());
      int64_t best = -1;
      while (struct dirent *ent = ::readdir(d)) {
        int64_t s = parseStepName(ent->d_name);
        if (s > best && completeStepDir(joinPath(dir, ent->d_name))) {
          best = s;
          chosen = ent->d_name;
        }
      }
      ::closedir(d);
    }
    if (chosen.empty())
      return fail(TRX_ERR_NOT_FOUND, err, errlen, "%s: no checkpoint found",
                  ckpt_dir);
    std::string full = joinPath(dir, chosen);
    if (full.size() + 1 > len)
      return fail(TRX_ERR_ARG, err, errlen,
                  "%s: buffer of %zu bytes is too small for '%s'", ckpt_dir,
                  len, full.c_str());
    std::memcpy(buf, full.c_str(), full.size() + 1);
  } catch (const std::bad_alloc &) {
    return fail(TRX_ERR_NOMEM, err, errlen, "%s: out of memory", ckpt_dir);
  }
  return TRX_OK;
}

extern "C" int trx_ckpt_skipped(const char *ckpt_dir, const char *chosen,
                                char *buf, size_t len) {
  if (!buf || len == 0)
    return 0;
  buf[0] = '\0';
  if (!ckpt_dir || !chosen)
    return 0;
  try {
    std::string dir = ckpt_dir;
    const char *base = std::strrchr(chosen, '/');
    int64_t from = parseStepName(base ? base + 1 : chosen);
    std::vector<std::pair<int64_t, std::string>> skipped;
    if (DIR *d = ::opendir(ckpt_dir)) {
      while (struct dirent *ent = ::readdir(d)) {
        int64_t s = parseStepName(ent->d_name);
        if (s <= from)
          continue;
        std::string path = joinPath(dir, ent->d_name);
        if (!isDir(path))
          continue;
        // (A complete one is passed over when `latest` names an older.)
        std::string why = !isFile(joinPath(path, kModelFile))
                              ? std::string("no ") + kModelFile
                          : !isFile(joinPath(path, kStateFile))
                              ? std::string("no ") + kStateFile
                              : std::string("complete, but latest names an "
                                            "older step");
        skipped.push_back({s, std::string(ent->d_name) + " (" + why + ")"});
      }
      ::closedir(d);
    }
    std::sort(skipped.begin(), skipped.end());
    std::string out;
    for (const auto &entry : skipped)
      out += (out.empty() ? "" : "; ") + entry.second;
    int entries = int(skipped.size());
    std::string pointer;
    if (readLatest(dir, pointer) && !pointer.empty() &&
        !completeStepDir(joinPath(dir, pointer))) {
      out += (out.empty() ? "" : "; ") + std::string("latest names ") +
             pointer + ", which is incomplete";
      ++entries;
    }
    std::snprintf(buf, len, "%s", out.c_str());
    return entries;
  } catch (const std::bad_alloc &) {
    return 0;
  }
}

struct trx_ckpt {
  std::string dir;
  trx_safetensors *model = nullptr;
  trx_safetensors *optim = nullptr;
  trx_ckpt_state state{};
  std::vector<std::pair<std::string, std::string>> extra;
  std::vector<std::pair<std::string, std::string>> checksums;
  ~trx_ckpt() {
    trx_safetensors_close(model);
    trx_safetensors_close(optim);
  }
};

namespace {

int parseState(trx_ckpt &ck, const std::string &path, const std::string &text,
               char *err, size_t errlen) {
  const char *p = path.c_str();
  json::Value root;
  std::string jerr;
  if (!json::parse(text, root, jerr))
    return fail(TRX_ERR_FORMAT, err, errlen, "%s: corrupt JSON %s", p,
                jerr.c_str());
  if (!root.isObject())
    return fail(TRX_ERR_FORMAT, err, errlen, "%s: not a JSON object", p);
  const json::Value *fmt = root.get("format");
  if (!fmt || !fmt->isString() || fmt->text != kStateFormat)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: not a triax checkpoint state (format != \"%s\")", p,
                kStateFormat);
  int64_t version = 0;
  const json::Value *ver = root.get("version");
  if (!ver || !ver->toInt64(version) || version != kStateVersion)
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: unsupported state version (expected %" PRId64 ")", p,
                kStateVersion);

  trx_ckpt_state &s = ck.state;
  auto needI64 = [&](const char *key, int64_t &out) {
    const json::Value *v = root.get(key);
    return v && v->toInt64(out);
  };
  auto needU64 = [&](const char *key, uint64_t &out) {
    const json::Value *v = root.get(key);
    return v && v->toUInt64(out);
  };
  auto needF32 = [&](const char *key, float &out) {
    const json::Value *v = root.get(key);
    return v && v->toFloat(out);
  };
  const char *bad = nullptr;
  if (!needI64("step", s.step) || s.step < 0)
    bad = "step";
  else if (!needI64("total_steps", s.total_steps))
    bad = "total_steps";
  else if (!needU64("seed", s.seed))
    bad = "seed";
  else if (!needU64("loader_state", s.loader_state))
    bad = "loader_state";
  else if (!needU64("rng_state", s.rng_state))
    bad = "rng_state";
  else if (!needF32("lr_max", s.lr_max))
    bad = "lr_max";
  else if (!needF32("min_lr_ratio", s.min_lr_ratio))
    bad = "min_lr_ratio";
  else if (!needI64("warmup", s.warmup))
    bad = "warmup";
  else if (!needF32("loss", s.loss))
    bad = "loss";
  if (bad)
    return fail(TRX_ERR_FORMAT, err, errlen, "%s: missing or invalid \"%s\"", p,
                bad);
  const json::Value *sched = root.get("lr_schedule");
  if (!sched || !sched->isString() ||
      (sched->text != "cosine" && sched->text != "constant"))
    return fail(TRX_ERR_FORMAT, err, errlen,
                "%s: missing or invalid \"lr_schedule\"", p);
  s.lr_schedule = sched->text == "constant" ? TRX_LR_CONSTANT : TRX_LR_COSINE;
  const json::Value *extra = root.get("extra");
  if (extra) {
    if (!extra->isObject())
      return fail(TRX_ERR_FORMAT, err, errlen, "%s: \"extra\" is not an object",
                  p);
    for (const auto &m : extra->members) {
      if (!m.second.isString())
        return fail(TRX_ERR_FORMAT, err, errlen,
                    "%s: \"extra\" value of '%s' is not a string", p,
                    m.first.c_str());
      ck.extra.emplace_back(m.first, m.second.text);
    }
  }
  // The data files' checksums (checkpoints before they were recorded have
  // none, and are loaded as they are).
  if (const json::Value *sums = root.get("checksums")) {
    if (!sums->isObject())
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: \"checksums\" is not an object", p);
    for (const auto &m : sums->members) {
      if (!m.second.isString())
        return fail(TRX_ERR_FORMAT, err, errlen,
                    "%s: checksum of '%s' is not a string", p, m.first.c_str());
      ck.checksums.emplace_back(m.first, m.second.text);
    }
  }
  return TRX_OK;
}

/// Recomputes the checksums state.json lists; an error names the file.
int verifyChecksums(const trx_ckpt &ck, char *err, size_t errlen) {
  for (const auto &[file, want] : ck.checksums) {
    if (file.find('/') != std::string::npos)
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: state.json lists a checksum of '%s', not a file of the "
                  "checkpoint",
                  ck.dir.c_str(), file.c_str());
    std::string got = fileChecksum(joinPath(ck.dir, file), err, errlen);
    if (got.empty())
      return TRX_ERR_IO;
    if (got != want)
      return fail(TRX_ERR_FORMAT, err, errlen,
                  "%s: %s is corrupt: its checksum is %s but state.json "
                  "recorded %s (the file changed after it was written)",
                  ck.dir.c_str(), file.c_str(), got.c_str(), want.c_str());
  }
  return TRX_OK;
}

} // namespace

extern "C" trx_ckpt *trx_ckpt_open(const char *step_dir, char *err,
                                   size_t errlen) {
  if (!step_dir || !*step_dir) {
    setErr(err, errlen, "trx_ckpt_open: no checkpoint directory given");
    return nullptr;
  }
  try {
    auto ck = std::make_unique<trx_ckpt>();
    ck->dir = step_dir;
    if (!isDir(ck->dir)) {
      setErr(err, errlen, "%s: not a checkpoint directory", step_dir);
      return nullptr;
    }
    std::string statePath = joinPath(ck->dir, kStateFile);
    std::string text;
    if (int e = readFile(statePath, text)) {
      setErr(err, errlen, "%s: cannot read: %s", statePath.c_str(),
             errnoStr(e).c_str());
      return nullptr;
    }
    if (parseState(*ck, statePath, text, err, errlen) != TRX_OK)
      return nullptr;
    ck->model = trx_safetensors_open(joinPath(ck->dir, kModelFile).c_str(), err,
                                     errlen);
    if (!ck->model)
      return nullptr;
    ck->optim = trx_safetensors_open(joinPath(ck->dir, kOptimFile).c_str(), err,
                                     errlen);
    if (!ck->optim)
      return nullptr;
    // (After the files' own checks, which name a truncated or malformed
    // file more precisely.)
    if (verifyChecksums(*ck, err, errlen) != TRX_OK)
      return nullptr;
    const char *ms = trx_safetensors_metadata(ck->model, "step");
    if (ms && std::to_string(ck->state.step) != ms) {
      setErr(err, errlen,
             "%s: model.safetensors is from step %s but state.json says "
             "step %" PRId64,
             step_dir, ms, ck->state.step);
      return nullptr;
    }
    return ck.release();
  } catch (const std::bad_alloc &) {
    setErr(err, errlen, "%s: out of memory", step_dir);
    return nullptr;
  }
}

extern "C" int trx_ckpt_get_state(const trx_ckpt *ck, trx_ckpt_state *out) {
  if (!ck || !out)
    return TRX_ERR_ARG;
  *out = ck->state;
  return TRX_OK;
}

extern "C" const char *trx_ckpt_extra(const trx_ckpt *ck, const char *key) {
  if (!ck || !key)
    return nullptr;
  for (const auto &kv : ck->extra)
    if (kv.first == key)
      return kv.second.c_str();
  return nullptr;
}

extern "C" const trx_safetensors *trx_ckpt_model(const trx_ckpt *ck) {
  return ck ? ck->model : nullptr;
}

extern "C" const trx_safetensors *trx_ckpt_optim(const trx_ckpt *ck) {
  return ck ? ck->optim : nullptr;
}

extern "C" int trx_ckpt_load(const trx_ckpt *ck, int64_t n,
                             const trx_tensor *params, void *const *param_dst,
                             float *const *exp_avg, float *const *exp_avg_sq,
                             char *err, size_t errlen) {
  if (!ck)
    return fail(TRX_ERR_ARG, err, errlen, "trx_ckpt_load: NULL checkpoint");
  if ((exp_avg == nullptr) != (exp_avg_sq == nullptr))
    return fail(TRX_ERR_ARG, err, errlen,
                "%s: exp_avg and exp_avg_sq must both be given or both be NULL",
                ck->dir.c_str());
  int rc = trx_safetensors_read_tensors(ck->model, n, params, param_dst,
                                        /*strict=*/1, err, errlen);
  if (rc != TRX_OK || !exp_avg)
    return rc;
  try {
    std::vector<std::string> names;
    std::vector<trx_tensor> specs;
    std::vector<void *> dst;
    names.reserve(size_t(2 * n));
    for (int64_t i = 0; i < n; ++i) {
      names.push_back(std::string(params[i].name) + ".exp_avg");
      names.push_back(std::string(params[i].name) + ".exp_avg_sq");
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int k = 0; k < 2; ++k) {
        trx_tensor t = params[i];
        t.name = names[size_t(2 * i + k)].c_str();
        t.dtype = TRX_F32;
        specs.push_back(t);
        dst.push_back(k == 0 ? exp_avg[i] : exp_avg_sq[i]);
      }
    }
    return trx_safetensors_read_tensors(ck->optim, int64_t(specs.size()),
                                        specs.data(), dst.data(), 1, err,
                                        errlen);
  } catch (const std::bad_alloc &) {
    return fail(TRX_ERR_NOMEM, err, errlen, "%s: out of memory",
                ck->dir.c_str());
  }
}

extern "C" void trx_ckpt_close(trx_ckpt *ck) { delete ck; }
