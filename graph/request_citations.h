// emit_sources: a cited answer's sources put on its request as the pipeline's `citations`
// setting says (CitationMode, citation.h): the "sources" event, and for kInline the sources
// text after the answer (never after a structured answer: it would not parse). Shared by the nodes that answer (retrieval's extractive `answer`,
// generation's `generate`), so both honour the setting the same way.
// Thread-safety: as Request's emit_* (one node works on a request at a time).
#pragma once

#include <vector>

#include "graph/citation.h"
#include "graph/clock.h"
#include "graph/request.h"

namespace sluice {

// The citations of the answer a request got, attached by emit_sources whatever the mode (the
// answer caches read them: nodes/cache/answer_recorder.h).
inline constexpr const char* kAnswerCitationsKey = "answer.citations";

// Attaches the citations (kAnswerCitationsKey); emits nothing for an empty list or kNone.
void emit_sources(Request& request, const std::vector<Citation>& citations, CitationMode mode, Nanos now);

}  // namespace sluice
