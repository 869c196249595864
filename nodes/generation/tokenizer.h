// Tokenizer: SentencePiece-style BPE as stored in a GGUF file (tokenizer.ggml.model = "llama"):
// pieces with U+2581 for spaces, scores as merge priority, <0xXX> byte-fallback pieces,
// BOS/EOS ids and the leading-space rule (a space is prepended to non-empty text; the piece
// right after BOS is shown without its leading space, as llama2.c and llama.cpp print it).
// GPT-2 byte-level BPE files (Llama 3, Qwen) are refused with a ModelError.
//
// Immutable after construction: safe to share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::generation {

class GgufFile;

class Tokenizer {
 public:
  // Reads the vocabulary from the file's tokenizer.ggml.* metadata. Throws ModelError.
  explicit Tokenizer(const GgufFile& file);

  // Text -> token ids: BOS first when add_bos, then the text with a leading space (when the
  // file's add_space_prefix is on, the default) merged by score; characters missing from the
  // vocabulary fall back to their UTF-8 bytes.
  std::vector<int32_t> encode(std::string_view text, bool add_bos) const;

  // The bytes token `id` stands for, as printed after token `prev` (the leading space is
  // dropped right after BOS). Control and unknown tokens print nothing; byte tokens print
  // their single byte, which may be part of a multi-byte UTF-8 character.
  std::string_view piece(int32_t prev, int32_t id) const;
  // All pieces of `ids` concatenated, each printed after its predecessor (the first after BOS).
  std::string decode(const std::vector<int32_t>& ids) const;

  int32_t vocab_size() const { return int32_t(text_.size()); }
  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  bool is_end_of_generation(int32_t id) const { return id == eos_ || id == bos_; }

 private:
  int32_t lookup(std::string_view raw_piece) const;  // -1 when absent

  std::vector<std::string> raw_;   // pieces as stored (U+2581 for space)
  std::vector<std::string> text_;  // what each token prints
  std::vector<float> scores_;
  std::unordered_map<std::string_view, int32_t> index_;  // raw piece -> id (views into raw_)
  int32_t byte_token_[256];
  int32_t bos_ = 1, eos_ = 2, unk_ = 0;
  bool add_space_prefix_ = true;
};

}  // namespace sluice::generation
