//===- check.h - Tiny assertion helpers for the runtime tests ----*- C++
//-*-===//
//
// CHECK-style macros that print file:line and the failing expression (with
// values where possible) and exit non-zero, plus small file helpers shared
// by the test executables. No test framework dependency.
//
//===----------------------------------------------------------------------===//

#ifndef TRIAX_RT_TEST_CHECK_H
#define TRIAX_RT_TEST_CHECK_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ftw.h>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace trxtest {

inline int &checkCount() {
  static int n = 0;
  return n;
}

template <typename T> std::string show(const T &v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
inline std::string show(const char *s) {
  return s ? "\"" + std::string(s) + "\"" : "NULL";
}
inline std::string show(char *s) { return show(static_cast<const char *>(s)); }
inline std::string show(const std::string &s) { return "\"" + s + "\""; }
inline std::string show(int8_t v) { return std::to_string(v); }
inline std::string show(uint8_t v) { return std::to_string(v); }

[[noreturn]] inline void failed(const char *file, int line,
                                const std::string &what) {
  fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what.c_str());
  fflush(stderr);
  exit(1);
}

/// Called as one full-expression so that temporaries in the arguments
/// (e.g. std::string(...).c_str()) are still alive while comparing.
template <typename A, typename B>
void checkEq(const char *file, int line, const char *ea, const char *eb,
             const A &a, const B &b) {
  ++checkCount();
  if (!(a == b))
    failed(file, line,
           std::string(ea) + " == " + eb + " (" + show(a) + " vs " + show(b) +
               ")");
}

inline void checkStrEq(const char *file, int line, const char *ea,
                       const char *eb, const char *a, const char *b) {
  ++checkCount();
  if (!a || !b || strcmp(a, b) != 0)
    failed(file, line,
           std::string(ea) + " == " + eb + " (" + show(a) + " vs " + show(b) +
               ")");
}

inline void done(const char *suite) {
  printf("%s: all %d checks passed\n", suite, checkCount());
}

/// A fresh directory under $TMPDIR (or /tmp), removed on destruction unless
/// TRX_KEEP_TMP is set.
struct TempDir {
  std::string path;
  TempDir() {
    const char *base = getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/triax-rt-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) {
      perror("mkdtemp");
      exit(1);
    }
    path = buf.data();
  }
  ~TempDir() {
    if (!getenv("TRX_KEEP_TMP"))
      removeTree(path);
  }
  std::string operator/(const std::string &name) const {
    return path + "/" + name;
  }
  static void removeTree(const std::string &p) {
    nftw(
        p.c_str(),
        [](const char *fpath, const struct stat *, int, struct FTW *) {
          ::remove(fpath); // Best effort.
          return 0;
        },
        16, FTW_DEPTH | FTW_PHYS);
  }
};

inline bool writeFileBytes(const std::string &path, const void *data,
                           size_t n) {
  FILE *f = fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = fwrite(data, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

inline bool writeFileBytes(const std::string &path,
                           const std::vector<uint8_t> &bytes) {
  return writeFileBytes(path, bytes.data(), bytes.size());
}

inline std::vector<uint8_t> readFileBytes(const std::string &path) {
  std::vector<uint8_t> out;
  FILE *f = fopen(path.c_str(), "rb");
  if (!f)
    return out;
  uint8_t buf[65536];
  size_t r;
  while ((r = fread(buf, 1, sizeof(buf), f)) > 0)
    out.insert(out.end(), buf, buf + r);
  fclose(f);
  return out;
}

inline bool fileExists(const std::string &path) {
  return access(path.c_str(), F_OK) == 0;
}

/// An llm.c token file image: 256 int32 header, then uint16 tokens.
/// headerTokens overrides header[2] (default: the real count).
inline std::vector<uint8_t> makeBin(const std::vector<uint16_t> &tokens,
                                    int32_t magic = 20240520,
                                    int32_t version = 1,
                                    int64_t headerTokens = INT64_MIN) {
  int32_t header[256] = {};
  header[0] = magic;
  header[1] = version;
  header[2] = int32_t(headerTokens == INT64_MIN ? int64_t(tokens.size())
                                                : headerTokens);
  std::vector<uint8_t> out(sizeof(header) + 2 * tokens.size());
  memcpy(out.data(), header, sizeof(header));
  if (!tokens.empty())
    memcpy(out.data() + sizeof(header), tokens.data(), 2 * tokens.size());
  return out;
}

} // namespace trxtest

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++trxtest::checkCount();                                                   \
    if (!(cond))                                                               \
      trxtest::failed(__FILE__, __LINE__, #cond);                              \
  } while (0)

#define CHECK_EQ(a, b) trxtest::checkEq(__FILE__, __LINE__, #a, #b, (a), (b))

#define CHECK_STREQ(a, b)                                                      \
  trxtest::checkStrEq(__FILE__, __LINE__, #a, #b, (a), (b))

/// `status` must be `code` and the message buffer `err` must equal `msg`.
#define CHECK_ERR(status, code, err, msg)                                      \
  do {                                                                         \
    CHECK_EQ((status), (code));                                                \
    CHECK_STREQ((err), (msg));                                                 \
  } while (0)

#endif // TRIAX_RT_TEST_CHECK_H
