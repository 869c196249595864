// Chunking by document type. Every chunk is a contiguous byte range of the document text (so
// offsets cite exactly), carrying the document's id and title.
//
//   narrative (.txt, .md, .html text, BEIR records): paragraphs (blank-line separated) packed
//     greedily up to `max_tokens`; a paragraph longer than that is cut at sentence ends, a
//     sentence longer than that at word boundaries. Consecutive chunks overlap: the next chunk
//     starts with the previous chunk's trailing units (paragraphs/sentences/words) worth at most
//     `overlap` x max_tokens tokens.
//   faq: one entry per chunk. An entry starts at a line beginning "Q:", "Q.", "Question:" or a
//     Markdown heading ending in "?", and runs to the next entry; text before the first entry is
//     narrative. An entry over `max_tokens` is cut like narrative text.
//   code: one top-level function or class per chunk, with the comments and decorators right
//     above it. C/C++/JavaScript: brace matching (strings and comments skipped; namespace and
//     extern "C" bodies are entered, so their functions stand alone). Python: indentation (a
//     line at column 0 ends the previous definition). Top-level code between definitions
//     (includes, imports, constants) is packed like narrative. Oversized units are cut at lines.
// Token counts come from a TokenCounter (the embedder's count_tokens); the default counts words.
// Pure functions; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "nodes/retrieval/chunk/chunk.h"
#include "nodes/retrieval/text/utf8.h"

namespace sluice::retrieval {

enum class DocumentKind { kNarrative, kFaq, kCode };
enum class CodeLanguage { kNone, kCpp, kPython, kJavaScript };

struct ChunkingOptions {
  std::size_t max_tokens = 384;  // issue range 256-512; 384 balances recall vs context per citation
  double overlap = 0.15;         // fraction of max_tokens repeated; 10-20% per the issue
};

struct SourceDocument {
  std::string id;
  std::string title;
  std::string text;
  DocumentKind kind = DocumentKind::kNarrative;
  CodeLanguage language = CodeLanguage::kNone;
};

using TokenCounter = std::function<std::size_t(std::string_view)>;  // default: count_words (text/utf8.h)

// Sentences of `text` as byte ranges, trimmed: a sentence ends at . ? ! before whitespace, or at
// a line break unless it is a soft wrap (the next line no heading, table row, list item, quote,
// code fence or blank; this one no heading, table row or code fence), so a hard-wrapped
// Markdown paragraph or list item reads as its sentences. Shared by the chunker and the
// extractive answer.
std::vector<std::pair<std::size_t, std::size_t>> split_sentences(std::string_view text);

// A document with no text but a title is one chunk with empty text (its title is indexed).
// Throws std::invalid_argument when max_tokens == 0 or overlap is outside [0, 0.5].
std::vector<Chunk> chunk_document(const SourceDocument& doc, const ChunkingOptions& options,
                                  const TokenCounter& count_tokens = count_words);

}  // namespace sluice::retrieval
