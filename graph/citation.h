// Citation: one numbered source of a cited answer (doc id, title, the chunk's offsets), and the
// two ways an answer shows its sources: the text appended after the answer and the "sources"
// event's JSON. Here, beside the request envelope, because the nodes that cite (retrieval's
// extractive `answer`, generation's `prompt` and `generate`) pass citations to each other as
// request attachments and none of them should include another's internals for the type.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sluice {

struct Citation {
  int number = 0;
  std::string doc_id;
  std::string title;
  std::uint32_t begin = 0, end = 0;  // the chunk's offsets in the document
};

// "\n\nSources:\n[1] title (doc id)\n..." ("" without citations): what follows a cited answer.
std::string sources_text(const std::vector<Citation>& citations);
// [{"n":1,"doc_id":..,"title":..,"begin":..,"end":..},...]: the "sources" event's data.
std::string sources_json(const std::vector<Citation>& citations);

}  // namespace sluice
