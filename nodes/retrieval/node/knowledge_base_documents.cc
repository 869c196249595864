#include "nodes/retrieval/node/knowledge_base_documents.h"

#include <map>

#include "graph/document_id.h"
#include "graph/mutex.h"
#include "nodes/retrieval/kb/loaders.h"

namespace sluice::retrieval {
namespace {

std::optional<TextFormat> code_format(const std::string& language) {
  if (language == "c" || language == "cpp") return TextFormat::kCpp;
  if (language == "python") return TextFormat::kPython;
  if (language == "javascript") return TextFormat::kJavaScript;
  return std::nullopt;
}

bool is_code(TextFormat f) { return f == TextFormat::kCpp || f == TextFormat::kPython || f == TextFormat::kJavaScript; }

}  // namespace

std::optional<DocumentProblem> to_source_document(const DocumentUpsert& u, SourceDocument* out) {
  auto problem = [](std::string field, std::string message) {
    return DocumentProblem{0, std::move(field), std::move(message)};
  };
  // The HTTP source refuses bad ids already; checked again here for any other connector.
  if (auto why = document_id_problem(u.id)) return problem("id", quote_document_id(u.id) + " is not a valid document id: " + *why);
  const std::optional<TextFormat> by_name = format_of_name(u.id);
  TextFormat format = TextFormat::kText;
  bool faq = false;
  if (u.kind.empty()) {
    if (!u.language.empty()) return problem("language", "applies to kind 'code' only; set \"kind\": \"code\"");
    format = by_name.value_or(TextFormat::kText);
    faq = !is_code(format) && is_faq_name(u.id);
  } else if (u.kind == "txt") {
    format = TextFormat::kText;
  } else if (u.kind == "md") {
    format = TextFormat::kMarkdown;
  } else if (u.kind == "html") {
    format = TextFormat::kHtml;
  } else if (u.kind == "faq") {
    format = TextFormat::kMarkdown;
    faq = true;
  } else if (u.kind == "code") {
    if (!u.language.empty()) {
      const auto f = code_format(u.language);
      if (!f) return problem("language", "'" + u.language + "' is not one of c, cpp, python, javascript");
      format = *f;
    } else if (by_name && is_code(*by_name)) {
      format = *by_name;
    } else {
      return problem("language", "is required for kind 'code' when the id has no source-file extension "
                                 "(.c .cc .cpp .cxx .h .hh .hpp .py .js .mjs .cjs); use c, cpp, python or javascript");
    }
  } else {
    return problem("kind", "'" + u.kind + "' is not one of txt, md, html, faq, code");
  }
  if (!u.kind.empty() && u.kind != "code" && !u.language.empty()) {
    return problem("language", "applies to kind 'code' only, not '" + u.kind + "'");
  }
  auto doc = make_document(u.id, u.title, u.text, format, faq);
  if (!doc) {
    return problem("text", format == TextFormat::kHtml ? "is empty once the HTML is converted to text, and no title is given"
                                                       : "is empty, and no title is given");
  }
  *out = std::move(*doc);
  return std::nullopt;
}

DocumentChangeResult KnowledgeBaseDocuments::apply(const DocumentChanges& changes) {
  DocumentChangeResult result;
  std::vector<SourceDocument> docs(changes.upserts.size());
  for (std::size_t i = 0; i < changes.upserts.size(); ++i) {
    if (auto p = to_source_document(changes.upserts[i], &docs[i])) {
      p->index = i;
      result.rejected = std::move(p);
      return result;
    }
  }
  const IngestStats s = kb_->update(std::move(docs), changes.deletes);
  result.stats = {s.added, s.updated, s.unchanged, s.deleted, s.chunks_total, s.chunks_embedded, s.refitted, s.version, s.seconds, {}};
  for (const auto& p : s.problems) result.stats.skipped.push_back(p.to_string());
  return result;
}

std::shared_ptr<DocumentStore> documents_of(const std::shared_ptr<KnowledgeBase>& kb) {
  // Keyed by the knowledge base's address: a live store holds its knowledge base, so an entry
  // whose store expired may share an address with a new knowledge base, never a live one.
  static Mutex mu;
  static std::map<const KnowledgeBase*, std::weak_ptr<KnowledgeBaseDocuments>> stores;  // under mu
  MutexLock lock(mu);
  auto& slot = stores[kb.get()];
  auto store = slot.lock();
  if (!store) {
    store = std::make_shared<KnowledgeBaseDocuments>(kb, kb->directory().empty() ? "(in memory)" : kb->directory());
    slot = store;
  }
  for (auto it = stores.begin(); it != stores.end();) it = it->second.expired() ? stores.erase(it) : std::next(it);
  return store;
}

}  // namespace sluice::retrieval
