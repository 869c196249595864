// Citation: one numbered source of a cited answer (doc id, title, the chunk's offsets), and the
// ways an answer shows its sources: the "sources" event's JSON (the HTTP source writes it as the
// extra field `sluice_sources` of the answer's last object) and, when a pipeline asks for it,
// the text appended after the answer. Here, beside the request envelope, because the nodes that cite (retrieval's
// extractive `answer`, generation's `prompt` and `generate`) pass citations to each other as
// request attachments and none of them should include another's internals for the type.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>


namespace sluice {

struct Citation {
  int number = 0;
  std::string doc_id;
  std::string title;
  std::uint32_t begin = 0, end = 0;  // the chunk's offsets in the document
  // The chunk's content identity (retrieval's chunk_key(): doc id, '#', a hash of its text):
  // what the answer caches record an answer was built from, and what a knowledge-base update
  // that changes or deletes that text retires (docs/caching.md).
  std::string chunk_key;
};

// "\n\nSources:\n[1] title (doc id)\n..." ("" without citations): what follows a cited answer.
std::string sources_text(const std::vector<Citation>& citations);
// [{"n":1,"doc_id":..,"title":..,"begin":..,"end":..},...]: the "sources" event's data.
std::string sources_json(const std::vector<Citation>& citations);

// Where a cited answer's sources go (the `citations` setting of the nodes that answer):
//  kField   the "sources" event only: the answer text is the answer, so a chat history sent
//           back carries no list the model did not write and completion_tokens counts it all;
//  kInline  the event and sources_text() appended to the answer text (read by people, not
//           counted in completion_tokens);
//  kNone    neither.
enum class CitationMode { kField, kInline, kNone };
// "field" (or "", the default), "inline", "none"; throws std::invalid_argument naming the value
// otherwise (files are checked first by the schema's allowed list).
CitationMode citation_mode(std::string_view name);
// emit_sources (graph/request_citations.h) puts them on a request.

}  // namespace sluice
