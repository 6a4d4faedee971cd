//===- hf_import.cpp - Initial weights from a Hugging Face checkpoint -----===//
//
// --init-from PATH accepts a checkpoint as transformers writes it: a
// .safetensors file, a directory holding model.safetensors, or a sharded
// checkpoint (model.safetensors.index.json and the files its weight_map
// names). The model's tensors are found by one table per architecture,
// chosen from the model's own parameter names:
//   - GPT-2 (wte.weight): the names with or without "transformer."
//     (GPT2LMHeadModel vs GPT2Model); Conv1D weights are [in, out] as in
//     Triax; the attention's mask buffers (h.N.attn.bias, masked_bias) and
//     a tied lm_head.weight are skipped; wpe's rows are cut to the model's
//     sequence (a shorter table is an error);
//   - LLaMA / Mistral (model.embed_tokens.weight): the names with or
//     without "model." (LlamaForCausalLM vs LlamaModel); rotary_emb.inv_freq
//     buffers skipped. The model's linear weights are checkpoint tensors in
//     nn.Linear's [out, in] already (trx_param_desc::ckpt_transposed: the
//     driver transposes them to Triax's [in, out]);
//   - other models: the names as they are, or with either prefix.
// F32, BF16 and F16 tensors are converted to the model's dtype: exactly
// into f32; into bf16 rounded to nearest even (exact from BF16). Every
// missing, unexpected and mis-shaped tensor is listed in one message.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "bf16.h"

#include <cmath>
#include <map>
#include <memory>
#include <set>

using namespace triax::rt;

namespace {

enum class Family { GPT2, Llama, Other };

struct Source {
  std::string file; // the file's name, for messages
  trx_tensor t;     // name, dtype, shape and data in the mapped file
};

using FileHandle =
    std::unique_ptr<trx_safetensors, void (*)(trx_safetensors *)>;

struct Checkpoint {
  std::vector<FileHandle> files;
  std::map<std::string, Source> tensors;
};

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string addFile(Checkpoint &ck, const std::string &path) {
  char err[1024];
  FileHandle st(trx_safetensors_open(path.c_str(), err, sizeof(err)),
                trx_safetensors_close);
  if (!st)
    return err;
  for (int64_t i = 0, n = trx_safetensors_count(st.get()); i < n; ++i) {
    Source s{baseName(path), {}};
    trx_safetensors_get(st.get(), i, &s.t);
    auto [it, fresh] = ck.tensors.emplace(s.t.name, s);
    if (!fresh)
      return path + ": tensor '" + s.t.name + "' is also in " + it->second.file;
  }
  ck.files.push_back(std::move(st));
  return "";
}

/// The files of a sharded checkpoint: the weight_map's values.
std::string addIndex(Checkpoint &ck, const std::string &index) {
  std::string text;
  if (readFile(index, text) != 0)
    return index + ": cannot read: " + errnoStr(errno);
  json::Value root;
  std::string error;
  if (!json::parse(text, root, error))
    return index + ": invalid JSON " + error;
  const json::Value *map = root.isObject() ? root.get("weight_map") : nullptr;
  if (!map || !map->isObject())
    return index + ": no \"weight_map\" object";
  std::set<std::string> files;
  for (const auto &[name, file] : map->members) {
    if (!file.isString())
      return index + ": weight_map[\"" + name + "\"] is not a file name";
    files.insert(file.text);
  }
  for (const std::string &file : files)
    if (std::string e = addFile(ck, joinPath(dirName(index), file)); !e.empty())
      return e;
  return "";
}

std::string openCheckpoint(const std::string &path, Checkpoint &ck) {
  if (isDir(path)) {
    std::string index = joinPath(path, "model.safetensors.index.json");
    if (isFile(index))
      return addIndex(ck, index);
    std::string single = joinPath(path, "model.safetensors");
    if (isFile(single))
      return addFile(ck, single);
    return path + ": a directory without model.safetensors or "
                  "model.safetensors.index.json";
  }
  if (endsWith(path, ".index.json"))
    return addIndex(ck, path);
  return addFile(ck, path);
}

Family familyOf(int64_t n, const trx_tensor *specs) {
  for (int64_t i = 0; i < n; ++i) {
    std::string name = specs[i].name;
    if (name == "wte.weight")
      return Family::GPT2;
    if (name == "model.embed_tokens.weight")
      return Family::Llama;
  }
  return Family::Other;
}

/// The names a checkpoint may give the model's tensor `name`.
std::vector<std::string> candidates(Family f, const std::string &name) {
  std::vector<std::string> out = {name};
  auto prefixed = [&](const std::string &prefix) {
    if (name.compare(0, prefix.size(), prefix) == 0)
      out.push_back(name.substr(prefix.size()));
    else
      out.push_back(prefix + name);
  };
  if (f != Family::Llama)
    prefixed("transformer.");
  if (f != Family::GPT2)
    prefixed("model.");
  return out;
}

/// A checkpoint tensor that is not a weight of the model: mask buffers,
/// rotary frequencies, a head tied to the embedding.
const char *skipReason(Family f, const std::string &name, bool modelHasHead) {
  auto ends = [&](const char *s) { return endsWith(name, s); };
  if (f != Family::Llama && (ends(".attn.bias") || ends(".attn.masked_bias")))
    return "GPT-2's causal-mask buffer";
  if (ends(".rotary_emb.inv_freq"))
    return "rotary frequencies (a buffer)";
  if (name == "lm_head.weight" && !modelHasHead)
    return "the head, tied to the embedding";
  return nullptr;
}

float halfToF32(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(float(mant), -24); // subnormal (exact)
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(float(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

float loadAsF32(const void *data, int32_t dtype, int64_t i) {
  if (dtype == TRX_F32) {
    float f;
    std::memcpy(&f, static_cast<const char *>(data) + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const char *>(data) + 2 * i, 2);
  return dtype == TRX_BF16 ? bf16ToF32(h) : halfToF32(h);
}

} // namespace

std::string triax::rt::readHuggingFace(const std::string &path, int64_t n,
                                       const trx_tensor *specs,
                                       void *const *dst, FILE *explain) {
  Checkpoint ck;
  if (std::string e = openCheckpoint(path, ck); !e.empty())
    return e;
  Family family = familyOf(n, specs);
  bool modelHasHead = false;
  for (int64_t i = 0; i < n; ++i)
    modelHasHead |= std::string(specs[i].name) == "lm_head.weight";
  std::vector<std::string> missing, misshaped, unexpected;
  std::set<std::string> used;
  for (int64_t i = 0; i < n; ++i) {
    const trx_tensor &spec = specs[i];
    std::string name = spec.name;
    const Source *src = nullptr;
    for (const std::string &c : candidates(family, name)) {
      auto it = ck.tensors.find(c);
      if (it != ck.tensors.end()) {
        src = &it->second;
        break;
      }
    }
    if (!src) {
      missing.push_back(name);
      continue;
    }
    const trx_tensor &t = src->t;
    used.insert(t.name);
    bool sliceRows = family == Family::GPT2 && name == "wpe.weight" &&
                     spec.rank == 2 && t.rank == 2 &&
                     t.shape[1] == spec.shape[1] && t.shape[0] > spec.shape[0];
    bool fits = t.rank == spec.rank;
    for (int32_t d = 0; fits && d < spec.rank; ++d) {
      fits = t.shape[d] == spec.shape[d] || (sliceRows && d == 0);
    }
    if (!fits) {
      std::string why = name + " " + shapeStr(t.rank, t.shape) +
                        " in the checkpoint, the model's " +
                        shapeStr(spec.rank, spec.shape);
      if (name == "wpe.weight" && t.rank == 2 && t.shape[0] < spec.shape[0])
        why += " (the model's sequence is longer than the checkpoint's " +
               std::to_string(t.shape[0]) + " positions)";
      misshaped.push_back(why);
      continue;
    }
    if (t.dtype != TRX_F32 && t.dtype != TRX_BF16 && t.dtype != TRX_F16) {
      misshaped.push_back(name + " has dtype " + trx_dtype_name(t.dtype) +
                          " (F32, BF16 or F16 convert)");
      continue;
    }
    int64_t count = trx_tensor_numel(&spec);
    for (int64_t e = 0; e < count; ++e) {
      float v = loadAsF32(t.data, t.dtype, e);
      if (spec.dtype == TRX_F32) {
        std::memcpy(static_cast<char *>(dst[i]) + 4 * e, &v, 4);
      } else {
        uint16_t h = t.dtype == TRX_BF16 ? 0 : f32ToBf16(v);
        if (t.dtype == TRX_BF16)
          std::memcpy(&h, static_cast<const char *>(t.data) + 2 * e, 2);
        std::memcpy(static_cast<char *>(dst[i]) + 2 * e, &h, 2);
      }
    }
    if (explain) {
      std::string how;
      if (t.dtype != spec.dtype)
        how += std::string(", ") + trx_dtype_name(t.dtype) + " -> " +
               trx_dtype_name(spec.dtype);
      if (sliceRows)
        how += ", rows 0.." + std::to_string(spec.shape[0] - 1) + " of " +
               std::to_string(t.shape[0]);
      std::fprintf(explain, "%s <- %s (%s%s)\n", name.c_str(), t.name,
                   src->file.c_str(), how.c_str());
    }
  }
  for (const auto &[name, src] : ck.tensors) {
    if (used.count(name))
      continue;
    if (const char *why = skipReason(family, name, modelHasHead)) {
      if (explain)
        std::fprintf(explain, "skipped %s (%s): %s\n", name.c_str(),
                     src.file.c_str(), why);
      continue;
    }
    unexpected.push_back(name);
  }
  if (missing.empty() && misshaped.empty() && unexpected.empty())
    return "";
  std::string msg = path + ": the checkpoint does not fit the model (" +
                    (family == Family::GPT2    ? std::string("GPT-2 names")
                     : family == Family::Llama ? std::string("LLaMA names")
                                               : std::string("names as "
                                                             "they are")) +
                    "; --explain-names shows the mapping)";
  auto list = [&](const char *what, const std::vector<std::string> &items) {
    if (items.empty())
      return;
    msg +=
        std::string("\n  ") + what + " (" + std::to_string(items.size()) + "):";
    for (const std::string &s : items)
      msg += "\n    " + s;
  };
  list("missing", missing);
  list("mis-shaped", misshaped);
  list("unexpected", unexpected);
  return msg;
}
