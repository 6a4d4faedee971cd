//===- ckpt_test.cpp - Checkpoint directory protocol tests
//-----------------===//
//
// Usage:
//   triax-rt-ckpt-test                        run all checks (includes a
//                                             short kill-during-write test)
//   triax-rt-ckpt-test check-writable DIR     trx_ckpt_check_writable
//   triax-rt-ckpt-test save DIR STEP          write a small checkpoint whose
//                                             tensors encode STEP
//   triax-rt-ckpt-test latest DIR             print trx_ckpt_latest
//   triax-rt-ckpt-test verify DIR             load the latest checkpoint and
//                                             check every tensor bit-exactly
//   triax-rt-ckpt-test kill-test DIR [N]      N times: fork a child that
//       writes large checkpoints in a loop, SIGKILL it after a few ms, then
//       verify that the latest checkpoint loads with valid tensors
// Errors go to stderr as "error: <message>" with exit status 1.
//
//===----------------------------------------------------------------------===//

#include "bf16.h"
#include "check.h"
#include "internal.h"
#include "triax_rt.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>

namespace {

/// Deterministic content: element i of tensor `which` at `step`.
inline uint32_t pattern(int64_t step, uint32_t which, uint64_t i) {
  uint64_t z = uint64_t(step) * 0x9E3779B97F4A7C15ULL +
               which * 0xD1B54A32D192ED03ULL + i;
  z = (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ULL;
  return uint32_t(z ^ (z >> 32));
}

/// A model with three parameters of different dtypes and its AdamW state.
struct Model {
  std::vector<uint32_t> wte;  // F32 [rows, 64]
  std::vector<uint16_t> bias; // BF16 [64]
  std::vector<uint32_t> pos;  // I32 [4, 4]
  std::vector<float> m[3], v[3];
  int64_t rows;

  explicit Model(int64_t rows) : rows(rows) {}

  std::vector<trx_tensor> tensors(bool withData) const {
    std::vector<trx_tensor> ts(3);
    ts[0] = {"wte.weight", TRX_F32, 2, {rows, 64}, nullptr};
    ts[1] = {"ln_f.bias", TRX_BF16, 1, {64}, nullptr};
    ts[2] = {"pos.table", TRX_I32, 2, {4, 4}, nullptr};
    if (withData) {
      ts[0].data = wte.data();
      ts[1].data = bias.data();
      ts[2].data = pos.data();
    }
    return ts;
  }

  void allocate() {
    wte.assign(size_t(rows * 64), 0);
    bias.assign(64, 0);
    pos.assign(16, 0);
    size_t n[3] = {wte.size(), bias.size(), pos.size()};
    for (int k = 0; k < 3; ++k) {
      m[k].assign(n[k], 0.f);
      v[k].assign(n[k], 0.f);
    }
  }

  void fill(int64_t step) {
    allocate();
    for (size_t i = 0; i < wte.size(); ++i)
      wte[i] = pattern(step, 0, i);
    for (size_t i = 0; i < bias.size(); ++i)
      bias[i] = uint16_t(pattern(step, 1, i));
    for (size_t i = 0; i < pos.size(); ++i)
      pos[i] = pattern(step, 2, i);
    for (int k = 0; k < 3; ++k)
      for (size_t i = 0; i < m[k].size(); ++i) {
        uint32_t a = pattern(step, 10 + uint32_t(k), i) & 0x3fffffffu;
        uint32_t b = pattern(step, 20 + uint32_t(k), i) & 0x3fffffffu;
        memcpy(&m[k][i], &a, 4); // Finite floats (exponent < 0x80).
        memcpy(&v[k][i], &b, 4);
      }
  }

  /// Returns "" when the data match `step` bit-exactly, else a description.
  std::string verify(int64_t step) const {
    for (size_t i = 0; i < wte.size(); ++i)
      if (wte[i] != pattern(step, 0, i))
        return "wte.weight[" + std::to_string(i) + "]";
    for (size_t i = 0; i < bias.size(); ++i)
      if (bias[i] != uint16_t(pattern(step, 1, i)))
        return "ln_f.bias[" + std::to_string(i) + "]";
    for (size_t i = 0; i < pos.size(); ++i)
      if (pos[i] != pattern(step, 2, i))
        return "pos.table[" + std::to_string(i) + "]";
    for (int k = 0; k < 3; ++k)
      for (size_t i = 0; i < m[k].size(); ++i) {
        uint32_t a, b;
        memcpy(&a, &m[k][i], 4);
        memcpy(&b, &v[k][i], 4);
        if (a != (pattern(step, 10 + uint32_t(k), i) & 0x3fffffffu) ||
            b != (pattern(step, 20 + uint32_t(k), i) & 0x3fffffffu))
          return "optimizer state of parameter " + std::to_string(k);
      }
    return "";
  }
};

trx_ckpt_state stateFor(int64_t step) {
  trx_ckpt_state s{};
  s.step = step;
  s.total_steps = 5000;
  s.seed = UINT64_MAX - uint64_t(step); // Needs all 64 bits.
  s.loader_state = (uint64_t(3) << 32) | uint64_t(step % 1000);
  s.rng_state = 0x8000000000000001ULL ^ uint64_t(step);
  s.lr_max = 6e-4f;
  s.min_lr_ratio = 0.1f;
  s.warmup = 700;
  s.lr_schedule = TRX_LR_COSINE;
  s.loss = 3.14159274f + float(step);
  return s;
}

/// Saves a model already filled for `step`.
int saveModel(const std::string &dir, const Model &m, int64_t step, char *err,
              size_t errlen) {
  int64_t rows = m.rows;
  std::vector<trx_tensor> ts = m.tensors(true);
  const float *ma[3] = {m.m[0].data(), m.m[1].data(), m.m[2].data()};
  const float *va[3] = {m.v[0].data(), m.v[1].data(), m.v[2].data()};
  trx_ckpt_state st = stateFor(step);
  std::string extra =
      "{\"model\":\"gpt2-tiny\",\"rows\":\"" + std::to_string(rows) + "\"}";
  return trx_ckpt_save(dir.c_str(), &st, 3, ts.data(), ma, va, extra.c_str(),
                       err, errlen);
}

int save(const std::string &dir, int64_t step, int64_t rows, char *err,
         size_t errlen) {
  Model m(rows);
  m.fill(step);
  return saveModel(dir, m, step, err, errlen);
}

/// Opens the latest checkpoint of `dir` and verifies it completely. Returns
/// its step, or -1 with `why` set.
int64_t verifyLatest(const std::string &dir, std::string &why) {
  char path[4096], err[1024];
  int rc = trx_ckpt_latest(dir.c_str(), path, sizeof(path), err, sizeof(err));
  if (rc != TRX_OK) {
    why = err;
    return -1;
  }
  trx_ckpt *ck = trx_ckpt_open(path, err, sizeof(err));
  if (!ck) {
    why = err;
    return -1;
  }
  trx_ckpt_state st;
  trx_ckpt_get_state(ck, &st);
  const char *rowsStr = trx_ckpt_extra(ck, "rows");
  Model m(rowsStr ? strtoll(rowsStr, nullptr, 10) : 0);
  m.allocate();
  std::vector<trx_tensor> specs = m.tensors(false);
  void *dst[3] = {m.wte.data(), m.bias.data(), m.pos.data()};
  float *ma[3] = {m.m[0].data(), m.m[1].data(), m.m[2].data()};
  float *va[3] = {m.v[0].data(), m.v[1].data(), m.v[2].data()};
  rc = trx_ckpt_load(ck, 3, specs.data(), dst, ma, va, err, sizeof(err));
  trx_ckpt_close(ck);
  if (rc != TRX_OK) {
    why = err;
    return -1;
  }
  std::string bad = m.verify(st.step);
  trx_ckpt_state want = stateFor(st.step);
  if (bad.empty() &&
      (st.seed != want.seed || st.loader_state != want.loader_state ||
       st.rng_state != want.rng_state || st.loss != want.loss))
    bad = "state.json";
  if (!bad.empty()) {
    why = std::string(path) + ": " + bad + " does not match step " +
          std::to_string(st.step);
    return -1;
  }
  return st.step;
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> out;
  if (DIR *d = opendir(dir.c_str())) {
    while (struct dirent *e = readdir(d))
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, ".."))
        out.push_back(e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

pid_t deadPid() {
  pid_t p = fork();
  if (p == 0)
    _exit(0);
  waitpid(p, nullptr, 0);
  return p;
}

//===----------------------------------------------------------------------===//
// Kill during write
//===----------------------------------------------------------------------===//

/// Returns 0 when every check passed. rows = 16384 gives 4 MiB of weights,
/// 12 MiB per checkpoint with the optimizer state.
int killTest(const std::string &dir, int iterations, int64_t rows, bool quiet) {
  char err[1024];
  if (save(dir, 0, rows, err, sizeof(err)) != TRX_OK) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  // Also a plain safetensors file rewritten in place by the child.
  std::string single = dir + "/single.safetensors";
  std::vector<uint32_t> buf(static_cast<size_t>(rows * 64));
  auto fillSingle = [&](int64_t gen) {
    for (size_t i = 0; i < buf.size(); ++i)
      buf[i] = pattern(gen, 7, i);
  };
  auto writeSingle = [&](int64_t gen) { // buf must hold generation gen.
    trx_tensor t = {"x", TRX_F32, 1, {int64_t(buf.size())}, buf.data()};
    std::string meta = "{\"gen\":\"" + std::to_string(gen) + "\"}";
    return trx_safetensors_write(single.c_str(), 1, &t, meta.c_str(), err,
                                 sizeof(err));
  };
  fillSingle(0);
  if (writeSingle(0) != TRX_OK) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }

  // The child announces each write on a pipe; the parent waits for the
  // 1st-3rd announcement, then kills after 0-12 ms, so kills land at
  // different points inside (or just after) a write.
  const int delaysUs[] = {0, 300, 1000, 2000, 3500, 5000, 8000, 12000};
  int interrupted = 0, progressed = 0;
  int64_t last = 0;
  for (int it = 0; it < iterations; ++it) {
    int fds[2];
    if (pipe(fds) != 0) {
      perror("pipe");
      return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 1;
    }
    if (pid == 0) {
      close(fds[0]);
      for (int64_t s = last + 1; s < last + 1000; ++s) {
        char cerr[1024];
        Model m(rows);
        m.fill(s);
        // Announce each write: 'c' = checkpoint, 'f' = single file.
        if (write(fds[1], "c", 1) != 1)
          _exit(4);
        if (saveModel(dir, m, s, cerr, sizeof(cerr)) != TRX_OK) {
          fprintf(stderr, "child error: %s\n", cerr);
          _exit(3);
        }
        fillSingle(s);
        if (write(fds[1], "f", 1) != 1)
          _exit(4);
        if (writeSingle(s) != TRX_OK) {
          fprintf(stderr, "child error: %s\n", err);
          _exit(3);
        }
      }
      _exit(0);
    }
    close(fds[1]);
    // Odd iterations aim at the single-file write, even ones at the
    // checkpoint; skip 0-2 writes of that kind first.
    char want = it % 2 ? 'f' : 'c', c;
    for (int k = 0; k < 1 + (it / 2) % 3;)
      if (read(fds[0], &c, 1) != 1)
        break;
      else if (c == want)
        ++k;
    usleep(useconds_t(delaysUs[it % 8]));
    kill(pid, SIGKILL);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) &&
        !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      fprintf(stderr, "error: child failed (status %d)\n", status);
      return 1;
    }
    // Did the kill land in the middle of a write? Then the dead child's
    // temporary directory or file is still there.
    std::string dirSuffix = ".tmp-" + std::to_string(pid);
    std::string fileSuffix = ".tmp." + std::to_string(pid);
    auto endsWith = [](const std::string &e, const std::string &suf) {
      return e.size() > suf.size() &&
             e.compare(e.size() - suf.size(), suf.size(), suf) == 0;
    };
    for (const std::string &e : listDir(dir))
      if (endsWith(e, dirSuffix) || endsWith(e, fileSuffix)) {
        ++interrupted;
        break;
      }

    std::string why;
    int64_t step = verifyLatest(dir, why);
    if (step < 0) {
      fprintf(stderr, "error: after kill %d: %s\n", it + 1, why.c_str());
      return 1;
    }
    if (step < last) {
      fprintf(stderr,
              "error: latest went back from %" PRId64 " to %" PRId64 "\n", last,
              step);
      return 1;
    }
    progressed += step > last;
    last = step;

    trx_safetensors *st =
        trx_safetensors_open(single.c_str(), err, sizeof(err));
    if (!st) {
      fprintf(stderr, "error: after kill %d: %s\n", it + 1, err);
      return 1;
    }
    const char *gen = trx_safetensors_metadata(st, "gen");
    int64_t g = gen ? strtoll(gen, nullptr, 10) : -1;
    std::vector<uint32_t> back(buf.size());
    int64_t shape[] = {int64_t(buf.size())};
    int rc = trx_safetensors_read_into(st, "x", TRX_F32, 1, shape, back.data(),
                                       err, sizeof(err));
    trx_safetensors_close(st);
    for (size_t i = 0; rc == TRX_OK && i < back.size(); ++i)
      if (back[i] != pattern(g, 7, i)) {
        fprintf(stderr,
                "error: %s: element %zu is not from generation %" PRId64 "\n",
                single.c_str(), i, g);
        return 1;
      }
    if (rc != TRX_OK) {
      fprintf(stderr, "error: after kill %d: %s\n", it + 1, err);
      return 1;
    }
  }

  if (interrupted == 0) {
    fprintf(stderr, "error: no kill interrupted a write; the test proved "
                    "nothing\n");
    return 1;
  }
  // Normal writes afterwards work and remove the dead writers' leftovers.
  fillSingle(last + 1);
  if (save(dir, last + 1, rows, err, sizeof(err)) != TRX_OK ||
      writeSingle(last + 1) != TRX_OK) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  std::string why;
  int64_t fin = verifyLatest(dir, why);
  if (fin != last + 1) {
    fprintf(stderr, "error: final save: %s\n", why.c_str());
    return 1;
  }
  for (const std::string &e : listDir(dir))
    if (e.find(".tmp") != std::string::npos) {
      fprintf(stderr, "error: leftover %s after a successful save\n",
              e.c_str());
      return 1;
    }
  if (!quiet)
    printf("kill-test: %d kills, %d interrupted a write, %d saw new "
           "checkpoints; the latest checkpoint verified after each kill\n",
           iterations, interrupted, progressed);
  return 0;
}

//===----------------------------------------------------------------------===//
// Unit tests
//===----------------------------------------------------------------------===//

void testWritable(const trxtest::TempDir &tmp) {
  char err[1024] = "";
  std::string nested = tmp / "a/b/c";
  CHECK_EQ(trx_ckpt_check_writable(nested.c_str(), err, sizeof(err)), TRX_OK);
  struct stat st;
  CHECK(stat(nested.c_str(), &st) == 0 && S_ISDIR(st.st_mode));
  CHECK(listDir(nested).empty()); // The probe file is gone.

  std::string file = tmp / "plain-file";
  trxtest::writeFileBytes(file, "x", 1);
  CHECK_ERR(trx_ckpt_check_writable(file.c_str(), err, sizeof(err)), TRX_ERR_IO,
            err, (file + ": not a directory").c_str());
  std::string under = file + "/sub";
  CHECK_ERR(trx_ckpt_check_writable(under.c_str(), err, sizeof(err)),
            TRX_ERR_IO, err,
            (under + ": cannot access: Not a directory").c_str());
  CHECK_ERR(trx_ckpt_check_writable("", err, sizeof(err)), TRX_ERR_ARG, err,
            "no checkpoint directory given");
  if (geteuid() != 0) {
    std::string ro = tmp / "readonly";
    mkdir(ro.c_str(), 0555);
    CHECK_ERR(trx_ckpt_check_writable(ro.c_str(), err, sizeof(err)), TRX_ERR_IO,
              err, (ro + ": not writable: Permission denied").c_str());
    chmod(ro.c_str(), 0755);
  }
  // Saving into an unusable directory fails the same way, before writing.
  trx_ckpt_state s = stateFor(1);
  CHECK_ERR(trx_ckpt_save(file.c_str(), &s, 0, nullptr, nullptr, nullptr,
                          nullptr, err, sizeof(err)),
            TRX_ERR_IO, err, (file + ": not a directory").c_str());
}

void testSaveLoad(const trxtest::TempDir &tmp) {
  std::string dir = tmp / "ckpt";
  char err[1024] = "", path[4096];
  CHECK_ERR(trx_ckpt_latest(dir.c_str(), path, sizeof(path), err, sizeof(err)),
            TRX_ERR_NOT_FOUND, err,
            (dir + ": no checkpoint (directory does not exist)").c_str());
  CHECK_STREQ(path, "");
  CHECK_EQ(save(dir, 100, 8, err, sizeof(err)), TRX_OK);

  // Files and pointer.
  std::vector<std::string> want = {"latest", "step-00000100"};
  CHECK(listDir(dir) == want);
  std::vector<std::string> files = {"model.safetensors", "optim.safetensors",
                                    "state.json"};
  CHECK(listDir(dir + "/step-00000100") == files);
  std::vector<uint8_t> latest = trxtest::readFileBytes(dir + "/latest");
  CHECK_EQ(std::string(latest.begin(), latest.end()),
           std::string("step-00000100\n"));
  CHECK_EQ(trx_ckpt_latest(dir.c_str(), path, sizeof(path), err, sizeof(err)),
           TRX_OK);
  CHECK_EQ(std::string(path), dir + "/step-00000100");

  // Everything comes back exactly.
  trx_ckpt *ck = trx_ckpt_open(path, err, sizeof(err));
  CHECK(ck != nullptr);
  trx_ckpt_state st, ref = stateFor(100);
  CHECK_EQ(trx_ckpt_get_state(ck, &st), TRX_OK);
  CHECK_EQ(st.step, ref.step);
  CHECK_EQ(st.total_steps, ref.total_steps);
  CHECK_EQ(st.seed, ref.seed);
  CHECK_EQ(st.loader_state, ref.loader_state);
  CHECK_EQ(st.rng_state, ref.rng_state);
  CHECK_EQ(st.lr_max, ref.lr_max);
  CHECK_EQ(st.min_lr_ratio, ref.min_lr_ratio);
  CHECK_EQ(st.warmup, ref.warmup);
  CHECK_EQ(st.lr_schedule, ref.lr_schedule);
  CHECK_EQ(st.loss, ref.loss);
  CHECK_STREQ(trx_ckpt_extra(ck, "model"), "gpt2-tiny");
  CHECK(trx_ckpt_extra(ck, "nope") == nullptr);
  CHECK_EQ(trx_safetensors_count(trx_ckpt_model(ck)), int64_t(3));
  CHECK_EQ(trx_safetensors_count(trx_ckpt_optim(ck)), int64_t(6));
  trx_tensor t;
  CHECK_EQ(trx_safetensors_find(trx_ckpt_optim(ck), "ln_f.bias.exp_avg_sq", &t),
           TRX_OK);
  CHECK_EQ(t.dtype, int32_t(TRX_F32)); // Optimizer state is F32.
  CHECK_EQ(t.shape[0], int64_t(64));
  CHECK_STREQ(trx_safetensors_metadata(trx_ckpt_model(ck), "step"), "100");

  Model m(8);
  m.allocate();
  std::vector<trx_tensor> specs = m.tensors(false);
  void *dst[3] = {m.wte.data(), m.bias.data(), m.pos.data()};
  float *ma[3] = {m.m[0].data(), m.m[1].data(), m.m[2].data()};
  float *va[3] = {m.v[0].data(), m.v[1].data(), m.v[2].data()};
  CHECK_EQ(trx_ckpt_load(ck, 3, specs.data(), dst, ma, va, err, sizeof(err)),
           TRX_OK);
  CHECK_EQ(m.verify(100), std::string(""));
  // Parameters only (e.g. --init-from a checkpoint).
  CHECK_EQ(trx_ckpt_load(ck, 3, specs.data(), dst, nullptr, nullptr, err,
                         sizeof(err)),
           TRX_OK);
  // Model mismatch: a different shape, a missing parameter, an extra one.
  specs[0].shape[0] = 9;
  std::string model = std::string(path) + "/model.safetensors";
  CHECK_ERR(trx_ckpt_load(ck, 3, specs.data(), dst, ma, va, err, sizeof(err)),
            TRX_ERR_MISMATCH, err,
            (model + ": tensor 'wte.weight' has shape [8, 64], expected "
                     "[9, 64]")
                .c_str());
  specs[0].shape[0] = 8;
  specs[1].name = "ln_f.weight";
  CHECK_ERR(trx_ckpt_load(ck, 3, specs.data(), dst, ma, va, err, sizeof(err)),
            TRX_ERR_NOT_FOUND, err,
            (model + ": missing tensor 'ln_f.weight'").c_str());
  CHECK_ERR(trx_ckpt_load(ck, 1, specs.data(), dst, ma, va, err, sizeof(err)),
            TRX_ERR_MISMATCH, err,
            (model + ": unexpected tensor 'ln_f.bias' (not expected by the "
                     "model)")
                .c_str());
  trx_ckpt_close(ck);

  // A later step moves the pointer; re-saving a step replaces it in place.
  CHECK_EQ(save(dir, 200, 8, err, sizeof(err)), TRX_OK);
  std::string why;
  CHECK_EQ(verifyLatest(dir, why), int64_t(200));
  CHECK_EQ(save(dir, 200, 4, err, sizeof(err)), TRX_OK);
  CHECK_EQ(verifyLatest(dir, why), int64_t(200));
  ck = trx_ckpt_open((dir + "/step-00000200").c_str(), err, sizeof(err));
  CHECK_STREQ(trx_ckpt_extra(ck, "rows"), "4");
  trx_ckpt_close(ck);
  want = {"latest", "step-00000100", "step-00000200"};
  CHECK(listDir(dir) == want);

  // Without optimizer state, optim.safetensors holds no tensor.
  std::string dir2 = tmp / "noopt";
  Model p(2);
  p.fill(5);
  std::vector<trx_tensor> ts = p.tensors(true);
  trx_ckpt_state s5 = stateFor(5);
  CHECK_EQ(trx_ckpt_save(dir2.c_str(), &s5, 3, ts.data(), nullptr, nullptr,
                         nullptr, err, sizeof(err)),
           TRX_OK);
  ck = trx_ckpt_open((dir2 + "/step-00000005").c_str(), err, sizeof(err));
  CHECK(ck != nullptr);
  CHECK_EQ(trx_safetensors_count(trx_ckpt_optim(ck)), int64_t(0));
  trx_ckpt_close(ck);
}

void testLatestSelection(const trxtest::TempDir &tmp) {
  std::string dir = tmp / "sel";
  char err[1024], path[4096];
  CHECK_EQ(save(dir, 1, 2, err, sizeof(err)), TRX_OK);
  CHECK_EQ(save(dir, 30, 2, err, sizeof(err)), TRX_OK);
  CHECK_EQ(save(dir, 2, 2, err, sizeof(err)), TRX_OK);
  // The pointer wins over a higher step (a fresh run reusing the directory).
  CHECK_EQ(trx_ckpt_latest(dir.c_str(), path, sizeof(path), err, sizeof(err)),
           TRX_OK);
  CHECK_EQ(std::string(path), dir + "/step-00000002");
  // Without a pointer: the highest complete step directory. An incomplete
  // temporary directory with a higher step is ignored.
  CHECK(unlink((dir + "/latest").c_str()) == 0);
  CHECK(mkdir((dir + "/step-00000099.tmp-1").c_str(), 0755) == 0);
  CHECK(mkdir((dir + "/step-00000098").c_str(), 0755) == 0); // No files.
  CHECK_EQ(trx_ckpt_latest(dir.c_str(), path, sizeof(path), err, sizeof(err)),
           TRX_OK);
  CHECK_EQ(std::string(path), dir + "/step-00000030");
  // A dangling or garbage pointer also falls back to the scan.
  trxtest::writeFileBytes(dir + "/latest", "step-00000077\n", 14);
  CHECK_EQ(trx_ckpt_latest(dir.c_str(), path, sizeof(path), err, sizeof(err)),
           TRX_OK);
  CHECK_EQ(std::string(path), dir + "/step-00000030");
  trxtest::writeFileBytes(dir + "/latest", "../../etc", 9);
  CHECK_EQ(trx_ckpt_latest(dir.c_str(), path, sizeof(path), err, sizeof(err)),
           TRX_OK);
  CHECK_EQ(std::string(path), dir + "/step-00000030");
  // Buffer too small.
  char small[8];
  CHECK_EQ(trx_ckpt_latest(dir.c_str(), small, sizeof(small), err, sizeof(err)),
           TRX_ERR_ARG);
  CHECK_STREQ(small, "");
  // Empty directory.
  std::string empty = tmp / "emptyckpt";
  mkdir(empty.c_str(), 0755);
  CHECK_ERR(
      trx_ckpt_latest(empty.c_str(), path, sizeof(path), err, sizeof(err)),
      TRX_ERR_NOT_FOUND, err, (empty + ": no checkpoint found").c_str());

  // Leftovers of dead writers are removed by the next save; those of live
  // processes are kept.
  pid_t dead = deadPid();
  std::string stale = dir + "/step-00000050.tmp-" + std::to_string(dead);
  std::string live = dir + "/step-00000051.tmp-" + std::to_string(getppid());
  std::string staleLatest = dir + "/latest.tmp." + std::to_string(dead);
  CHECK(mkdir(stale.c_str(), 0755) == 0);
  trxtest::writeFileBytes(stale + "/model.safetensors", "junk", 4);
  CHECK(mkdir(live.c_str(), 0755) == 0);
  trxtest::writeFileBytes(staleLatest, "step", 4);
  CHECK_EQ(save(dir, 31, 2, err, sizeof(err)), TRX_OK);
  CHECK(!trxtest::fileExists(stale));
  CHECK(!trxtest::fileExists(staleLatest));
  CHECK(trxtest::fileExists(live));
}

void testCorruptCheckpoints(const trxtest::TempDir &tmp) {
  std::string dir = tmp / "corrupt";
  char err[1024];
  CHECK_EQ(save(dir, 7, 2, err, sizeof(err)), TRX_OK);
  std::string step = dir + "/step-00000007";
  std::string state = step + "/state.json";
  std::vector<uint8_t> good = trxtest::readFileBytes(state);

  auto openErr = [&]() {
    trx_ckpt *ck = trx_ckpt_open(step.c_str(), err, sizeof(err));
    CHECK(ck == nullptr);
    return std::string(err);
  };
  trxtest::writeFileBytes(state, good.data(), good.size() / 2);
  CHECK_EQ(openErr().substr(0, state.size() + 15), state + ": corrupt JSON ");
  std::string text(good.begin(), good.end());
  std::string noSeed = text;
  noSeed.replace(noSeed.find("\"seed\""), 6, "\"sead\"");
  trxtest::writeFileBytes(state, noSeed.data(), noSeed.size());
  CHECK_EQ(openErr(), state + ": missing or invalid \"seed\"");
  std::string badFmt = text;
  badFmt.replace(badFmt.find("triax-ckpt"), 10, "other-ckpt");
  trxtest::writeFileBytes(state, badFmt.data(), badFmt.size());
  CHECK_EQ(openErr(),
           state + ": not a triax checkpoint state (format != \"triax-ckpt\")");
  std::string otherStep = text;
  otherStep.replace(otherStep.find("\"step\": 7"), 9, "\"step\": 8");
  trxtest::writeFileBytes(state, otherStep.data(), otherStep.size());
  CHECK_EQ(openErr(), step + ": model.safetensors is from step 7 but "
                             "state.json says step 8");
  trxtest::writeFileBytes(state, good);
  unlink((step + "/optim.safetensors").c_str());
  CHECK_EQ(openErr(), step + "/optim.safetensors: cannot open: No such file "
                             "or directory");
  unlink(state.c_str());
  CHECK_EQ(openErr(), state + ": cannot read: No such file or directory");
  CHECK_EQ(std::string(trx_ckpt_open((dir + "/nope").c_str(), err, sizeof(err))
                           ? "opened"
                           : err),
           dir + "/nope: not a checkpoint directory");

  // Bad save arguments.
  trx_ckpt_state s = stateFor(-1);
  CHECK_ERR(trx_ckpt_save(dir.c_str(), &s, 0, nullptr, nullptr, nullptr,
                          nullptr, err, sizeof(err)),
            TRX_ERR_ARG, err, (dir + ": invalid checkpoint step -1").c_str());
  s = stateFor(1);
  CHECK_ERR(trx_ckpt_save(dir.c_str(), &s, 0, nullptr, nullptr, nullptr, "[1]",
                          err, sizeof(err)),
            TRX_ERR_ARG, err,
            (dir + ": extra state must be a JSON object of string values: "
                   "expected a JSON object")
                .c_str());
  float x = 1;
  const float *px[] = {&x};
  CHECK_ERR(trx_ckpt_save(dir.c_str(), &s, 0, nullptr, px, nullptr, nullptr,
                          err, sizeof(err)),
            TRX_ERR_ARG, err,
            (dir + ": exp_avg and exp_avg_sq must both be given or both be "
                   "NULL")
                .c_str());
  CHECK_EQ(trx_ckpt_save(nullptr, &s, 0, nullptr, nullptr, nullptr, nullptr,
                         err, sizeof(err)),
           TRX_ERR_ARG);
  CHECK_EQ(trx_ckpt_get_state(nullptr, &s), TRX_ERR_ARG);
  CHECK(trx_ckpt_model(nullptr) == nullptr);
  trx_ckpt_close(nullptr);
  // A failed save leaves nothing behind and the previous pointer intact.
  trx_tensor bad = {"w", TRX_F32, 1, {4}, nullptr};
  CHECK_EQ(trx_ckpt_save(dir.c_str(), &s, 1, &bad, nullptr, nullptr, nullptr,
                         err, sizeof(err)),
           TRX_ERR_ARG);
  CHECK_STREQ(err, (dir + ": tensor 'w' has NULL data").c_str());
  std::vector<std::string> want = {"latest", "step-00000007"};
  CHECK(listDir(dir) == want);
}

//===----------------------------------------------------------------------===//
// Command-line tools for the lit tests
//===----------------------------------------------------------------------===//

int usage() {
  fprintf(stderr, "usage: triax-rt-ckpt-test "
                  "[check-writable|save|latest|verify|kill-test] ...\n");
  return 2;
}

/// The buffers a parameter's checkpoint tensor is read from and written
/// to (ParamLayout, shard.cpp): a bf16 parameter's tensor is its f32 master
/// copy (TRX_STATE_MASTER, sharded like the moments), written back into the
/// master and, rounded to nearest even, into its bf16 parameter buffer; an
/// f32 parameter has no master copy. (Without MPI: one ZeRO member.)
void testBf16Layout() {
  using triax::rt::ParamLayout;
  trx_param_desc p = {};
  p.name = "w";
  p.rank = 2;
  p.shape[0] = 2;
  p.shape[1] = 3;
  ParamLayout l;
  std::string msg;
  // f32 (dtype 0): 4-byte buffers, no master copy.
  CHECK(triax::rt::computeParamLayout(p, l, msg));
  CHECK_EQ(l.dtype, int32_t(TRX_F32));
  CHECK_EQ(l.allocCount(TRX_STATE_MASTER), int64_t(0));
  CHECK_EQ(l.viewCount(TRX_STATE_MASTER), int64_t(0));
  CHECK_EQ(l.allocBytes(TRX_STATE_PARAM), size_t(24));
  CHECK_EQ(l.allocBytes(TRX_STATE_GRAD), size_t(24));
  // bf16, ZeRO stage 1: bf16 parameter and gradient, f32 moments and master
  // copy, the master sharded with the moments.
  p.dtype = TRX_BF16;
  p.zero_stage = 1;
  p.zero_axes = 1;
  CHECK(triax::rt::computeParamLayout(p, l, msg));
  CHECK_EQ(l.dtype, int32_t(TRX_BF16));
  CHECK_EQ(l.elementSize(TRX_STATE_PARAM), size_t(2));
  CHECK_EQ(l.elementSize(TRX_STATE_GRAD), size_t(2));
  for (int kind : {TRX_STATE_EXP_AVG, TRX_STATE_EXP_AVG_SQ, TRX_STATE_MASTER})
    CHECK_EQ(l.elementSize(kind), size_t(4));
  CHECK(l.sharded(TRX_STATE_MASTER) && l.sharded(TRX_STATE_EXP_AVG));
  CHECK(!l.sharded(TRX_STATE_PARAM) && !l.sharded(TRX_STATE_GRAD));
  CHECK_EQ(l.allocCount(TRX_STATE_MASTER), l.chunk);
  CHECK_EQ(l.allocBytes(TRX_STATE_MASTER), size_t(24));
  CHECK_EQ(l.allocBytes(TRX_STATE_PARAM), size_t(12));
  CHECK_EQ(l.allocBytes(TRX_STATE_GRAD), size_t(12));
  p.zero_stage = 2;
  CHECK(triax::rt::computeParamLayout(p, l, msg));
  CHECK(l.sharded(TRX_STATE_MASTER) && l.sharded(TRX_STATE_GRAD) &&
        !l.sharded(TRX_STATE_PARAM));
  p.zero_stage = 0;
  p.zero_axes = 0;
  // The whole f32 tensor into the master copy (exact) and the bf16
  // parameter (to nearest, ties to even), and the master copy back.
  CHECK(triax::rt::computeParamLayout(p, l, msg));
  const float whole[6] = {1.0f + 0x1p-8f,   // a tie: down to the even 1
                          1.0f + 0x3p-8f,   // a tie: up to the even 1 + 2^-6
                          1.0f + 0x1.8p-8f, // above a tie: up to 1 + 2^-7
                          -2.5f,            // exact
                          0.0f,             // exact
                          3.4e38f};         // past the largest bf16: inf
  const uint16_t expected[6] = {0x3f80, 0x3f82, 0x3f81, 0xc020, 0x0000, 0x7f80};
  float master[6] = {}, back[6] = {};
  uint16_t param[6] = {};
  triax::rt::scatterWhole(l, TRX_STATE_MASTER, whole, master);
  triax::rt::scatterWhole(l, TRX_STATE_PARAM, whole, param);
  for (int i = 0; i < 6; ++i) {
    CHECK_EQ(master[i], whole[i]);
    CHECK_EQ(param[i], expected[i]);
    CHECK_EQ(param[i], triax::rt::f32ToBf16(whole[i]));
  }
  triax::rt::gatherWhole(l, TRX_STATE_MASTER, master, back);
  CHECK(std::equal(back, back + 6, whole));
  // Only f32 and bf16 parameters; an error naming the parameter.
  p.dtype = TRX_I32;
  CHECK(!triax::rt::computeParamLayout(p, l, msg));
  CHECK_EQ(msg, std::string("parameter 'w': unknown dtype 2 (parameters are "
                            "f32 (0) or bf16 (1))"));
}

} // namespace

int main(int argc, char **argv) {
  char err[1024];
  if (argc >= 2) {
    std::string cmd = argv[1];
    if (cmd == "check-writable" && argc == 3) {
      if (trx_ckpt_check_writable(argv[2], err, sizeof(err)) != TRX_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
      }
      printf("ok: %s is writable\n", argv[2]);
      return 0;
    }
    if (cmd == "save" && argc == 4) {
      if (save(argv[2], strtoll(argv[3], nullptr, 10), 8, err, sizeof(err)) !=
          TRX_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
      }
      return 0;
    }
    if (cmd == "latest" && argc == 3) {
      char path[4096];
      if (trx_ckpt_latest(argv[2], path, sizeof(path), err, sizeof(err)) !=
          TRX_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
      }
      printf("%s\n", path);
      return 0;
    }
    if (cmd == "verify" && argc == 3) {
      std::string why;
      int64_t step = verifyLatest(argv[2], why);
      if (step < 0) {
        fprintf(stderr, "error: %s\n", why.c_str());
        return 1;
      }
      printf("ok: step %" PRId64 " verified\n", step);
      return 0;
    }
    if (cmd == "kill-test" && (argc == 3 || argc == 4)) {
      int n = argc == 4 ? atoi(argv[3]) : 10;
      if (trx_ckpt_check_writable(argv[2], err, sizeof(err)) != TRX_OK) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
      }
      return killTest(argv[2], n, 16384, false);
    }
    return usage();
  }
  trxtest::TempDir tmp;
  testBf16Layout();
  testWritable(tmp);
  testSaveLoad(tmp);
  testLatestSelection(tmp);
  testCorruptCheckpoints(tmp);
  CHECK_EQ(killTest(tmp / "kill", 6, 16384, true), 0);
  trxtest::done("ckpt");
  return 0;
}
