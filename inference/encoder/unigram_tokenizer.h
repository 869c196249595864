// UnigramTokenizer: the SentencePiece unigram segmentation of Universal Sentence Encoder Lite,
// reproducing its reference JavaScript tokenizer (@energetic-ai/embeddings 0.2.0, the port of
// tfjs-models' universal-sentence-encoder tokenizer) token for token, quirks included, since
// the pretrained model was trained on and is checked against exactly those ids:
//   - text is NFKC-normalised (ICU); non-empty text gets a leading U+2581 and every ASCII space
//     becomes U+2581 (no other whitespace is touched, runs of spaces are kept);
//   - a lattice over Unicode code points: from each position every vocabulary piece (ids from
//     `reserved` on; a piece listed twice keeps its last id) that starts there; where none
//     does, the single character as the unknown id 0 with score 0;
//   - Viterbi over the pieces' scores summed in double precision (a missing score counts 0),
//     visiting start positions in ascending order and taking a candidate when it scores at
//     least the best so far or the best so far is exactly 0 (the reference's "unset");
//   - the backward walk steps back by each chosen piece's length in UTF-16 code units (the
//     reference's String.length), the unknown piece counting as its own text, U+FFFD;
//   - consecutive unknown ids merge into one.
// Empty text gives no ids. Malformed UTF-8 bytes read as U+FFFD.
//
// Immutable after construction: safe to share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::inference {

struct UnigramPiece {
  std::string text;  // UTF-8
  double score = 0;
};

class UnigramTokenizer {
 public:
  // Pieces in id order; ids below `reserved` are never produced from text except 0 (unknown).
  // Throws ModelError when there are no pieces or `reserved` exceeds them.
  UnigramTokenizer(std::vector<UnigramPiece> pieces, int reserved);

  std::vector<int32_t> encode(std::string_view text) const;

  size_t size() const { return pieces_.size(); }

  // The reference's input rule alone, as code points: NFKC, then the U+2581 rules above.
  static std::u32string normalize(std::string_view text);

 private:
  struct Node {
    int32_t id = -1;  // piece ending here, -1 when none
    uint32_t length = 0;  // code points from the root
  };
  int32_t child(int32_t node, char32_t c) const;

  std::vector<UnigramPiece> pieces_;
  std::vector<uint32_t> utf16_length_;  // per id
  std::vector<Node> nodes_;             // trie; node 0 is the root
  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 21) | code point -> child node
};

}  // namespace sluice::inference
