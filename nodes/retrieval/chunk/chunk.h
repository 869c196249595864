// Chunk: the unit the indexes store and retrieval returns. It remembers where it came from so
// an answer can cite it: document id, title, byte offsets into the document's normalised text,
// and its ordinal within the document.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::retrieval {

struct Chunk {
  std::string doc_id;
  std::string title;
  std::string text;
  std::uint32_t begin = 0;    // byte offsets of `text` in the document's text
  std::uint32_t end = 0;
  std::uint32_t ordinal = 0;  // 0-based position among the document's chunks
};

// The chunk's content identity: its document id, '#', and 16 hex digits of FNV-1a 64 of its text.
// It survives re-chunking when the text does not change (an edit elsewhere in the document
// moves offsets, not keys) and changes with any edit of the text itself, which is what the
// answer caches invalidate on (Citation::chunk_key, KnowledgeBase change listeners).
std::string chunk_key(const Chunk& chunk);

// The text both BM25 and the embedder index: the title (when there is one) then the chunk text,
// as BEIR's reference runs do. The title is repeated on every chunk so each one stands alone.
inline std::string index_text(const Chunk& c) {
  return c.title.empty() ? c.text : c.title + "\n" + c.text;
}

}  // namespace sluice::retrieval
