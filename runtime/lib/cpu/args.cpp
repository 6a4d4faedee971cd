//===- args.cpp - Command-line parsing for Triax training binaries
//---------===//
//
// trx_parse_train_args: the flags every generated training binary accepts.
// Strict: unknown flags, missing values, malformed or out-of-range numbers
// are errors whose message names the flag.
//
//===----------------------------------------------------------------------===//

#include "internal.h"
#include "triax_rt.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace triax::rt;

namespace {

enum class Kind { Path, Int, UInt, Float, Schedule, Flag };

struct Option {
  const char *name;
  Kind kind;
  size_t offset; // Field of trx_train_args.
};

#define TRX_FIELD(f) offsetof(trx_train_args, f)
const Option kOptions[] = {
    {"--data", Kind::Path, TRX_FIELD(data)},
    {"--val-data", Kind::Path, TRX_FIELD(val_data)},
    {"--steps", Kind::Int, TRX_FIELD(steps)},
    {"--lr", Kind::Float, TRX_FIELD(lr)},
    {"--warmup", Kind::Int, TRX_FIELD(warmup)},
    {"--lr-schedule", Kind::Schedule, TRX_FIELD(lr_schedule)},
    {"--seed", Kind::UInt, TRX_FIELD(seed)},
    {"--eval-every", Kind::Int, TRX_FIELD(eval_every)},
    {"--ckpt-dir", Kind::Path, TRX_FIELD(ckpt_dir)},
    {"--ckpt-every", Kind::Int, TRX_FIELD(ckpt_every)},
    {"--resume", Kind::Flag, TRX_FIELD(resume)},
    {"--resume-from-other", Kind::Flag, TRX_FIELD(resume_from_other)},
    {"--shuffle", Kind::Flag, TRX_FIELD(shuffle)},
    {"--init-from", Kind::Path, TRX_FIELD(init_from)},
    {"--explain-names", Kind::Flag, TRX_FIELD(explain_names)},
    {"--log-every", Kind::Int, TRX_FIELD(log_every)},
    {"--log-json", Kind::Path, TRX_FIELD(log_json)},
    {"--trace", Kind::Path, TRX_FIELD(trace)},
    {"--save-init", Kind::Path, TRX_FIELD(save_init)},
    {"--threads", Kind::Int, TRX_FIELD(threads)},
    {"--blas", Kind::Path, TRX_FIELD(blas)},
    {"--val-batches", Kind::Int, TRX_FIELD(val_batches)},
    {"--min-lr-ratio", Kind::Float, TRX_FIELD(min_lr_ratio)},
    {"--stop-at", Kind::Int, TRX_FIELD(stop_at)},
    {"--gradcheck", Kind::Int, TRX_FIELD(gradcheck)},
    {"--gradcheck-tol", Kind::Float, TRX_FIELD(gradcheck_tol)},
    {"--max-loss-ratio", Kind::Float, TRX_FIELD(max_loss_ratio)},
    {"--comm-timeout", Kind::Float, TRX_FIELD(comm_timeout)},
    {"--strict-topology", Kind::Flag, TRX_FIELD(strict_topology)},
};
#undef TRX_FIELD

bool looksLikeFlag(const char *s) {
  return s[0] == '-' && s[1] == '-' && s[2] != '\0';
}

/// Stores `value` into the field described by `opt`.
int setValue(const Option &opt, const char *value, trx_train_args *out,
             char *err, size_t errlen) {
  char *field = reinterpret_cast<char *>(out) + opt.offset;
  const char *flag = opt.name;
  switch (opt.kind) {
  case Kind::Path:
    if (!*value)
      return fail(TRX_ERR_ARG, err, errlen, "%s: empty value", flag);
    *reinterpret_cast<const char **>(field) = value;
    return TRX_OK;
  case Kind::Int: {
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(value, &end, 10);
    bool digitsOnly =
        *value == '-' || *value == '+' || (*value >= '0' && *value <= '9');
    if (!digitsOnly || end == value || *end != '\0' || errno == ERANGE)
      return fail(TRX_ERR_ARG, err, errlen, "%s: invalid integer '%s'", flag,
                  value);
    if (v < 0)
      return fail(TRX_ERR_ARG, err, errlen, "%s: must be >= 0, got %lld", flag,
                  v);
    *reinterpret_cast<int64_t *>(field) = int64_t(v);
    return TRX_OK;
  }
  case Kind::UInt: {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(value, &end, 10);
    if (!(*value >= '0' && *value <= '9') || *end != '\0' || errno == ERANGE)
      return fail(TRX_ERR_ARG, err, errlen, "%s: invalid unsigned integer '%s'",
                  flag, value);
    *reinterpret_cast<uint64_t *>(field) = uint64_t(v);
    return TRX_OK;
  }
  case Kind::Float: {
    char *end = nullptr;
    errno = 0;
    float v = std::strtof(value, &end);
    bool numeric = *value == '-' || *value == '+' || *value == '.' ||
                   (*value >= '0' && *value <= '9');
    if (!numeric || end == value || *end != '\0' || errno == ERANGE ||
        !std::isfinite(v))
      return fail(TRX_ERR_ARG, err, errlen, "%s: invalid number '%s'", flag,
                  value);
    if (v < 0)
      return fail(TRX_ERR_ARG, err, errlen, "%s: must be >= 0, got %s", flag,
                  value);
    *reinterpret_cast<float *>(field) = v;
    return TRX_OK;
  }
  case Kind::Schedule:
    if (std::strcmp(value, "cosine") == 0)
      *reinterpret_cast<int32_t *>(field) = TRX_LR_COSINE;
    else if (std::strcmp(value, "constant") == 0)
      *reinterpret_cast<int32_t *>(field) = TRX_LR_CONSTANT;
    else
      return fail(TRX_ERR_ARG, err, errlen,
                  "%s: expected 'cosine' or 'constant', got '%s'", flag, value);
    return TRX_OK;
  case Kind::Flag:
    *reinterpret_cast<int32_t *>(field) = 1;
    return TRX_OK;
  }
  return TRX_ERR_ARG;
}

} // namespace

extern "C" void trx_train_args_default(trx_train_args *out) {
  if (!out)
    return;
  std::memset(out, 0, sizeof(*out));
  out->steps = 100;
  out->lr = 0.0f;
  out->warmup = 0;
  out->lr_schedule = TRX_LR_COSINE;
  out->seed = 1337;
  out->eval_every = 0;
  out->ckpt_every = 0;
  out->log_every = 1;
  out->threads = 0;
  out->val_batches = 8;
  out->min_lr_ratio = 0.1f;
  out->stop_at = 0;
  out->gradcheck = 0;
  out->shuffle = 0;
  out->gradcheck_tol = 1e-2f;
  out->max_loss_ratio = 0.0f;
  out->comm_timeout = 600.0f;
}

extern "C" int trx_parse_train_args(int argc, char **argv, trx_train_args *out,
                                    char *err, size_t errlen) {
  if (!out)
    return fail(TRX_ERR_ARG, err, errlen, "trx_parse_train_args: NULL output");
  trx_train_args_default(out);
  if (argc < 0 || (argc > 0 && !argv))
    return fail(TRX_ERR_ARG, err, errlen, "trx_parse_train_args: no argv");
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (!arg)
      return fail(TRX_ERR_ARG, err, errlen, "argument %d is NULL", i);
    if (std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0) {
      out->help = 1;
      return TRX_OK;
    }
    if (std::strcmp(arg, "--verbose") == 0) {
      ++out->verbose;
      continue;
    }
    if (arg[0] == '-' && arg[1] == 'v') {
      size_t n = std::strspn(arg + 1, "v");
      if (arg[1 + n] == '\0') {
        out->verbose += int32_t(n);
        continue;
      }
    }
    if (arg[0] != '-' || arg[1] == '\0')
      return fail(TRX_ERR_ARG, err, errlen, "unexpected argument '%s'", arg);

    // "--flag=value" or "--flag value".
    const char *eq = std::strchr(arg, '=');
    size_t nameLen = eq ? size_t(eq - arg) : std::strlen(arg);
    const Option *opt = nullptr;
    for (const Option &o : kOptions)
      if (std::strlen(o.name) == nameLen &&
          std::strncmp(o.name, arg, nameLen) == 0)
        opt = &o;
    if (!opt)
      return fail(TRX_ERR_ARG, err, errlen, "unknown flag '%.*s'", int(nameLen),
                  arg);
    const char *value;
    if (opt->kind == Kind::Flag) {
      if (eq)
        return fail(TRX_ERR_ARG, err, errlen, "%s takes no value", opt->name);
      value = "";
    } else if (eq) {
      value = eq + 1;
    } else {
      if (i + 1 >= argc || !argv[i + 1] || looksLikeFlag(argv[i + 1]))
        return fail(TRX_ERR_ARG, err, errlen, "%s: missing value", opt->name);
      value = argv[++i];
    }
    int rc = setValue(*opt, value, out, err, errlen);
    if (rc != TRX_OK)
      return rc;
  }
  if (out->resume && !out->ckpt_dir)
    return fail(TRX_ERR_ARG, err, errlen, "--resume requires --ckpt-dir");
  if (out->resume_from_other && !out->resume)
    return fail(TRX_ERR_ARG, err, errlen,
                "--resume-from-other requires --resume");
  if (out->explain_names && !out->init_from)
    return fail(TRX_ERR_ARG, err, errlen,
                "--explain-names requires --init-from");
  if (out->ckpt_every > 0 && !out->ckpt_dir)
    return fail(TRX_ERR_ARG, err, errlen, "--ckpt-every requires --ckpt-dir");
  if (out->val_batches < 1)
    return fail(TRX_ERR_ARG, err, errlen,
                "--val-batches: must be >= 1, got %" PRId64, out->val_batches);
  if (out->min_lr_ratio > 1.0f)
    return fail(TRX_ERR_ARG, err, errlen,
                "--min-lr-ratio: must be <= 1, got %g",
                double(out->min_lr_ratio));
  if (out->max_loss_ratio != 0.0f && !(out->max_loss_ratio > 1.0f))
    return fail(TRX_ERR_ARG, err, errlen,
                "--max-loss-ratio: must be > 1 (or 0: off), got %g",
                double(out->max_loss_ratio));
  if (out->threads > 4096)
    return fail(TRX_ERR_ARG, err, errlen,
                "--threads: must be <= 4096, got %" PRId64, out->threads);
  return TRX_OK;
}

extern "C" void trx_print_train_usage(FILE *f, const char *prog) {
  if (!f)
    f = stdout;
  if (!prog || !*prog)
    prog = "train";
  fprintf(
      f,
      "usage: %s [options]\n"
      "\n"
      "Data:\n"
      "  --data FILE           training tokens (llm.c .bin); default: the\n"
      "                        program's built-in corpus\n"
      "  --val-data FILE       validation tokens (.bin)\n"
      "  --shuffle             random batch order from --seed (default:\n"
      "                        sequential)\n"
      "\n"
      "Optimization:\n"
      "  --steps N             optimizer steps to run (default 100)\n"
      "  --lr F                peak learning rate (default 0 = the model's\n"
      "                        configured lr)\n"
      "  --warmup N            linear warmup steps (default 0)\n"
      "  --lr-schedule S       cosine | constant (default cosine)\n"
      "  --min-lr-ratio F      cosine floor as a fraction of the peak lr\n"
      "                        (default 0.1)\n"
      "  --seed N              random seed of the initialization (default\n"
      "                        1337)\n"
      "  --threads N           threads of the kernels and GEMMs (default 0\n"
      "                        = OMP_NUM_THREADS, else the CPUs shared\n"
      "                        among the ranks on this machine)\n"
      "  --blas LIB            the CPU GEMMs through LIB's cblas_sgemm, e.g.\n"
      "                        MKL's libmkl_rt.so (default: $TRIAX_BLAS,\n"
      "                        else the linked OpenBLAS)\n"
      "\n"
      "Evaluation and checkpoints:\n"
      "  --eval-every N        validate every N steps (default 0 = only\n"
      "                        after the last step, when --val-data is given)\n"
      "  --val-batches N       validation batches per evaluation (default 8)\n"
      "  --ckpt-dir DIR        write checkpoints under DIR\n"
      "  --ckpt-every N        checkpoint every N steps (default 0 = only\n"
      "                        at the end)\n"
      "  --resume              continue from the latest checkpoint in\n"
      "                        --ckpt-dir (if there is one)\n"
      "  --resume-from-other   with --resume: continue from a checkpoint of\n"
      "                        another model, batch, data or seed as a new\n"
      "                        run (refused without it)\n"
      "  --init-from PATH      initial weights: a .safetensors file, or a\n"
      "                        Hugging Face checkpoint as transformers saves\n"
      "                        it (a directory, a sharded index; GPT-2 and\n"
      "                        LLaMA names; F32/BF16/F16)\n"
      "  --explain-names       with --init-from: print where each parameter\n"
      "                        is read from\n"
      "  --save-init FILE      write the initial weights (.safetensors)\n"
      "  --stop-at STEP        stop after step STEP as if interrupted (the lr\n"
      "                        schedule still spans --steps)\n"
      "  --max-loss-ratio R    read the loss every step before the update and\n"
      "                        stop, updating and writing nothing, when it is\n"
      "                        not finite or above R times the mean of the\n"
      "                        last 10 steps (default 0 = off; the last\n"
      "                        checkpoint stays latest)\n"
      "\n"
      "Checking:\n"
      "  --gradcheck N         check each parameter's gradient against "
      "central\n"
      "                        finite differences along N directions, then "
      "exit\n"
      "  --gradcheck-tol F     largest relative L2 error per tensor (1e-2)\n"
      "\n"
      "Logging:\n"
      "  --log-every N         print every N steps (default 1, 0 = off);\n"
      "                        the loss is read from the device, and checked\n"
      "                        for divergence, only on printed steps,\n"
      "                        checkpoint steps and the last step\n"
      "  --log-json FILE       append one JSON object per step to FILE\n"
      "  --comm-timeout S      a collective, send or recv waiting more than\n"
      "                        S seconds ends the job with what it waited on\n"
      "                        (default 600, 0 = off)\n"
      "  --strict-topology     a tensor-parallel group spanning nodes is an\n"
      "                        error, not a warning (docs/launch.md)\n"
      "  --trace FILE          write every rank's measured timeline (compute\n"
      "                        per micro-batch, collectives, sends) as one\n"
      "                        Chrome trace JSON (Perfetto)\n"
      "  -v, --verbose         more output (repeatable; -v -v: every rank's\n"
      "                        memory peaks on stderr)\n"
      "  -h, --help            show this help and exit\n"
      "\n"
      "Flags take their value as the next argument or as --flag=VALUE.\n",
      prog);
}
