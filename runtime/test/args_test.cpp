//===- args_test.cpp - Training CLI parsing tests
//--------------------------===//
//
// Usage:
//   triax-rt-args-test                 run all checks
//   triax-rt-args-test parse ARGS...   parse ARGS as a training binary would;
//                                      print the fields, the usage for
//                                      --help, or "error: <message>" on
//                                      stderr with exit status 1
//
//===----------------------------------------------------------------------===//

#include "check.h"
#include "triax_rt.h"

#include <cinttypes>

namespace {

/// Parses a space-separated command line (no quoting needed in the tests).
int parse(const std::string &line, trx_train_args &a, std::string &err) {
  std::vector<std::string> words = {"train"};
  size_t i = 0;
  while (i < line.size()) {
    size_t j = line.find(' ', i);
    if (j == std::string::npos)
      j = line.size();
    if (j > i)
      words.push_back(line.substr(i, j - i));
    i = j + 1;
  }
  static std::vector<std::string> keep; // argv strings must outlive `a`.
  keep = words;
  std::vector<char *> argv;
  for (auto &w : keep)
    argv.push_back(&w[0]);
  argv.push_back(nullptr);
  char buf[256] = "";
  int rc =
      trx_parse_train_args(int(keep.size()), argv.data(), &a, buf, sizeof(buf));
  err = buf;
  return rc;
}

void testDefaults() {
  trx_train_args a;
  std::string err;
  CHECK_EQ(parse("", a, err), TRX_OK);
  CHECK(a.data == nullptr && a.val_data == nullptr && a.ckpt_dir == nullptr &&
        a.init_from == nullptr && a.log_json == nullptr);
  CHECK_EQ(a.steps, int64_t(100));
  CHECK_EQ(a.lr, 0.0f);
  CHECK_EQ(a.warmup, int64_t(0));
  CHECK_EQ(a.lr_schedule, int32_t(TRX_LR_COSINE));
  CHECK_EQ(a.seed, uint64_t(1337));
  CHECK_EQ(a.eval_every, int64_t(0));
  CHECK_EQ(a.ckpt_every, int64_t(0));
  CHECK_EQ(a.log_every, int64_t(1));
  CHECK_EQ(a.resume, 0);
  CHECK_EQ(a.verbose, 0);
  CHECK_EQ(a.help, 0);
  CHECK(a.save_init == nullptr);
  CHECK_EQ(a.threads, int64_t(0));
  CHECK_EQ(a.val_batches, int64_t(8));
  CHECK_EQ(a.min_lr_ratio, 0.1f);
  CHECK_EQ(a.stop_at, int64_t(0));
  CHECK(a.blas == nullptr);
  CHECK_EQ(a.max_loss_ratio, 0.0f);
  CHECK_EQ(a.comm_timeout, 600.0f);
  CHECK_EQ(a.strict_topology, 0);
  trx_train_args d;
  trx_train_args_default(&d);
  CHECK(memcmp(&a, &d, sizeof(a)) == 0);
}

void testAllFlags() {
  trx_train_args a;
  std::string err;
  CHECK_EQ(parse("--data train.bin --val-data val.bin --steps 5000 --lr 6e-4 "
                 "--warmup 700 --lr-schedule constant --seed "
                 "18446744073709551615 --eval-every 250 --ckpt-dir out/ckpt "
                 "--ckpt-every 1000 --resume --init-from gpt2.safetensors "
                 "--log-every 10 --log-json log.jsonl -v -vv",
                 a, err),
           TRX_OK);
  CHECK_STREQ(a.data, "train.bin");
  CHECK_STREQ(a.val_data, "val.bin");
  CHECK_EQ(a.steps, int64_t(5000));
  CHECK_EQ(a.lr, 6e-4f);
  CHECK_EQ(a.warmup, int64_t(700));
  CHECK_EQ(a.lr_schedule, int32_t(TRX_LR_CONSTANT));
  CHECK_EQ(a.seed, UINT64_MAX);
  CHECK_EQ(a.eval_every, int64_t(250));
  CHECK_STREQ(a.ckpt_dir, "out/ckpt");
  CHECK_EQ(a.ckpt_every, int64_t(1000));
  CHECK_EQ(a.resume, 1);
  CHECK_STREQ(a.init_from, "gpt2.safetensors");
  CHECK_EQ(a.log_every, int64_t(10));
  CHECK_STREQ(a.log_json, "log.jsonl");
  CHECK_EQ(a.verbose, 3);

  // The driver's flags.
  CHECK_EQ(parse("--save-init init.safetensors --threads 4 --val-batches 3 "
                 "--min-lr-ratio 0 --stop-at 40 --steps 50 "
                 "--blas /opt/mkl/libmkl_rt.so.2",
                 a, err),
           TRX_OK);
  CHECK_STREQ(a.blas, "/opt/mkl/libmkl_rt.so.2");
  CHECK_STREQ(a.save_init, "init.safetensors");
  CHECK_EQ(a.threads, int64_t(4));
  CHECK_EQ(a.val_batches, int64_t(3));
  CHECK_EQ(a.min_lr_ratio, 0.0f);
  CHECK_EQ(a.stop_at, int64_t(40));
  CHECK_EQ(parse("--max-loss-ratio 3", a, err), TRX_OK);
  CHECK_EQ(a.max_loss_ratio, 3.0f);
  CHECK_EQ(parse("--comm-timeout 0", a, err), TRX_OK);
  CHECK_EQ(a.comm_timeout, 0.0f);
  CHECK_EQ(parse("--strict-topology", a, err), TRX_OK);
  CHECK_EQ(a.strict_topology, 1);

  // --flag=value, last one wins, --verbose.
  CHECK_EQ(parse("--steps=7 --lr=0.5 --steps 9 --lr-schedule=cosine --verbose "
                 "--data=x=y.bin",
                 a, err),
           TRX_OK);
  CHECK_EQ(a.steps, int64_t(9));
  CHECK_EQ(a.lr, 0.5f);
  CHECK_EQ(a.verbose, 1);
  CHECK_STREQ(a.data, "x=y.bin");
  CHECK_EQ(parse("--steps 0 --log-every 0 --lr 0", a, err), TRX_OK);
  CHECK_EQ(a.steps, int64_t(0));

  // --help stops parsing (even before bad flags).
  CHECK_EQ(parse("--steps 3 --help --bogus", a, err), TRX_OK);
  CHECK_EQ(a.help, 1);
  CHECK_EQ(parse("-h", a, err), TRX_OK);
  CHECK_EQ(a.help, 1);
}

void testErrors() {
  trx_train_args a;
  std::string err;
  struct Case {
    const char *line;
    const char *msg;
  } cases[] = {
      {"--bogus", "unknown flag '--bogus'"},
      {"--bogus=3", "unknown flag '--bogus'"},
      {"-x", "unknown flag '-x'"},
      {"--step 5", "unknown flag '--step'"},
      {"positional", "unexpected argument 'positional'"},
      {"--steps", "--steps: missing value"},
      {"--data --steps 5", "--data: missing value"},
      {"--steps abc", "--steps: invalid integer 'abc'"},
      {"--steps 12x", "--steps: invalid integer '12x'"},
      {"--steps 1.5", "--steps: invalid integer '1.5'"},
      {"--steps=", "--steps: invalid integer ''"},
      {"--steps 99999999999999999999", "--steps: invalid integer "
                                       "'99999999999999999999'"},
      {"--warmup -3", "--warmup: must be >= 0, got -3"},
      {"--eval-every -1", "--eval-every: must be >= 0, got -1"},
      {"--lr x", "--lr: invalid number 'x'"},
      {"--lr 1e99", "--lr: invalid number '1e99'"},
      {"--lr nan", "--lr: invalid number 'nan'"},
      {"--lr -0.1", "--lr: must be >= 0, got -0.1"},
      {"--seed -1", "--seed: invalid unsigned integer '-1'"},
      {"--seed 18446744073709551616",
       "--seed: invalid unsigned integer '18446744073709551616'"},
      {"--lr-schedule linear",
       "--lr-schedule: expected 'cosine' or 'constant', got 'linear'"},
      {"--data=", "--data: empty value"},
      {"--resume", "--resume requires --ckpt-dir"},
      {"--resume=1 --ckpt-dir d", "--resume takes no value"},
      {"--strict-topology=1", "--strict-topology takes no value"},
      {"--ckpt-every 10", "--ckpt-every requires --ckpt-dir"},
      {"--val-batches 0", "--val-batches: must be >= 1, got 0"},
      {"--min-lr-ratio 2", "--min-lr-ratio: must be <= 1, got 2"},
      {"--max-loss-ratio 1",
       "--max-loss-ratio: must be > 1 (or 0: off), got 1"},
      {"--min-lr-ratio -0.5", "--min-lr-ratio: must be >= 0, got -0.5"},
      {"--threads 5000", "--threads: must be <= 4096, got 5000"},
      {"--stop-at -1", "--stop-at: must be >= 0, got -1"},
      {"--save-init=", "--save-init: empty value"},
  };
  for (const Case &c : cases) {
    int rc = parse(c.line, a, err);
    if (rc != TRX_ERR_ARG || err != c.msg)
      trxtest::failed(__FILE__, __LINE__,
                      std::string("'") + c.line + "' gave rc " +
                          std::to_string(rc) + " and \"" + err +
                          "\", expected \"" + c.msg + "\"");
    ++trxtest::checkCount();
  }
  CHECK_EQ(trx_parse_train_args(1, nullptr, &a, nullptr, 0), TRX_ERR_ARG);
  CHECK_EQ(trx_parse_train_args(0, nullptr, nullptr, nullptr, 0), TRX_ERR_ARG);
}

void testUsage() {
  FILE *f = tmpfile();
  trx_print_train_usage(f, "gpt2-train");
  fflush(f);
  rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
    s.append(buf, n);
  fclose(f);
  CHECK(s.rfind("usage: gpt2-train [options]\n", 0) == 0);
  for (const char *flag : {"--data FILE",      "--val-data FILE",
                           "--steps N",        "--lr F",
                           "--warmup N",       "--lr-schedule S",
                           "--seed N",         "--eval-every N",
                           "--ckpt-dir DIR",   "--ckpt-every N",
                           "--resume",         "--init-from PATH",
                           "--log-every N",    "--log-json FILE",
                           "-v, --verbose",    "-h, --help",
                           "--save-init FILE", "--threads N",
                           "--val-batches N",  "--min-lr-ratio F",
                           "--stop-at STEP",   "--max-loss-ratio R",
                           "--comm-timeout S", "--strict-topology",
                           "--explain-names"})
    CHECK(s.find(flag) != std::string::npos);
}

int cmdParse(int argc, char **argv) {
  // argv[1] is "parse": parse the rest as "prog ARGS...".
  trx_train_args a;
  char err[256];
  if (trx_parse_train_args(argc - 1, argv + 1, &a, err, sizeof(err)) !=
      TRX_OK) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  if (a.help) {
    trx_print_train_usage(stdout, "train");
    return 0;
  }
  auto s = [](const char *p) { return p ? p : "(none)"; };
  printf("data=%s val_data=%s steps=%" PRId64 " lr=%g warmup=%" PRId64
         " lr_schedule=%s seed=%" PRIu64 " eval_every=%" PRId64
         " ckpt_dir=%s ckpt_every=%" PRId64 " resume=%d init_from=%s"
         " log_every=%" PRId64 " log_json=%s verbose=%d save_init=%s"
         " threads=%" PRId64 " val_batches=%" PRId64 " min_lr_ratio=%g"
         " stop_at=%" PRId64 "\n",
         s(a.data), s(a.val_data), a.steps, double(a.lr), a.warmup,
         a.lr_schedule == TRX_LR_COSINE ? "cosine" : "constant", a.seed,
         a.eval_every, s(a.ckpt_dir), a.ckpt_every, a.resume, s(a.init_from),
         a.log_every, s(a.log_json), a.verbose, s(a.save_init), a.threads,
         a.val_batches, double(a.min_lr_ratio), a.stop_at);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && std::string(argv[1]) == "parse")
    return cmdParse(argc, argv);
  if (argc != 1) {
    fprintf(stderr, "usage: triax-rt-args-test [parse ARGS...]\n");
    return 2;
  }
  testDefaults();
  testAllFlags();
  testErrors();
  testUsage();
  trxtest::done("args");
  return 0;
}
