#include "graph/pipeline_plan.h"

#include <algorithm>
#include <set>

#include "graph/spec_loader.h"

namespace sluice {

namespace {

using Names = std::map<std::string, std::vector<std::string>>;

// Leaves below `n`: a branch reaching a join counts once per join, not once per branch.
int leaves_dedup(const std::string& n, const Names& successors, const std::map<std::string, int>& fan_in,
                 std::set<std::string>& seen_joins) {
  auto next = successors.find(n);
  if (next == successors.end() || next->second.empty()) return 1;
  int total = 0;
  for (const auto& s : next->second) {
    auto k = fan_in.find(s);
    if (k != fan_in.end() && k->second > 1 && !seen_joins.insert(s).second) continue;
    total += leaves_dedup(s, successors, fan_in, seen_joins);
  }
  return total;
}

}  // namespace

std::vector<std::string> PipelinePlan::sources_upstream(const std::string& node) const {
  std::vector<std::string> upstream;
  std::set<std::string> seen;
  std::vector<std::string> pending{node};
  while (!pending.empty()) {
    std::string n = pending.back();
    pending.pop_back();
    if (!seen.insert(n).second) continue;
    if (std::find(this->sources.begin(), this->sources.end(), n) != this->sources.end()) upstream.push_back(n);
    auto from = predecessors.find(n);
    if (from == predecessors.end()) continue;
    for (const auto& f : from->second) pending.push_back(f);
  }
  return upstream;
}

PipelinePlan plan_pipeline(const PipelineSpec& p, const NodeRegistry& registry) {
  PipelinePlan plan;
  Names successors;
  std::map<std::string, int> fan_in;
  for (const auto& e : p.edges()) {
    successors[e.from()].push_back(e.to());
    plan.predecessors[e.to()].push_back(e.from());
    fan_in[e.to()]++;
  }
  auto successors_of = [&](const std::string& n) -> const std::vector<std::string>& { return successors[n]; };
  for (const auto& s : p.sources()) plan.sources.push_back(s.name());
  // A node whose inputs come from disjoint sets of sources (an HTTP source and a Kafka source
  // into one router) merges them: no batch can arrive on two of its edges, so a join would wait
  // forever. It takes one input port and counts as fan-in 1; inputs that share a source are
  // branches of one batch and meet in a join.
  std::set<std::string> merges;
  for (const auto& [node, from] : plan.predecessors) {
    if (from.size() < 2) continue;
    std::set<std::string> seen_sources;
    bool disjoint = true;
    for (const auto& f : from) {
      for (const auto& src : plan.sources_upstream(f)) disjoint &= seen_sources.insert(src).second;
    }
    if (disjoint) merges.insert(node);
  }
  for (const auto& m : merges) fan_in[m] = 1;
  plan.merges.assign(merges.begin(), merges.end());
  for (const auto& s : p.sources()) {
    std::set<std::string> seen;
    plan.leaves_below[s.name()] = leaves_dedup(s.name(), successors, fan_in, seen);
  }
  std::map<std::string, int> index;
  std::vector<bool> chainable;  // by node index: synchronous, unlimited concurrency
  for (int i = 0; i < p.nodes_size(); ++i) {
    const NodeSpec& ns = p.nodes(i);
    std::set<std::string> seen;
    plan.leaves_below[ns.name()] = leaves_dedup(ns.name(), successors, fan_in, seen);
    plan.leaf.push_back(successors_of(ns.name()).empty());
    index[ns.name()] = i;
    const NodeKind* kind = registry.find(node_kind(ns));
    chainable.push_back(kind && !kind->async && ns.concurrency() == 0);
  }

  // ---- chains
  auto continues_chain = [&](int i) {
    const std::string& name = p.nodes(i).name();
    if (!p.runtime().chain_stages() || !chainable[i] || plan.predecessors[name].size() != 1) return false;
    const std::string& from = plan.predecessors[name].front();
    auto it = index.find(from);
    return it != index.end() && chainable[it->second] && successors_of(from).size() == 1;
  };
  std::map<std::string, int> unit_of;  // head name -> unit index
  std::set<std::string> chained;       // members after the first of a chain
  for (int i = 0; i < p.nodes_size(); ++i) {
    if (continues_chain(i)) continue;  // collected from the head of its chain
    PipelinePlan::Unit unit;
    unit.stages.push_back(i);
    unit.fan_in = fan_in[p.nodes(i).name()];
    for (;;) {
      const auto& next = successors_of(p.nodes(unit.stages.back()).name());
      if (next.size() != 1) break;
      auto it = index.find(next.front());
      if (it == index.end() || !continues_chain(it->second)) break;
      unit.stages.push_back(it->second);
      chained.insert(next.front());
    }
    unit_of[p.nodes(i).name()] = static_cast<int>(plan.units.size());
    plan.units.push_back(std::move(unit));
  }

  // ---- links: each edge into a unit's head takes the head's next input port
  std::map<std::string, int> next_port;
  for (const auto& e : p.edges()) {
    if (chained.count(e.to())) continue;
    plan.links.push_back({e.from(), unit_of.at(e.to()), merges.count(e.to()) ? 0 : next_port[e.to()]++});
  }
  return plan;
}

}  // namespace sluice
