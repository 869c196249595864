#include "graph/spec_dot.h"

#include <map>

#include "graph/spec_loader.h"

namespace sluice {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string pipeline_to_dot(const PipelineSpec& p) {
  std::map<std::string, int> fan_in;
  for (const auto& e : p.edges()) fan_in[e.to()]++;
  std::string out = "digraph " + quote(p.name()) + " {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n";
  for (const auto& s : p.sources()) {
    out += "  " + quote(s.name()) + " [shape=ellipse, label=" + quote(s.name() + "\n" + source_kind(s)) + "];\n";
  }
  for (const auto& n : p.nodes()) {
    std::string label = n.name() + "\n" + node_kind(n);
    if (n.concurrency() > 0) label += " ×" + std::to_string(n.concurrency());
    if (fan_in[n.name()] > 1) label += "\n(join)";
    out += "  " + quote(n.name()) + " [shape=box, label=" + quote(label) + "];\n";
  }
  for (const auto& e : p.edges()) out += "  " + quote(e.from()) + " -> " + quote(e.to()) + ";\n";
  return out + "}\n";
}

}  // namespace sluice
