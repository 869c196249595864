// DocumentStore: the write side of a pipeline's knowledge base, as a connector sees it.
//
// Why it is here: `POST /v1/documents` (connectors/http) adds, updates and deletes the
// documents that the pipeline's retrieval nodes read, but a connector may include graph/ only,
// never nodes/. So the pipeline exposes its stores through this interface: a node that reads a
// knowledge base answers Node::document_store() (graph/node.h), Pipeline::document_stores()
// collects the distinct ones after build, and the connector calls apply(). The retrieval
// implementation is nodes/retrieval/node/knowledge_base_documents.h.
//
// Contract of apply(): all or nothing. Every document is checked first (its id against the
// rule of graph/document_id.h, kind, language, text still non-empty after converting e.g. HTML
// to text); the first problem comes back in
// `rejected` and nothing changes. Otherwise the upserts and deletions become one new version,
// atomically for readers. apply() blocks for the whole ingest (chunking, embedding, index
// build, persistence: seconds for large changes), so callers run it off latency-sensitive
// threads; it throws std::runtime_error when the change cannot be committed (e.g. disk full),
// in which case readers keep the previous version.
//
// Thread-safety: every method from any thread; concurrent apply() calls are serialised by the
// store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// True when `text` holds nothing but spaces, tabs and line breaks. A document needs a text or a
// title that is not blank (a title alone is one chunk of its title); the API that takes documents
// and the loaders that read files apply this one rule.
inline bool is_blank(std::string_view text) { return text.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// One document to add or replace. `title`, `kind` and `language` may be empty (the store then
// decides them as it does for files: the title from the text, the kind from the id's extension).
struct DocumentUpsert {
  std::string id;
  std::string title;
  std::string text;
  std::string kind;      // e.g. "txt", "md", "html", "faq", "code"
  std::string language;  // for kind "code", e.g. "cpp", "python", "javascript"
};

struct DocumentChanges {
  std::vector<DocumentUpsert> upserts;
  std::vector<std::string> deletes;  // document ids; ids the store does not hold are not counted
};

struct DocumentChangeStats {
  std::size_t added = 0, updated = 0, unchanged = 0, deleted = 0;
  std::size_t chunks_total = 0;     // chunks in the store after the change
  std::size_t chunks_embedded = 0;  // chunks embedded by this change (0 when nothing changed)
  bool refitted = false;            // the embedder was refitted (every chunk re-embedded)
  std::uint64_t version = 0;        // the store's version after the change
  double seconds = 0;
  std::vector<std::string> skipped;  // "id: why" for upserts the store could not index (none normally)
};

// Why apply() refused a change: the offending upsert (index into DocumentChanges::upserts), its
// field ("id", "kind", "language", "text") and a sentence for the client.
struct DocumentProblem {
  std::size_t index = 0;
  std::string field;
  std::string message;
};

struct DocumentChangeResult {
  std::optional<DocumentProblem> rejected;  // set: nothing changed
  DocumentChangeStats stats;
};

class DocumentStore {
 public:
  virtual ~DocumentStore() = default;
  // Where the documents live (a knowledge base directory), for messages and responses.
  virtual std::string name() const = 0;
  virtual std::uint64_t version() const = 0;
  virtual DocumentChangeResult apply(const DocumentChanges& changes) = 0;
};

}  // namespace sluice
