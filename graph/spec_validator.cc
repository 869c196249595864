#include "graph/spec_validator.h"

#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "graph/http_post.h"
#include "graph/kafka_properties.h"
#include "graph/listen_rules.h"
#include "graph/schema.h"
#include "graph/trace.h"
#include "graph/units.h"

namespace sluice {

namespace pb = google::protobuf;

namespace {

std::string join(const FactSet& facts) {
  std::string out;
  for (const auto& f : facts) out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "nothing" : out;
}

// A string field's value against its rules (allowed values, the address unit); nullopt when fine.
std::optional<std::string> string_rule_problem(const FieldRules& rules, const std::string& value) {
  if (value.empty()) return std::nullopt;  // absent or empty: reported by `required` when it matters
  if (rules.allowed_size() > 0 &&
      std::find(rules.allowed().begin(), rules.allowed().end(), value) == rules.allowed().end()) {
    std::vector<std::string> allowed(rules.allowed().begin(), rules.allowed().end());
    std::string all;
    for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
    const std::string hint = did_you_mean(value, allowed);
    return "'" + value + "' is not one of " + all + (hint.empty() ? "" : " (did you mean '" + hint + "'?)");
  }
  if (rules.unit() == "address") {
    std::string host, error;
    std::uint16_t port = 0;
    if (!parse_host_port(value, &host, &port, &error)) return error;
  }
  return std::nullopt;
}

// Required fields and string rules, recursively; the paths are the loader's (a config member is
// "config"), so each error points at the file's line and column.
void check_field_rules(const pb::Message& msg, const std::string& path, const std::string& node, const LoadedSpec& spec,
                       std::vector<SpecError>& errors) {
  const pb::Descriptor* d = msg.GetDescriptor();
  const pb::Reflection* r = msg.GetReflection();
  const pb::OneofDescriptor* config = d->FindOneofByName("config");
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* fd = d->field(i);
    bool in_config = config && fd->containing_oneof() == config;
    std::string child = (path.empty() ? "" : path + ".") + (in_config ? "config" : fd->name());
    if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (fd->is_repeated()) {
        for (int j = 0; j < r->FieldSize(msg, fd); ++j) {
          const pb::Message& sub = r->GetRepeatedMessage(msg, fd, j);
          std::string sub_node = node;
          if (const pb::FieldDescriptor* name = sub.GetDescriptor()->FindFieldByName("name");
              name && sub.GetDescriptor()->FindOneofByName("config")) {
            sub_node = sub.GetReflection()->GetString(sub, name);
          }
          check_field_rules(sub, child + "[" + std::to_string(j) + "]", sub_node, spec, errors);
        }
      } else if (r->HasField(msg, fd)) {
        check_field_rules(r->GetMessage(msg, fd), child, node, spec, errors);
      }
      continue;
    }
    const FieldRules& field_rules = fd->options().GetExtension(rules);
    if (fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
      for (int j = 0, n = fd->is_repeated() ? r->FieldSize(msg, fd) : 1; j < n; ++j) {
        const std::string value = fd->is_repeated() ? r->GetRepeatedString(msg, fd, j) : r->GetString(msg, fd);
        const std::string at = fd->is_repeated() ? child + "[" + std::to_string(j) + "]" : child;
        if (auto problem = string_rule_problem(field_rules, value)) errors.push_back(spec.error_at(at, node, *problem));
      }
    }
    if (!field_rules.required()) continue;
    bool missing = fd->is_repeated() ? r->FieldSize(msg, fd) == 0
                   : fd->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING ? r->GetString(msg, fd).empty()
                                                                          : !spec.positions.has(child);
    if (missing) {
      bool absent = !spec.positions.has(child);
      errors.push_back(spec.error_at(absent ? path : child, node,
                                     absent ? "missing required field '" + child + "'"
                                            : "required field '" + child + "' is empty"));
    }
  }
}

}  // namespace

std::vector<SpecError> validate_spec(const LoadedSpec& spec, const NodeRegistry& registry) {
  std::vector<SpecError> errors;
  const PipelineSpec& p = spec.pipeline;
  check_field_rules(p, "", "", spec, errors);

  // ---- names and kinds
  std::map<std::string, std::string> defined_at;  // name -> path of its definition
  std::set<std::string> source_names;
  std::vector<std::string> all_names;
  auto define = [&](const std::string& name, const std::string& path) {
    if (name.empty()) return;
    auto [it, fresh] = defined_at.emplace(name, path);
    if (!fresh) {
      SourcePos first = spec.positions.value_pos(it->second + ".name");
      errors.push_back(spec.error_at(path + ".name", name,
                                     "the name '" + name + "' is already used (first defined at line " +
                                         std::to_string(first.line) + ")"));
    } else {
      all_names.push_back(name);
    }
  };
  const pb::OneofDescriptor* source_config = SourceSpec::descriptor()->FindOneofByName("config");
  std::vector<std::string> source_kinds;
  for (int i = 0; i < source_config->field_count(); ++i) source_kinds.push_back(source_config->field(i)->name());
  for (int i = 0; i < p.sources_size(); ++i) {
    const SourceSpec& s = p.sources(i);
    std::string path = "sources[" + std::to_string(i) + "]";
    define(s.name(), path);
    source_names.insert(s.name());
    const std::string kind = source_kind(s);
    if (kind.empty()) {
      errors.push_back(spec.error_at(path, s.name(), "missing required field '" + path + ".kind'"));
      continue;
    }
    if (std::find(source_kinds.begin(), source_kinds.end(), kind) == source_kinds.end()) {
      std::string hint = did_you_mean(kind, source_kinds);
      errors.push_back(spec.error_at(path + ".kind", s.name(),
                                     "unknown source kind '" + kind + "'" +
                                         (hint.empty() ? "" : " (did you mean '" + hint + "'?)")));
    }
  }
  std::map<std::string, const NodeKind*> kind_of;
  std::vector<std::string> known_kinds = registry.kinds();
  for (int i = 0; i < p.nodes_size(); ++i) {
    const NodeSpec& n = p.nodes(i);
    std::string path = "nodes[" + std::to_string(i) + "]";
    define(n.name(), path);
    const std::string kind = node_kind(n);
    if (kind.empty()) {
      errors.push_back(spec.error_at(path, n.name(), "missing required field '" + path + ".kind'"));
      continue;
    }
    const NodeKind* k = registry.find(kind);
    if (!k) {
      std::string hint = did_you_mean(kind, known_kinds);
      errors.push_back(spec.error_at(path + ".kind", n.name(),
                                     "unknown node kind '" + kind + "'" +
                                         (hint.empty() ? "" : " (did you mean '" + hint + "'?)")));
      continue;
    }
    // The loader put the file's config into the kind's member; a kind without one drops it.
    if (n.config_case() == NodeSpec::CONFIG_NOT_SET && spec.positions.has(path + ".config")) {
      errors.push_back(spec.error_at(path + ".config", n.name(), "node kind '" + kind + "' takes no config", true));
      continue;
    }
    kind_of[n.name()] = k;
    if (!n.degrade().action().empty() && n.degrade().action() != "none") {
      // A latency budget's degradation: one the kind supports, where the runtime can apply it.
      const std::string& action = n.degrade().action();
      const Degradations& can = registry.degradations(kind);
      const std::string& means = action == "skip" ? can.on_skip : can.on_shrink;
      const bool has_successor = std::any_of(p.edges().begin(), p.edges().end(), [&](const EdgeSpec& e) { return e.from() == n.name(); });
      if (!action.empty() && means.empty()) {
        errors.push_back(spec.error_at(path + ".degrade.action", n.name(),
                                       "node kind '" + kind + "' cannot " + action + " under a latency budget (kinds that can: " +
                                           join(registry.kinds_that_degrade(action)) + ")"));
      } else if (action == "skip" && !has_successor) {
        errors.push_back(spec.error_at(path + ".degrade.action", n.name(),
                                       "a node with no successor cannot skip: nothing after it would answer the request"));
      } else if (i >= static_cast<int>(Trace::kCapacity)) {
        errors.push_back(spec.error_at(path + ".degrade", n.name(),
                                       "degrade applies to the first " + std::to_string(Trace::kCapacity) +
                                           " nodes only (the trace records a degradation per stage)"));
      }
    }
  }
  if (!p.tracing().endpoint().empty()) {
    if (auto problem = http_url_problem(p.tracing().endpoint())) {
      errors.push_back(spec.error_at("tracing.endpoint", "", "tracing.endpoint: " + *problem));
    }
  }
  if (!p.alerts().webhook().empty()) {
    if (auto problem = http_url_problem(p.alerts().webhook())) {
      errors.push_back(spec.error_at("alerts.webhook", "", "alerts.webhook: " + *problem));
    }
  }
  if (p.sources_size() == 0) errors.push_back(spec.error_at("sources", "", "the pipeline has no sources; add e.g. an http source"));
  if (p.nodes_size() == 0) errors.push_back(spec.error_at("nodes", "", "the pipeline has no nodes"));

  // ---- priority classes
  std::set<std::string> classes;
  for (int i = 0; i < p.runtime().classes_size(); ++i) {
    const std::string& c = p.runtime().classes(i).name();
    if (!c.empty() && !classes.insert(c).second) {
      errors.push_back(spec.error_at("runtime.classes[" + std::to_string(i) + "].name", "", "priority class '" + c + "' is listed twice"));
    }
  }
  auto check_class = [&](const std::string& c, const std::string& path, const std::string& node) {
    if (classes.count(c)) return;
    std::string hint = did_you_mean(c, {classes.begin(), classes.end()});
    errors.push_back(spec.error_at(path, node, "'" + c + "' is not a priority class (classes: " + join(classes) + ")" +
                                                   (hint.empty() ? "" : "; did you mean '" + hint + "'?")));
  };
  // A kafka source's or async_jobs' librdkafka pass-through: the clients' own rule.
  // `within`: the path under the source ("config." or "config.async_jobs.").
  auto check_kafka_properties = [&](const auto& entries, int source, const std::string& within) {
    for (int j = 0; j < entries.size(); ++j) {
      if (auto problem = kafka_property_problem(entries.Get(j))) {
        const std::string field = within + "properties[" + std::to_string(j) + "]";
        errors.push_back(spec.error_at("sources[" + std::to_string(source) + "]." + field, p.sources(source).name(),
                                       field + ": " + *problem));
      }
    }
  };
  check_class(p.runtime().default_class(), "runtime.default_class", "");
  for (int i = 0; i < p.sources_size(); ++i) {
    if (p.sources(i).has_kafka()) {
      const KafkaSourceConfig& k = p.sources(i).kafka();
      const std::string at = "sources[" + std::to_string(i) + "].config.";
      check_class(k.default_priority(), at + "default_priority", p.sources(i).name());
      std::map<std::string, std::string> topics;  // topic -> the field that named it first
      for (const auto& [field, topic] : {std::pair<std::string, std::string>{"topic", k.topic()},
                                         {"results_topic", k.results_topic()},
                                         {"retry_topic", k.retry_topic()},
                                         {"dead_letter_topic", k.dead_letter_topic()}}) {
        if (topic.empty()) continue;
        auto [it, fresh] = topics.emplace(topic, field);
        if (!fresh) {
          errors.push_back(spec.error_at(at + field, p.sources(i).name(),
                                         "config." + field + ": '" + topic + "' is also this source's " + it->second +
                                             "; jobs, results, retries and dead letters need four topics"));
        }
      }
      check_kafka_properties(k.properties(), i, "config.");
    }
    if (p.sources(i).has_http()) {
      if (p.sources(i).http().has_async_jobs()) {
        check_kafka_properties(p.sources(i).http().async_jobs().properties(), i, "config.async_jobs.");
      }
      check_class(p.sources(i).http().default_priority(), "sources[" + std::to_string(i) + "].config.default_priority",
                  p.sources(i).name());
      if (auto problem = listen_auth_problem(p.sources(i).http())) {
        errors.push_back(spec.error_at("sources[" + std::to_string(i) + "].config." + problem->field, p.sources(i).name(),
                                       "config." + problem->field + ": " + problem->message));
      }
    }
  }

  // ---- edges
  std::map<std::string, std::vector<int>> inputs, outputs;  // name -> edge indexes
  std::set<std::pair<std::string, std::string>> seen_edges;
  for (int i = 0; i < p.edges_size(); ++i) {
    const EdgeSpec& e = p.edges(i);
    std::string path = "edges[" + std::to_string(i) + "]";
    bool ok = true;
    for (auto [end, name] : {std::pair{"from", e.from()}, std::pair{"to", e.to()}}) {
      if (name.empty()) {
        ok = false;
        continue;
      }
      if (!defined_at.count(name)) {
        std::string hint = did_you_mean(name, all_names);
        errors.push_back(spec.error_at(path + "." + end, "", std::string("edge ") + end + " '" + name +
                                           "', which is not a source or node" +
                                           (hint.empty() ? "" : " (did you mean '" + hint + "'?)")));
        ok = false;
      }
    }
    if (!ok) continue;
    if (source_names.count(e.to())) {
      errors.push_back(spec.error_at(path + ".to", e.to(), "an edge cannot enter source '" + e.to() + "'; sources only feed nodes"));
      continue;
    }
    if (e.from() == e.to()) {
      errors.push_back(spec.error_at(path + ".to", e.to(), "edge from '" + e.from() + "' to itself"));
      continue;
    }
    if (!seen_edges.insert({e.from(), e.to()}).second) {
      errors.push_back(spec.error_at(path, e.to(), "duplicate edge '" + e.from() + "' -> '" + e.to() + "'"));
      continue;
    }
    outputs[e.from()].push_back(i);
    inputs[e.to()].push_back(i);
  }
  for (int i = 0; i < p.nodes_size(); ++i) {
    const std::string& name = p.nodes(i).name();
    if (name.empty()) continue;
    if (!inputs.count(name)) {
      errors.push_back(spec.error_at("nodes[" + std::to_string(i) + "].name", name, "no edge enters this node; connect it to a source or another node"));
    } else if (static_cast<int>(inputs[name].size()) > kMaxFanIn) {
      errors.push_back(spec.error_at("edges[" + std::to_string(inputs[name][kMaxFanIn]) + "].to", name,
                                     std::to_string(inputs[name].size()) + " edges enter this node; at most " +
                                         std::to_string(kMaxFanIn) + " branches can be joined"));
    }
  }
  for (int i = 0; i < p.sources_size(); ++i) {
    const std::string& name = p.sources(i).name();
    if (!name.empty() && !outputs.count(name)) {
      errors.push_back(spec.error_at("sources[" + std::to_string(i) + "].name", name, "this source feeds no node; add an edge from it"));
    }
  }

  // ---- cycles (DFS with colours); report each cycle once, at the edge that closes it
  std::map<std::string, int> colour;
  std::vector<std::string> stack;
  bool has_cycle = false;
  std::function<void(const std::string&)> visit = [&](const std::string& n) {
    colour[n] = 1;
    stack.push_back(n);
    for (int ei : outputs[n]) {
      const std::string& next = p.edges(ei).to();
      if (colour[next] == 1) {
        has_cycle = true;
        std::string cycle;
        auto start = std::find(stack.begin(), stack.end(), next);
        for (auto it = start; it != stack.end(); ++it) cycle += "'" + *it + "' -> ";
        cycle += "'" + next + "'";
        errors.push_back(spec.error_at("edges[" + std::to_string(ei) + "]", next, "edges form a cycle: " + cycle));
      } else if (colour[next] == 0) {
        visit(next);
      }
    }
    stack.pop_back();
    colour[n] = 2;
  };
  for (const auto& name : all_names) {
    if (colour[name] == 0) visit(name);
  }

  // ---- port compatibility, in topological order (only meaningful without cycles)
  if (!has_cycle) {
    std::map<std::string, FactSet> facts;
    for (const auto& s : source_names) facts[s] = {"request"};
    std::map<std::string, int> pending;
    for (const auto& [name, in] : inputs) pending[name] = static_cast<int>(in.size());
    std::vector<std::string> ready(source_names.begin(), source_names.end());
    while (!ready.empty()) {
      std::string n = ready.back();
      ready.pop_back();
      for (int ei : outputs[n]) {
        const std::string& next = p.edges(ei).to();
        if (--pending[next] > 0) continue;
        FactSet provided;
        for (int in : inputs[next]) provided.insert(facts[p.edges(in).from()].begin(), facts[p.edges(in).from()].end());
        auto k = kind_of.find(next);
        if (k == kind_of.end()) {
          facts[next] = provided;
        } else {
          FactSet missing;
          for (const auto& need : k->second->needs) {
            if (!provided.count(need)) missing.insert(need);
          }
          if (!missing.empty()) {
            std::string from;
            for (int in : inputs[next]) from += (from.empty() ? "'" : ", '") + p.edges(in).from() + "'";
            errors.push_back(spec.error_at("edges[" + std::to_string(inputs[next].front()) + "].to", next,
                                           "incompatible ports: kind '" + k->second->kind + "' needs " + join(missing) +
                                               ", but its input from " + from + " provides only " + join(provided)));
          }
          provided.insert(k->second->adds.begin(), k->second->adds.end());
          facts[next] = provided;
        }
        ready.push_back(next);
      }
    }
  }

  std::stable_sort(errors.begin(), errors.end(), [](const SpecError& a, const SpecError& b) {
    return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
  });
  return errors;
}

LoadedSpec load_and_validate(const std::string& path, const NodeRegistry& registry, const EnvLookup& env) {
  return load_and_validate_text(read_spec_file(path), path, registry, env);
}

LoadedSpec load_and_validate_text(const std::string& text, const std::string& path, const NodeRegistry& registry,
                                  const EnvLookup& env) {
  std::vector<SpecError> errors;
  LoadedSpec spec = load_spec_text_partial(text, path, env, &errors);
  for (auto& e : validate_spec(spec, registry)) {
    bool duplicate = false;
    for (const auto& seen : errors) // A field the loader already refused is not reported again (e.g. as empty).
      duplicate = duplicate || (seen.pos.line == e.pos.line && seen.pos.column == e.pos.column);
    if (!duplicate) errors.push_back(std::move(e));
  }
  if (!errors.empty()) {
    std::stable_sort(errors.begin(), errors.end(), [](const SpecError& a, const SpecError& b) {
      return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
    });
    throw SpecErrors(std::move(errors));
  }
  return spec;
}

}  // namespace sluice
