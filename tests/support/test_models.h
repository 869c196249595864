// Helpers for the generation tests: paths of ../shared models (tests skip when absent) and a
// tiny valid Llama GGUF built in memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "inference/gguf/gguf_file.h"
#include "inference/gguf/gguf_writer.h"
#include "inference/tokenize/tokenizer.h"

namespace sluice::inference::testing {

inline std::string shared_model(const char* rel) { return std::string(SLUICE_SHARED_DIR) + "/models/" + rel; }

#define SLUICE_REQUIRE_SHARED(path) \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "needs " << (path) << " (../shared)"

// A 2-layer llama with dim 32, hidden 64, 4 heads (2 KV heads), a 300-piece vocabulary
// (<unk> <s> </s>, 256 byte pieces, then letters and merges), F32 weights of value `w`.
// With `chatml`, ids 274 and 275 are the control tokens <|im_start|> and <|im_end|>, followed
// by ordinary pieces "<|", "<|i", ..., "<|im_start|" through which text spelling
// "<|im_start|>" could merge into the control token if the tokenizer let it, then the
// user-defined (type 4) tokens "<sep>" and "<sep><sep>" (ids 286 and 287).
inline constexpr int32_t kTinyImStart = 274, kTinyImEnd = 275, kTinySep = 286, kTinySepSep = 287;
inline GgufWriter tiny_llama_writer(float w = 0.01f, bool chatml = false) {
  GgufWriter g;
  g.add_string("general.architecture", "llama");
  g.add_u32("llama.context_length", 64);
  g.add_u32("llama.embedding_length", 32);
  g.add_u32("llama.feed_forward_length", 64);
  g.add_u32("llama.block_count", 2);
  g.add_u32("llama.attention.head_count", 4);
  g.add_u32("llama.attention.head_count_kv", 2);
  g.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  std::vector<std::string> pieces = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    pieces.emplace_back(buf);
    types.push_back(6);
  }
  for (const char* p : {"\xE2\x96\x81", "a", "b", "c", "h", "e", "l", "o", "\xE2\x96\x81h", "he", "ll", "\xE2\x96\x81he",
                        "llo", "\xE2\x96\x81hello", "\xC3\xA9"}) {
    pieces.emplace_back(p);
    types.push_back(1);
  }
  if (chatml) {
    for (const char* p : {"<|im_start|>", "<|im_end|>"}) {
      pieces.emplace_back(p);
      types.push_back(3);
    }
    const std::string start = "<|im_start|";
    for (size_t len = 2; len <= start.size(); ++len) {
      pieces.push_back(start.substr(0, len));
      types.push_back(1);
    }
    for (const char* p : {"<sep>", "<sep><sep>"}) {
      pieces.emplace_back(p);
      types.push_back(4);
    }
  }
  while (pieces.size() < 300) {
    pieces.push_back("x" + std::to_string(pieces.size()));
    types.push_back(1);
  }
  std::vector<float> scores(pieces.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -float(i);
  g.add_string("tokenizer.ggml.model", "llama");
  g.add_string_array("tokenizer.ggml.tokens", pieces);
  g.add_f32_array("tokenizer.ggml.scores", scores);
  g.add_i32_array("tokenizer.ggml.token_type", types);
  g.add_u32("tokenizer.ggml.bos_token_id", 1);
  g.add_u32("tokenizer.ggml.eos_token_id", 2);
  auto tensor = [&](const std::string& name, std::vector<int64_t> dims, float value) {
    int64_t n = 1;
    for (auto d : dims) n *= d;
    std::vector<uint8_t> bytes(size_t(n) * 4);
    for (int64_t i = 0; i < n; ++i) {
      const float v = value * float((i * 7919) % 13 - 6);  // varied, deterministic
      std::memcpy(bytes.data() + i * 4, &v, 4);
    }
    g.add_tensor(name, dims, kernels::DType::kF32, std::move(bytes));
  };
  tensor("token_embd.weight", {32, 300}, w * 10);
  tensor("output_norm.weight", {32}, 0.2f);
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    tensor(b + "attn_norm.weight", {32}, 0.2f);
    tensor(b + "attn_q.weight", {32, 32}, w);
    tensor(b + "attn_k.weight", {32, 16}, w);
    tensor(b + "attn_v.weight", {32, 16}, w);
    tensor(b + "attn_output.weight", {32, 32}, w);
    tensor(b + "ffn_norm.weight", {32}, 0.2f);
    tensor(b + "ffn_gate.weight", {32, 64}, w);
    tensor(b + "ffn_up.weight", {32, 64}, w);
    tensor(b + "ffn_down.weight", {64, 32}, w);
  }
  return g;
}

// The tiny model's vocabulary, parsed in memory: its bytes, the file over them, its tokenizer.
struct TinyVocab {
  explicit TinyVocab(bool chatml = false)
      : bytes(tiny_llama_writer(0.01f, chatml).serialize()),
        file(GgufFile::parse("tiny.gguf", bytes.data(), bytes.size())),
        tokenizer(*file) {}
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
  Tokenizer tokenizer;
};

}  // namespace sluice::inference::testing
