// KnowledgeBaseDocuments: a KnowledgeBase as a graph DocumentStore (graph/document_store.h), the
// store `POST /v1/documents` writes through.
//
// Each upsert becomes a SourceDocument the way the file loaders (kb/loaders.h) would make it,
// so a document posted with the id "guide.md" and a file guide.md ingested by `sluice ingest`
// have the same fingerprint. `kind` (empty: decided by the id's extension as for files, else
// "txt"; an id whose file name contains "faq" is chunked as FAQ):
//   txt   plain text; title = first line           md    Markdown; title = first "# " heading
//   html  converted to text; title = <title>       faq   one entry per chunk (Markdown titles)
//   code  one definition per chunk; `language` c, cpp, python or javascript (empty: from the
//         id's extension .c .cc .cpp .cxx .h .hh .hpp .py .js .mjs .cjs); title = file name
// `language` with another kind is refused. An explicit `title` always wins.
// apply() checks every upsert first (the id against graph/document_id.h, kind, language, text
// blank after conversion) and changes nothing on the first problem; then KnowledgeBase::update() applies upserts and deletes as one
// version.
//
// documents_of(kb) returns one store per KnowledgeBase (while any holder keeps it), so every
// node reading the same knowledge base exposes the same store and Pipeline::document_stores()
// counts it once. Thread-safety: as KnowledgeBase (apply calls are serialised by it).
#pragma once

#include <memory>

#include "graph/document_store.h"
#include "nodes/retrieval/kb/knowledge_base.h"

namespace sluice::retrieval {

class KnowledgeBaseDocuments final : public DocumentStore {
 public:
  KnowledgeBaseDocuments(std::shared_ptr<KnowledgeBase> kb, std::string name) : kb_(std::move(kb)), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::uint64_t version() const override { return kb_->version(); }
  DocumentChangeResult apply(const DocumentChanges& changes) override;

 private:
  std::shared_ptr<KnowledgeBase> kb_;
  std::string name_;
};

// The one store of `kb`. Its name is the knowledge base's directory ("(in memory)" when none).
std::shared_ptr<DocumentStore> documents_of(const std::shared_ptr<KnowledgeBase>& kb);

// One upsert as the SourceDocument the knowledge base gets, or the problem (field, message).
std::optional<DocumentProblem> to_source_document(const DocumentUpsert& upsert, SourceDocument* out);

}  // namespace sluice::retrieval
