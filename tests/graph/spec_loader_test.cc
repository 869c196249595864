// Loading pipeline files: formats, substitution, defaults, and every class of bad input with
// its exact message and position.
#include "graph/spec_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/spec_validator.h"
#include "tests/graph/fuzz_node_kinds.h"
#include "tests/graph/test_support.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;

EnvLookup fake_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (name == "PORT") return "9999";
    if (name == "EMPTY") return "";
    return std::nullopt;
  };
}

std::vector<std::string> errors_of(const std::string& text, const std::string& file = "p.yaml") {
  static NodeRegistry reg = testing::test_registry();
  try {
    load_and_validate_text(text, file, reg, fake_env());
  } catch (const SpecErrors& e) {
    std::vector<std::string> out;
    for (const auto& err : e.errors()) out.push_back(err.to_string());
    return out;
  }
  return {};
}

LoadedSpec load_ok(const std::string& text, const std::string& file = "p.yaml") {
  static NodeRegistry reg = testing::test_registry();
  return load_and_validate_text(text, file, reg, fake_env());
}

const char* kGood = R"(name: demo
sources:
  - name: api
    kind: http
    config:
      listen: 127.0.0.1:${PORT}
nodes:
  - name: answer
    kind: template
    concurrency: 2
    config:
      text: hello {{input}}
      token_interval: 5ms
edges:
  - from: api
    to: answer
)";

TEST(SpecLoader, LoadsYamlWithSubstitutionAndDefaults) {
  LoadedSpec s = load_ok(kGood);
  const PipelineSpec& p = s.pipeline;
  EXPECT_EQ(p.name(), "demo");
  EXPECT_EQ(p.sources(0).http().listen(), "127.0.0.1:9999");
  EXPECT_EQ(p.nodes(0).concurrency(), 2u);
  EXPECT_EQ(p.nodes(0).template_().token_interval().nanos(), 5'000'000);
  // Defaults from the schema's rules.
  EXPECT_EQ(p.runtime().max_in_flight(), 4096u);
  EXPECT_EQ(p.runtime().drain_timeout().seconds(), 30);
  ASSERT_EQ(p.runtime().classes_size(), 3);
  EXPECT_EQ(p.runtime().classes(2).name(), "P2");
  EXPECT_EQ(p.runtime().default_class(), "P1");
  EXPECT_EQ(p.sources(0).http().max_body_bytes(), 1024u * 1024u);
  EXPECT_EQ(p.sources(0).http().models(0), "sluice");
  // Positions are kept for later messages.
  EXPECT_EQ(s.positions.value_pos("nodes[0].config.text").line, 12);
  EXPECT_EQ(s.positions.value_pos("nodes[0].config.text").column, 13);
}

TEST(SpecLoader, JsonAndTextFormatLoadTheSameSchema) {
  const char* json = R"({
	"name": "demo",
	"sources": [{"name": "api", "kind": "http", "config": {"listen": "127.0.0.1:1"}}],
	"nodes": [{"name": "answer", "kind": "template", "config": {"text": "hi", "token_interval": "0.005s"}}],
	"edges": [{"from": "api", "to": "answer"}]
})";
  const char* text = R"(name: "demo"
sources { name: "api" kind: "http" http { listen: "127.0.0.1:1" } }
nodes { name: "answer" template { text: "hi" token_interval { nanos: 5000000 } } }
edges { from: "api" to: "answer" }
)";
  LoadedSpec a = load_ok(json, "p.json");
  LoadedSpec b = load_ok(text, "p.textproto");
  EXPECT_EQ(a.pipeline.SerializeAsString(), b.pipeline.SerializeAsString());
  EXPECT_EQ(node_kind(b.pipeline.nodes(0)), "template");  // stated once, by the config member
}

TEST(SpecLoader, DefaultAfterColonDashWhenUnsetOrEmpty) {
  LoadedSpec s = load_ok(R"(name: ${NAME:-fallback}-${EMPTY:-e}
sources: [{name: api, kind: http}]
nodes: [{name: a, kind: template, config: {text: "cost $$5"}}]
edges: [{from: api, to: a}]
)");
  EXPECT_EQ(s.pipeline.name(), "fallback-e");
  EXPECT_EQ(s.pipeline.nodes(0).template_().text(), "cost $5");
}

TEST(SpecLoader, UnsetVariable) {
  EXPECT_THAT(errors_of("name: ${NOPE}\nsources: [{name: api, kind: http}]\nnodes: [{name: a, kind: passthrough}]\nedges: [{from: api, to: a}]\n"),
              ElementsAre("p.yaml:1:7: name: environment variable NOPE is not set (write ${NOPE:-default} to give a default)"));
}

TEST(SpecLoader, YamlSyntaxError) {
  EXPECT_THAT(errors_of("name: x\nnodes: [a, b\nedges: []\n"),
              ElementsAre("p.yaml:3:6: YAML syntax error: end of sequence flow not found"));
}

TEST(SpecLoader, JsonSyntaxError) {
  EXPECT_THAT(errors_of("{\"name\": \"x\",, }", "p.json"), ::testing::Contains("p.json:1:14: field names must be plain strings"));
  EXPECT_THAT(errors_of("{\"name\": \"x\"", "p.json"), ElementsAre("p.json:1:1: JSON syntax error: end of map flow not found"));
}

TEST(SpecLoader, EmptyFile) {
  EXPECT_THAT(errors_of(""), ElementsAre("p.yaml:1:1: the file is empty; a pipeline needs at least a name, a source and a node"));
}

TEST(SpecLoader, UnknownFieldWithSuggestion) {
  std::string text = kGood;
  text.replace(text.find("concurrency"), 11, "concurency");
  EXPECT_THAT(errors_of(text),
              ElementsAre("p.yaml:10:5: node 'answer': nodes[0]: unknown field 'concurency' in NodeSpec (did you mean 'concurrency'?)"));
}

// Found by spec_fuzz: a file pasted twice loaded values of one copy under the positions of the
// other. A repeated key is an error at its second place, naming the first.
TEST(SpecLoader, KeyWrittenTwiceIsAnError) {
  EXPECT_THAT(errors_of("name: x\nsources: [{name: api, kind: http}]\nnodes: [{name: a, kind: passthrough}]\n"
                        "edges: [{from: api, to: a}]\nname: y\n"),
              ElementsAre("p.yaml:5:1: field 'name' is written twice (first at line 1)"));
  EXPECT_THAT(errors_of("name: x\nsources: [{name: api, kind: http, kind: http}]\nnodes: [{name: a, kind: passthrough}]\n"
                        "edges: [{from: api, to: a}]\n"),
              ElementsAre("p.yaml:2:35: node 'api': sources[0]: field 'kind' is written twice (first at line 2)"));
}

TEST(SpecLoader, UnknownFieldInTextFormat) {
  EXPECT_THAT(errors_of("nmae: \"x\"\n", "p.textproto"),
              ElementsAre("p.textproto:1:5: unknown field 'nmae' in PipelineSpec (did you mean 'name'?)"));
}

TEST(SpecLoader, UnknownNodeKindWithSuggestion) {
  std::string text = kGood;
  text.replace(text.find("kind: template"), 14, "kind: templat");
  EXPECT_THAT(errors_of(text), ElementsAre("p.yaml:9:11: node 'answer': unknown node kind 'templat' (did you mean 'template'?)"));
}

TEST(SpecLoader, MissingRequiredField) {
  std::string text = kGood;
  text.replace(text.find("      text: hello {{input}}\n"), 28, "");
  EXPECT_THAT(errors_of(text), ElementsAre("p.yaml:12:7: node 'answer': missing required field 'nodes[0].config.text'"));
}

TEST(SpecLoader, MissingName) {
  EXPECT_THAT(errors_of("sources: [{name: api, kind: http}]\nnodes: [{name: a, kind: passthrough}]\nedges: [{from: api, to: a}]\n"),
              ElementsAre("p.yaml:1:1: missing required field 'name'"));
}

TEST(SpecLoader, EdgeToUnknownNode) {
  std::string text = kGood;
  text.replace(text.find("to: answer"), 10, "to: answr");
  EXPECT_THAT(errors_of(text), ElementsAre("p.yaml:3:11: node 'api': this source feeds no node; add an edge from it",
                                           "p.yaml:8:11: node 'answer': no edge enters this node; connect it to a source or another node",
                                           "p.yaml:16:9: edge to 'answr', which is not a source or node (did you mean 'answer'?)"));
}

TEST(SpecLoader, Cycle) {
  EXPECT_THAT(errors_of(R"(name: c
sources: [{name: api, kind: http}]
nodes:
  - {name: a, kind: passthrough}
  - {name: b, kind: passthrough}
  - {name: c, kind: passthrough}
edges:
  - {from: api, to: a}
  - {from: a, to: b}
  - {from: b, to: c}
  - {from: c, to: a}
)"),
              ElementsAre("p.yaml:11:5: node 'a': edges form a cycle: 'a' -> 'b' -> 'c' -> 'a'"));
}

TEST(SpecLoader, IncompatiblePorts) {
  EXPECT_THAT(errors_of(R"(name: ports
sources: [{name: api, kind: http}]
nodes: [{name: fuse, kind: needs_hits}]
edges: [{from: api, to: fuse}]
)"),
              ElementsAre("p.yaml:4:25: node 'fuse': incompatible ports: kind 'needs_hits' needs hits, but its input from 'api' provides only request"));
}

TEST(SpecLoader, BadDurationSizeNumberAndRange) {
  EXPECT_THAT(errors_of(R"(name: v
runtime:
  max_in_flight: 0
  drain_timeout: 10 parsecs
  threads: many
sources:
  - name: api
    kind: http
    config: {max_body_bytes: 12 furlongs}
nodes: [{name: a, kind: passthrough}]
edges: [{from: api, to: a}]
)"),
              ElementsAre("p.yaml:3:18: runtime.max_in_flight: must be between 1 and 1000000, got 0",
                          "p.yaml:4:18: runtime.drain_timeout: \"parsecs\" in \"10 parsecs\" is not a duration unit (ns, us, ms, s, m, h)",
                          "p.yaml:5:12: runtime.threads: expected a whole number, got \"many\"",
                          "p.yaml:9:30: node 'api': sources[0].config.max_body_bytes: \"furlongs\" in \"12 furlongs\" is not a size unit (B, KB, MB, GB, KiB, MiB, GiB)"));
}

// The HTTP source's connection limits and read deadlines are checked like any field: at the
// value, with the range or unit the schema gives.
TEST(SpecLoader, HttpConnectionLimitsAndReadDeadlinesAreChecked) {
  EXPECT_THAT(errors_of(R"(name: v
sources:
  - name: api
    kind: http
    config: {body_min_rate: 2GiB, max_connections_per_ip: 2000000, header_timeout: soon}
nodes: [{name: a, kind: passthrough}]
edges: [{from: api, to: a}]
)"),
              ElementsAre("p.yaml:5:29: node 'api': sources[0].config.body_min_rate: must be between 0 and 1073741824, got 2GiB",
                          "p.yaml:5:59: node 'api': sources[0].config.max_connections_per_ip: must be between 0 and 1000000, got 2000000",
                          "p.yaml:5:84: node 'api': sources[0].config.header_timeout: \"soon\" is not a duration; write a number with a unit, e.g. \"250ms\", \"1.5s\", \"2m\""));
}

// "nan" reads as a number and compared false against both bounds, so it passed every range
// (found by spec_fuzz as batch_cost: nan).
TEST(SpecLoader, NanIsOutsideEveryRange) {
  EXPECT_THAT(errors_of(R"(name: v
sources: [{name: api, kind: http}]
nodes: [{name: r, kind: priority_router, config: {strict_above: nan}}, {name: a, kind: passthrough}]
edges: [{from: api, to: r}, {from: r, to: a}]
)"),
              ElementsAre("p.yaml:3:65: node 'r': nodes[0].config.strict_above: must be between 0 and 1, got nan"));
}

// Text format sets fields itself: its values used to skip the range checks and could hold a
// negative duration (found by spec_fuzz as max_body_bytes: 18446744073709551615).
TEST(SpecLoader, TextFormatValuesAreCheckedLikeYaml) {
  EXPECT_THAT(errors_of(R"(name: "v"
runtime { drain_timeout { seconds: -5 } default_deadline { nanos: 2000000000 } }
sources { name: "api" http { max_body_bytes: 18446744073709551615 } }
nodes { name: "r" priority_router { strict_above: -1 classes { name: "P1" weight: 0 } } }
nodes { name: "a" passthrough { } }
edges { from: "api" to: "r" }
edges { from: "r" to: "a" }
)", "p.textproto"),
              ElementsAre("p.textproto:2:11: runtime.drain_timeout: a duration cannot be negative and its nanos are 0 to 999999999, got seconds: -5 nanos: 0",
                          "p.textproto:2:41: runtime.default_deadline: a duration cannot be negative and its nanos are 0 to 999999999, got seconds: 0 nanos: 2000000000",
                          "p.textproto:3:30: node 'api': sources[0].config.max_body_bytes: must be between 1024 and 1073741824, got 18446744073709551615",
                          "p.textproto:4:37: node 'r': nodes[0].config.strict_above: must be between 0 and 1, got -1",
                          "p.textproto:4:75: node 'r': nodes[0].config.classes[0].weight: must be between 1 and 1000, got 0"));
}

TEST(SpecLoader, BadPriorityClassIsAnEnumLikeError) {
  EXPECT_THAT(errors_of(R"(name: v
sources: [{name: api, kind: http, config: {default_priority: P9}}]
nodes: [{name: a, kind: passthrough}]
edges: [{from: api, to: a}]
)"),
              ElementsAre("p.yaml:2:62: node 'api': 'P9' is not a priority class (classes: P0, P1, P2); did you mean 'P0'?"));
}

TEST(SpecLoader, DuplicateNames) {
  EXPECT_THAT(errors_of(R"(name: d
sources: [{name: api, kind: http}]
nodes:
  - {name: a, kind: passthrough}
  - {name: a, kind: passthrough}
edges: [{from: api, to: a}]
)"),
              ElementsAre("p.yaml:5:12: node 'a': the name 'a' is already used (first defined at line 4)"));
}

TEST(SpecLoader, WrongTypes) {
  EXPECT_THAT(errors_of("name: [x]\nsources: {name: api}\n"),
              ElementsAre("p.yaml:1:1: the pipeline has no nodes", "p.yaml:1:7: name: expected a single value, not a list",
                          "p.yaml:2:10: sources: expected a list"));
}

TEST(SpecLoader, ConfigForAKindWithoutOne) {
  EXPECT_THAT(errors_of(R"(name: d
sources: [{name: api, kind: http}]
nodes: [{name: a, kind: mark, config: {x: 1}}]
edges: [{from: api, to: a}]
)"),
              ElementsAre("p.yaml:3:31: node 'a': node kind 'mark' takes no config"));
}

// Schema v1 states a node's kind once: the loader moves the file's `kind` into the config member.
TEST(SpecLoader, KindIsStatedOnceByTheConfigMember) {
  LoadedSpec s = load_ok(kGood);
  EXPECT_EQ(s.pipeline.nodes(0).kind(), "");  // the member says it
  EXPECT_TRUE(s.pipeline.nodes(0).has_template_());
  EXPECT_EQ(node_kind(s.pipeline.nodes(0)), "template");
  EXPECT_EQ(source_kind(s.pipeline.sources(0)), "http");
  // A kind that takes no config keeps its string.
  LoadedSpec m = load_ok("name: d\nsources: [{name: api, kind: http}]\nnodes: [{name: a, kind: mark}]\n"
                         "edges: [{from: api, to: a}]\n");
  EXPECT_EQ(node_kind(m.pipeline.nodes(0)), "mark");
  // Text format may state both, but they must agree.
  EXPECT_THAT(errors_of(R"(name: "d"
sources { name: "api" http {} }
nodes { name: "a" kind: "passthrough" template { text: "hi" } }
edges { from: "api" to: "a" }
)", "p.textproto"),
              ElementsAre("p.textproto:3:39: node 'a': config is for kind 'template' but kind is 'passthrough'"));
  EXPECT_THAT(errors_of("name: d\nsources: [{name: api}]\nnodes: [{name: a}]\nedges: [{from: api, to: a}]\n"),
              ElementsAre("p.yaml:2:11: node 'api': missing required field 'sources[0].kind'",
                          "p.yaml:3:9: node 'a': missing required field 'nodes[0].kind'"));
}

// String rules (allowed values, the address unit) are the validator's, so `sluice validate`
// refuses what `sluice run` would, at the value's line and column.
TEST(SpecLoader, StringRulesAreCheckedAtTheValue) {
  EXPECT_THAT(errors_of(R"(name: v
sources: [{name: api, kind: http, config: {listen: "127.0.0.1:99999"}}]
nodes: [{name: g, kind: generate, config: {optional: true, kv_type: f61, chat_template: chatlm}}]
edges: [{from: api, to: g}]
)"),
              ElementsAre("p.yaml:2:52: node 'api': address '127.0.0.1:99999': port '99999' is not a number from 0 to 65535",
                          "p.yaml:3:69: node 'g': 'f61' is not one of f16, f32 (did you mean 'f16'?)",
                          "p.yaml:3:89: node 'g': 'chatlm' is not one of auto, plain, llama2, chatml, zephyr (did you mean 'chatml'?)"));
  EXPECT_THAT(errors_of(R"(name: v
sources: [{name: api, kind: http, config: {listen: "localhost"}}]
nodes: [{name: a, kind: passthrough}]
edges: [{from: api, to: a}]
)"),
              ElementsAre("p.yaml:2:52: node 'api': address 'localhost' has no ':port'"));
}

// A listen beyond loopback states its authentication (graph/listen_rules.h): refused by
// `sluice validate` at the listen value, accepted with keys or with `auth: none` written out
// (the shorthand of auth: {mode: none}).
TEST(SpecLoader, ANonLoopbackListenNeedsAuth) {
  EXPECT_THAT(errors_of(R"(name: v
sources: [{name: api, kind: http, config: {listen: "0.0.0.0:8080"}}]
nodes: [{name: a, kind: passthrough}]
edges: [{from: api, to: a}]
)"),
              ElementsAre("p.yaml:2:52: node 'api': config.listen: '0.0.0.0:8080' is reachable from other machines and "
                          "auth is not configured: set auth.keys_file or auth.keys_env (docs/operations.md, Security), "
                          "or write `auth: none` to serve without authentication on purpose"));
  EXPECT_THAT(errors_of(R"(name: v
sources: [{name: api, kind: http, config: {listen: "0.0.0.0:8080", auth: none}}]
nodes: [{name: a, kind: passthrough}]
edges: [{from: api, to: a}]
)"),
              ElementsAre());
  EXPECT_THAT(errors_of(R"(name: v
sources: [{name: api, kind: http, config: {listen: "[::]:8080", auth: {keys_file: keys.yaml}}}]
nodes: [{name: a, kind: passthrough}]
edges: [{from: api, to: a}]
)"),
              ElementsAre());
  EXPECT_THAT(errors_of(R"(name: v
sources: [{name: api, kind: http, config: {auth: nobody}}]
nodes: [{name: a, kind: passthrough}]
edges: [{from: api, to: a}]
)"),
              ElementsAre("p.yaml:2:50: node 'api': 'nobody' is not one of keys, none"));
  EXPECT_THAT(errors_of(R"(name: v
sources: [{name: api, kind: http, config: {auth: {mode: keys}}}]
nodes: [{name: a, kind: passthrough}]
edges: [{from: api, to: a}]
)"),
              ElementsAre("p.yaml:2:57: node 'api': config.auth.mode: auth mode 'keys' needs keys_file or keys_env to say "
                          "where the keys are"));
}

TEST(SpecLoader, UnreadableFile) {
  NodeRegistry reg = testing::test_registry();
  try {
    load_and_validate("/nonexistent/p.yaml", reg);
    FAIL();
  } catch (const SpecErrors& e) {
    EXPECT_EQ(e.errors().at(0).to_string(), "/nonexistent/p.yaml: cannot read the file: No such file or directory");
  }
}

TEST(SpecLoader, ShippedPipelinesAreValid) {
  NodeRegistry reg = testing::test_registry();
  for (const char* f : {"pipelines/default.yaml", "pipelines/template.yaml", "pipelines/admission-demo.yaml"}) {
    EXPECT_NO_THROW(load_and_validate(std::string(SLUICE_SOURCE_DIR) + "/" + f, reg)) << f;
  }
}

// The spec fuzzer's registry (fuzz_node_kinds.h) is the builtin one without factories.
TEST(SpecFuzzKinds, AreTheBuiltinKinds) {
  NodeRegistry builtin;
  register_builtin_nodes(builtin);
  NodeRegistry fuzz = testing::builtin_kinds_without_factories();
  ASSERT_EQ(fuzz.kinds(), builtin.kinds());
  for (const std::string& kind : builtin.kinds()) {
    EXPECT_EQ(fuzz.find(kind)->needs, builtin.find(kind)->needs) << kind;
    EXPECT_EQ(fuzz.find(kind)->adds, builtin.find(kind)->adds) << kind;
    EXPECT_EQ(fuzz.find(kind)->async, builtin.find(kind)->async) << kind;
    EXPECT_EQ(fuzz.degradations(kind).on_skip.empty(), builtin.degradations(kind).on_skip.empty()) << kind;
    EXPECT_EQ(fuzz.degradations(kind).on_shrink.empty(), builtin.degradations(kind).on_shrink.empty()) << kind;
  }
}

}  // namespace
}  // namespace sluice
