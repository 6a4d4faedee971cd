//===- util.cpp - Errors and file helpers of the Triax runtime
//-------------===//
//
// Error-message plumbing (err buffers, trx_last_error, status names) and the
// POSIX file helpers used for crash-safe writes: full writes, fsync of files
// and directories, atomic replace, memory maps.
//
//===----------------------------------------------------------------------===//

#include "device.h"
#include "internal.h"
#include "triax_rt.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace triax::rt {

namespace {
thread_local char lastError[512];
} // namespace

void setErr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

int fail(int code, char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

void setLastError(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(lastError, sizeof(lastError), fmt, ap);
  va_end(ap);
}

std::string errnoStr(int errnum) {
  char buf[256];
  // The GNU strerror_r may return a static string instead of filling buf.
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  const char *s = strerror_r(errnum, buf, sizeof(buf));
  return s ? std::string(s) : std::string("unknown error");
#else
  if (strerror_r(errnum, buf, sizeof(buf)) != 0)
    snprintf(buf, sizeof(buf), "error %d", errnum);
  return buf;
#endif
}

int writeAll(int fd, const void *data, size_t n) {
  const char *p = static_cast<const char *>(data);
  while (n > 0) {
    // Linux writes at most 0x7ffff000 bytes per call.
    size_t chunk = n < (size_t(1) << 30) ? n : (size_t(1) << 30);
    ssize_t w = ::write(fd, p, chunk);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    if (w == 0)
      return EIO;
    p += w;
    n -= size_t(w);
  }
  return 0;
}

std::string dirName(const std::string &path) {
  size_t end = path.size();
  while (end > 1 && path[end - 1] == '/')
    --end;
  size_t slash = path.rfind('/', end - 1);
  if (slash == std::string::npos)
    return ".";
  while (slash > 0 && path[slash - 1] == '/')
    --slash;
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

std::string baseName(const std::string &path) {
  size_t end = path.size();
  while (end > 1 && path[end - 1] == '/')
    --end;
  size_t slash = path.rfind('/', end - 1);
  size_t begin = slash == std::string::npos ? 0 : slash + 1;
  return path.substr(begin, end - begin);
}

std::string joinPath(const std::string &a, const std::string &b) {
  if (a.empty())
    return b;
  if (a.back() == '/')
    return a + b;
  return a + "/" + b;
}

int fsyncDir(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  int rc = 0;
  if (::fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
    rc = errno;
  ::close(fd);
  return rc;
}

void removeStaleTemps(const std::string &dir, const std::string &prefix) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  std::vector<std::string> victims;
  while (struct dirent *ent = ::readdir(d)) {
    if (std::strncmp(ent->d_name, prefix.c_str(), prefix.size()) != 0)
      continue;
    const char *digits = ent->d_name + prefix.size();
    char *end = nullptr;
    long pid = std::strtol(digits, &end, 10);
    if (end == digits || *end != '\0' || pid <= 0 || pid == ::getpid())
      continue;
    if (::kill(pid_t(pid), 0) != 0 && errno == ESRCH)
      victims.push_back(ent->d_name);
  }
  ::closedir(d);
  for (const std::string &v : victims)
    ::unlink(joinPath(dir, v).c_str());
}

int atomicWriteFile(const std::string &path, std::string_view content,
                    char *err, size_t errlen) {
  std::string dir = dirName(path);
  removeStaleTemps(dir, baseName(path) + ".tmp.");
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(TRX_ERR_IO, err, errlen, "%s: cannot create %s: %s",
                path.c_str(), tmp.c_str(), errnoStr(errno).c_str());
  int e = writeAll(fd, content.data(), content.size());
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
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    e = errno;
    ::unlink(tmp.c_str());
    return fail(TRX_ERR_IO, err, errlen, "%s: cannot rename %s into place: %s",
                path.c_str(), tmp.c_str(), errnoStr(e).c_str());
  }
  if ((e = fsyncDir(dir)) != 0)
    return fail(TRX_ERR_IO, err, errlen, "%s: cannot fsync directory: %s",
                dir.c_str(), errnoStr(e).c_str());
  return TRX_OK;
}

int readFile(const std::string &path, std::string &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
  }
  out.clear();
  char buf[65536];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      ::close(fd);
      return e;
    }
    if (r == 0)
      break;
    out.append(buf, size_t(r));
  }
  ::close(fd);
  return 0;
}

MappedFile::~MappedFile() {
  if (addr)
    ::munmap(addr, size);
}

int mapFile(const std::string &path, MappedFile &out, char *err,
            size_t errlen) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(errno == ENOENT ? TRX_ERR_NOT_FOUND : TRX_ERR_IO, err, errlen,
                "%s: cannot open: %s", path.c_str(), errnoStr(errno).c_str());
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return fail(TRX_ERR_IO, err, errlen, "%s: cannot stat: %s", path.c_str(),
                errnoStr(e).c_str());
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(TRX_ERR_IO, err, errlen, "%s: not a regular file",
                path.c_str());
  }
  out.size = size_t(st.st_size);
  out.addr = nullptr;
  if (out.size > 0) {
    void *p = ::mmap(nullptr, out.size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      out.size = 0;
      return fail(e == ENOMEM ? TRX_ERR_NOMEM : TRX_ERR_IO, err, errlen,
                  "%s: cannot map: %s", path.c_str(), errnoStr(e).c_str());
    }
    out.addr = p;
  }
  ::close(fd);
  return TRX_OK;
}

} // namespace triax::rt

using namespace triax::rt;

extern "C" const char *trx_status_str(int status) {
  switch (status) {
  case TRX_OK:
    return "ok";
  case TRX_ERR_ARG:
    return "invalid argument";
  case TRX_ERR_IO:
    return "I/O error";
  case TRX_ERR_FORMAT:
    return "bad file format";
  case TRX_ERR_NOT_FOUND:
    return "not found";
  case TRX_ERR_MISMATCH:
    return "dtype or shape mismatch";
  case TRX_ERR_RANGE:
    return "value out of range";
  case TRX_ERR_NOMEM:
    return "out of memory";
  default:
    return "unknown status";
  }
}

extern "C" const char *trx_last_error(void) { return lastError; }

/// The active device's wait (device.h); nothing to wait for on the CPU,
/// where the kernels ran when they returned.
extern "C" void trx_device_sync(void) { triax::rt::activeDevice().sync(); }
