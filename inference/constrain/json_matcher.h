// JsonMatcher: reads an answer byte by byte against a JsonGrammar and says, at every point,
// whether the bytes so far can still become a valid document, whether they already are one,
// and the fewest bytes that would complete it.
//
// A state is a set of stacks (anyOf makes the reading ambiguous until a byte decides, as in
// llama.cpp's grammar stacks); each stack is the chain of values open from the root to the
// innermost. Alternatives are split only into those whose first byte matches, so the set is
// usually one stack. States are plain vectors the caller owns and reuses: advance() allocates
// nothing once the vectors have grown (the mask walk in token_mask.h calls it per trie node).
//
// Stateless (the grammar is immutable): share one matcher between threads.
#pragma once

#include <cstdint>
#include <vector>

#include "inference/constrain/json_grammar.h"

namespace sluice::constrain {

struct Frame {
  std::uint32_t node = 0;
  std::uint8_t kind = 0;   // FrameKind in the .cc
  std::uint8_t phase = 0;
  std::uint8_t spaced = 0; // the optional space here was used
  std::uint32_t a = 0;     // literal position, string length, object property, array items, number length
  std::uint32_t b = 0;     // object prefix position, bytes left of an escape or a UTF-8 character
  std::int64_t v = 0;      // a bounded integer's magnitude so far (its sign: `spaced`)
  bool operator==(const Frame&) const = default;
};

struct MatchState {
  std::vector<Frame> frames;        // the stacks, one after another
  std::vector<std::uint32_t> ends;  // ends[k]: one past stack k's top frame
  bool empty() const { return ends.empty(); }  // dead: no reading survives
  void clear() {
    frames.clear();
    ends.clear();
  }
};

class JsonMatcher {
 public:
  explicit JsonMatcher(const JsonGrammar& grammar) : g_(grammar) {}

  MatchState start() const;  // nothing written yet
  // `out` = `in` after byte `c` (empty when `c` leaves the language). `in` and `out` differ.
  void advance(const MatchState& in, std::uint8_t c, MatchState& out) const;
  // The bytes so far are a complete document (an end of generation is allowed).
  bool accepts(const MatchState& s) const;
  // Complete, and no byte can follow: generation should end here.
  bool finished(const MatchState& s) const;
  // One reading, inside a string body with no length limits and no escape or character half
  // written: any plain text (no quote, backslash or control byte) may follow and changes only
  // the string's length.
  bool in_free_string(const MatchState& s) const;
  // The fewest bytes that complete the document (0 when accepted).
  std::uint32_t min_remaining(const MatchState& s) const;

 private:
  void step(std::vector<Frame>& stack, std::uint8_t c, MatchState& out, int depth) const;
  // Opens a child value on `stack` and reads `c` as its first byte (nothing past kMaxDepth).
  void open_value(std::vector<Frame>& stack, std::uint32_t node, std::uint8_t c, MatchState& out, int depth) const;
  std::uint32_t rest(const Frame& f) const;
  bool number_complete(const Frame& f) const;  // a number that may end here

  const JsonGrammar& g_;
};

}  // namespace sluice::constrain
