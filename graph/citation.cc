#include "graph/citation.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace sluice {

std::string sources_text(const std::vector<Citation>& citations) {
  if (citations.empty()) return "";
  std::string s = "\n\nSources:\n";
  for (const auto& c : citations) {
    s += "[" + std::to_string(c.number) + "] " + (c.title.empty() ? c.doc_id : c.title + " (" + c.doc_id + ")") + "\n";
  }
  return s;
}

std::string sources_json(const std::vector<Citation>& citations) {
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& c : citations)
    sources.push_back({{"n", c.number}, {"doc_id", c.doc_id}, {"title", c.title}, {"begin", c.begin}, {"end", c.end}});
  return sources.dump();
}

CitationMode citation_mode(std::string_view name) {
  if (name.empty() || name == "field") return CitationMode::kField;
  if (name == "inline") return CitationMode::kInline;
  if (name == "none") return CitationMode::kNone;
  throw std::invalid_argument("citations: must be field, inline or none, not '" + std::string(name) + "'");
}

}  // namespace sluice
