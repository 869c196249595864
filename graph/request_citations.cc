#include "graph/request_citations.h"

namespace sluice {

void emit_sources(Request& request, const std::vector<Citation>& citations, CitationMode mode, Nanos now) {
  request.attach(kAnswerCitationsKey, std::make_shared<const std::vector<Citation>>(citations));
  if (citations.empty() || mode == CitationMode::kNone) return;
  request.emit_event("sources", sources_json(citations));
  // Inline sources would make a JSON answer or a tool call's arguments unparseable: those get
  // the field only.
  if (mode == CitationMode::kInline && request.input().structured.kind == StructuredOutput::Kind::kText)
    request.emit_token(sources_text(citations), now);
}

}  // namespace sluice
