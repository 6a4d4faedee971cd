//===- TriaxAttrs.cpp - Triax attributes: syntax and verifiers ------------===//
//
// `#triax.init` and `#triax.train_config` have hand-written syntax so that
// every key of the training config is optional, keys can come in any order,
// and a bad value is reported at its location with the expected range.
//
//===----------------------------------------------------------------------===//

#include "triax/Dialect/Triax/IR/Triax.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::triax;

/// Prints `value` as the shortest decimal that parses back to the same
/// double (0.95, not 0.94999999999999996), always with a `.` so that MLIR's
/// lexer reads it as a float literal.
static void printShortestFloat(AsmPrinter &printer,
                               const llvm::APFloat &value) {
  double v = value.convertToDouble();
  std::string text;
  for (int precision = 1; precision <= 17; ++precision) {
    text = llvm::formatv("{0}", llvm::format("%.*g", precision, v)).str();
    if (std::strtod(text.c_str(), nullptr) == v)
      break;
  }
  if (text.find_first_of(".ein") == std::string::npos)
    text += ".0";
  else if (text.find('.') == std::string::npos &&
           text.find('e') != std::string::npos)
    text.insert(text.find('e'), ".0");
  printer << text;
}

/// Parses a number: a float literal, or an integer literal as its value
/// (`0` for 0.0), either possibly negative.
static ParseResult parseNumber(AsmParser &parser, double &value) {
  SMLoc loc = parser.getCurrentLocation();
  Attribute attr;
  if (parser.parseAttribute(attr))
    return failure();
  if (auto f = dyn_cast<FloatAttr>(attr)) {
    value = f.getValueAsDouble();
    return success();
  }
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    value = static_cast<double>(i.getValue().getSExtValue());
    return success();
  }
  return parser.emitError(loc, "expected a number, got ") << attr;
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc) << "unknown initializer '" << keyword
                          << "'; expected normal, zeros or ones";
    return {};
  }
  double std = 0.0;
  if (*kind == InitKind::normal) {
    if (parser.parseComma() || parser.parseKeyword("std") ||
        parser.parseEqual() || parseNumber(parser, std))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<InitAttr>(loc, parser.getContext(), *kind,
                                     llvm::APFloat(std));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind());
  if (getKind() == InitKind::normal) {
    printer << ", std = ";
    printShortestFloat(printer, getStd());
  }
  printer << ">";
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, llvm::APFloat std) {
  double value = std.convertToDouble();
  if (kind == InitKind::normal && !(value > 0.0))
    return emitError() << "normal initializer needs std > 0, got " << value;
  if (kind != InitKind::normal && value != 0.0)
    return emitError() << stringifyInitKind(kind)
                       << " initializer takes no std, got " << value;
  return success();
}

//===----------------------------------------------------------------------===//
// TrainConfigAttr
//===----------------------------------------------------------------------===//

namespace {
/// The config's values while parsing, starting from the documented defaults.
struct TrainConfigFields {
  std::string optimizer = "adamw";
  double lr = 6e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weightDecay = 0.1,
         gradClip = 1.0;
  std::optional<int64_t> globalBatch;
  int64_t microBatch = 1, seq = 1024;
  Type compute, master;
};
} // namespace

static ParseResult parseConfigField(AsmParser &parser, StringRef key,
                                    TrainConfigFields &f) {
  if (key == "optimizer") {
    StringRef name;
    if (parser.parseKeyword(&name))
      return failure();
    f.optimizer = name.str();
    return success();
  }
  std::pair<StringRef, double *> floats[] = {{"lr", &f.lr},
                                             {"beta1", &f.beta1},
                                             {"beta2", &f.beta2},
                                             {"eps", &f.eps},
                                             {"weight_decay", &f.weightDecay},
                                             {"grad_clip", &f.gradClip}};
  for (auto [name, field] : floats)
    if (key == name)
      return parseNumber(parser, *field);
  if (key == "global_batch") {
    f.globalBatch = 0;
    return parser.parseInteger(*f.globalBatch);
  }
  std::pair<StringRef, int64_t *> ints[] = {{"micro_batch", &f.microBatch},
                                            {"seq", &f.seq}};
  for (auto [name, field] : ints)
    if (key == name)
      return parser.parseInteger(*field);
  if (key == "compute")
    return parser.parseType(f.compute);
  if (key == "master")
    return parser.parseType(f.master);
  return parser.emitError(parser.getCurrentLocation())
         << "unknown train_config key '" << key
         << "'; expected one of optimizer, lr, beta1, beta2, eps, "
            "weight_decay, grad_clip, global_batch, micro_batch, seq, "
            "compute, master";
}

Attribute TrainConfigAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  TrainConfigFields f;
  llvm::StringSet<> seen;
  if (parser.parseLess())
    return {};
  if (failed(parser.parseOptionalGreater())) {
    do {
      SMLoc keyLoc = parser.getCurrentLocation();
      StringRef key;
      if (parser.parseKeyword(&key) || parser.parseEqual())
        return {};
      if (!seen.insert(key).second) {
        parser.emitError(keyLoc)
            << "train_config key '" << key << "' is given twice";
        return {};
      }
      if (parseConfigField(parser, key, f))
        return {};
    } while (succeeded(parser.parseOptionalComma()));
    if (parser.parseGreater())
      return {};
  }
  MLIRContext *ctx = parser.getContext();
  // The global batch defaults to one micro-batch.
  int64_t globalBatch = f.globalBatch.value_or(f.microBatch);
  if (!f.compute)
    f.compute = Float32Type::get(ctx);
  if (!f.master)
    f.master = Float32Type::get(ctx);
  return parser.getChecked<TrainConfigAttr>(
      loc, ctx, StringRef(f.optimizer), llvm::APFloat(f.lr),
      llvm::APFloat(f.beta1), llvm::APFloat(f.beta2), llvm::APFloat(f.eps),
      llvm::APFloat(f.weightDecay), llvm::APFloat(f.gradClip), globalBatch,
      f.microBatch, f.seq, f.compute, f.master);
}

void TrainConfigAttr::print(AsmPrinter &printer) const {
  printer << "<optimizer = " << getOptimizer();
  auto printFloatField = [&](StringRef name, const llvm::APFloat &value) {
    printer << ", " << name << " = ";
    printShortestFloat(printer, value);
  };
  printFloatField("lr", getLr());
  printFloatField("beta1", getBeta1());
  printFloatField("beta2", getBeta2());
  printFloatField("eps", getEps());
  printFloatField("weight_decay", getWeightDecay());
  printFloatField("grad_clip", getGradClip());
  printer << ", global_batch = " << getGlobalBatch()
          << ", micro_batch = " << getMicroBatch() << ", seq = " << getSeq()
          << ", compute = " << getComputeType()
          << ", master = " << getMasterType() << ">";
}

LogicalResult TrainConfigAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, StringRef optimizer,
    llvm::APFloat lr, llvm::APFloat beta1, llvm::APFloat beta2,
    llvm::APFloat eps, llvm::APFloat weightDecay, llvm::APFloat gradClip,
    int64_t globalBatch, int64_t microBatch, int64_t seq, Type computeType,
    Type masterType) {
  if (optimizer != "adamw")
    return emitError() << "unsupported optimizer '" << optimizer
                       << "'; expected adamw";
  if (!(lr.convertToDouble() > 0.0))
    return emitError() << "lr must be > 0, got " << lr.convertToDouble();
  for (auto [name, beta] : {std::make_pair("beta1", beta1.convertToDouble()),
                            std::make_pair("beta2", beta2.convertToDouble())})
    if (!(beta >= 0.0 && beta < 1.0))
      return emitError() << name << " must be in [0, 1), got " << beta;
  if (!(eps.convertToDouble() > 0.0))
    return emitError() << "eps must be > 0, got " << eps.convertToDouble();
  if (!(weightDecay.convertToDouble() >= 0.0))
    return emitError() << "weight_decay must be >= 0, got "
                       << weightDecay.convertToDouble();
  if (!(gradClip.convertToDouble() >= 0.0))
    return emitError() << "grad_clip must be >= 0 (0 turns clipping off), got "
                       << gradClip.convertToDouble();
  if (microBatch < 1)
    return emitError() << "micro_batch must be >= 1, got " << microBatch;
  if (seq < 1)
    return emitError() << "seq must be >= 1, got " << seq;
  if (globalBatch < 1 || globalBatch % microBatch != 0)
    return emitError() << "global_batch " << globalBatch
                       << " must be a positive multiple of micro_batch "
                       << microBatch;
  if (!computeType.isF32() && !computeType.isBF16())
    return emitError() << "compute dtype must be f32 or bf16, got "
                       << computeType;
  if (!masterType.isF32())
    return emitError() << "master dtype must be f32, got " << masterType;
  return success();
}
