#include "graph/request_citations.h"

namespace sluice {

void emit_sources(Request& request, const std::vector<Citation>& citations, CitationMode mode, Nanos now) {
  if (citations.empty() || mode == CitationMode::kNone) return;
  request.emit_event("sources", sources_json(citations));
  if (mode == CitationMode::kInline) request.emit_token(sources_text(citations), now);
}

}  // namespace sluice
