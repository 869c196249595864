// Fan-in joins: the branches of a fan-out meet again in front of a node through a oneTBB
// key-matching join_node on the batch id, followed by a lightweight node that turns the tuple
// of hops back into one hop (the batch, ready when its last branch was).
//
// join_node needs its tuple type at compile time, so the join is one template over the branch
// count N, instantiated for every count the validator allows (2..kMaxFanIn) through a table
// indexed at build time. Internal to the runtime (graph/pipeline_flow.cc).
#pragma once

#include <oneapi/tbb/flow_graph.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "graph/flow_hop.h"
#include "graph/spec_validator.h"

namespace sluice {

namespace flow_join_detail {

namespace flow = tbb::flow;

template <std::size_t>
using HopAt = Hop;
template <std::size_t... I>
std::tuple<HopAt<I>...> hop_tuple(std::index_sequence<I...>);
// std::tuple<Hop, ..., Hop>, N times.
template <std::size_t N>
using HopTuple = decltype(hop_tuple(std::make_index_sequence<N>{}));

using Owned = std::vector<std::unique_ptr<flow::graph_node>>;
using Ports = std::vector<flow::receiver<Hop>*>;

template <std::size_t... I>
Ports add_join(flow::graph& graph, Owned& owned, flow::receiver<Hop>& into, std::index_sequence<I...>) {
  constexpr std::size_t n = sizeof...(I);
  using Join = flow::join_node<HopTuple<n>, flow::key_matching<std::uint64_t>>;
  using Unpack = flow::function_node<HopTuple<n>, Hop, flow::lightweight>;
  auto key = [](const Hop& h) -> std::uint64_t { return h.batch->id; };
  auto* join = new Join(graph, ((void)I, key)...);  // one key function per port
  owned.emplace_back(join);
  auto* unpack = new Unpack(graph, flow::unlimited, [](const HopTuple<n>& t) {
    return Hop{std::get<0>(t).batch, std::max({std::get<I>(t).ready_at...})};
  });
  owned.emplace_back(unpack);
  flow::make_edge(*join, *unpack);
  flow::make_edge(*unpack, into);
  return Ports{&flow::input_port<I>(*join)...};
}

template <std::size_t N>
Ports add_join_of(flow::graph& graph, Owned& owned, flow::receiver<Hop>& into) {
  return add_join(graph, owned, into, std::make_index_sequence<N>{});
}

using JoinMaker = Ports (*)(flow::graph&, Owned&, flow::receiver<Hop>&);
// kJoinMakers[n - 2] joins n branches.
template <std::size_t... I>
constexpr std::array<JoinMaker, sizeof...(I)> join_makers(std::index_sequence<I...>) {
  return {&add_join_of<I + 2>...};
}
inline constexpr auto kJoinMakers = join_makers(std::make_index_sequence<kMaxFanIn - 1>{});

}  // namespace flow_join_detail

// Puts a join of `branches` inputs (2..kMaxFanIn) in front of `into`; the join and its unpacking
// node are added to `owned`. Returns the join's input ports, one per branch.
inline std::vector<tbb::flow::receiver<Hop>*> add_fan_in_join(tbb::flow::graph& graph,
                                                              std::vector<std::unique_ptr<tbb::flow::graph_node>>& owned,
                                                              tbb::flow::receiver<Hop>& into, int branches) {
  using flow_join_detail::kJoinMakers;
  if (branches < 2 || branches > kMaxFanIn) {
    throw std::logic_error("a join of " + std::to_string(branches) + " branches (the validator allows 2 to " +
                           std::to_string(kMaxFanIn) + ")");
  }
  return kJoinMakers[static_cast<std::size_t>(branches - 2)](graph, owned, into);
}

}  // namespace sluice
