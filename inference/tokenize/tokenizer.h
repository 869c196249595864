// Tokenizer: SentencePiece-style BPE as stored in a GGUF file (tokenizer.ggml.model = "llama"):
// pieces with U+2581 for spaces, scores as merge priority, <0xXX> byte-fallback pieces,
// BOS/EOS ids and the leading-space rule (a space is prepended to non-empty text; the piece
// right after BOS is shown without its leading space, as llama2.c and llama.cpp print it).
// GPT-2 byte-level BPE files (Llama 3, Qwen) are refused with a ModelError.
//
// Control tokens (tokenizer.ggml.token_type 3: <s>, </s>, <|im_start|>, ...) are never produced
// from text, as in SentencePiece: text that spells one is encoded as ordinary pieces. Only
// encode_prompt() emits them, for a chat template's marker parts (prompt_text.h).
// User-defined tokens (type 4) are the opposite, as in llama.cpp: wherever their exact text
// occurs in text (longest first), it becomes the token before the rest is merged, and the
// text after one takes the leading space.
//
// Immutable after construction: safe to share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::inference {

class GgufFile;
class PromptText;

class Tokenizer {
 public:
  // Reads the vocabulary from the file's tokenizer.ggml.* metadata. Throws ModelError.
  explicit Tokenizer(const GgufFile& file);

  // Text -> token ids: BOS first when add_bos, then the text with a leading space (when the
  // file's add_space_prefix is on, the default) merged by score; characters missing from the
  // vocabulary fall back to their UTF-8 bytes.
  std::vector<int32_t> encode(std::string_view text, bool add_bos) const;

  // A rendered prompt -> token ids, as llama.cpp tokenizes a templated prompt with special
  // tokens parsed, except that only the template's markers may become control tokens: BOS
  // first when add_bos; a marker part that spells a control token exactly becomes that token;
  // everything else (literal parts, and markers the vocabulary has no control token for, such
  // as zephyr's "<|user|>") is text, encoded as encode() does, run by run between control
  // tokens, each run with the leading space when it starts the prompt or follows a control
  // token (llama.cpp's rule). A prompt with no control markers encodes exactly as
  // encode(prompt.flat(), add_bos).
  std::vector<int32_t> encode_prompt(const PromptText& prompt, bool add_bos) const;

  // The control token spelled exactly `text`; -1 when the vocabulary has none.
  int32_t control_token(std::string_view text) const;

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
  int32_t lookup(std::string_view raw_piece) const;  // a text piece's id; -1 when absent
  // Appends the ids of `text` (no BOS), with the leading space first when `space_prefix` and
  // the file's add_space_prefix are on: user-defined tokens found in the text become their
  // ids, the text between them is merged by append_pieces.
  void append_text(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const;
  // The BPE merge of one run of text.
  void append_pieces(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const;

  std::vector<std::string> raw_;   // pieces as stored (U+2581 for space)
  std::vector<std::string> text_;  // what each token prints
  std::vector<float> scores_;
  // raw piece -> id (views into raw_): text pieces (not control or unknown tokens), and
  // control tokens, which only markers reach.
  std::unordered_map<std::string_view, int32_t> index_;
  std::unordered_map<std::string_view, int32_t> control_index_;
  // USER_DEFINED tokens (type 4), longest text first: matched in raw text before merging.
  std::vector<int32_t> user_defined_;
  int32_t byte_token_[256];
  int32_t bos_ = 1, eos_ = 2, unk_ = 0;
  bool add_space_prefix_ = true;
};

}  // namespace sluice::inference
